package writer

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/chunk"
	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/derive"
	"github.com/rcpgo/rcpgo/engine/internal/fault"
	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp"
)

// addDoc is one document to write, from the wire or a preload.
type addDoc struct {
	id, title, text string
	meta            map[string]any
	source, uri     string
	page            int
	chunk           bool
	// wholePages: paged text (form feeds) indexed without chunk:true is
	// stored one unit per page, so unit "page" and citation.page work.
	wholePages bool
	contextual bool
	// units are the chunks of a chunked document, split and annotated by
	// planWrite before the write lock is taken.
	units []search.Document
}

// wireDoc is index/add's document with presence-aware fields.
type wireDoc struct {
	ID   json.RawMessage `json:"id"`
	Text *string         `json:"text"`
	Meta json.RawMessage `json:"meta"`
}

type indexAddParams struct {
	Documents  *[]json.RawMessage `json:"documents"`
	Chunk      *bool              `json:"chunk"`
	Contextual *bool              `json:"contextual"`
	Meta       rcp.Meta           `json:"_meta"`
}

func (wr *Writer) indexAdd(ctx context.Context, p *indexAddParams) (*rcp.IndexAddResult, error) {
	wr.gate.BeginWrite()
	defer wr.gate.EndWrite()
	if p.Documents == nil {
		return nil, rcp.InvalidParams("documents", "documents is required")
	}
	if len(*p.Documents) > wr.opts.MaxAddDocs {
		return nil, TooMany("documents", rcp.MethodIndexAdd, len(*p.Documents), wr.opts.MaxAddDocs)
	}
	chunked := p.Chunk != nil && *p.Chunk
	contextual := p.Contextual != nil && *p.Contextual
	if contextual {
		chunked = true // situating context is per chunk
	}
	docs := make([]addDoc, len(*p.Documents))
	for i, raw := range *p.Documents {
		d, err := decodeWireDoc(raw, i)
		if err != nil {
			return nil, err
		}
		d.chunk, d.contextual, d.source = chunked, contextual, WireSource
		docs[i] = d
	}
	var key string
	p.Meta.Get(rcp.MetaIdempotencyKey, &key)
	// Chunking and analysis are CPU work on the request's own data: done
	// before the write queue so that they never delay other writers.
	plan, err := wr.planWrite(ctx, docs)
	if err != nil {
		return nil, err
	}
	w := &writeReq{ctx: ctx, plan: plan, key: key, chunked: chunked}
	if err := wr.commitWrite(w); err != nil {
		return nil, err
	}
	if w.replay != nil {
		rcp.Log(ctx, rcp.LogInfo, "index/add: idempotencyKey replayed the original result", map[string]any{"key": key})
		return w.replay, nil
	}
	return w.result(), nil
}

func decodeWireDoc(raw json.RawMessage, i int) (addDoc, error) {
	field := fmt.Sprintf("documents[%d]", i)
	var w wireDoc
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return addDoc{}, rcp.InvalidParams(field, "%s must be an object", field)
	}
	if err := rcp.DecodeParams(raw, &w); err != nil {
		if re, ok := rcp.AsError(err); ok && re.Data != nil {
			re.Data.Field = field + "." + re.Data.Field
		}
		return addDoc{}, err
	}
	d := addDoc{}
	if len(w.ID) > 0 && string(w.ID) != "null" {
		if err := json.Unmarshal(w.ID, &d.id); err != nil {
			return addDoc{}, rcp.InvalidParams(field+".id", "id must be a string")
		}
		if d.id == "" || len(d.id) > 1024 || strings.IndexByte(d.id, 0) >= 0 || !utf8.ValidString(d.id) || hasLoneSurrogate(w.ID) {
			return addDoc{}, rcp.InvalidParams(field+".id", "id must be a non-empty UTF-8 string of at most 1024 bytes without NUL or unpaired surrogates")
		}
		if _, _, ok := catalog.ParseChunkID(d.id); ok {
			return addDoc{}, rcp.InvalidParams(field+".id", "id %q has the form <id>#c<n> reserved for the chunks of chunked documents", d.id)
		}
	}
	if w.Text == nil {
		return addDoc{}, rcp.InvalidParams(field+".text", "text is required")
	}
	d.text = *w.Text
	if len(w.Meta) > 0 && string(w.Meta) != "null" {
		dec := json.NewDecoder(bytes.NewReader(w.Meta))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return addDoc{}, rcp.InvalidParams(field+".meta", "meta must be an object")
		}
		d.meta = normalizeMeta(m).(map[string]any)
		delete(d.meta, pipeline.MetaKey)
	}
	if t, ok := d.meta["title"].(string); ok {
		d.title = t
	}
	if u, ok := d.meta["uri"].(string); ok {
		d.uri = u
	}
	if pg, ok := d.meta["page"].(float64); ok && pg >= 1 && pg == float64(int(pg)) {
		d.page = int(pg)
	} else if f, _ := d.meta["format"].(string); f == "pdf" {
		d.page = 1 // a PDF is paginated even when it has one page (no form feed)
	}
	return d, nil
}

// normalizeMeta turns json.Number into int64 (exact integers) or float64.
func normalizeMeta(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			x[k] = normalizeMeta(val)
		}
		return x
	case []any:
		for i, val := range x {
			x[i] = normalizeMeta(val)
		}
		return x
	case json.Number:
		f, _ := x.Float64()
		return f
	}
	return v
}

func mintID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "doc-" + hex.EncodeToString(b[:])
}

// write writes docs: planned outside the write queue, committed in it.
func (wr *Writer) write(ctx context.Context, docs []addDoc) ([]string, int, error) {
	plan, err := wr.planWrite(ctx, docs)
	if err != nil {
		return nil, 0, err
	}
	if err := wr.commitWrite(&writeReq{ctx: ctx, plan: plan}); err != nil {
		return nil, 0, err
	}
	return plan.ids, plan.nchunks, nil
}

// writePlan is an add with its CPU work done: ids minted, the batch
// deduplicated, chunked documents split and every unit analysed. Building
// it takes no lock, so a large (chunked) add does not hold the write path
// while it is prepared; only its commit, which depends on the stored
// state, runs in the write queue (commit.go).
type writePlan struct {
	ids     []string // in input order
	docs    []addDoc // the documents written: the last one of each id
	idocs   []search.Document
	batch   search.Batch               // idocs prepared, when the backend is a search.Preparer
	catalog map[string]*catalog.Record // top-level id → its new catalog record
	dense   []derive.Unit              // the dense log's records of idocs (dense on)
	nchunks int
}

func (wr *Writer) planWrite(ctx context.Context, docs []addDoc) (*writePlan, error) {
	p := &writePlan{ids: make([]string, len(docs)), catalog: map[string]*catalog.Record{}}
	last := map[string]int{}
	for i := range docs {
		if docs[i].id == "" {
			docs[i].id = mintID()
		}
		p.ids[i] = docs[i].id
		last[docs[i].id] = i
	}
	for i, d := range docs {
		if last[d.id] != i {
			continue // a later document with the same id wins
		}
		src := &search.Source{Name: d.source, URI: d.uri, Page: d.page}
		if !d.chunk && strings.Contains(d.text, "\f") {
			d.chunk, d.wholePages = true, true
		}
		if !d.chunk {
			p.idocs = append(p.idocs, search.Document{ID: d.id, Title: d.title, Text: d.text, Meta: d.meta, Source: src})
			p.catalog[d.id] = &catalog.Record{Title: d.title, Size: int64(len(d.text)), Values: wr.catalog.Values(d.meta), Kinds: catalog.Kinds(d.meta)}
			p.docs = append(p.docs, d)
			continue
		}
		units, err := wr.chunkUnits(ctx, d)
		if err != nil {
			return nil, err
		}
		for j := range units {
			units[j].Source = src
			if ci, ok := pipeline.ReadChunkInfo(units[j].Meta); ok && ci.Page > 0 {
				paged := *src
				paged.Page = ci.Page
				units[j].Source = &paged
			}
		}
		d.units = units
		p.idocs = append(p.idocs, units...)
		p.nchunks += len(units)
		p.catalog[d.id] = &catalog.Record{Title: d.title, Size: int64(len(d.text)), Chunks: len(units), Text: d.text,
			Context: d.contextual, Values: wr.catalog.Values(d.meta), Kinds: catalog.Kinds(d.meta)}
		p.docs = append(p.docs, d)
	}
	if wr.opts.DenseLog {
		p.dense = make([]derive.Unit, len(p.idocs))
		for i := range p.idocs {
			p.dense[i] = derive.NewUnit(&p.idocs[i])
		}
	}
	if pr, ok := wr.ix.(search.Preparer); ok {
		var err error
		if p.batch, err = pr.Prepare(ctx, p.idocs); err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
	}
	return p, nil
}

// writeShape is what a plan changes in the stored shape of its documents.
type writeShape struct {
	transitions []string        // documents changing between chunked and whole: their old units go
	chunkSets   map[string]int  // chunked parent → its number of chunks now
	plain       map[string]bool // documents written whole
}

// shapeOf reads what p changes in the shape of the stored documents, and
// refuses chunk ids taken by other documents (caller holds wmu).
func (wr *Writer) shapeOf(ctx context.Context, p *writePlan) (writeShape, error) {
	sh := writeShape{chunkSets: map[string]int{}, plain: map[string]bool{}}
	for _, d := range p.docs {
		if !d.chunk {
			sh.plain[d.id] = true
			if c0, err := wr.shapeGet(ctx, catalog.ChunkID(d.id, 0)); err != nil {
				return sh, fmt.Errorf("engine: %w", err)
			} else if c0 != nil && c0.Chunk != nil && c0.Chunk.DocID == d.id {
				sh.transitions = append(sh.transitions, d.id) // was chunked: drop its chunks
			}
			continue
		}
		if old, err := wr.shapeGet(ctx, d.id); err != nil {
			return sh, fmt.Errorf("engine: %w", err)
		} else if old != nil && old.Chunk == nil {
			sh.transitions = append(sh.transitions, d.id) // was a whole document
		}
		for j := range d.units {
			if err := wr.chunkIDFree(ctx, d.units[j].ID, d.id); err != nil {
				return sh, err
			}
		}
		sh.chunkSets[d.id] = len(d.units)
	}
	return sh, nil
}

// commitLocked writes a plan whose shape changes are sh (caller holds
// wmu): a group commit passes the union of its writes' plans and shapes.
// The response implies durability: it returns once both commits below are
// fsynced.
//
// A write is two bbolt commits: engine.db (the document catalog, the dense
// log whose ops are embedded in the background (engine/internal/derive/deriver.go), the
// graph queue) and the index's store.db (the documents). Both name the
// write's documents (putPending, Batch.SetNames), so after a crash that
// kept either commit without the other, Open re-derives those documents'
// catalog records and dense log from the index (reconcileCatalog). The
// two commits therefore run at the same time, and a write waits for one
// durable round trip instead of two. A write that changes the shape of
// stored documents (chunked ↔ whole) deletes units in an index commit of
// its own, which names nothing: it commits engine.db first, as before,
// so that a crash after that delete finds the names in engine.db. Both
// are written under rmu, so x-rcpgo/get sees the catalog and the index at
// one version.
func (wr *Writer) commitLocked(ctx context.Context, p *writePlan, sh writeShape) error {
	held := false
	wr.gate.BeginCommit()
	defer func() { wr.gate.EndCommit(held) }()
	names := wr.catalog.Names(slices.Sorted(maps.Keys(p.catalog)))
	overlap := p.batch != nil && len(sh.transitions) == 0
	if overlap {
		p.batch.SetNames(names)
	}
	cw := &catalogWrite{wr: wr, p: p, sh: sh, names: names}
	var catalogDone chan error
	if overlap {
		catalogDone = make(chan error, 1)
		go func() { catalogDone <- cw.commit() }()
	} else if err := cw.commit(); err != nil {
		return fmt.Errorf("engine: dense log and catalog: %w", err)
	}
	// The retrieves that were running when the commit began finish before
	// the index changes (their wait overlaps engine.db's commit).
	wr.gate.HoldQueries()
	held = true
	if len(sh.transitions) > 0 {
		if _, err := wr.ix.Delete(ctx, sh.transitions); err != nil {
			wr.catalog.Behind(names) // the catalog is ahead of the index
			return fmt.Errorf("engine: %w", err)
		}
	}
	err := wr.addToBackend(ctx, p)
	if overlap {
		if cerr := <-catalogDone; cerr != nil {
			if err == nil {
				wr.catalog.Behind(names) // the index holds the write, the catalog does not
			}
			return fmt.Errorf("engine: dense log and catalog: %w", cerr)
		}
	}
	if err != nil {
		// The index refused the batch (nothing of it was committed): put
		// the catalog back, or leave it to the next Open (the write's
		// documents stay named until a clean Close).
		if len(sh.transitions) > 0 || cw.restore() != nil {
			wr.catalog.Behind(names)
		}
		return fmt.Errorf("engine: %w", err)
	}
	wr.denseCommitted(cw.opSeq)
	wr.graphNotify()
	return nil
}

// catalogWrite is a write's engine.db commit: the catalog records of its
// documents, their dense log entries, the graph queue and the write's
// names.
type catalogWrite struct {
	wr    *Writer
	p     *writePlan
	sh    writeShape
	names []string

	prev  map[string]*catalog.Record // the records it replaced (restore)
	opSeq uint64                     // the dense log's last op after it
}

func (w *catalogWrite) commit() error {
	wr, recs := w.wr, w.p.catalog
	w.prev = make(map[string]*catalog.Record, len(recs))
	return wr.db.Update(func(tx *bolt.Tx) error {
		for _, id := range slices.Sorted(maps.Keys(recs)) {
			w.prev[id] = catalog.Get(tx, id)
			if err := catalog.Put(tx, id, recs[id]); err != nil {
				return err
			}
			if err := wr.graphEnqueue(tx, id); err != nil {
				return err
			}
		}
		if err := catalog.PutPending(tx, w.names); err != nil {
			return err
		}
		if hook := wr.Hooks.CatalogCommit; hook != nil {
			if err := hook(); err != nil {
				return err
			}
		}
		if !wr.opts.DenseLog {
			return derive.MarkBehind(tx) // a later Open with dense on backfills the log
		}
		dl := derive.OpenLog(tx)
		for _, id := range w.sh.transitions {
			if err := dl.Delete(id, w.sh.plain[id]); err != nil {
				return err
			}
		}
		for parent, n := range w.sh.chunkSets {
			if err := dl.TrimChunks(parent, n); err != nil {
				return err
			}
		}
		for _, u := range w.p.dense {
			if err := dl.Put(u); err != nil {
				return err
			}
		}
		w.opSeq = dl.Seq()
		return nil
	})
}

// restore puts back the catalog records the commit replaced (the index
// refused the write).
func (w *catalogWrite) restore() error {
	return w.wr.db.Update(func(tx *bolt.Tx) error {
		for id, rec := range w.prev {
			if err := catalog.Put(tx, id, rec); err != nil {
				return err
			}
		}
		return nil
	})
}

// addToBackend writes the plan's documents: its prepared batch, else
// through Add.
func (wr *Writer) addToBackend(ctx context.Context, p *writePlan) error {
	var err error
	if p.batch != nil {
		_, err = wr.ix.(search.Preparer).Commit(ctx, p.batch)
	} else {
		_, err = wr.ix.Add(ctx, p.idocs)
	}
	return err
}

// chunkUnits splits d into its chunk documents (Source left to the
// writer). Character offsets are counted incrementally: the chunks' starts
// and ends only move forward, so the whole is linear in the text.
func (wr *Writer) chunkUnits(ctx context.Context, d addDoc) ([]search.Document, error) {
	pieces, pages, err := splitPages(ctx, d.text, wr.opts.Chunk, d.wholePages)
	if err != nil {
		return nil, err
	}
	if len(pieces) == 0 {
		pieces, pages = []chunk.Chunk{{Text: d.text, End: len(d.text)}}, nil
	}
	var kp []string
	if d.contextual {
		kp = keyphrases(wr, d.text, 5)
	}
	starts, ends := runeOffsets{text: d.text}, runeOffsets{text: d.text}
	units := make([]search.Document, 0, len(pieces))
	for j, pc := range pieces {
		if j&255 == 255 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		info := map[string]any{"start": float64(starts.at(pc.Start)), "end": float64(ends.at(pc.End))}
		if pages != nil {
			info["page"] = float64(max(d.page, 1) + pages[j])
		}
		if len(pc.Section) > 0 {
			sec := make([]any, len(pc.Section))
			for k, s := range pc.Section {
				sec[k] = s
			}
			info["section"] = sec
		}
		title := d.title
		if d.contextual {
			c := situating(d.title, pc.Section, kp)
			info["context"] = c
			title = c
		}
		meta := make(map[string]any, len(d.meta)+1)
		for k, v := range d.meta {
			meta[k] = v
		}
		meta[pipeline.MetaKey] = info
		units = append(units, search.Document{ID: catalog.ChunkID(d.id, pc.Index), Title: title, Text: pc.Text, Meta: meta,
			Chunk: &search.ChunkRef{DocID: d.id, Index: pc.Index, Start: pc.Start, End: pc.End}})
	}
	return units, nil
}

// splitPages chunks text page by page when it has pages (form feeds, as
// PDF text arrives from internal/ingest), so no chunk straddles a page
// break and unit "page" can regroup a page's chunks; pages[j] is chunk
// j's 0-based page (nil for unpaged text). whole makes each non-blank
// page one chunk.
func splitPages(ctx context.Context, text string, opts chunk.Options, whole bool) ([]chunk.Chunk, []int, error) {
	if !strings.Contains(text, "\f") {
		pieces, err := chunk.SplitContext(ctx, text, opts)
		return pieces, nil, err
	}
	var out []chunk.Chunk
	var pages []int
	start := 0
	for pg := 0; start <= len(text); pg++ {
		end := strings.IndexByte(text[start:], '\f')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		var pieces []chunk.Chunk
		var err error
		if !whole {
			pieces, err = chunk.SplitContext(ctx, text[start:end], opts)
		} else if strings.TrimSpace(text[start:end]) != "" {
			pieces = []chunk.Chunk{{Text: text[start:end], End: end - start}}
		}
		if err != nil {
			return nil, nil, err
		}
		for _, pc := range pieces {
			pc.Index, pc.Start, pc.End = len(out), pc.Start+start, pc.End+start
			out = append(out, pc)
			pages = append(pages, pg)
		}
		start = end + 1
	}
	return out, pages, nil
}

// runeOffsets converts non-decreasing byte offsets of text to character
// offsets, counting only the runes since the previous call.
type runeOffsets struct {
	text        string
	byteAt, got int
}

func (r *runeOffsets) at(b int) int {
	if b < r.byteAt { // not monotonic: count afresh
		r.byteAt, r.got = 0, 0
	}
	r.got += utf8.RuneCountInString(r.text[r.byteAt:b])
	r.byteAt = b
	return r.got
}

// chunkIDFree refuses to write chunk id over a document that is not one of
// parent's chunks: an index written before chunk-form ids were refused may
// hold a user document under that id, and replacing it would lose it.
func (wr *Writer) chunkIDFree(ctx context.Context, id, parent string) error {
	old, err := wr.shapeGet(ctx, id)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if old != nil && (old.Chunk == nil || old.Chunk.DocID != parent) {
		return &fault.Error{Err: ErrConflict, Message: fmt.Sprintf("chunk id %q is taken by another document", id),
			Field: "documents", Detail: fmt.Sprintf("delete %q or add %q without chunking", id, parent)}
	}
	return nil
}

// shapeGet reads a stored document for the write path's shape checks
// (chunked ↔ whole transitions, chunk ids taken by other documents). A
// Config.Backend applies shape changes itself in Add, and wire ids cannot
// take the chunk form: nothing is read there (a round trip per document).
func (wr *Writer) shapeGet(ctx context.Context, id string) (*search.Document, error) {
	if wr.opts.Remote {
		return nil, nil
	}
	return wr.ix.Get(ctx, id)
}

// hasLoneSurrogate reports a JSON string literal with a \uD800–\uDFFF
// escape that is not part of a surrogate pair: encoding/json decodes it to
// U+FFFD, so two different ids would collide.
func hasLoneSurrogate(lit []byte) bool {
	isHi := func(r rune) bool { return r >= 0xD800 && r < 0xDC00 }
	isLo := func(r rune) bool { return r >= 0xDC00 && r < 0xE000 }
	esc := func(i int) (rune, bool) { // the \uXXXX escape at lit[i:], if any
		if i+6 > len(lit) || lit[i] != '\\' || lit[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(lit[i+2:i+6]), 16, 32)
		return rune(v), err == nil
	}
	for i := 0; i < len(lit); i++ {
		if lit[i] != '\\' {
			continue
		}
		r, ok := esc(i)
		if !ok {
			i++ // skip the escaped character
			continue
		}
		switch {
		case isHi(r):
			if lo, ok := esc(i + 6); ok && isLo(lo) {
				i += 11
				continue
			}
			return true
		case isLo(r):
			return true
		}
		i += 5
	}
	return false
}

type indexDeleteParams struct {
	IDs  *[]string `json:"ids"`
	Meta rcp.Meta  `json:"_meta"`
}

func (wr *Writer) indexDelete(ctx context.Context, p *indexDeleteParams) (*rcp.IndexDeleteResult, error) {
	wr.gate.BeginWrite()
	defer wr.gate.EndWrite()
	if wr.opts.ReadOnly {
		return nil, wr.readOnlyError()
	}
	if p.IDs == nil {
		return nil, rcp.InvalidParams("ids", "ids is required")
	}
	wr.gate.LockWrites()
	defer wr.gate.UnlockWrites()
	if err := wr.writable(); err != nil {
		return nil, err
	}
	wr.gate.BeginCommit()
	wr.gate.HoldQueries()
	defer wr.gate.EndCommit(true)
	var opSeq uint64
	// The index deletes first: the catalog names the documents it is
	// about to lose before (engine/internal/catalog/recover.go), so that a crash
	// in between is repaired at Open without a rebuild.
	names := wr.catalog.Names(*p.IDs)
	if err := wr.db.Update(func(tx *bolt.Tx) error { return catalog.PutPending(tx, names) }); err != nil {
		return nil, fmt.Errorf("engine: catalog: %w", err)
	}
	n, err := wr.ix.Delete(ctx, *p.IDs)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if hook := wr.Hooks.DeleteCommitted; hook != nil {
		hook()
	}
	if err := wr.writable(); err != nil {
		return nil, err
	}
	if n > 0 {
		// Catalog: deleted documents go; a chunked document whose chunks
		// were deleted one by one goes with its last chunk.
		var gone []string
		for _, id := range *p.IDs {
			gone = append(gone, id)
			if parent, _, ok := catalog.ParseChunkID(id); ok {
				var rec *catalog.Record
				_ = wr.db.View(func(tx *bolt.Tx) error { rec = catalog.Get(tx, parent); return nil })
				if rec != nil && rec.Chunks > 0 {
					if c, err := wr.catalog.LiveChunk(ctx, parent, rec.Chunks); err != nil {
						wr.catalog.Behind(names)
						return nil, fmt.Errorf("engine: %w", err)
					} else if c == nil {
						gone = append(gone, parent)
					}
				}
			}
		}
		if err := wr.db.Update(func(tx *bolt.Tx) error {
			for _, id := range gone {
				if err := catalog.Put(tx, id, nil); err != nil {
					return err
				}
				if err := wr.graphEnqueue(tx, catalog.TopLevel(id)); err != nil {
					return err
				}
			}
			if !wr.opts.DenseLog {
				return derive.MarkBehind(tx)
			}
			dl := derive.OpenLog(tx)
			for _, id := range *p.IDs {
				if err := dl.Delete(id, false); err != nil {
					return err
				}
			}
			opSeq = dl.Seq()
			return nil
		}); err != nil {
			wr.catalog.Behind(names) // the index is ahead of the catalog
			return nil, fmt.Errorf("engine: dense log and catalog: %w", err)
		}
	}
	wr.denseCommitted(opSeq)
	wr.graphNotify()
	return &rcp.IndexDeleteResult{Deleted: n, IndexVersion: wr.ix.Version()}, nil
}

// keyphrases returns the n most frequent content words of text (stop words
// removed; counted by analysed term, shown in their first surface form;
// ties by first occurrence).
func keyphrases(wr *Writer, text string, n int) []string {
	type kp struct {
		surface string
		count   int
		first   int
	}
	byTerm := map[string]*kp{}
	for i, t := range wr.an.Analyze(text) {
		if utf8.RuneCountInString(t.Term) < 3 {
			continue
		}
		k, ok := byTerm[t.Term]
		if !ok {
			k = &kp{surface: strings.ToLower(text[t.Start:t.End]), first: i}
			byTerm[t.Term] = k
		}
		k.count++
	}
	list := make([]*kp, 0, len(byTerm))
	for _, k := range byTerm {
		list = append(list, k)
	}
	sort.Slice(list, func(a, b int) bool {
		if list[a].count != list[b].count {
			return list[a].count > list[b].count
		}
		return list[a].first < list[b].first
	})
	out := make([]string, 0, n)
	for _, k := range list[:min(n, len(list))] {
		out = append(out, k.surface)
	}
	return out
}

// situating builds a chunk's situating context: the document title, the
// section path and the document's keyphrases.
func situating(title string, section, kp []string) string {
	var parts []string
	if title != "" {
		parts = append(parts, title)
	}
	if len(section) > 0 {
		parts = append(parts, strings.Join(section, " › "))
	}
	s := strings.Join(parts, " › ")
	if len(kp) > 0 {
		if s != "" {
			s += " — "
		}
		s += "keyphrases: " + strings.Join(kp, ", ")
	}
	return s
}
