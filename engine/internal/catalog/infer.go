package catalog

// Filter fields inferred from metadata (issue 16 finding 8).
//
// When no filter fields are declared (Config.Fields is empty: no rcpd
// --field, no "fields" in the config file), the engine advertises the
// top-level metadata keys whose values have one consistent type across the
// stored documents:
//
//	strings, or arrays of strings   keyword
//	true / false                    bool
//	integral numbers                int
//	numbers with a fraction         float (also a mix of int and float)
//
// A key is not advertised when any stored document gives it another kind
// of value (an object, a mixed array, a string longer than 512 bytes, a
// type the others do not share), when its name starts with "_" or holds a
// "." (reserved and nested names), or when 32 other keys are carried by
// more documents. Only a document's first 64 keys (by name) are looked at.
// Declared fields take precedence: once any field is declared, nothing is
// inferred.
//
// The catalog (methods.go) keeps each document's key kinds and, in the
// kinds bucket, the number of documents per (key, kind). A pair appearing
// or disappearing moves the bucket's sequence; Describe then recomputes
// the set. So the inferred fields survive a restart, follow deletions, and
// every new session sees the fields known when it starts (a session's
// capabilities stay frozen, §13.2). The index needs no declaration to
// filter on them: undeclared keys are indexed by their JSON type
// (index.FieldAuto).

import (
	"encoding/binary"
	"maps"
	"math"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp/filter"
)

const (
	maxInferredFields = 32
	maxKindsPerDoc    = 64
	maxFieldNameBytes = 64
)

var bucketKinds = []byte("kinds")

// The kind of a metadata value, as a document's catalog record keeps it.
const (
	kindKeyword = "k"
	kindBool    = "b"
	kindInt     = "i"
	kindFloat   = "f"
	kindOther   = "x" // never filterable: rules its key out
)

// Kinds returns the kind of each inferable top-level key of meta
// (nil when there is none).
func Kinds(meta map[string]any) map[string]string {
	keys := make([]string, 0, len(meta))
	for k, v := range meta {
		if v != nil && inferableName(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) > maxKindsPerDoc {
		keys = keys[:maxKindsPerDoc]
	}
	var out map[string]string
	for _, k := range keys {
		kind := valueKind(meta[k])
		if kind == "" {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(keys))
		}
		out[k] = kind
	}
	return out
}

func inferableName(k string) bool {
	if k == "" || len(k) > maxFieldNameBytes || k[0] == '_' || strings.Contains(k, ".") || !utf8.ValidString(k) {
		return false
	}
	return strings.IndexFunc(k, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// valueKind classifies one metadata value ("" for an empty array, which
// says nothing).
func valueKind(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > maxValueBytes {
			return kindOther
		}
		return kindKeyword
	case bool:
		return kindBool
	case []string:
		return stringsKind(len(x), func(i int) (string, bool) { return x[i], true })
	case []any:
		return stringsKind(len(x), func(i int) (string, bool) { s, ok := x[i].(string); return s, ok })
	}
	f, ok := search.MetaNumber(v)
	switch {
	case !ok || math.IsNaN(f) || math.IsInf(f, 0):
		return kindOther
	case f == math.Trunc(f) && math.Abs(f) <= 1<<53:
		return kindInt
	default:
		return kindFloat
	}
}

func stringsKind(n int, at func(int) (string, bool)) string {
	if n == 0 {
		return ""
	}
	for i := 0; i < n; i++ {
		if s, ok := at(i); !ok || len(s) > maxValueBytes {
			return kindOther
		}
	}
	return kindKeyword
}

// countKinds moves the (key, kind) document counts from old's kinds to
// rec's (either may be nil) and bumps the bucket's sequence when a pair
// appears or disappears.
func countKinds(b *bolt.Bucket, old, rec *Record) error {
	delta := map[string]int64{}
	if old != nil {
		for k, kind := range old.Kinds {
			delta[string(valueKey(k, kind))]--
		}
	}
	if rec != nil {
		for k, kind := range rec.Kinds {
			delta[string(valueKey(k, kind))]++
		}
	}
	changed := false
	for key, d := range delta {
		if d == 0 {
			continue
		}
		var n int64
		if cur := b.Get([]byte(key)); len(cur) == 8 {
			n = int64(binary.BigEndian.Uint64(cur))
		}
		switch after := n + d; {
		case after <= 0:
			changed = changed || n > 0
			if err := b.Delete([]byte(key)); err != nil {
				return err
			}
		default:
			changed = changed || n == 0
			var buf [8]byte
			binary.BigEndian.PutUint64(buf[:], uint64(after))
			if err := b.Put([]byte(key), buf[:]); err != nil {
				return err
			}
		}
	}
	if changed {
		_, err := b.NextSequence()
		return err
	}
	return nil
}

// inferFields reads the advertised set from the kinds bucket.
func inferFields(b *bolt.Bucket) map[string]string {
	kinds := map[string]map[string]bool{}
	docs := map[string]int64{}
	_ = b.ForEach(func(k, v []byte) error {
		field, kind, ok := strings.Cut(string(k), "\x00")
		if !ok || len(v) != 8 {
			return nil
		}
		if kinds[field] == nil {
			kinds[field] = map[string]bool{}
		}
		kinds[field][kind] = true
		docs[field] += int64(binary.BigEndian.Uint64(v))
		return nil
	})
	type candidate struct {
		name, typ string
		docs      int64
	}
	var cands []candidate
	for name, ks := range kinds {
		if typ := fieldType(ks); typ != "" {
			cands = append(cands, candidate{name, typ, docs[name]})
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].docs != cands[j].docs {
			return cands[i].docs > cands[j].docs
		}
		return cands[i].name < cands[j].name
	})
	if len(cands) > maxInferredFields {
		cands = cands[:maxInferredFields]
	}
	out := make(map[string]string, len(cands))
	for _, c := range cands {
		out[c.name] = c.typ
	}
	return out
}

// fieldType is the §8 type of a key seen with kinds ("" when they
// disagree).
func fieldType(kinds map[string]bool) string {
	switch {
	case len(kinds) == 1 && kinds[kindKeyword]:
		return filter.TypeKeyword
	case len(kinds) == 1 && kinds[kindBool]:
		return filter.TypeBool
	case len(kinds) == 1 && kinds[kindInt]:
		return filter.TypeInt
	case len(kinds) == 1 && kinds[kindFloat], len(kinds) == 2 && kinds[kindInt] && kinds[kindFloat]:
		return filter.TypeFloat
	}
	return ""
}

// inferred caches the inferred fields by the kinds bucket's sequence.
type inferred struct {
	mu     sync.Mutex
	seq    uint64 // of the kinds bucket the fields were read at
	read   bool
	fields map[string]string
}

// Inferred returns the filter fields inferred from the stored documents'
// metadata (when none are declared); changed reports a set different
// from the one the last call returned. On an error reading engine.db the
// last set stands (and is returned with the error).
func (c *Catalog) Inferred() (fields map[string]string, changed bool, err error) {
	inf := &c.infer
	inf.mu.Lock()
	defer inf.mu.Unlock()
	var seq uint64
	var read map[string]string
	err = c.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKinds)
		if b == nil {
			return nil
		}
		seq = b.Sequence()
		if !inf.read || seq != inf.seq {
			read = inferFields(b)
		}
		return nil
	})
	if err == nil && (read != nil || !inf.read) {
		changed = !maps.Equal(read, inf.fields) || !inf.read
		inf.seq, inf.read, inf.fields = seq, true, read
	}
	return inf.fields, changed, err
}
