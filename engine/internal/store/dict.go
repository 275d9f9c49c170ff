package store

// Dictionary-compressed records (format 3).
//
// A passage is a few hundred bytes: compressed alone, it finds little to
// match inside itself, and the head (id, title, metadata keys and values,
// facts) was not compressed at all — 494 bytes a record on 300 k
// generated passages. A dictionary trained on the store's own records
// gives every record the context of the others while each stays readable
// alone (one small block per hit; block compression of several records,
// as Lucene's stored fields do, costs a whole block per hit). S2 with a
// dictionary was chosen over zstd with one by measurement on those 300 k
// records: 332 against 354 bytes a record, decoded 1.8–4× faster (zstd
// reads its entropy tables anew for every small frame) — see
// docs/benchmarks.md:
//
//	0xB3 ‖ uvarint dictID ‖ crc32c(what follows) (4 bytes, big endian)
//	     ‖ uvarint len(headBlock) ‖ headBlock ‖ textBlock
//
// headBlock is the S2 block (dictionary dictID) of a format-2 record
// without its tag byte, up to and including its text codec byte (uvarint
// headLen ‖ head ‖ 0), textBlock that of the text: a reader that does not
// need the text decodes the head block alone, and the two decoded back to
// back are the format-2 payload, so one decoder serves both formats. The
// checksum covers the compressed bytes (checked without decoding): a
// damaged record is an error, not a wrong document.
//
// Dictionaries live in the meta bucket under "dict" ‖ uint32 id (big
// endian): crc32c(rest) ‖ uint64 document number at training ‖ the
// dictionary in S2's format. A record names its dictionary for its
// lifetime, so dictionaries are never deleted; a new one is trained only
// when the document numbers have grown dictGrowth-fold since the last (at
// most 64 KB each). Open loads and checks them all: a damaged dictionary
// fails Open with ErrCorrupt. A dictionary is committed before any record
// uses it, and records are rewritten to it in transactions of their own
// (RewriteRecords), so a crash leaves a mix of formats that all read.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/s2"
	"github.com/rcpgo/rcpgo/engine/search"
	bolt "go.etcd.io/bbolt"
)

const (
	dictRecordTag = 0xB3

	// DictMinDocs is the default document number from which a first
	// dictionary is trained, dictGrowth the growth that trains the next.
	DictMinDocs = 1000
	dictGrowth  = 8
	// dictSamples records (spread over the store) train a dictionary of
	// at most dictSize bytes.
	dictSamples = 2000
	dictSize    = s2.MaxDictSize
	// maxPayload bounds a record's declared decoded size.
	maxPayload = 1 << 30
	// A dictionary record decodes to at most maxExpansion times its block
	// plus expansionSlack bytes: a reader checks a block's declared size
	// against it before allocating, and a record that would expand more
	// (very repetitive text) is stored in format 2.
	maxExpansion   = 64
	expansionSlack = 4096
)

var (
	dictPrefix = []byte("dict")
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	// ErrNoDictionary is returned by DecodeRecord for a record compressed
	// with a dictionary: only the store holding the dictionary reads it.
	ErrNoDictionary = errors.New("record compressed with a store dictionary")
)

// storedDict is one dictionary as the meta bucket holds it.
type storedDict struct {
	id        uint32
	trainedAt uint64 // the highest document number when it was trained
	content   []byte
}

// codec compresses new records with the newest dictionary and decodes
// records of every dictionary the store holds. Immutable once built.
type codec struct {
	dicts []storedDict // ascending id
	s2    map[uint32]*s2.Dict
}

func dictKey(id uint32) []byte { return binary.BigEndian.AppendUint32(slices.Clip(dictPrefix), id) }

func encodeStoredDict(d storedDict) []byte {
	v := make([]byte, 4, 12+len(d.content))
	v = binary.BigEndian.AppendUint64(v, d.trainedAt)
	v = append(v, d.content...)
	binary.BigEndian.PutUint32(v, crc32.Checksum(v[4:], castagnoli))
	return v
}

func decodeStoredDict(k, v []byte) (storedDict, error) {
	if len(k) != len(dictPrefix)+4 || len(v) < 12 || crc32.Checksum(v[4:], castagnoli) != binary.BigEndian.Uint32(v) {
		return storedDict{}, fmt.Errorf("%w: dictionary %x: checksum mismatch or truncated", ErrCorrupt, k)
	}
	return storedDict{id: binary.BigEndian.Uint32(k[len(dictPrefix):]), trainedAt: binary.BigEndian.Uint64(v[4:]),
		content: bytes.Clone(v[12:])}, nil
}

// loadDicts reads every dictionary of the store.
func loadDicts(tx *bolt.Tx) ([]storedDict, error) {
	var out []storedDict
	c := tx.Bucket(bktMeta).Cursor()
	for k, v := c.Seek(dictPrefix); k != nil && bytes.HasPrefix(k, dictPrefix); k, v = c.Next() {
		d, err := decodeStoredDict(k, v)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func newCodec(dicts []storedDict) (*codec, error) {
	c := &codec{dicts: dicts, s2: make(map[uint32]*s2.Dict, len(dicts))}
	for _, d := range dicts {
		if c.s2[d.id] = s2.NewDict(d.content); c.s2[d.id] == nil {
			return nil, fmt.Errorf("%w: dictionary %d is not an S2 dictionary", ErrCorrupt, d.id)
		}
	}
	return c, nil
}

func (c *codec) current() (storedDict, bool) {
	if len(c.dicts) == 0 {
		return storedDict{}, false
	}
	return c.dicts[len(c.dicts)-1], true
}

// encode compresses a format-2 record (text raw) with the current
// dictionary; without one, or when that does not pay, it returns the
// format-2 record with its text compressed alone (EncodeDoc).
func (c *codec) encode(d *search.Document, f search.Facts) ([]byte, error) {
	cur, ok := c.current()
	if !ok {
		return EncodeDoc(d, f)
	}
	raw, err := encodeRecord(d, f, false)
	if err != nil {
		return nil, err
	}
	head, text := raw[1:len(raw)-len(d.Text)], raw[len(raw)-len(d.Text):]
	sd := c.s2[cur.id]
	hb := sd.EncodeBetter(nil, head)
	tb := sd.EncodeBetter(nil, text)
	if !expandsWithin(len(head), len(hb)) || !expandsWithin(len(text), len(tb)) {
		return EncodeDoc(d, f)
	}
	out := make([]byte, 0, 1+binary.MaxVarintLen32+4+binary.MaxVarintLen32+len(hb)+len(tb))
	out = append(out, dictRecordTag)
	out = binary.AppendUvarint(out, uint64(cur.id))
	sum := len(out)
	out = append(out, 0, 0, 0, 0)
	out = binary.AppendUvarint(out, uint64(len(hb)))
	out = append(append(out, hb...), tb...)
	binary.BigEndian.PutUint32(out[sum:], crc32.Checksum(out[sum+4:], castagnoli))
	if plain, err := EncodeDoc(d, f); err == nil && len(plain) <= len(out) {
		return plain, nil
	}
	return out, nil
}

func expandsWithin(size, block int) bool { return size <= maxExpansion*block+expansionSlack }

// payload returns the format-2 payload (after the tag) of a format-3
// record; without its text, it ends at the text codec byte.
func (c *codec) payload(b []byte, withText bool) ([]byte, error) {
	id, n := binary.Uvarint(b[1:])
	if n <= 0 || id > 1<<32-1 {
		return nil, fmt.Errorf("bad dictionary id")
	}
	sd := c.s2[uint32(id)]
	if sd == nil {
		return nil, fmt.Errorf("%w %d, which this store does not hold", ErrNoDictionary, id)
	}
	rest := b[1+n:]
	if len(rest) < 4 || crc32.Checksum(rest[4:], castagnoli) != binary.BigEndian.Uint32(rest) {
		return nil, fmt.Errorf("checksum mismatch")
	}
	rest = rest[4:]
	hl, m := binary.Uvarint(rest)
	if m <= 0 || hl > uint64(len(rest)-m) {
		return nil, fmt.Errorf("bad head block length")
	}
	hb, tb := rest[m:m+int(hl)], rest[m+int(hl):]
	headLen, err := blockLen(hb)
	if err != nil {
		return nil, err
	}
	textLen := 0
	if withText {
		if textLen, err = blockLen(tb); err != nil {
			return nil, err
		}
	}
	out := make([]byte, headLen, headLen+textLen)
	if _, err := sd.Decode(out, hb); err != nil {
		return nil, fmt.Errorf("dictionary %d head block: %w", id, err)
	}
	if withText {
		if _, err := sd.Decode(out[headLen:], tb); err != nil {
			return nil, fmt.Errorf("dictionary %d text block: %w", id, err)
		}
		out = out[:headLen+textLen]
	}
	return out, nil
}

// blockLen returns the decoded length an S2 block declares, within the
// bounds a record can have.
func blockLen(block []byte) (int, error) {
	n, err := s2.DecodedLen(block)
	if err != nil || n > maxPayload || !expandsWithin(n, len(block)) {
		return 0, fmt.Errorf("bad block length")
	}
	return n, nil
}

// decode decodes a record of any format.
func (c *codec) decode(b []byte, withText bool) (*search.Document, search.Facts, error) {
	if len(b) == 0 || b[0] != dictRecordTag {
		return DecodeRecord(b, withText)
	}
	p, err := c.payload(b, withText)
	if err == nil {
		var d *search.Document
		var f search.Facts
		if d, f, err = decodePayload(p, withText); err == nil {
			return d, f, nil
		}
	}
	return nil, search.Facts{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
}

// canonical returns a record's uncompressed format-2 encoding (text raw),
// which equal documents with equal facts share whatever their stored
// format.
func (c *codec) canonical(b []byte) ([]byte, error) {
	d, f, err := c.decode(b, true)
	if err != nil {
		return nil, err
	}
	return encodeRecord(d, f, false)
}

// Codec state of a Store: the codec is swapped whole when a dictionary is
// added (read lock-free on every record read).
type codecRef struct {
	c     atomic.Pointer[codec]
	train sync.Mutex // one TrainDict at a time (each names the next id)
	// trainFailedAt is the document number at which training last failed
	// (BuildZstdDict refuses very uniform or tiny samples): retried only
	// after dictGrowth-fold growth, not at every call.
	trainFailedAt atomic.Uint64
}

func (r *codecRef) get() *codec { return r.c.Load() }

// EncodeDoc returns the encoding of d with its facts for this store:
// compressed with the store's current dictionary when it has one (and that
// pays), the format-2 encoding of the package's EncodeDoc otherwise.
func (s *Store) EncodeDoc(d *search.Document, f search.Facts) ([]byte, error) {
	return s.codec.get().encode(d, f)
}

// DecodeRecord decodes a record of any format this store holds.
func (s *Store) DecodeRecord(b []byte, withText bool) (*search.Document, search.Facts, error) {
	return s.codec.get().decode(b, withText)
}

// SameRecord reports whether two encodings hold the same document with the
// same facts (they may differ in format or dictionary).
func (s *Store) SameRecord(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	c := s.codec.get()
	ca, err := c.canonical(a)
	if err != nil {
		return false
	}
	cb, err := c.canonical(b)
	return err == nil && bytes.Equal(ca, cb)
}

// lastSeq returns the highest stored document number.
func lastSeq(tx *bolt.Tx) uint64 {
	k, _ := tx.Bucket(bktDocs).Cursor().Last()
	if len(k) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(k)
}

// TrainDict trains a new compression dictionary from a sample of the
// stored records when it is due — the highest document number has reached
// minDocs (≤ 0: DictMinDocs), and 8 times its value at the last training —
// and
// commits it; records written after use it. It returns the new
// dictionary's id, 0 when none was due. Recompress rewrites the records
// written before.
func (s *Store) TrainDict(ctx context.Context, minDocs int) (uint32, error) {
	if minDocs <= 0 {
		minDocs = DictMinDocs
	}
	s.codec.train.Lock()
	defer s.codec.train.Unlock()
	c, failedAt := s.codec.get(), s.codec.trainFailedAt.Load()
	var samples [][]byte
	var top uint64
	err := s.View(func(r *ReadTx) error {
		top = lastSeq(r.tx)
		last, ok := c.current()
		if top < uint64(minDocs) || (ok && top < dictGrowth*last.trainedAt) || (failedAt > 0 && top < dictGrowth*failedAt) {
			return nil
		}
		var err error
		samples, err = sampleRecords(ctx, r.tx, c, top)
		return err
	})
	if err != nil || samples == nil {
		return 0, err
	}
	var id uint32 = 1
	if last, ok := c.current(); ok {
		id = last.id + 1
	}
	content, err := dict.BuildS2Dict(samples, dict.Options{MaxDictSize: dictSize, HashBytes: 6})
	if err != nil {
		s.codec.trainFailedAt.Store(top)
		return 0, fmt.Errorf("store: training a dictionary on %d records: %w", len(samples), err)
	}
	nd := storedDict{id: id, trainedAt: top, content: content}
	next, err := newCodec(append(slices.Clone(c.dicts), nd))
	if err != nil {
		return 0, err
	}
	if err := s.Update(ctx, func(tx *Tx) error { return tx.tx.Bucket(bktMeta).Put(dictKey(id), encodeStoredDict(nd)) }); err != nil {
		return 0, fmt.Errorf("store: saving dictionary %d: %w", id, err)
	}
	s.codec.c.Store(next)
	return id, nil
}

// sampleRecords returns the uncompressed payloads of about dictSamples
// records spread evenly over document numbers 1..top.
func sampleRecords(ctx context.Context, tx *bolt.Tx, c *codec, top uint64) ([][]byte, error) {
	step := max(1, top/dictSamples)
	var out [][]byte
	cur := tx.Bucket(bktDocs).Cursor()
	for seq := uint64(1); seq <= top && len(out) < dictSamples; seq += step {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		k, v := cur.Seek(seqKey(seq))
		if k == nil {
			break
		}
		if len(v) < 8 {
			return nil, fmt.Errorf("%w: doc key %x", ErrCorrupt, k)
		}
		p, err := c.canonical(v[8:])
		if err != nil {
			return nil, fmt.Errorf("store: sample document %d: %w", binary.BigEndian.Uint64(k), err)
		}
		out = append(out, p[1:])
		if next := binary.BigEndian.Uint64(k); next > seq {
			seq = next // a gap: keep the spacing from the record found
		}
	}
	return out, nil
}

// Recompress rewrites the records stored without a dictionary with the
// current one (a no-op without one), in batches committed one by one: a
// crash leaves a mix of formats, all readable. It returns how many it
// rewrote. A pass that reaches the end is recorded (keyRecompressed): from
// then on every record is written with a dictionary, so later calls return
// at once instead of reading every record of the store again (at 1 M
// passages that pass ran at every start and left ≈ 400 MiB of the store
// resident in the process).
func (s *Store) Recompress(ctx context.Context) (int, error) {
	c := s.codec.get()
	if _, ok := c.current(); !ok {
		return 0, nil
	}
	done := false
	if err := s.View(func(r *ReadTx) error {
		done = r.tx.Bucket(bktMeta).Get(keyRecompressed) != nil
		return nil
	}); err != nil || done {
		return 0, err
	}
	n, err := s.rewriteWithDict(ctx, c)
	s.ReleaseMapped() // the pass read every record
	if err != nil {
		return n, err
	}
	return n, s.Update(ctx, func(tx *Tx) error { return tx.tx.Bucket(bktMeta).Put(keyRecompressed, []byte{1}) })
}

// keyRecompressed marks a store whose records all carry a dictionary
// (Recompress).
var keyRecompressed = []byte("recompressed")

func (s *Store) rewriteWithDict(ctx context.Context, c *codec) (int, error) {
	return s.RewriteRecords(ctx, func(_ uint64, enc []byte) ([]byte, error) {
		if len(enc) == 0 || enc[0] == dictRecordTag {
			return nil, nil
		}
		d, f, err := c.decode(enc, true)
		if err != nil {
			return nil, err
		}
		out, err := c.encode(d, f)
		if err != nil || bytes.Equal(out, enc) {
			return nil, err
		}
		return out, nil
	})
}

// Dictionaries returns the ids of the store's dictionaries, ascending.
func (s *Store) Dictionaries() []uint32 {
	c := s.codec.get()
	ids := make([]uint32, len(c.dicts))
	for i, d := range c.dicts {
		ids[i] = d.id
	}
	return ids
}
