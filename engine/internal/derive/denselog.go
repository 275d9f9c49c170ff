package derive

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/store"
	"github.com/rcpgo/rcpgo/engine/search"
)

// The dense log lives in engine.db and is written in the same transaction
// as the document catalog, before index/add answers: it is what makes a
// write durable for the dense side. Vectors and the HNSW graph are derived
// from it in the background (deriver.go).
//
//	dense      id → dense record: the text the encoder sees (compressed as the
//	           document store compresses texts), the parent (encodeDenseRecord;
//	           logs written before it hold JSON records, still read)
//	denseids   id → ann key (u64 BE); keys are never reused
//	densekeys  ann key → id
//	denseops   seq (u64 BE) → op: 'a' or 'd' + ann key (u64 BE). Every change
//	           of a unit's dense text appends one; a generation checkpoint
//	           covers a prefix of them, and the prefix is trimmed once the
//	           checkpoint is durable.
//	densemeta  "gen" → the published generation (u64 BE), "identity" → its
//	           encoder identity, "fitunits" → the corpus size (u64 BE) its
//	           LSA basis was fitted at, "layout" → "2"
var (
	bucketDense     = []byte("dense")
	bucketDenseIDs  = []byte("denseids")
	bucketDenseKeys = []byte("densekeys")
	bucketDenseOps  = []byte("denseops")
	bucketDenseMeta = []byte("densemeta")

	keyGen      = []byte("gen")
	keyIdentity = []byte("identity")
	keyFitUnits = []byte("fitunits")
	keyLayout   = []byte("layout")
)

const (
	denseLayout = "2"
	opAdd       = 'a'
	opDelete    = 'd'
)

type denseRecord struct {
	Parent string `json:"p,omitempty"`
	Text   string `json:"t"`
}

// denseRecordTag starts a binary dense record:
//
//	0xD2 ‖ uvarint len(parent) ‖ parent ‖ uvarint len(text) ‖ store.AppendText(text)
//
// Earlier records are JSON objects (they start with '{').
const denseRecordTag = 0xD2

func encodeDenseRecord(parent, text string) []byte {
	b := make([]byte, 0, 2*binary.MaxVarintLen32+1+len(parent)+len(text))
	b = append(b, denseRecordTag)
	b = binary.AppendUvarint(b, uint64(len(parent)))
	b = append(b, parent...)
	b = binary.AppendUvarint(b, uint64(len(text)))
	return store.AppendText(b, text)
}

// decodeDenseRecord reads a dense record; withText false leaves the text
// undecoded (binary records).
func decodeDenseRecord(v []byte, withText bool) (denseRecord, error) {
	var r denseRecord
	if len(v) > 0 && v[0] == '{' {
		err := json.Unmarshal(v, &r)
		return r, err
	}
	if len(v) == 0 || v[0] != denseRecordTag {
		return r, errors.New("engine: unknown dense record")
	}
	pl, n := binary.Uvarint(v[1:])
	if n <= 0 || pl > uint64(len(v)-1-n) {
		return r, errors.New("engine: bad dense record parent")
	}
	off := 1 + n
	r.Parent = string(v[off : off+int(pl)])
	off += int(pl)
	tl, n := binary.Uvarint(v[off:])
	if n <= 0 {
		return r, errors.New("engine: bad dense record text length")
	}
	if !withText {
		return r, nil
	}
	var err error
	r.Text, err = store.DecodeText(v[off+n:], tl)
	return r, err
}

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// denseTx is the dense log inside one bbolt write transaction.
type denseTx struct {
	recs, ids, keys, ops *bolt.Bucket
}

func openDenseTx(tx *bolt.Tx) denseTx {
	d := denseTx{recs: tx.Bucket(bucketDense), ids: tx.Bucket(bucketDenseIDs),
		keys: tx.Bucket(bucketDenseKeys), ops: tx.Bucket(bucketDenseOps)}
	// Keys and op numbers only grow: their pages split full, not half full
	// (bbolt's default suits random inserts).
	d.keys.FillPercent, d.ops.FillPercent = 1, 1
	return d
}

// put records the dense text of a unit; an unchanged text appends no op,
// so re-adding a document never re-embeds it.
func (d denseTx) put(id, parent, text string) error {
	return d.putEncoded(denseUnit{id: id, parent: parent, text: text, rec: encodeDenseRecord(parent, text)})
}

// denseUnit is a unit's dense text and its record (encodeDenseRecord),
// encoded before the write lock is taken (planWrite): compressing the
// texts inside engine.db's transaction lengthened every group commit.
type denseUnit struct {
	id, parent, text string
	rec              []byte
}

// putEncoded is put with the record already encoded.
func (d denseTx) putEncoded(u denseUnit) error {
	id, rec := u.id, u.rec
	if old := d.recs.Get([]byte(id)); old != nil {
		if bytes.Equal(old, rec) {
			return nil
		}
		if r, err := decodeDenseRecord(old, true); err == nil && r.Parent == u.parent && r.Text == u.text {
			return nil
		}
	}
	if err := d.recs.Put([]byte(id), rec); err != nil {
		return err
	}
	key, err := d.keyOf(id)
	if err != nil {
		return err
	}
	return d.op(opAdd, key)
}

// keyOf returns the ann key of id, assigning one when it has none.
func (d denseTx) keyOf(id string) (uint64, error) {
	if k := d.ids.Get([]byte(id)); len(k) == 8 {
		return binary.BigEndian.Uint64(k), nil
	}
	key, err := d.keys.NextSequence()
	if err != nil {
		return 0, err
	}
	if err := d.ids.Put([]byte(id), be64(key)); err != nil {
		return 0, err
	}
	return key, d.keys.Put(be64(key), []byte(id))
}

// del removes a unit.
func (d denseTx) del(id string) error {
	if d.recs.Get([]byte(id)) == nil {
		return nil
	}
	if err := d.recs.Delete([]byte(id)); err != nil {
		return err
	}
	k := d.ids.Get([]byte(id))
	if len(k) != 8 {
		return nil
	}
	key := binary.BigEndian.Uint64(k)
	if err := d.ids.Delete([]byte(id)); err != nil {
		return err
	}
	if err := d.keys.Delete(be64(key)); err != nil {
		return err
	}
	return d.op(opDelete, key)
}

func (d denseTx) op(kind byte, key uint64) error {
	seq, err := d.ops.NextSequence()
	if err != nil {
		return err
	}
	return d.ops.Put(be64(seq), append([]byte{kind}, be64(key)...))
}

// deleteUnit removes id's record and its chunks' records; keepSelf keeps
// the record of id itself (it is being re-added).
func (d denseTx) deleteUnit(id string, keepSelf bool) error {
	if !keepSelf {
		if err := d.del(id); err != nil {
			return err
		}
	}
	return d.trimChunks(id, 0)
}

// trimChunks removes the records of chunks n, n+1, ... of parent.
func (d denseTx) trimChunks(parent string, n int) error {
	prefix := []byte(parent + "#c")
	var dead []string
	c := d.recs.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if r, err := decodeDenseRecord(v, false); err != nil || r.Parent != parent {
			continue
		}
		if i, err := strconv.Atoi(string(k[len(prefix):])); err == nil && i >= n {
			dead = append(dead, string(k))
		}
	}
	for _, k := range dead {
		if err := d.del(k); err != nil {
			return err
		}
	}
	return nil
}

// migrateDenseLog brings a dense log of layout 1 (no keys, vectors of
// external encoders in engine.db, the LSA model beside it) to layout 2:
// every unit gets a key and the generation is rebuilt in the background.
func migrateDenseLog(tx *bolt.Tx) (migrated bool, err error) {
	meta := tx.Bucket(bucketDenseMeta)
	if string(meta.Get(keyLayout)) == denseLayout {
		return false, nil
	}
	d := openDenseTx(tx)
	var ids []string
	if err := d.recs.ForEach(func(k, _ []byte) error { ids = append(ids, string(k)); return nil }); err != nil {
		return false, err
	}
	for _, id := range ids {
		if _, err := d.keyOf(id); err != nil {
			return false, err
		}
	}
	for _, old := range [][]byte{[]byte("vectors"), []byte("vectormeta")} {
		if tx.Bucket(old) != nil {
			if err := tx.DeleteBucket(old); err != nil {
				return false, err
			}
		}
	}
	return len(ids) > 0, meta.Put(keyLayout, []byte(denseLayout))
}

// denseOp is one entry of the op log.
type denseOp struct {
	seq  uint64
	kind byte
	key  uint64
}

// readOps returns up to n ops after seq.
func readOps(tx *bolt.Tx, after uint64, n int) ([]denseOp, error) {
	var out []denseOp
	c := tx.Bucket(bucketDenseOps).Cursor()
	for k, v := c.Seek(be64(after + 1)); k != nil && len(out) < n; k, v = c.Next() {
		if len(k) != 8 || len(v) != 9 || (v[0] != opAdd && v[0] != opDelete) {
			return nil, fmt.Errorf("engine: corrupt dense op %x", k)
		}
		out = append(out, denseOp{seq: binary.BigEndian.Uint64(k), kind: v[0], key: binary.BigEndian.Uint64(v[1:])})
	}
	return out, nil
}

// trimOps deletes the ops up to seq (a durable checkpoint covers them).
func trimOps(tx *bolt.Tx, upTo uint64) error {
	c := tx.Bucket(bucketDenseOps).Cursor()
	for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= upTo; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// unitText returns the dense text of the unit holding key, "" and false
// when the key is no longer live.
func unitText(tx *bolt.Tx, key uint64) (string, bool) {
	id := tx.Bucket(bucketDenseKeys).Get(be64(key))
	if id == nil {
		return "", false
	}
	v := tx.Bucket(bucketDense).Get(id)
	if v == nil {
		return "", false
	}
	r, err := decodeDenseRecord(v, true)
	if err != nil {
		return "", false
	}
	return r.Text, true
}

// pruneDenseLog deletes the dense records of units not in live. A crash
// that kept a write's dense log commit without its index commit
// (commitLocked) leaves the log naming a write that was never acknowledged:
// dense recall drops such a unit at query time, but it would stay
// embedded, in the HNSW graph and among the RAPTOR tree's leaves.
func pruneDenseLog(d denseTx, live map[string]bool) (int, error) {
	var dead []string
	c := d.recs.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if !live[string(k)] {
			dead = append(dead, string(k))
		}
	}
	for _, id := range dead {
		if err := d.del(id); err != nil {
			return 0, err
		}
	}
	return len(dead), nil
}

// syncDenseLog makes the dense log's units of the documents ids those of
// the index (units): the index's text for each live unit, no record for
// the others.
func syncDenseLog(d denseTx, ids []string, units map[string]*search.Document) error {
	for _, u := range unitsOf(d.recs, ids) {
		if units[u] == nil {
			if err := d.del(u); err != nil {
				return err
			}
		}
	}
	for _, u := range slices.Sorted(maps.Keys(units)) {
		doc, parent := units[u], ""
		if doc.Chunk != nil {
			parent = doc.Chunk.DocID
		}
		if err := d.put(u, parent, Text(doc)); err != nil {
			return err
		}
	}
	return nil
}

// unitsOf lists the units of the dense log (recs) that belong to the
// documents ids: each id and its chunks id#cN.
func unitsOf(recs *bolt.Bucket, ids []string) []string {
	var out []string
	c := recs.Cursor()
	for _, id := range ids {
		if recs.Get([]byte(id)) != nil {
			out = append(out, id)
		}
		prefix := []byte(id + "#c")
		for k, _ := c.Seek(prefix); k != nil && strings.HasPrefix(string(k), string(prefix)); k, _ = c.Next() {
			if parent, _, ok := catalog.ParseChunkID(string(k)); ok && parent == id {
				out = append(out, string(k))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Text is what the dense encoder sees of a unit: its title and text.
func Text(d *search.Document) string {
	if d.Title == "" {
		return d.Text
	}
	return d.Title + "\n" + d.Text
}

// Buckets are the dense log's buckets of engine.db.
var Buckets = [][]byte{bucketDense, bucketDenseIDs, bucketDenseKeys, bucketDenseOps, bucketDenseMeta}

// Current reports whether tx's dense log has the current layout (nothing
// for Migrate to do).
func Current(tx *bolt.Tx) bool {
	return string(tx.Bucket(bucketDenseMeta).Get(keyLayout)) == denseLayout
}

// Migrate brings an earlier layout of the dense log to the current one;
// migrated reports that the dense index must be rebuilt.
func Migrate(tx *bolt.Tx) (migrated bool, err error) { return migrateDenseLog(tx) }

// Log is the dense log inside one engine.db write transaction, for a
// write's commit: each change of a unit's dense text appends an op for the
// deriver.
type Log struct{ tx denseTx }

// OpenLog opens the dense log in tx.
func OpenLog(tx *bolt.Tx) Log { return Log{openDenseTx(tx)} }

// Put records u's dense text; an unchanged text appends no op.
func (l Log) Put(u Unit) error { return l.tx.putEncoded(denseUnit(u)) }

// Delete removes id's record and its chunks' records; keepSelf keeps id's
// own (it is being re-added whole).
func (l Log) Delete(id string, keepSelf bool) error { return l.tx.deleteUnit(id, keepSelf) }

// TrimChunks removes the records of chunks n, n+1, ... of parent.
func (l Log) TrimChunks(parent string, n int) error { return l.tx.trimChunks(parent, n) }

// Seq is the seq of the log's last op.
func (l Log) Seq() uint64 { return l.tx.ops.Sequence() }

// Unit is a unit's dense text with its record encoded: a write encodes it
// before the write lock (compressing texts inside engine.db's transaction
// lengthened every group commit).
type Unit denseUnit

// NewUnit encodes d's dense record.
func NewUnit(d *search.Document) Unit {
	u := denseUnit{id: d.ID, text: Text(d)}
	if d.Chunk != nil {
		u.parent = d.Chunk.DocID
	}
	u.rec = encodeDenseRecord(u.parent, u.text)
	return Unit(u)
}

// MarkBehind records, in a write transaction of an engine with dense off,
// that the dense log no longer matches the index (a later Open with dense
// on backfills it).
func MarkBehind(tx *bolt.Tx) error { return markDenseBehind(tx) }

// Reconcile makes the dense log's units of the documents ids those the
// index holds (units), in a transaction of the catalog's recovery.
func Reconcile(tx *bolt.Tx, ids []string, units map[string]*search.Document) error {
	return syncDenseLog(openDenseTx(tx), ids, units)
}

// Prune deletes the dense records of units not in live (a rebuild of the
// catalog) and returns how many went.
func Prune(tx *bolt.Tx, live map[string]bool) (int, error) {
	return pruneDenseLog(openDenseTx(tx), live)
}
