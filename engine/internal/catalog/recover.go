package catalog

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
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
	"github.com/rcpgo/rcpgo/engine/internal/store"
	"github.com/rcpgo/rcpgo/engine/search"
)

var keyPending = []byte("pending")

// Names returns the names a write records (caller holds the write lock): ids
// and their top-level documents, and while an earlier write has failed
// half-way (catalogOpen cleared) every name written since then, so that
// they accumulate until the next Open reconciles them instead of each
// write replacing the last one's.
func (c *Catalog) Names(ids []string) []string {
	set := map[string]bool{}
	for _, id := range ids {
		set[id] = true
		set[TopLevel(id)] = true
	}
	if !c.current.Load() {
		if c.unsettled == nil {
			c.unsettled = map[string]bool{}
		}
		for id := range set {
			c.unsettled[id] = true
		}
		set = c.unsettled
	}
	return slices.Sorted(maps.Keys(set))
}

// Behind records that the write naming names failed half-way: the
// catalog and the index may disagree about its documents until the next
// Open (caller holds the write lock).
func (c *Catalog) Behind(names []string) {
	if c.unsettled == nil {
		c.unsettled = map[string]bool{}
	}
	for _, id := range names {
		c.unsettled[id] = true
	}
	c.current.Store(false)
}

// PutPending records names (Names) as the documents of the write
// being committed, in an engine.db transaction.
func PutPending(tx *bolt.Tx, names []string) error {
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
	c      *Catalog
	recs   map[string]*Record
	plain  map[string]bool
	live   map[string]bool // every unit seen
	pieces map[string][]chunkPiece
}

func newCatalogBuilder(c *Catalog) *catalogBuilder {
	return &catalogBuilder{c: c, recs: map[string]*Record{}, plain: map[string]bool{}, live: map[string]bool{},
		pieces: map[string][]chunkPiece{}}
}

// add takes the unit id, as stored in the index.
func (b *catalogBuilder) add(id string, d *search.Document) {
	b.live[id] = true
	if d.Chunk == nil || d.Chunk.DocID == "" {
		b.recs[id] = &Record{Title: d.Title, Size: int64(len(d.Text)), Values: b.c.Values(d.Meta), Kinds: Kinds(d.Meta)}
		b.plain[id] = true
		return
	}
	parent := d.Chunk.DocID
	ci, _ := pipeline.ReadChunkInfo(d.Meta)
	pc := chunkPiece{index: d.Chunk.Index, start: d.Chunk.Start, end: d.Chunk.End, text: d.Text, title: d.Title, context: ci.Context != ""}
	if _, ok := b.recs[parent]; !ok {
		// Chunks share their document's metadata (plus MetaKey).
		b.recs[parent] = &Record{Values: b.c.Values(d.Meta), Kinds: Kinds(d.Meta)}
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
		var prev Record
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
func (c *Catalog) viewIndexStore(verify bool, fn func(*store.ReadTx) error) error {
	path := filepath.Join(c.dir, "index", "store.db")
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

// reconcile re-derives, from the index's record store, the
// catalog records and the dense log entries of the documents named by the
// last write: in engine.db's pending key and in the store's write names
// (an add's two commits run at once, so after a crash either side may hold
// the write without the other). Each document's record is derived from
// the index; each of its units the index holds gets the index's text in
// the dense log (unchanged text appends no op), and its other units leave
// it; the graph queue gets the documents again. It returns how many
// documents it looked at.
func (c *Catalog) reconcile(ctx context.Context) (int, error) {
	var pending []string
	if err := c.db.View(func(tx *bolt.Tx) error {
		pending = decodePending(tx.Bucket(bucketCatalog).Get(keyPending))
		return nil
	}); err != nil {
		return 0, err
	}
	ids := pending
	b := newCatalogBuilder(c)
	units := map[string]*search.Document{} // the live units of those documents
	err := c.viewIndexStore(false, func(tx *store.ReadTx) error {
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
	return len(ids), c.db.Update(func(tx *bolt.Tx) error {
		docs, vals := catalogTx(tx)
		b.finish(tx, docs)
		for _, id := range ids {
			if err := putRecord(docs, vals, id, b.recs[id]); err != nil {
				return err
			}
		}
		if c.hooks.Reconciled == nil {
			return nil
		}
		return c.hooks.Reconciled(tx, ids, units)
	})
}

// unionSorted returns the sorted, deduplicated union of a and b.
func unionSorted(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
