package store

// The record encoding of a stored document (format 2).
//
//	0xB2 ‖ uvarint headLen ‖ head ‖ textCodec ‖ text
//
// head holds everything but the text, so a reader that does not need the
// text (a retrieve with includeText:false, a metadata filter, a chunk-link
// update) decodes it without touching the text bytes:
//
//	str id, str title, flags (1 source, 2 chunk, 4 injection suspected)
//	[source: str name, str uri, varint page]
//	[chunk: str docId, varint index, varint start, varint end]
//	uvarint nMeta, nMeta × (str key, value)
//	str screenRules, 8-byte float64 screenScore, uvarint runes, uvarint tokens
//	uvarint textLen
//
// str is uvarint length ‖ bytes; a value is a tag byte (null, false, true,
// number ‖ str JSON text, string ‖ str, array ‖ uvarint n ‖ values,
// object ‖ uvarint n ‖ sorted (str key, value) pairs). Numbers keep their
// JSON text, as the JSON records they replace did (json.Number on decode).
// text is raw (textCodec 0) or one zstd frame (textCodec 1), whichever is
// smaller by a margin. The encoding is canonical — map keys are sorted — so
// equal documents with equal facts encode to equal bytes.
//
// Records written before format 2 are JSON objects (they start with '{');
// DecodeDoc still reads them, and the index rewrites them at Open. Format 3
// (dict.go) is a format-2 record compressed whole with a dictionary of the
// store: Store.DecodeRecord reads all three.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"unsafe"

	"github.com/klauspost/compress/zstd"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/internal/varint"
)

const (
	recordTag = 0xB2

	textRaw  = 0
	textZstd = 1

	flagSource    = 1
	flagChunk     = 2
	flagSuspected = 4

	valNull, valFalse, valTrue, valNumber, valString, valArray, valObject = 0, 1, 2, 3, 4, 5, 6

	// minCompress is the shortest text worth compressing: below it a zstd
	// frame's header eats the gain.
	minCompress = 96
	maxDepth    = 64 // nesting of metadata values
)

var (
	zenc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(false),
		zstd.WithZeroFrames(true))
	zdec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(1<<30))
)

// EncodeDoc returns the canonical record encoding of d with its facts: two
// documents are observationally identical iff their encodings are equal.
func EncodeDoc(d *search.Document, f search.Facts) ([]byte, error) {
	return encodeRecord(d, f, true)
}

// encodeRecord encodes a format-2 record, its text compressed (when that
// pays) or raw.
func encodeRecord(d *search.Document, f search.Facts, compress bool) ([]byte, error) {
	head := make([]byte, 0, 64+len(d.ID)+len(d.Title))
	head = appendStr(head, d.ID)
	head = appendStr(head, d.Title)
	var flags byte
	if d.Source != nil {
		flags |= flagSource
	}
	if d.Chunk != nil {
		flags |= flagChunk
	}
	if f.Suspected {
		flags |= flagSuspected
	}
	head = append(head, flags)
	if s := d.Source; s != nil {
		head = appendStr(head, s.Name)
		head = appendStr(head, s.URI)
		head = binary.AppendVarint(head, int64(s.Page))
	}
	if c := d.Chunk; c != nil {
		head = appendStr(head, c.DocID)
		head = binary.AppendVarint(head, int64(c.Index))
		head = binary.AppendVarint(head, int64(c.Start))
		head = binary.AppendVarint(head, int64(c.End))
	}
	var err error
	if head, err = appendObject(head, d.Meta, 0); err != nil {
		return nil, fmt.Errorf("store: encode document %q: %w", d.ID, err)
	}
	head = appendStr(head, f.ScreenRules)
	head = binary.LittleEndian.AppendUint64(head, math.Float64bits(f.ScreenScore))
	head = binary.AppendUvarint(head, uint64(f.Runes))
	head = binary.AppendUvarint(head, uint64(f.Tokens))
	head = binary.AppendUvarint(head, uint64(len(d.Text)))

	out := make([]byte, 0, 1+binary.MaxVarintLen32+len(head)+1+len(d.Text))
	out = append(out, recordTag)
	out = binary.AppendUvarint(out, uint64(len(head)))
	out = append(out, head...)
	if !compress {
		out = append(out, textRaw)
		return append(out, d.Text...), nil
	}
	return AppendText(out, d.Text), nil
}

// AppendText appends text in the record text encoding: a codec byte, then
// the bytes raw or as one zstd frame, whichever is smaller by a margin.
// The length is not included (DecodeText takes it).
func AppendText(b []byte, text string) []byte {
	if len(text) >= minCompress {
		z := zenc.EncodeAll(unsafe.Slice(unsafe.StringData(text), len(text)), nil)
		if len(z) < len(text)*9/10 {
			b = append(b, textZstd)
			return append(b, z...)
		}
	}
	b = append(b, textRaw)
	return append(b, text...)
}

// DecodeText decodes what AppendText wrote for a text of n bytes.
func DecodeText(p []byte, n uint64) (string, error) {
	if len(p) == 0 {
		return "", fmt.Errorf("missing text codec")
	}
	return decodeText(p[0], p[1:], n)
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendObject(b []byte, m map[string]any, depth int) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(m)))
	var err error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = appendStr(b, k)
		if b, err = appendValue(b, m[k], depth+1); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// appendValue encodes a JSON-like metadata value; other Go types take
// their JSON form (as the JSON records did).
func appendValue(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("metadata nested deeper than %d", maxDepth)
	}
	switch x := v.(type) {
	case nil:
		return append(b, valNull), nil
	case bool:
		if x {
			return append(b, valTrue), nil
		}
		return append(b, valFalse), nil
	case string:
		return appendStr(append(b, valString), x), nil
	case json.Number:
		return appendStr(append(b, valNumber), x.String()), nil
	case float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		num, err := json.Marshal(x)
		if err != nil {
			return nil, err
		}
		return appendStr(append(b, valNumber), string(num)), nil
	case []any:
		b = binary.AppendUvarint(append(b, valArray), uint64(len(x)))
		var err error
		for _, e := range x {
			if b, err = appendValue(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return b, nil
	case map[string]any:
		return appendObject(append(b, valObject), x, depth)
	}
	// Any other type: its JSON form, read back as generic JSON.
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var g any
	if err := decodeJSON(raw, &g); err != nil {
		return nil, err
	}
	return appendValue(b, g, depth)
}

// DecodeDoc decodes a record (format 2, or a JSON record of format 1) with
// its text. Metadata numbers decode as json.Number, keeping their exact
// text.
func DecodeDoc(b []byte) (*search.Document, error) {
	d, _, err := DecodeRecord(b, true)
	return d, err
}

// DecodeRecord decodes a record of format 1 or 2 and its facts (a record
// compressed with a store dictionary fails with ErrNoDictionary: see
// Store.DecodeRecord); withText false leaves
// Document.Text empty without reading (or decompressing) it. JSON records
// of format 1 have no facts (Facts.ScreenRules is "").
func DecodeRecord(b []byte, withText bool) (*search.Document, search.Facts, error) {
	if len(b) > 0 && b[0] == '{' {
		var d search.Document
		if err := decodeJSON(b, &d); err != nil {
			return nil, search.Facts{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if !withText {
			d.Text = ""
		}
		return &d, search.Facts{}, nil
	}
	d, f, err := decodeRecord(b, withText)
	if err != nil {
		return nil, search.Facts{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return d, f, nil
}

func decodeRecord(b []byte, withText bool) (*search.Document, search.Facts, error) {
	if len(b) > 0 && b[0] == dictRecordTag {
		return nil, search.Facts{}, ErrNoDictionary
	}
	if len(b) == 0 || b[0] != recordTag {
		return nil, search.Facts{}, fmt.Errorf("unknown record tag")
	}
	return decodePayload(b[1:], withText)
}

// decodePayload decodes a format-2 record after its tag byte.
func decodePayload(b []byte, withText bool) (*search.Document, search.Facts, error) {
	var f search.Facts
	hl, n := binary.Uvarint(b)
	if n <= 0 || hl > uint64(len(b)-n) {
		return nil, f, fmt.Errorf("bad head length")
	}
	body := b[n+int(hl):]
	r := varint.New(string(b[n : n+int(hl)]))
	d := &search.Document{ID: r.Str(), Title: r.Str()}
	flags := r.Byte()
	if flags&flagSource != 0 {
		d.Source = &search.Source{Name: r.Str(), URI: r.Str(), Page: int(r.Varint())}
	}
	if flags&flagChunk != 0 {
		d.Chunk = &search.ChunkRef{DocID: r.Str(), Index: int(r.Varint()), Start: int(r.Varint()), End: int(r.Varint())}
	}
	d.Meta = readObject(r, 0)
	f.ScreenRules = r.Str()
	if !r.Failed() && r.Off+8 <= len(r.Buf) {
		var bits uint64
		for i := 7; i >= 0; i-- {
			bits = bits<<8 | uint64(r.Buf[r.Off+i])
		}
		f.ScreenScore = math.Float64frombits(bits)
		r.Off += 8
	} else {
		r.Fail("screenScore")
	}
	f.Suspected = flags&flagSuspected != 0
	f.Runes = int(r.Uvarint())
	f.Tokens = int(r.Uvarint())
	textLen := r.Uvarint()
	if !r.Failed() && r.Off != len(r.Buf) {
		r.Fail("head (trailing bytes)")
	}
	if r.Failed() {
		return nil, f, r.Err()
	}
	if len(body) == 0 {
		return nil, f, fmt.Errorf("missing text codec")
	}
	if !withText {
		return d, f, nil
	}
	text, err := decodeText(body[0], body[1:], textLen)
	if err != nil {
		return nil, f, err
	}
	d.Text = text
	return d, f, nil
}

func decodeText(codec byte, p []byte, n uint64) (string, error) {
	switch codec {
	case textRaw:
		if uint64(len(p)) != n {
			return "", fmt.Errorf("text is %d bytes, head says %d", len(p), n)
		}
		return string(p), nil
	case textZstd:
		if n > 1<<30 {
			return "", fmt.Errorf("text length %d out of range", n)
		}
		out, err := zdec.DecodeAll(p, make([]byte, 0, n))
		if err != nil {
			return "", fmt.Errorf("text: %w", err)
		}
		if uint64(len(out)) != n {
			return "", fmt.Errorf("text is %d bytes, head says %d", len(out), n)
		}
		return unsafe.String(unsafe.SliceData(out), len(out)), nil // out is ours alone
	}
	return "", fmt.Errorf("unknown text codec %d", codec)
}

func readObject(r *varint.Reader[string], depth int) map[string]any {
	n := r.Count()
	if n == 0 || r.Failed() {
		return nil
	}
	m := make(map[string]any, n)
	for range n {
		k := r.Str()
		m[k] = readValue(r, depth+1)
		if r.Failed() {
			return nil
		}
	}
	return m
}

func readValue(r *varint.Reader[string], depth int) any {
	if depth > maxDepth {
		r.Fail("metadata (too deep)")
		return nil
	}
	switch tag := r.Byte(); tag {
	case valNull:
		return nil
	case valFalse:
		return false
	case valTrue:
		return true
	case valNumber:
		s := r.Str()
		if !r.Failed() && !isJSONNumber(s) {
			r.Fail("number")
		}
		return json.Number(s)
	case valString:
		return r.Str()
	case valArray:
		n := r.Count()
		a := make([]any, 0, n)
		for range n {
			a = append(a, readValue(r, depth+1))
			if r.Failed() {
				return nil
			}
		}
		return a
	case valObject:
		m := readObject(r, depth)
		if m == nil && !r.Failed() {
			m = map[string]any{}
		}
		return m
	default:
		r.Fail("value tag " + strconv.Itoa(int(tag)))
		return nil
	}
}

// isJSONNumber reports whether s is a JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// decodeJSON decodes one JSON value, numbers as json.Number.
func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}
