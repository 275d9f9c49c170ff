package index

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp/filter"
)

// Bitset is a fixed-size set of segment-local document ordinals.
type Bitset struct {
	words []uint64
	n     int
}

// NewBitset returns an empty set over [0, n).
func NewBitset(n int) *Bitset { return &Bitset{words: make([]uint64, (n+63)/64), n: n} }

// grow extends the universe to at least n (recovery's live set, filled in
// id order, grows as it reads when no manifest bounds it).
func (b *Bitset) grow(n int) {
	if n > b.n {
		w := (n + 63) / 64
		b.words = slices.Grow(b.words, w-len(b.words))[:w]
		b.n = n
	}
}

// Len is the size of the universe.
func (b *Bitset) Len() int { return b.n }

// Set adds i.
func (b *Bitset) Set(i uint32) { b.words[i>>6] |= 1 << (i & 63) }

// Has reports whether i is in the set.
func (b *Bitset) Has(i uint32) bool { return b.words[i>>6]&(1<<(i&63)) != 0 }

// Members returns the members in ascending order.
func (b *Bitset) Members() []uint32 {
	var out []uint32
	for wi, w := range b.words {
		for w != 0 {
			out = append(out, uint32(wi*64+bits.TrailingZeros64(w)))
			w &= w - 1
		}
	}
	return out
}

// Count returns the number of members.
func (b *Bitset) Count() int {
	c := 0
	for _, w := range b.words {
		c += bits.OnesCount64(w)
	}
	return c
}

// Clone returns a copy.
func (b *Bitset) Clone() *Bitset {
	return &Bitset{words: append([]uint64(nil), b.words...), n: b.n}
}

// And intersects o into b.
func (b *Bitset) And(o *Bitset) {
	for i := range b.words {
		b.words[i] &= o.words[i]
	}
}

// Or unions o into b.
func (b *Bitset) Or(o *Bitset) {
	for i := range b.words {
		b.words[i] |= o.words[i]
	}
}

// Not complements b within its universe.
func (b *Bitset) Not() {
	for i := range b.words {
		b.words[i] = ^b.words[i]
	}
	if r := b.n % 64; r != 0 {
		b.words[len(b.words)-1] &= (1 << r) - 1
	}
}

// FieldReader exposes one segment's metadata indexes to a Filter. Local
// ordinals run over [0, Len()).
type FieldReader interface {
	Len() int
	// Keyword returns the documents whose string field equals value, as a
	// scalar or as an array element.
	Keyword(field, value string) *Bitset
	// KeywordScan returns the documents with a string value of field (scalar
	// values and/or array elements) for which match is true. It scans the
	// field's dictionary, not the documents.
	KeywordScan(field string, scalars, elements bool, match func(string) bool) *Bitset
	// Bool returns the documents whose field is the boolean v.
	Bool(field string, v bool) *Bitset
	// Range returns the documents with a numeric value of field within the
	// bounds (dates as epoch milliseconds, for fields declared FieldDate).
	Range(field string, lo, hi float64, loInclusive, hiInclusive bool) *Bitset
	// Exists returns the documents that have field (non-null).
	Exists(field string) *Bitset
	// DocNum returns the engine-wide document number of local ordinal i.
	DocNum(i int) search.DocNum
	// Doc loads the stored document of local ordinal i (slow path for
	// predicates no index answers).
	Doc(i int) (*search.Document, error)
	// Err is non-nil once the search compiling the filter was cancelled
	// or timed out: loops over documents or filter operands check it, so
	// a cancelled search stops compiling within milliseconds.
	Err() error
}

// checkEvery is how many loop iterations run between two Err checks in
// filter compilation: frequent enough to stop within milliseconds, rare
// enough to cost nothing measurable.
const checkEvery = 256

// Filter restricts a search to documents whose metadata match. It is
// compiled once per segment into a Bitset.
type Filter interface {
	Compile(r FieldReader) (*Bitset, error)
}

// DocFilter is the simplest Filter: a predicate on document numbers.
type DocFilter interface {
	Match(search.DocNum) bool
}

// FilterFunc adapts a DocFilter (evaluated for every document of a segment).
func FilterFunc(f DocFilter) Filter { return docNumFilter{f} }

type docNumFilter struct{ f DocFilter }

func (d docNumFilter) Compile(r FieldReader) (*Bitset, error) {
	b := NewBitset(r.Len())
	for i := 0; i < r.Len(); i++ {
		if i%(16*checkEvery) == 0 {
			if err := r.Err(); err != nil {
				return nil, err
			}
		}
		if d.f.Match(r.DocNum(i)) {
			b.Set(uint32(i))
		}
	}
	return b, nil
}

// Eq matches documents whose field equals value (or, for arrays, has an
// element equal to it): a string, bool, number, or time.Time for fields
// declared FieldDate.
func Eq(field string, value any) Filter { return eqFilter{field, value} }

type eqFilter struct {
	field string
	value any
}

func (e eqFilter) Compile(r FieldReader) (*Bitset, error) {
	switch v := e.value.(type) {
	case string:
		return r.Keyword(e.field, v), nil
	case bool:
		return r.Bool(e.field, v), nil
	case time.Time:
		ms := timeMillis(v)
		return r.Range(e.field, ms, ms, true, true), nil
	}
	f, ok := search.MetaNumber(e.value)
	if !ok {
		return nil, fmt.Errorf("index: filter on %q: unsupported value type %T", e.field, e.value)
	}
	return r.Range(e.field, f, f, true, true), nil
}

// In matches documents whose field equals any of values.
func In(field string, values ...any) Filter {
	fs := make([]Filter, len(values))
	for i, v := range values {
		fs[i] = Eq(field, v)
	}
	return orFilter(fs)
}

// Range matches numeric/date values within [lo, hi] (each bound may be
// excluded, and ±Inf leaves it open).
func Range(field string, lo, hi float64, loInclusive, hiInclusive bool) Filter {
	return rangeFilter{field, lo, hi, loInclusive, hiInclusive}
}

// Gt, Gte, Lt, Lte are one-sided ranges.
func Gt(field string, v float64) Filter  { return Range(field, v, math.Inf(1), false, true) }
func Gte(field string, v float64) Filter { return Range(field, v, math.Inf(1), true, true) }
func Lt(field string, v float64) Filter  { return Range(field, math.Inf(-1), v, true, false) }
func Lte(field string, v float64) Filter { return Range(field, math.Inf(-1), v, true, true) }

type rangeFilter struct {
	field        string
	lo, hi       float64
	loInc, hiInc bool
}

func (f rangeFilter) Compile(r FieldReader) (*Bitset, error) {
	return r.Range(f.field, f.lo, f.hi, f.loInc, f.hiInc), nil
}

// Exists matches documents that have field.
func Exists(field string) Filter { return existsFilter(field) }

type existsFilter string

func (f existsFilter) Compile(r FieldReader) (*Bitset, error) { return r.Exists(string(f)), nil }

// Contains matches documents whose string field contains substr, or whose
// array field has an element equal to it (§8 contains).
func Contains(field, substr string) Filter { return containsFilter{field, substr} }

type containsFilter struct{ field, sub string }

func (c containsFilter) Compile(r FieldReader) (*Bitset, error) {
	b := r.KeywordScan(c.field, true, false, func(v string) bool { return strings.Contains(v, c.sub) })
	b.Or(r.KeywordScan(c.field, false, true, func(v string) bool { return v == c.sub }))
	return b, nil
}

// Predicate evaluates fn on every stored document of a segment. Slow; for
// operators no metadata index answers.
func Predicate(fn func(*search.Document) bool) Filter { return predFilter(fn) }

type predFilter func(*search.Document) bool

func (p predFilter) Compile(r FieldReader) (*Bitset, error) {
	b := NewBitset(r.Len())
	for i := 0; i < r.Len(); i++ {
		if i%checkEvery == 0 {
			if err := r.Err(); err != nil {
				return nil, err
			}
		}
		d, err := r.Doc(i)
		if err != nil {
			return nil, err
		}
		if d != nil && p(d) {
			b.Set(uint32(i))
		}
	}
	return b, nil
}

// And matches documents matching every filter.
func And(fs ...Filter) Filter { return andFilter(fs) }

type andFilter []Filter

func (a andFilter) Compile(r FieldReader) (*Bitset, error) {
	out := NewBitset(r.Len())
	out.Not()
	for _, f := range a {
		if err := r.Err(); err != nil {
			return nil, err
		}
		b, err := f.Compile(r)
		if err != nil {
			return nil, err
		}
		out.And(b)
	}
	return out, nil
}

// Or matches documents matching any filter.
func Or(fs ...Filter) Filter { return orFilter(fs) }

type orFilter []Filter

func (o orFilter) Compile(r FieldReader) (*Bitset, error) {
	out := NewBitset(r.Len())
	for _, f := range o {
		if err := r.Err(); err != nil {
			return nil, err
		}
		b, err := f.Compile(r)
		if err != nil {
			return nil, err
		}
		out.Or(b)
	}
	return out, nil
}

// Not matches documents not matching f.
func Not(f Filter) Filter { return notFilter{f} }

type notFilter struct{ f Filter }

func (n notFilter) Compile(r FieldReader) (*Bitset, error) {
	b, err := n.f.Compile(r)
	if err != nil {
		return nil, err
	}
	b = b.Clone()
	b.Not()
	return b, nil
}

// segFields implements FieldReader over one segment of a snapshot.
type segFields struct {
	ctx    context.Context // the search's; nil: never cancelled
	seg    *segment
	fields map[string]FieldType
	load   func(seq uint64) (*search.Document, error)
	err    error // first stored-document error of a fallback scan
}

func (s *segFields) Len() int { return s.seg.n }

func (s *segFields) Err() error {
	if s.ctx == nil {
		return nil
	}
	return s.ctx.Err()
}

func (s *segFields) Keyword(field, value string) *Bitset {
	if s.fields[field] == FieldText {
		return s.scanStored(field, true, true, func(v string) bool { return v == value })
	}
	b := NewBitset(s.seg.n)
	s.seg.kwDocs(scalarKey(field, value), b.Set)
	s.seg.kwDocs(elemKey(field, value), b.Set)
	return b
}

func (s *segFields) KeywordScan(field string, scalars, elements bool, match func(string) bool) *Bitset {
	if s.fields[field] == FieldText {
		return s.scanStored(field, scalars, elements, match)
	}
	b := NewBitset(s.seg.n)
	for _, prefix := range []string{scalarKey(field, ""), elemKey(field, "")} {
		if prefix[0] == 's' && !scalars || prefix[0] == 'a' && !elements {
			continue
		}
		s.seg.kwPrefix(prefix, func(key string) {
			if match(key[len(prefix):]) {
				s.seg.kwDocs(key, b.Set)
			}
		})
	}
	return b
}

// scanStored evaluates match on the stored string values of field (for
// FieldText fields, whose strings are not indexed).
func (s *segFields) scanStored(field string, scalars, elements bool, match func(string) bool) *Bitset {
	b := NewBitset(s.seg.n)
	for j, i := range s.Exists(field).Members() {
		if j%checkEvery == 0 {
			if err := s.Err(); err != nil {
				if s.err == nil {
					s.err = err
				}
				return b
			}
		}
		d, err := s.Doc(int(i))
		if err != nil || d == nil {
			if s.err == nil {
				s.err = err
			}
			continue
		}
		v, _ := filter.Lookup(d.Meta, field)
		switch x := v.(type) {
		case string:
			if scalars && match(x) {
				b.Set(i)
			}
		case []any:
			if elements {
				for _, e := range x {
					if str, ok := e.(string); ok && match(str) {
						b.Set(i)
						break
					}
				}
			}
		}
	}
	return b
}

func (s *segFields) Bool(field string, v bool) *Bitset {
	b := NewBitset(s.seg.n)
	s.seg.kwDocs(boolKey(field, v), b.Set)
	return b
}

func (s *segFields) Exists(field string) *Bitset {
	b := NewBitset(s.seg.n)
	s.seg.kwDocs(existsKey(field), b.Set)
	return b
}

func (s *segFields) Range(field string, lo, hi float64, loInc, hiInc bool) *Bitset {
	b := NewBitset(s.seg.n)
	c := s.seg.nums[field]
	if c == nil {
		return b
	}
	for i, v := range c.vals {
		if (v > lo || loInc && v == lo) && (v < hi || hiInc && v == hi) {
			b.Set(c.docs[i])
		}
	}
	return b
}

func (s *segFields) DocNum(i int) search.DocNum { return search.DocNum(s.seg.seq(uint32(i))) }

func (s *segFields) Doc(i int) (*search.Document, error) { return s.load(s.seg.seq(uint32(i))) }

// Metadata dictionary keys: a kind byte, the field, NUL, the value.
func scalarKey(field, value string) string { return "s" + field + "\x00" + value }
func elemKey(field, value string) string   { return "a" + field + "\x00" + value }
func existsKey(field string) string        { return "e" + field + "\x00" }
func boolKey(field string, v bool) string {
	if v {
		return "b" + field + "\x00" + "1"
	}
	return "b" + field + "\x00" + "0"
}
