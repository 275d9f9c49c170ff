package engine

// Recovering the document catalog after an unclean stop. A write changes
// the catalog and the dense log (engine.db) and the index (store.db) in
// two commits, so a crash between them leaves the two disagreeing about
// the documents of that one write — never about others, since writes are
// serialised. Each write therefore names the documents it changes (the
// "pending" key of the catalog bucket) in its engine.db commit and, for an
// add, also in its index commit (store.ReadTx.WriteNames): an add's two
// commits run at once, so either may survive without the other. A delete
// names them in a small engine.db transaction of its own before the index
// deletes. After a crash Open re-derives the catalog records and the
// dense log entries of those documents only, from the index's record
// store: its cost is the last write's, not the corpus's (rebuilding the
// whole catalog took 268 s at 1 M documents). A write that fails half-way
// makes every later write name its documents too (they accumulate until a
// clean Close), so they are reconciled as well.

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

	"github.com/rcpgo/rcpgo/engine/graph"
	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/store"
)

var keyPending = []byte("pending")

// writeNames returns the names a write records (caller holds wmu): ids
// and their top-level documents, and while an earlier write has failed
// half-way (catalogOpen cleared) every name written since then, so that
// they accumulate until the next Open reconciles them instead of each
// write replacing the last one's.
func (e *Engine) writeNames(ids []string) []string {
	set := map[string]bool{}
	for _, id := range ids {
		set[id] = true
		set[topLevel(id)] = true
	}
	if !e.catalogOpen.Load() {
		if e.unsettled == nil {
			e.unsettled = map[string]bool{}
		}
		for id := range set {
			e.unsettled[id] = true
		}
		set = e.unsettled
	}
	return sortedKeys(set)
}

// catalogBehind records that the write naming names failed half-way: the
// catalog and the index may disagree about its documents until the next
// Open (caller holds wmu).
func (e *Engine) catalogBehind(names []string) {
	if e.unsettled == nil {
		e.unsettled = map[string]bool{}
	}
	for _, id := range names {
		e.unsettled[id] = true
	}
	e.catalogOpen.Store(false)
}

// putPending records names (writeNames) as the documents of the write
// being committed, in an engine.db transaction.
func putPending(tx *bolt.Tx, names []string) error {
	return tx.Bucket(bucketCatalog).Put(keyPending, []byte(strings.Join(names, "\x00")))
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
func (b *catalogBuilder) add(id string, d *search.Document) {
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

// reconcileCatalog re-derives, from the index's record store, the
// catalog records and the dense log entries of the documents named by the
// last write: in engine.db's pending key and in the store's write names
// (an add's two commits run at once, so after a crash either side may hold
// the write without the other). Each document's record is derived from
// the index; each of its units the index holds gets the index's text in
// the dense log (unchanged text appends no op), and its other units leave
// it; the graph queue gets the documents again. It returns how many
// documents it looked at.
func (e *Engine) reconcileCatalog(ctx context.Context) (int, error) {
	var pending []string
	if err := e.db.View(func(tx *bolt.Tx) error {
		pending = decodePending(tx.Bucket(bucketCatalog).Get(keyPending))
		return nil
	}); err != nil {
		return 0, err
	}
	ids := pending
	b := newCatalogBuilder(e)
	units := map[string]*search.Document{} // the live units of those documents
	err := e.viewIndexStore(false, func(tx *store.ReadTx) error {
		ids = unionSorted(pending, tx.WriteNames())
		get := func(id string) (*search.Document, error) {
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
				units[id] = d
			}
			for _, c := range tx.Children(id) {
				if d, err := get(c); err != nil {
					return err
				} else if d != nil && d.Chunk != nil && d.Chunk.DocID == id {
					b.add(c, d)
					units[c] = d
				}
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	return len(ids), e.db.Update(func(tx *bolt.Tx) error {
		docs, vals := catalogTx(tx)
		b.finish(tx, docs)
		for _, id := range ids {
			if err := putRecord(docs, vals, id, b.recs[id]); err != nil {
				return err
			}
		}
		if err := requeueGraph(tx, e.cfg.Graph, ids); err != nil {
			return err
		}
		if e.cfg.Dense == DenseNone {
			return nil
		}
		return syncDenseLog(openDenseTx(tx), ids, units)
	})
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
	for _, u := range sortedKeys(units) {
		doc, parent := units[u], ""
		if doc.Chunk != nil {
			parent = doc.Chunk.DocID
		}
		if err := d.put(u, parent, denseText(doc)); err != nil {
			return err
		}
	}
	return nil
}

// requeueGraph queues the top-level documents of ids for the knowledge
// graph builder, when the graph is on and its queue exists (without it,
// the graph's first start queues every document).
func requeueGraph(tx *bolt.Tx, on bool, ids []string) error {
	if !on || tx.Bucket([]byte(graphQueueBucket)) == nil {
		return nil
	}
	top := map[string]bool{}
	for _, id := range ids {
		top[topLevel(id)] = true
	}
	return graph.Enqueue(tx, graphQueueBucket, sortedKeys(top)...)
}

// unionSorted returns the sorted, deduplicated union of a and b.
func unionSorted(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
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
