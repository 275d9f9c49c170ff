package engine

// Recovering the document catalog after an unclean stop. A write changes
// the catalog (engine.db) and the index (store.db) in two commits, so a
// crash between them leaves the two disagreeing about the documents of
// that one write — never about others, since writes are serialised. Each
// write therefore names the documents it is about to change (the
// "pending" key of the catalog bucket) in an engine.db commit that
// precedes its index commit: an add in the same transaction as its
// catalog records, a delete in a small transaction of its own before the
// index deletes. After a crash Open re-derives the catalog records (and
// prunes the dense log) of those documents only, from the index's record
// store: its cost is the last write's, not the corpus's (rebuilding the
// whole catalog took 268 s at 1 M documents). A write that fails half-way
// keeps the names of the writes before it (they accumulate until a clean
// Close), so they are reconciled too.

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/pipeline"
	"github.com/rcpgo/rcpgo/engine/store"
)

var keyPending = []byte("pending")

// putPending records ids as the documents of the write being committed
// (in tx, an engine.db transaction committed before the index's). While
// an earlier write has failed half-way (catalogOpen cleared) the names
// accumulate instead of replacing the last write's.
func (e *Engine) putPending(tx *bolt.Tx, ids []string) error {
	b := tx.Bucket(bucketCatalog)
	set := map[string]bool{}
	if !e.catalogOpen.Load() {
		for _, id := range decodePending(b.Get(keyPending)) {
			set[id] = true
		}
	}
	for _, id := range ids {
		set[id] = true
		set[topLevel(id)] = true
	}
	all := make([]string, 0, len(set))
	for id := range set {
		all = append(all, id)
	}
	sort.Strings(all)
	return b.Put(keyPending, []byte(strings.Join(all, "\x00")))
}

func decodePending(v []byte) []string {
	if len(v) == 0 {
		return nil
	}
	return strings.Split(string(v), "\x00")
}

// catalogBuilder derives catalog records from the index's units: a whole
// document is its own record; a chunked one is assembled from its chunks.
type catalogBuilder struct {
	e      *Engine
	recs   map[string]*docRecord
	plain  map[string]bool
	live   map[string]bool // every unit seen
	pieces map[string][]chunkPiece
}

func newCatalogBuilder(e *Engine) *catalogBuilder {
	return &catalogBuilder{e: e, recs: map[string]*docRecord{}, plain: map[string]bool{}, live: map[string]bool{},
		pieces: map[string][]chunkPiece{}}
}

// add takes the unit id, as stored in the index.
func (b *catalogBuilder) add(id string, d *index.Document) {
	b.live[id] = true
	if d.Chunk == nil || d.Chunk.DocID == "" {
		b.recs[id] = &docRecord{Title: d.Title, Size: int64(len(d.Text)), Values: b.e.fieldValues(d.Meta), Kinds: metaKinds(d.Meta)}
		b.plain[id] = true
		return
	}
	parent := d.Chunk.DocID
	ci, _ := pipeline.ReadChunkInfo(d.Meta)
	pc := chunkPiece{index: d.Chunk.Index, start: d.Chunk.Start, end: d.Chunk.End, text: d.Text, title: d.Title, context: ci.Context != ""}
	if _, ok := b.recs[parent]; !ok {
		// Chunks share their document's metadata (plus MetaKey).
		b.recs[parent] = &docRecord{Values: b.e.fieldValues(d.Meta), Kinds: metaKinds(d.Meta)}
	}
	b.pieces[parent] = append(b.pieces[parent], pc)
}

// finish completes the records of chunked documents: the original text
// from the catalog's previous record (old) when every chunk still matches
// it, else reassembled from the chunks.
func (b *catalogBuilder) finish(tx *bolt.Tx, old *bolt.Bucket) {
	for parent, ps := range b.pieces {
		if b.plain[parent] {
			continue // a whole document by that id wins (the engine keeps one of the two)
		}
		rec := b.recs[parent]
		sort.Slice(ps, func(a, b int) bool { return ps[a].index < ps[b].index })
		var prev docRecord
		hasPrev := false
		if v := old.Get([]byte(parent)); v != nil {
			if p, err := decodeCatalogRecord(tx, v); err == nil && p.Chunks > 0 {
				prev, hasPrev = *p, true
			}
		}
		if hasPrev && piecesMatch(prev.Text, ps) {
			rec.Title, rec.Text, rec.Context = prev.Title, prev.Text, prev.Context
		} else {
			rec.Text = reassemble(ps)
			rec.Context = ps[0].context
			switch {
			case hasPrev:
				rec.Title = prev.Title
			case !ps[0].context:
				rec.Title = ps[0].title
			}
		}
		rec.Size = int64(len(rec.Text))
		rec.Chunks = ps[len(ps)-1].index + 1
	}
}

// viewIndexStore runs fn on the index's record store, read before the
// index opens it (fs.ErrNotExist: no store yet). verify walks every page
// first (a full rebuild reads every page anyway); a reconciliation reads a
// few records, each decoded with its own checks.
func (e *Engine) viewIndexStore(verify bool, fn func(*store.ReadTx) error) error {
	path := filepath.Join(e.cfg.Dir, "index", "store.db")
	if _, err := os.Stat(path); err != nil {
		return err
	}
	open := store.OpenUnverified
	if verify {
		open = store.Open
	}
	st, err := open(path)
	if err != nil {
		return err
	}
	err = store.Protect(path, func() error { return st.View(fn) })
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	return err
}

// reconcileCatalog re-derives the catalog records of the pending
// documents from the index's record store and drops the dense records of
// their units that the index does not hold. It returns how many documents
// it looked at.
func (e *Engine) reconcileCatalog(ctx context.Context) (int, error) {
	var ids []string
	var denseUnits []string // the dense log's units of those documents
	if err := e.db.View(func(tx *bolt.Tx) error {
		ids = decodePending(tx.Bucket(bucketCatalog).Get(keyPending))
		if e.cfg.Dense != DenseNone {
			denseUnits = unitsOf(tx.Bucket(bucketDense), ids)
		}
		return nil
	}); err != nil || len(ids) == 0 {
		return 0, err
	}
	b := newCatalogBuilder(e)
	liveUnits := map[string]bool{}
	err := e.viewIndexStore(false, func(tx *store.ReadTx) error {
		get := func(id string) (*index.Document, error) {
			seq, ok := tx.LookupID(id)
			if !ok {
				return nil, nil
			}
			return tx.Doc(seq)
		}
		for _, id := range ids {
			if err := ctx.Err(); err != nil {
				return err
			}
			if d, err := get(id); err != nil {
				return err
			} else if d != nil && (d.Chunk == nil || d.Chunk.DocID == "") {
				b.add(id, d)
			}
			for _, c := range tx.Children(id) {
				if d, err := get(c); err != nil {
					return err
				} else if d != nil && d.Chunk != nil && d.Chunk.DocID == id {
					b.add(c, d)
				}
			}
		}
		for _, u := range denseUnits {
			if _, ok := tx.LookupID(u); ok {
				liveUnits[u] = true
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	return len(ids), e.db.Update(func(tx *bolt.Tx) error {
		docs, vals := catalogTx(tx)
		b.finish(tx, docs)
		for _, id := range ids {
			if err := putRecord(docs, vals, id, b.recs[id]); err != nil {
				return err
			}
		}
		if e.cfg.Dense == DenseNone {
			return nil
		}
		d := openDenseTx(tx)
		for _, u := range denseUnits {
			if !liveUnits[u] {
				if err := d.del(u); err != nil {
					return err
				}
			}
		}
		return nil
	})
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
			if parent, _, ok := parseChunkID(string(k)); ok && parent == id {
				out = append(out, string(k))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// testHookDeleteCommitted, when set (tests only), runs between a delete's
// index commit and its catalog commit: where a crash leaves them apart.
var testHookDeleteCommitted func()
