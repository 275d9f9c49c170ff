package rcp

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// A hand-written encoder for the retrieve result, the largest and most
// frequent result on the hot path. It writes exactly the bytes
// encoding/json would (field order, omitempty, sorted map keys, float
// format, HTML-safe string escaping) without reflection. Whatever it cannot
// write byte-identically on its own it hands to encoding/json piecewise
// (nested _meta values, raw vectors); a value encoding/json would refuse
// (a non-finite float, invalid raw JSON) makes it give up with
// errAppendFallback, and the caller encodes the whole result the ordinary
// way, which keeps the error and sanitising behaviour exactly as before.
// FuzzRetrieveResultEncoding checks the equivalence.

// resultAppender is implemented by results with a hand-written encoder.
type resultAppender interface {
	appendJSON(dst []byte) ([]byte, error)
}

var errAppendFallback = errors.New("rcp: value needs encoding/json")

func (r *RetrieveResult) appendJSON(dst []byte) ([]byte, error) {
	var err error
	dst = append(dst, `{"hits":`...)
	if r.Hits == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range r.Hits {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = r.Hits[i].appendJSON(dst); err != nil {
				return dst, err
			}
		}
		dst = append(dst, ']')
	}
	dst = appendOptString(dst, `,"nextCursor":`, r.NextCursor)
	dst = appendOptString(dst, `,"indexVersion":`, r.IndexVersion)
	if r.Usage != nil {
		dst = append(dst, `,"usage":`...)
		if dst, err = r.Usage.appendJSON(dst); err != nil {
			return dst, err
		}
	}
	dst = appendOptString(dst, `,"rewrittenQuery":`, r.RewrittenQuery)
	if len(r.Meta) > 0 {
		dst = append(dst, `,"_meta":`...)
		if dst, err = appendMarshal(dst, r.Meta); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

func (h *Hit) appendJSON(dst []byte) ([]byte, error) {
	var err error
	dst = append(dst, `{"id":`...)
	if dst, err = h.ID.appendJSON(dst); err != nil {
		return dst, err
	}
	dst = append(dst, `,"score":`...)
	scoreAt := len(dst)
	if dst, err = appendJSONFloat(dst, h.Score); err != nil {
		return dst, err
	}
	score := formatted{f: h.Score, from: scoreAt, to: len(dst)}
	if h.Confidence != nil {
		dst = append(dst, `,"confidence":`...)
		if dst, err = appendJSONFloat(dst, *h.Confidence); err != nil {
			return dst, err
		}
	}
	if h.Text != nil {
		dst = append(dst, `,"text":`...)
		dst = appendJSONString(dst, *h.Text)
	}
	if len(h.Content) > 0 {
		dst = append(dst, `,"content":[`...)
		for i := range h.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = h.Content[i].appendJSON(dst)
		}
		dst = append(dst, ']')
	}
	dst = appendOptString(dst, `,"modality":`, h.Modality)
	dst = appendOptString(dst, `,"unit":`, h.Unit)
	if h.Level != nil {
		dst = append(dst, `,"level":`...)
		dst = strconv.AppendInt(dst, int64(*h.Level), 10)
	}
	if len(h.Meta) > 0 {
		dst = append(dst, `,"meta":`...)
		if dst, err = appendAnyMap(dst, h.Meta); err != nil {
			return dst, err
		}
	}
	if len(h.Vector) > 0 {
		dst = append(dst, `,"vector":`...)
		// RawMessage is compacted, validated and HTML-escaped by encoding/json.
		if dst, err = appendMarshal(dst, h.Vector); err != nil {
			return dst, err
		}
	}
	if len(h.Scores) > 0 {
		dst = append(dst, `,"scores":`...)
		if dst, err = appendScores(dst, h.Scores, score); err != nil {
			return dst, err
		}
	}
	if h.Citation != nil {
		dst = append(dst, `,"citation":`...)
		dst = h.Citation.appendJSON(dst)
	}
	if h.Provenance != nil {
		dst = append(dst, `,"provenance":`...)
		if dst, err = h.Provenance.appendJSON(dst); err != nil {
			return dst, err
		}
	}
	if h.Trust != nil {
		dst = append(dst, `,"trust":`...)
		if dst, err = h.Trust.appendJSON(dst); err != nil {
			return dst, err
		}
	}
	if h.Chunk != nil {
		dst = append(dst, `,"chunk":`...)
		dst = h.Chunk.appendJSON(dst)
	}
	return append(dst, '}'), nil
}

// appendJSON writes what ID.MarshalJSON returns as encoding/json would
// (it compacts and HTML-escapes a Marshaler's output). Every constructor
// leaves raw compact, valid and already escaped; anything that is not
// plainly so goes through encoding/json.
func (id ID) appendJSON(dst []byte) ([]byte, error) {
	if id.raw == "" {
		return append(dst, "null"...), nil
	}
	for i := 0; i < len(id.raw); i++ {
		switch c := id.raw[i]; {
		case c <= ' ', c == '<', c == '>', c == '&', c == 0xE2: // 0xE2: U+2028/2029
			return appendMarshal(dst, id)
		}
	}
	return append(dst, id.raw...), nil
}

// appendJSON writes what Content.MarshalJSON returns.
func (c *Content) appendJSON(dst []byte) []byte {
	if c.Bare && c.Type == ContentText {
		return appendJSONString(dst, c.Text)
	}
	dst = append(dst, `{"type":`...)
	dst = appendJSONString(dst, c.Type)
	dst = appendOptString(dst, `,"text":`, c.Text)
	dst = appendOptString(dst, `,"mimeType":`, c.MimeType)
	dst = appendOptString(dst, `,"data":`, c.Data)
	dst = appendOptString(dst, `,"uri":`, c.URI)
	return append(dst, '}')
}

func (u *Usage) appendJSON(dst []byte) ([]byte, error) {
	var err error
	dst = append(dst, '{')
	comma := false
	if u.Candidates != nil {
		dst = appendKey(dst, &comma, `"candidates":`)
		dst = strconv.AppendInt(dst, int64(*u.Candidates), 10)
	}
	if u.Reranked != nil {
		dst = appendKey(dst, &comma, `"reranked":`)
		dst = strconv.AppendInt(dst, int64(*u.Reranked), 10)
	}
	if u.LatencyMs != nil {
		dst = appendKey(dst, &comma, `"latencyMs":`)
		if dst, err = appendJSONFloat(dst, *u.LatencyMs); err != nil {
			return dst, err
		}
	}
	if u.Tokens != nil {
		dst = appendKey(dst, &comma, `"tokens":`)
		dst = strconv.AppendInt(dst, int64(*u.Tokens), 10)
	}
	if len(u.Notes) > 0 {
		dst = appendKey(dst, &comma, `"notes":`)
		dst = appendStrings(dst, u.Notes)
	}
	return append(dst, '}'), nil
}

func (c *Citation) appendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	comma := false
	if c.Source != "" {
		dst = appendKey(dst, &comma, `"source":`)
		dst = appendJSONString(dst, c.Source)
	}
	if c.URI != "" {
		dst = appendKey(dst, &comma, `"uri":`)
		dst = appendJSONString(dst, c.URI)
	}
	if c.Title != "" {
		dst = appendKey(dst, &comma, `"title":`)
		dst = appendJSONString(dst, c.Title)
	}
	if c.Start != nil {
		dst = appendKey(dst, &comma, `"start":`)
		dst = strconv.AppendInt(dst, int64(*c.Start), 10)
	}
	if c.End != nil {
		dst = appendKey(dst, &comma, `"end":`)
		dst = strconv.AppendInt(dst, int64(*c.End), 10)
	}
	if c.Page != nil {
		dst = appendKey(dst, &comma, `"page":`)
		dst = strconv.AppendInt(dst, int64(*c.Page), 10)
	}
	return append(dst, '}')
}

func (p *Provenance) appendJSON(dst []byte) ([]byte, error) {
	var err error
	dst = append(dst, '{')
	comma := false
	if len(p.Path) > 0 {
		dst = appendKey(dst, &comma, `"path":`)
		dst = appendStrings(dst, p.Path)
	}
	if len(p.Nodes) > 0 {
		dst = appendKey(dst, &comma, `"nodes":`)
		dst = appendStrings(dst, p.Nodes)
	}
	if len(p.Edges) > 0 {
		dst = appendKey(dst, &comma, `"edges":`)
		dst = append(dst, '[')
		for i := range p.Edges {
			e := &p.Edges[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"src":`...)
			dst = appendJSONString(dst, e.Src)
			dst = append(dst, `,"dst":`...)
			dst = appendJSONString(dst, e.Dst)
			if e.Weight != nil {
				dst = append(dst, `,"weight":`...)
				if dst, err = appendJSONFloat(dst, *e.Weight); err != nil {
					return dst, err
				}
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if len(p.Leaves) > 0 {
		dst = appendKey(dst, &comma, `"leaves":`)
		dst = appendStrings(dst, p.Leaves)
	}
	return append(dst, '}'), nil
}

func (t *Trust) appendJSON(dst []byte) ([]byte, error) {
	var err error
	dst = append(dst, `{"level":`...)
	dst = appendJSONString(dst, t.Level)
	if t.Score != nil {
		dst = append(dst, `,"score":`...)
		if dst, err = appendJSONFloat(dst, *t.Score); err != nil {
			return dst, err
		}
	}
	if t.InjectionSuspected != nil {
		dst = append(dst, `,"injectionSuspected":`...)
		dst = strconv.AppendBool(dst, *t.InjectionSuspected)
	}
	if t.Sanitized != nil {
		dst = append(dst, `,"sanitized":`...)
		dst = strconv.AppendBool(dst, *t.Sanitized)
	}
	return append(dst, '}'), nil
}

func (c *ChunkRef) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"docId":`...)
	dst = appendJSONString(dst, c.DocID)
	dst = append(dst, `,"index":`...)
	dst = strconv.AppendInt(dst, int64(c.Index), 10)
	dst = appendOptString(dst, `,"context":`, c.Context)
	return append(dst, '}')
}

// appendStrings writes a non-nil []string.
// appendOptString writes prefix and the JSON string v, or nothing when v is
// empty (omitempty).
func appendOptString(dst []byte, prefix, v string) []byte {
	if v == "" {
		return dst
	}
	return appendJSONString(append(dst, prefix...), v)
}

// appendKey writes an object member's `"name":` prefix, preceded by a comma
// unless it is the object's first member.
func appendKey(dst []byte, comma *bool, name string) []byte {
	if *comma {
		dst = append(dst, ',')
	}
	*comma = true
	return append(dst, name...)
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, s)
	}
	return append(dst, ']')
}

// appendMarshal writes v as encoding/json does.
func appendMarshal(dst []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return dst, errAppendFallback
	}
	return append(dst, b...), nil
}

// sortedMapKeys returns m's keys in byte order (encoding/json sorts map keys
// with strings.Compare), in buf when it is large enough.
func sortedMapKeys[V any](m map[string]V, buf []string) []string {
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// formatted is a float already written at dst[from:to].
type formatted struct {
	f        float64
	from, to int
}

// appendScores writes a hit's non-nil scores map. A score equal to the
// hit's score (the one retriever of a plain sparse or dense request) is
// copied from where that was written instead of formatted again, and a
// one-entry map needs no sorting.
func appendScores(dst []byte, m map[string]float64, score formatted) ([]byte, error) {
	var err error
	dst = append(dst, '{')
	put := func(k string, v float64) {
		dst = append(appendJSONString(dst, k), ':')
		if math.Float64bits(v) == math.Float64bits(score.f) {
			dst = append(dst, dst[score.from:score.to]...)
			return
		}
		dst, err = appendJSONFloat(dst, v)
	}
	if len(m) == 1 {
		for k, v := range m {
			put(k, v)
		}
		return append(dst, '}'), err
	}
	var buf [8]string
	for i, k := range sortedMapKeys(m, buf[:]) {
		if i > 0 {
			dst = append(dst, ',')
		}
		if put(k, m[k]); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendAnyMap writes a non-nil map[string]any; values other than the
// common scalars go through encoding/json.
func appendAnyMap(dst []byte, m map[string]any) ([]byte, error) {
	var buf [8]string
	var err error
	dst = append(dst, '{')
	for i, k := range sortedMapKeys(m, buf[:]) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		switch v := m[k].(type) {
		case nil:
			dst = append(dst, "null"...)
		case string:
			dst = appendJSONString(dst, v)
		case float64:
			dst, err = appendJSONFloat(dst, v)
		case bool:
			dst = strconv.AppendBool(dst, v)
		case int:
			dst = strconv.AppendInt(dst, int64(v), 10)
		case int64:
			dst = strconv.AppendInt(dst, v, 10)
		case json.Number: // stored metadata numbers decode as json.Number
			dst, err = appendJSONNumber(dst, v)
		default:
			dst, err = appendMarshal(dst, v)
		}
		if err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendJSONNumber writes n as encoding/json does: verbatim when it is a
// valid JSON number, "0" when empty; anything else is refused.
func appendJSONNumber(dst []byte, n json.Number) ([]byte, error) {
	if n == "" {
		return append(dst, '0'), nil
	}
	if !validJSONNumber(string(n)) {
		return dst, errAppendFallback
	}
	return append(dst, n...), nil
}

// validJSONNumber reports whether s is a number by the JSON grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = skipDigits(s, i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := skipDigits(s, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := skipDigits(s, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}

// skipDigits returns the index of the first non-digit of s at or after i.
func skipDigits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// appendJSONFloat formats f as encoding/json does for a float64 (ES6
// number formatting); a non-finite f is refused.
func appendJSONFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, errAppendFallback
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

const hexDigits = "0123456789abcdef"

// htmlSafe[b] is true for the ASCII bytes encoding/json copies unescaped
// when it escapes HTML (its htmlSafeSet).
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		switch b {
		case '"', '\\', '<', '>', '&':
		default:
			t[b] = true
		}
	}
	return t
}()

// plainRun returns the length of src's longest prefix of whole 8-byte
// words that appendJSONString copies as they are (htmlSafe bytes only),
// testing a word at once: a byte below 0x20 borrows in x-0x20…, one at or
// above 0x80 has its top bit set, and the five escaped characters make
// zero bytes: '"' (0x22) and '&' (0x26) in x^0x22… once bit 2 is cleared,
// '<' (0x3c) and '>' (0x3e) in x^0x3c… once bit 1 is cleared, '\\' in
// x^0x5c…. (A test may also flag bytes above a flagged one, never a word
// without one.)
func plainRun(src string) int {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(src); i += 8 {
		w := src[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		qa := (x ^ 0x22*ones) &^ (0x04 * ones)
		lg := (x ^ 0x3c*ones) &^ (0x02 * ones)
		bs := x ^ 0x5c*ones
		bad := (x - 0x20*ones) | x | (qa-ones)&^qa | (lg-ones)&^lg | (bs-ones)&^bs
		if bad&tops != 0 {
			break
		}
	}
	return i
}

// appendJSONString is encoding/json's appendString with escapeHTML set:
// control characters, quote, backslash, <, > and & escaped, invalid UTF-8
// replaced by \ufffd, U+2028 and U+2029 escaped.
func appendJSONString(dst []byte, src string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(src); {
		if i+8 <= len(src) {
			if n := plainRun(src[i:]); n > 0 {
				i += n
				continue
			}
		}
		if b := src[i]; b < utf8.RuneSelf {
			if htmlSafe[b] {
				i++
				continue
			}
			dst = append(dst, src[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(src[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, src[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, src[start:]...)
	return append(dst, '"')
}
