package catalog

// The catalog record encoding (methods.go).
//
// A catalog record was a JSON object (≈ 120–150 bytes a passage on 300 k
// generated passages, half of it the metadata key kinds, which every
// document of a corpus shares); it is now binary:
//
//	0xC3 ‖ flags (1 chunked, 2 context) ‖ str title ‖ uvarint size
//	     ‖ [chunked: uvarint chunks ‖ str text]
//	     ‖ uvarint kindSet ‖ uvarint nFields ‖ nFields × (str field ‖ uvarint n ‖ n × str)
//
// str is uvarint length ‖ bytes; fields are in name order. kindSet names
// the record's metadata key kinds (infer.go) in the kindsets
// bucket, which stores every distinct set once — "i" ‖ uint32 id → set,
// "e" ‖ set → uint32 id, a set being uvarint n ‖ n × (str key ‖ str
// kind) in key order — and 0 is the empty set. Sets are never deleted
// (there are as many as distinct metadata shapes, at most one per
// document); a catalog rebuild starts them afresh. JSON records (they
// start with '{') still read and are rewritten binary with their
// document.
//
// The title and size of an unchunked document repeat what its index
// record holds; they stay so that x-rcpgo/list pages through the catalog
// alone (≈ 35 bytes a passage).

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/rcpgo/rcpgo/internal/varint"
	bolt "go.etcd.io/bbolt"
)

const (
	catalogRecordTag = 0xC3
	catChunked       = 1
	catContext       = 2
	// catalogFill is the page fill of the catalog's id-keyed records:
	// ids arrive mostly ascending from some point of the key space (d1,
	// d2, … d10, …), which left bbolt's default half-full pages half
	// empty (92 MB allocated for 47 MB of records at 300 k).
	catalogFill = 0.9
)

var bucketKindSets = []byte("kindsets")

var errCatalogRecord = errors.New("malformed catalog record")

// encodeCatalogRecord encodes rec, storing its kind set in tx's kindsets
// bucket when it is new.
func encodeCatalogRecord(tx *bolt.Tx, rec *Record) ([]byte, error) {
	set, err := internKindSet(tx, rec.Kinds)
	if err != nil {
		return nil, err
	}
	var flags byte
	if rec.Chunks > 0 {
		flags |= catChunked
	}
	if rec.Context {
		flags |= catContext
	}
	b := make([]byte, 0, 16+len(rec.Title)+len(rec.Text))
	b = append(b, catalogRecordTag, flags)
	b = appendCatStr(b, rec.Title)
	b = binary.AppendUvarint(b, uint64(max(rec.Size, 0)))
	if rec.Chunks > 0 {
		b = binary.AppendUvarint(b, uint64(rec.Chunks))
		b = appendCatStr(b, rec.Text)
	}
	b = binary.AppendUvarint(b, uint64(set))
	b = binary.AppendUvarint(b, uint64(len(rec.Values)))
	for _, f := range slices.Sorted(maps.Keys(rec.Values)) {
		b = appendCatStr(b, f)
		b = binary.AppendUvarint(b, uint64(len(rec.Values[f])))
		for _, v := range rec.Values[f] {
			b = appendCatStr(b, v)
		}
	}
	return b, nil
}

func appendCatStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// encodeKindSet is the canonical form of a kind set (keys in order).
func encodeKindSet(kinds map[string]string) []byte {
	b := binary.AppendUvarint(nil, uint64(len(kinds)))
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		b = appendCatStr(appendCatStr(b, k), kinds[k])
	}
	return b
}

func kindSetKey(prefix byte, rest []byte) []byte { return append([]byte{prefix}, rest...) }

// internKindSet returns the id of kinds in the kindsets bucket, adding it
// when new (0: the empty set).
func internKindSet(tx *bolt.Tx, kinds map[string]string) (uint32, error) {
	if len(kinds) == 0 {
		return 0, nil
	}
	b, err := tx.CreateBucketIfNotExists(bucketKindSets)
	if err != nil {
		return 0, err
	}
	enc := encodeKindSet(kinds)
	if v := b.Get(kindSetKey('e', enc)); len(v) == 4 {
		return binary.BigEndian.Uint32(v), nil
	}
	seq, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	if seq > 1<<32-1 {
		return 0, fmt.Errorf("catalog: kind sets exhausted")
	}
	id := binary.BigEndian.AppendUint32(nil, uint32(seq))
	if err := b.Put(kindSetKey('e', enc), id); err != nil {
		return 0, err
	}
	return uint32(seq), b.Put(kindSetKey('i', id), enc)
}

// decodeCatalogRecord decodes a catalog record of either encoding.
func decodeCatalogRecord(tx *bolt.Tx, v []byte) (*Record, error) {
	rec := new(Record)
	if len(v) > 0 && v[0] == '{' {
		if err := json.Unmarshal(v, rec); err != nil {
			return nil, fmt.Errorf("%w: %v", errCatalogRecord, err)
		}
		return rec, nil
	}
	r := varint.New(v)
	if r.Byte() != catalogRecordTag {
		return nil, fmt.Errorf("%w: unknown tag", errCatalogRecord)
	}
	flags := r.Byte()
	rec.Title = r.Str()
	rec.Size = int64(r.Uvarint())
	if flags&catChunked != 0 {
		rec.Chunks = int(r.Uvarint())
		rec.Text = r.Str()
	}
	rec.Context = flags&catContext != 0
	set := r.Uvarint()
	if n := r.Count(); n > 0 {
		rec.Values = make(map[string][]string, n)
		for range n {
			f := r.Str()
			vals := make([]string, r.Count())
			for i := range vals {
				vals[i] = r.Str()
			}
			rec.Values[f] = vals
		}
	}
	if r.Failed() || r.Off != len(v) || set > 1<<32-1 || rec.Size < 0 || rec.Chunks < 0 {
		return nil, fmt.Errorf("%w: truncated, out of range or trailing bytes", errCatalogRecord)
	}
	if set != 0 {
		var err error
		if rec.Kinds, err = kindSet(tx, uint32(set)); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// kindSet reads kind set id.
func kindSet(tx *bolt.Tx, id uint32) (map[string]string, error) {
	var enc []byte
	if b := tx.Bucket(bucketKindSets); b != nil {
		enc = b.Get(kindSetKey('i', binary.BigEndian.AppendUint32(nil, id)))
	}
	if enc == nil {
		return nil, fmt.Errorf("%w: kind set %d missing", errCatalogRecord, id)
	}
	r := varint.New(enc)
	n := r.Count()
	kinds := make(map[string]string, n)
	for range n {
		k := r.Str()
		kinds[k] = r.Str()
	}
	if r.Failed() || r.Off != len(enc) {
		return nil, fmt.Errorf("%w: kind set %d malformed", errCatalogRecord, id)
	}
	return kinds, nil
}
