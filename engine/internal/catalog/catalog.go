// Package catalog is the engine's document catalog: a record per
// top-level document in engine.db, kept in step with the index by every
// write, and what it serves (the x-rcpgo document methods, the inferred
// filter fields).
//
// # The document catalog
//
// The index stores retrieval units: a whole document, or the chunks of a
// chunked one (each chunk holds only its trimmed slice of the text, with
// lineage ChunkRef{DocID, Index, Start, End}); it keeps neither the
// original text of a chunked document nor a listing API. The engine
// therefore keeps a catalog of top-level documents in its own bbolt file
// (engine.db), written under the same locks and in the same transaction as
// the dense text log:
//
//	docs      id → Record (title, size, chunk count, the original text
//	          of chunked documents, the string values of declared fields,
//	          the metadata key kinds; binary, codec.go)
//	kindsets  the distinct sets of metadata key kinds, stored once
//	values    field 0x00 value → number of documents carrying it
//	kinds     key 0x00 kind → number of documents whose metadata key has a
//	          value of that kind (the inferred filter fields, infer.go)
//	catalog   "state" → catalogState
//
// The index stays authoritative for existence, metadata and source: get
// reads the document (or its chunks) from the index and takes only the
// original text and title of chunked documents from the catalog.
//
// The catalog is trusted whole after a clean shutdown: Open marks it dirty
// and Close marks it clean. After a crash only the documents of the last
// write can disagree with the index, and each write names them in both
// files' commits: Open re-derives those (recover.go). When
// the catalog is missing (a data directory written before the catalog
// existed), dirty without that journal (written by an earlier version),
// or was built for another set of declared fields, Open rebuilds it from
// every record of the index's record store (engine/internal/store, read before the
// index opens it). A rebuild or a reconciliation keeps the
// catalog's original text of a chunked document when every live chunk
// still matches it, and otherwise reassembles the text from the chunks at
// their byte offsets (the white space the chunker trimmed between chunks
// comes back as spaces).
package catalog

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/rcpgo/rcpgo/engine/internal/gate"
	"github.com/rcpgo/rcpgo/engine/internal/store"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/trust"
)

// Catalog is the document catalog of one engine.db. Its writes run in the
// callers' transactions (Put, PutPending) under the engine's write lock.
type Catalog struct {
	db     *bolt.DB
	ix     search.Backend // UseIndex (nil until the index opens)
	dir    string
	fields map[string]string
	log    *slog.Logger
	opts   Options
	hooks  Hooks
	gate   *gate.Gate
	// current: the catalog was made current at Open and is marked dirty
	// until Close marks it clean; a failed write clears it.
	current atomic.Bool
	// unsettled: the documents written since a write failed half-way
	// (current cleared), which every later write names again so that the
	// next Open reconciles them all (Names; guarded by the write lock).
	unsettled map[string]bool
	infer     inferred
}

// Options configure a Catalog.
type Options struct {
	DB  *bolt.DB
	Dir string // the data directory (its index/store.db is read at Open)
	// Fields are the declared filterable fields (their values are
	// catalogued for x-rcpgo/values).
	Fields map[string]string
	Log    *slog.Logger
	Gate   *gate.Gate
	// Trust and Screen say how x-rcpgo/get rates a document (WireSource
	// names documents written over the wire).
	Trust      trust.Policy
	Screen     bool
	WireSource string
}

// Hooks keep the other owners of engine.db in step when Open re-derives
// catalog records, in the same transaction.
type Hooks struct {
	// Reconciled: the documents ids were re-derived after a crash from the
	// index, whose live units of them are units.
	Reconciled func(tx *bolt.Tx, ids []string, units map[string]*search.Document) error
	// Rebuilt: the catalog was rebuilt whole; live are the units the index
	// holds.
	Rebuilt func(tx *bolt.Tx, live map[string]bool) error
}

// Buckets are the catalog's buckets of engine.db (created at Open).
var Buckets = [][]byte{bucketCatalog, bucketDocs, bucketValues}

// Open makes the catalog current (rebuilding it from the index's record
// store when it cannot be trusted, before the index is opened) and marks
// it dirty until Close.
func Open(ctx context.Context, opts Options, hooks Hooks) (*Catalog, error) {
	c := &Catalog{db: opts.DB, dir: opts.Dir, fields: opts.Fields, log: opts.Log, opts: opts, hooks: hooks, gate: opts.Gate}
	if err := c.open(ctx); err != nil {
		return nil, err
	}
	c.current.Store(true)
	return c, nil
}

// UseIndex gives the catalog the index, once opened (x-rcpgo/get and the
// delete path read its units).
func (c *Catalog) UseIndex(ix search.Backend) { c.ix = ix }

// Close marks the catalog clean when every write kept it in step (the
// caller has ended every write).
func (c *Catalog) Close() error {
	if c.current.Swap(false) {
		return c.setState(true)
	}
	return nil
}

// Settle keeps the catalog's dirty state through Close (tests: a crash
// after a failed write).
func (c *Catalog) Settle() { c.current.Store(false) }

// Put stores rec under id (nil deletes) in tx, keeping the value and kind
// counts.
func Put(tx *bolt.Tx, id string, rec *Record) error {
	docs, vals := catalogTx(tx)
	return putRecord(docs, vals, id, rec)
}

// Get reads id's record in tx (nil: none, or undecodable).
func Get(tx *bolt.Tx, id string) *Record { return getRecord(tx.Bucket(bucketDocs), id) }

// Record reads id's record (nil: none).
func (c *Catalog) Record(id string) (*Record, error) {
	var rec *Record
	err := c.db.View(func(tx *bolt.Tx) error { rec = Get(tx, id); return nil })
	return rec, err
}

// Scan calls fn with the records after id after, in id order, in one read
// transaction, until fn returns false; an undecodable record fails it
// when strict, and is skipped otherwise.
func (c *Catalog) Scan(after string, strict bool, fn func(id string, rec *Record) bool) error {
	return c.db.View(func(tx *bolt.Tx) error {
		cur := tx.Bucket(bucketDocs).Cursor()
		k, v := cur.Seek([]byte(after))
		if k != nil && after != "" && string(k) == after {
			k, v = cur.Next()
		}
		for ; k != nil; k, v = cur.Next() {
			rec, err := decodeCatalogRecord(tx, v)
			if err != nil {
				if strict {
					return fmt.Errorf("catalog record %q: %w", k, err)
				}
				continue
			}
			if !fn(string(k), rec) {
				return nil
			}
		}
		return nil
	})
}

// IDs lists every catalogued document id, in order.
func (c *Catalog) IDs() ([]string, error) {
	var ids []string
	err := c.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketDocs).ForEach(func(k, _ []byte) error {
			ids = append(ids, string(k))
			return nil
		})
	})
	return ids, err
}

// ChunkID names chunk i of parent.
func ChunkID(parent string, i int) string { return parent + "#c" + strconv.Itoa(i) }

// TopLevel maps a chunk id to its document.
func TopLevel(id string) string {
	if parent, _, ok := ParseChunkID(id); ok {
		return parent
	}
	return id
}

// ErrTooLarge refuses an x-rcpgo/get of more than MaxGetIDs ids.
var ErrTooLarge = errors.New("too many ids")

// Limits of the x-rcpgo methods.
const (
	DefaultListLimit = 100  // x-rcpgo/list and x-rcpgo/values page size
	MaxListLimit     = 1000 // largest page served
	MaxGetIDs        = 1000 // ids per x-rcpgo/get
	maxValueBytes    = 512  // longer field values are not catalogued
	catalogFormat    = 2    // 2: records carry their metadata kinds
)

var (
	bucketDocs    = []byte("docs")
	bucketValues  = []byte("values")
	bucketCatalog = []byte("catalog")
	keyState      = []byte("state")
)

// Record is the catalog entry of a top-level document.
type Record struct {
	Title   string              `json:"t,omitempty"`
	Size    int64               `json:"s"`           // bytes of the document's text
	Chunks  int                 `json:"n,omitempty"` // > 0: chunked into this many chunks
	Text    string              `json:"x,omitempty"` // the original text of a chunked document
	Context bool                `json:"c,omitempty"` // chunks carry a situating context as title
	Values  map[string][]string `json:"v,omitempty"` // declared field → distinct string values
	Kinds   map[string]string   `json:"k,omitempty"` // metadata key → kind of its value (infer.go)
}

type catalogState struct {
	Format int    `json:"format"`
	Clean  bool   `json:"clean"`
	Fields string `json:"fields"` // the declared fields the values were built for
	// Counted: the docs bucket's sequence is the number of documents it
	// holds (putRecord keeps it), so Documents reads one number instead of
	// walking every page of the catalog. A state written by an earlier
	// version lacks it, and openCatalog counts once.
	Counted bool `json:"counted,omitempty"`
	// Journal: every write names the documents it changes before its
	// index commit (recover.go), so after a crash only
	// those are re-derived. A dirty state without it (written by an
	// earlier version) is rebuilt whole.
	Journal bool `json:"journal,omitempty"`
	// Names: every add also names its documents in the index's store, in
	// its index commit, and the two commits run at once (commitLocked), so
	// after a crash the index may hold a write the catalog and the dense
	// log lack; reconcileCatalog repairs both directions. Such a state is
	// written with Journal false: an earlier version, which would
	// reconcile only the catalog's names, rebuilds the catalog whole.
	Names bool `json:"names,omitempty"`
}

func (c *Catalog) fieldsSignature() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(c.fields)) {
		b.WriteString(k + "=" + c.fields[k] + ";")
	}
	return b.String()
}

// open makes the catalog current (rebuilding it when it cannot be
// trusted) and marks it dirty until Close. It runs in Open before the
// index is opened.
func (c *Catalog) open(ctx context.Context) error {
	var st catalogState
	found := false
	if err := c.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketCatalog).Get(keyState); v != nil {
			found = json.Unmarshal(v, &st) == nil
		}
		return nil
	}); err != nil {
		return err
	}
	sig := c.fieldsSignature()
	if found && !st.Clean && (st.Journal || st.Names) && st.Counted && st.Format == catalogFormat && st.Fields == sig {
		start := time.Now()
		n, err := c.reconcile(ctx)
		if err != nil {
			return fmt.Errorf("reconciling the document catalog: %w", err)
		}
		c.log.Info("engine: reconciled the document catalog with the index", "reason", "not closed cleanly", "documents", n,
			"took", time.Since(start).Round(time.Millisecond))
	} else if !found || !st.Clean || st.Format != catalogFormat || st.Fields != sig {
		if found && !st.Clean && st.Names {
			// The rebuild below derives every catalog record, but only
			// drops dense records: the last write's may be missing.
			if _, err := c.reconcile(ctx); err != nil {
				return fmt.Errorf("reconciling the document catalog: %w", err)
			}
		}
		why := "missing"
		switch {
		case found && st.Format != catalogFormat:
			why = "format changed"
		case found && !st.Clean:
			why = "not closed cleanly, by a version without the write journal"
		case found:
			why = "declared fields changed"
		}
		start := time.Now()
		n, err := c.rebuild(ctx)
		if err != nil {
			return fmt.Errorf("rebuilding the document catalog: %w", err)
		}
		if n == 0 && !found {
			return c.setState(false) // a new data directory
		}
		c.log.Info("engine: rebuilt the document catalog", "reason", why, "documents", n, "took", time.Since(start).Round(time.Millisecond))
	} else if !st.Counted {
		if err := c.db.Update(func(tx *bolt.Tx) error {
			docs := tx.Bucket(bucketDocs)
			return docs.SetSequence(uint64(docs.Stats().KeyN))
		}); err != nil {
			return fmt.Errorf("counting the document catalog: %w", err)
		}
	}
	return c.setState(false)
}

// setState records the catalog's state; open has made the
// docs bucket's sequence its count (Counted) before the first call.
func (c *Catalog) setState(clean bool) error {
	b, _ := json.Marshal(catalogState{Format: catalogFormat, Clean: clean, Fields: c.fieldsSignature(), Counted: true, Names: true})
	return c.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketCatalog).Put(keyState, b) })
}

type chunkPiece struct {
	index, start, end int
	text, title       string
	context           bool
}

// rebuild recomputes the catalog from every record of the index's
// record store (a catalog missing, from an earlier version or built for
// other fields; after a crash reconcile re-derives only the last
// write's documents).
func (c *Catalog) rebuild(ctx context.Context) (int, error) {
	b := newCatalogBuilder(c)
	err := c.viewIndexStore(true, func(tx *store.ReadTx) error {
		return tx.ForEachLive(func(id string, seq uint64) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			d, err := tx.Doc(seq)
			if err != nil || d == nil {
				return err
			}
			b.add(id, d)
			return nil
		})
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	err = c.db.Update(func(tx *bolt.Tx) error {
		b.finish(tx, tx.Bucket(bucketDocs))
		for _, bk := range [][]byte{bucketDocs, bucketValues, bucketKinds, bucketKindSets} {
			if err := tx.DeleteBucket(bk); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
				return err
			}
			if _, err := tx.CreateBucket(bk); err != nil {
				return err
			}
		}
		docs, vals := tx.Bucket(bucketDocs), tx.Bucket(bucketValues)
		for _, id := range slices.Sorted(maps.Keys(b.recs)) { // in key order: full pages
			if err := putRecord(docs, vals, id, b.recs[id]); err != nil {
				return err
			}
		}
		if c.hooks.Rebuilt == nil {
			return nil
		}
		return c.hooks.Rebuilt(tx, b.live)
	})
	return len(b.recs), err
}

// piecesMatch reports whether every chunk is text[start:end].
func piecesMatch(text string, ps []chunkPiece) bool {
	for _, p := range ps {
		if p.start < 0 || p.end > len(text) || p.start > p.end || text[p.start:p.end] != p.text {
			return false
		}
	}
	return true
}

// reassemble rebuilds a chunked document's text from its chunks: each
// chunk's text at its byte offsets, gaps (trimmed white space) as spaces;
// white space after the last chunk is lost.
func reassemble(ps []chunkPiece) string {
	n := 0
	for _, p := range ps {
		if p.end-p.start == len(p.text) && p.start >= 0 {
			n = max(n, p.end)
		}
	}
	buf := bytes.Repeat([]byte{' '}, n)
	for _, p := range ps {
		if p.end-p.start == len(p.text) && p.start >= 0 {
			copy(buf[p.start:], p.text)
		}
	}
	return string(buf) // leading gaps stay (as spaces): chunk offsets remain valid
}

// Values returns the catalogued string values of the declared fields
// of meta (an array contributes each element).
func (c *Catalog) Values(meta map[string]any) map[string][]string {
	var out map[string][]string
	for f := range c.fields {
		v, ok := meta[f]
		if !ok {
			continue
		}
		var vals []string
		add := func(x any) {
			if s, ok := valueString(x); ok && s != "" && len(s) <= maxValueBytes && utf8.ValidString(s) {
				for _, have := range vals {
					if have == s {
						return
					}
				}
				vals = append(vals, s)
			}
		}
		if arr, ok := v.([]any); ok {
			for _, x := range arr {
				add(x)
			}
		} else {
			add(v)
		}
		if len(vals) > 0 {
			if out == nil {
				out = map[string][]string{}
			}
			sort.Strings(vals)
			out[f] = vals
		}
	}
	return out
}

// valueString is the string form of a scalar metadata value.
func valueString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return valueString(f)
		}
		return x.String(), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", false
		}
		b, _ := json.Marshal(x)
		return string(b), true
	case float32:
		return valueString(float64(x))
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), true
	}
	return "", false
}

func valueKey(field, value string) []byte {
	k := make([]byte, 0, len(field)+1+len(value))
	k = append(k, field...)
	k = append(k, 0)
	return append(k, value...)
}

// countValues adds delta to the document count of each of rec's values.
func countValues(vals *bolt.Bucket, rec *Record, delta int64) error {
	if rec == nil {
		return nil
	}
	for f, vs := range rec.Values {
		for _, v := range vs {
			k := valueKey(f, v)
			var n int64
			if cur := vals.Get(k); len(cur) == 8 {
				n = int64(binary.BigEndian.Uint64(cur))
			}
			n += delta
			if n <= 0 {
				if err := vals.Delete(k); err != nil {
					return err
				}
				continue
			}
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], uint64(n))
			if err := vals.Put(k, b[:]); err != nil {
				return err
			}
		}
	}
	return nil
}

func getRecord(docs *bolt.Bucket, id string) *Record {
	v := docs.Get([]byte(id))
	if v == nil {
		return nil
	}
	rec, err := decodeCatalogRecord(docs.Tx(), v)
	if err != nil {
		return nil
	}
	return rec
}

// putRecord stores rec under id (nil deletes), keeping the value and kind
// counts.
func putRecord(docs, vals *bolt.Bucket, id string, rec *Record) error {
	prev := docs.Get([]byte(id))
	var old *Record
	if prev != nil {
		old, _ = decodeCatalogRecord(docs.Tx(), prev) // undecodable: replaced, its counts not undone
	}
	kinds, err := docs.Tx().CreateBucketIfNotExists(bucketKinds)
	if err != nil {
		return err
	}
	if err := countKinds(kinds, old, rec); err != nil {
		return err
	}
	if err := countValues(vals, old, -1); err != nil {
		return err
	}
	// The bucket's sequence counts its documents (catalogState.Counted).
	if n := docs.Sequence(); prev != nil && rec == nil && n > 0 {
		if err := docs.SetSequence(n - 1); err != nil {
			return err
		}
	} else if prev == nil && rec != nil {
		if err := docs.SetSequence(n + 1); err != nil {
			return err
		}
	}
	if rec == nil {
		return docs.Delete([]byte(id))
	}
	if err := countValues(vals, rec, 1); err != nil {
		return err
	}
	b, err := encodeCatalogRecord(docs.Tx(), rec)
	if err != nil {
		return err
	}
	docs.FillPercent = catalogFill
	return docs.Put([]byte(id), b)
}

// catalogTx runs fn on the catalog buckets inside tx.
func catalogTx(tx *bolt.Tx) (docs, vals *bolt.Bucket) {
	return tx.Bucket(bucketDocs), tx.Bucket(bucketValues)
}

// ParseChunkID splits "parent#cN".
func ParseChunkID(id string) (string, int, bool) {
	i := strings.LastIndex(id, "#c")
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(id[i+2:])
	if err != nil || n < 0 || strconv.Itoa(n) != id[i+2:] {
		return "", 0, false
	}
	return id[:i], n, true
}

// Forget drops the catalog's state from engine.db (when it is
// there), so that Open rebuilds the catalog from the repaired index.
func Forget(path string) error {
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketCatalog); b != nil {
			return b.Delete(keyState)
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}
