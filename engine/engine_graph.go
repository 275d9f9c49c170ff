package engine

// The knowledge graph behind graph (§7.9) and memory/build + memory/recall
// (§7.17), enabled by Config.Graph. Package graph builds it offline in the
// background: writes record the documents they touch in a durable queue
// (graphEnqueue, inside the catalog transaction), the builder re-reads
// them and publishes; queries read whatever the graph holds and never
// wait for it. Plain retrieve does not touch it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/graph"
	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/writer"
	"github.com/rcpgo/rcpgo/engine/memory"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/fusion"
)

const (
	graphQueueBucket = "graphq"
	graphSnapshot    = "graph.snap"
	memoryDir        = "memory"
	// GlobalMemoryID names the memory over the live index (memory/build
	// without documents; memory/recall without memoryId).
	GlobalMemoryID = "global"
	// driftFollowups is how many follow-ups graph drift explores.
	driftFollowups = 3
	maxRecallClues = 50
)

// graphOps are the graph ops rcpd serves (all of §7.9).
var graphOps = []string{"local", "global", "drift", "communities", "neighbors"}

// knowledge is the engine's graph state (nil when Config.Graph is off).
type knowledge struct {
	g   *graph.Graph
	b   *graph.Builder
	mem *memory.Store
}

// openGraph loads the graph snapshot and creates the queue before any
// write (preload included) can enqueue. With the graph disabled it drops
// a stale snapshot: writes made meanwhile are not queued, so a later
// enable must rebuild from the index.
func (e *Engine) openGraph() error {
	snap := filepath.Join(e.cfg.Dir, graphSnapshot)
	if !e.cfg.Graph {
		if err := os.Remove(snap); err != nil && !errors.Is(err, os.ErrNotExist) && !e.cfg.ReadOnly {
			return fmt.Errorf("engine: %w", err)
		}
		return nil
	}
	g := graph.New(e.an)
	b, err := graph.OpenBuilder(graph.BuilderOptions{DB: e.db, Bucket: graphQueueBucket, Snapshot: snap,
		Source: graphSource{e}, Graph: g, Logger: e.log, Chat: e.cfg.Chat})
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	mem, err := memory.Open(filepath.Join(e.cfg.Dir, memoryDir), e.an, e.cfg.Memory)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	e.kg = &knowledge{g: g, b: b, mem: mem}
	return nil
}

// startGraph queues what the graph and the catalog disagree on (a first
// build, a crash between an index write and its queue entry) and starts
// the builder; it also serves graph and memory.
func (e *Engine) startGraph() error {
	if e.kg == nil {
		return nil
	}
	ids, err := e.catalog.IDs()
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if err := e.kg.b.Reconcile(func(yield func(string) bool) {
		for _, id := range ids {
			if !yield(id) {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	e.kg.b.Start()
	e.kg.b.Notify()
	rcp.Handle(e.router, rcp.MethodGraph, e.graphOp)
	rcp.Handle(e.router, rcp.MethodMemoryBuild, e.memoryBuild)
	rcp.Handle(e.router, rcp.MethodMemoryRecall, e.memoryRecall)
	return nil
}

func (e *Engine) closeGraph() error {
	if e.kg == nil {
		return nil
	}
	return e.kg.b.Close()
}

// graphEnqueue records top-level documents as changed, in the caller's
// catalog transaction (a no-op without the graph).
func (e *Engine) graphEnqueue(tx *bolt.Tx, docs ...string) error {
	if e.kg == nil || len(docs) == 0 {
		return nil
	}
	return graph.Enqueue(tx, graphQueueBucket, docs...)
}

func (e *Engine) graphNotify() {
	if e.kg != nil {
		e.kg.b.Notify()
	}
}

// SyncGraph waits until the graph reflects every acknowledged write and
// its communities are current (tests, benchmarks, memory/build).
func (e *Engine) SyncGraph(ctx context.Context) error {
	if e.kg == nil {
		return errors.New("engine: the graph is disabled")
	}
	return e.kg.b.Sync(ctx)
}

// GraphStats reports the graph's size (zero without the graph).
func (e *Engine) GraphStats() graph.Stats {
	if e.kg == nil {
		return graph.Stats{}
	}
	return e.kg.g.Stats()
}

func (e *Engine) describeGraph(caps *rcp.Capabilities) {
	if e.kg == nil {
		return
	}
	caps.Graph = &rcp.GraphCap{Ops: graphOps}
	caps.Retrieve.Units = append(caps.Retrieve.Units, rcp.UnitNode, rcp.UnitTriplet, rcp.UnitPath, rcp.UnitSubgraph, rcp.UnitCommunity)
	// (retrieve.levels is what exists when a session starts: withLevels.)
	caps.Memory = &rcp.MemoryCap{Scopes: []string{memory.ScopeGlobal, memory.ScopeSession}, Clues: true}
}

// graphSource reads a document's live units for the builder, under the
// read lock so it never sees half of a write.
type graphSource struct{ e *Engine }

func (s graphSource) Units(ctx context.Context, doc string) ([]graph.SourceUnit, error) {
	e := s.e
	e.gate.RLockCatalog()
	defer e.gate.RUnlockCatalog()
	d, err := e.ix.Get(ctx, doc)
	if err != nil {
		return nil, err
	}
	if d != nil && d.Chunk == nil {
		return []graph.SourceUnit{{ID: d.ID, Title: d.Title, Text: d.Text}}, nil
	}
	rec, err := e.catalog.Record(doc)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, nil
	}
	var out []graph.SourceUnit
	for i := 0; i < rec.Chunks; i++ {
		c, err := e.ix.Get(ctx, catalog.ChunkID(doc, i))
		if err != nil {
			return nil, err
		}
		if c != nil && c.Chunk != nil && c.Chunk.DocID == doc {
			title := rec.Title
			if title == "" {
				title = c.Title
			}
			out = append(out, graph.SourceUnit{ID: c.ID, Title: title, Text: c.Text})
		}
	}
	return out, nil
}

// graphParams is graph's request with presence-aware fields.
type graphParams struct {
	Op        *string  `json:"op"`
	Query     *string  `json:"query"`
	K         *int     `json:"k"`
	SeedIDs   []string `json:"seedIds"`
	Hops      *int     `json:"hops"`
	Level     *int     `json:"level"`
	Cursor    *string  `json:"cursor"`
	SessionID *string  `json:"sessionId"`
	Meta      rcp.Meta `json:"_meta"`
}

// graphPlan is a validated graph request.
type graphPlan struct {
	op, query string
	seeds     []string
	k, hops   int
	level     int
}

func (e *Engine) planGraph(p *graphParams) (*graphPlan, error) {
	if p.Op == nil {
		return nil, rcp.InvalidParams("op", "op is required")
	}
	pl := &graphPlan{op: *p.Op, k: 10, seeds: p.SeedIDs}
	if !slices.Contains(graphOps, pl.op) {
		return nil, rcp.OptionUnsupported("op", "graph op %q is not one of %s", pl.op, strings.Join(graphOps, ", "))
	}
	if p.Query != nil {
		pl.query = *p.Query
	}
	if p.K != nil {
		if *p.K < 1 || *p.K > e.cfg.MaxK {
			return nil, rcp.InvalidParams("k", "k must be in [1, %d], got %d", e.cfg.MaxK, *p.K)
		}
		pl.k = *p.K
	}
	if p.Hops != nil {
		if *p.Hops < 1 || *p.Hops > graph.MaxHops {
			return nil, rcp.InvalidParams("hops", "hops must be in [1, %d], got %d", graph.MaxHops, *p.Hops)
		}
		pl.hops = *p.Hops
	}
	if p.Level != nil {
		if *p.Level < 0 {
			return nil, rcp.InvalidParams("level", "level must be ≥ 0, got %d", *p.Level)
		}
		if n := e.kg.g.Communities().Depth(); *p.Level >= max(n, 1) {
			return nil, rcp.InvalidParams("level", "level %d is beyond the deepest community level %d", *p.Level, max(n, 1)-1)
		}
		pl.level = *p.Level
	}
	if len(pl.seeds) > e.cfg.MaxK {
		return nil, rcp.InvalidParams("seedIds", "at most %d seedIds, got %d", e.cfg.MaxK, len(pl.seeds))
	}
	if p.Cursor != nil && *p.Cursor != "" {
		return nil, rcp.InvalidParams("cursor", "unknown cursor (graph results are not paginated)")
	}
	if pl.op != "communities" && strings.TrimSpace(pl.query) == "" && len(pl.seeds) == 0 {
		return nil, rcp.InvalidParams("query", "graph op %q needs a query or seedIds", pl.op)
	}
	return pl, nil
}

// graphResult is graph's result: the key an op requires is present even
// when empty (§7.9 result shapes).
type graphResult struct {
	Hits        *[]rcp.Hit       `json:"hits,omitempty"`
	Followups   []string         `json:"followups,omitempty"`
	Summary     *string          `json:"summary,omitempty"`
	Communities *[]rcp.Community `json:"communities,omitempty"`
	Nodes       *[]rcp.GraphNode `json:"nodes,omitempty"`
	Edges       *[]rcp.GraphEdge `json:"edges,omitempty"`
	Usage       *rcp.Usage       `json:"usage,omitempty"`
}

func (e *Engine) graphOp(ctx context.Context, p *graphParams) (*graphResult, error) {
	pl, err := e.planGraph(p)
	if err != nil {
		return nil, err
	}
	notes, err := e.awaitDerived(ctx, graphNeeds(pl.op)...)
	if err != nil {
		return nil, err
	}
	res, err := e.runGraphOp(ctx, pl)
	if res != nil && len(notes) > 0 {
		if res.Usage == nil {
			res.Usage = &rcp.Usage{}
		}
		res.Usage.Notes = append(notes, res.Usage.Notes...)
	}
	return res, err
}

// runGraphOp answers a planned graph request.
func (e *Engine) runGraphOp(ctx context.Context, pl *graphPlan) (*graphResult, error) {
	g := e.kg.g
	seeds := graph.Seeds{Query: pl.query, IDs: pl.seeds}
	switch pl.op {
	case "local":
		seeds, err := e.graphSeeds(ctx, pl.query, pl.seeds)
		if err != nil {
			return nil, err
		}
		hits, err := g.Local(ctx, seeds, pl.k, pl.hops)
		if err != nil {
			return nil, err
		}
		hits = orRetrieved(hits, seeds, pl.k)
		out, err := e.graphHits(ctx, hits)
		return &graphResult{Hits: &out, Usage: notesUsage(fallbackNote(hits))}, err
	case "drift":
		return e.graphDrift(ctx, pl)
	case "global":
		ranked, err := g.Communities().Rank(ctx, g, pl.query, pl.level, pl.k)
		if err != nil {
			return nil, err
		}
		comms := make([]rcp.Community, len(ranked))
		var parts []string
		for i, c := range ranked {
			comms[i] = wireCommunity(c.Community, &ranked[i].Score)
			if i < 3 {
				parts = append(parts, c.Summary)
			}
		}
		summary := strings.Join(parts, "\n")
		return &graphResult{Summary: &summary, Communities: &comms}, nil
	case "communities":
		level := g.Communities().Level(pl.level)
		comms := make([]rcp.Community, 0, min(pl.k, len(level)))
		for _, c := range level[:min(pl.k, len(level))] {
			comms = append(comms, wireCommunity(c, nil))
		}
		return &graphResult{Communities: &comms}, nil
	default: // neighbors
		nodes, edges, err := g.Neighbors(ctx, seeds, pl.k, pl.hops)
		if err != nil {
			return nil, err
		}
		wn := make([]rcp.GraphNode, len(nodes))
		for i, n := range nodes {
			s := n.Score
			wn[i] = rcp.GraphNode{ID: rcp.StringID(n.ID), Score: &s}
		}
		we := make([]rcp.GraphEdge, len(edges))
		for i, ed := range edges {
			w := ed.Weight
			we[i] = rcp.GraphEdge{Src: rcp.StringID(ed.Src), Dst: rcp.StringID(ed.Dst), Weight: &w}
		}
		return &graphResult{Nodes: &wn, Edges: &we}, nil
	}
}

// graphNeeds names the structures a graph op reads.
func graphNeeds(op string) []string {
	if op == "global" || op == "communities" {
		return []string{derivedGraph, derivedCommunities}
	}
	return []string{derivedGraph}
}

func wireCommunity(c *graph.Community, score *float64) rcp.Community {
	l := c.Level
	wc := rcp.Community{ID: rcp.StringID(c.ID), Summary: c.Summary, Level: &l}
	if len(c.Leaves) > 0 {
		wc.Provenance = &rcp.Provenance{Leaves: c.Leaves}
	}
	if score != nil {
		s := *score
		wc.Score = &s
	}
	return wc
}

// graphDrift is DRIFT without an LLM: the local hits, follow-up queries
// drawn from the seeds' neighbourhood (a bridge entity plus the
// question's own words), and a sparse search for each follow-up, fused
// with the local hits by weighted RRF (a follow-up weighs its share of the
// rank).
func (e *Engine) graphDrift(ctx context.Context, pl *graphPlan) (*graphResult, error) {
	g := e.kg.g
	seeds, err := e.graphSeeds(ctx, pl.query, pl.seeds)
	if err != nil {
		return nil, err
	}
	local, err := g.Local(ctx, seeds, pl.k, pl.hops)
	if err != nil {
		return nil, err
	}
	local = orRetrieved(local, seeds, pl.k)
	clues, err := g.Clues(ctx, seeds, driftFollowups, pl.hops)
	if err != nil {
		return nil, err
	}
	lists := []fusion.List{{Engine: "local", Hits: idHits(local)}}
	followups := make([]string, 0, len(clues))
	for _, c := range clues {
		followups = append(followups, c.Query)
		res, err := e.ix.Search(ctx, search.Query{Text: c.Query, K: pl.k, SkipDocs: true})
		if err != nil {
			return nil, err
		}
		hs := make([]rcp.Hit, len(res.Hits))
		for i, h := range res.Hits {
			hs[i] = rcp.Hit{ID: rcp.StringID(h.ID), Score: h.Score}
		}
		w := c.Weight
		lists = append(lists, fusion.List{Engine: "followup", Hits: hs, Weight: &w})
	}
	k := pl.k
	fused, err := fusion.FuseContext(ctx, lists, fusion.Options{K: &k})
	if err != nil {
		return nil, err
	}
	prov := map[string]graph.UnitHit{}
	for _, h := range local {
		prov[h.ID] = h
	}
	units := make([]graph.UnitHit, len(fused))
	for i, f := range fused {
		u, ok := prov[f.ID]
		if !ok {
			u = graph.UnitHit{ID: f.ID}
		}
		u.Score = f.Score
		units[i] = u
	}
	hits, err := e.graphHits(ctx, units)
	return &graphResult{Hits: &hits, Followups: followups, Usage: notesUsage(fallbackNote(local))}, err
}

func idHits(us []graph.UnitHit) []rcp.Hit {
	out := make([]rcp.Hit, len(us))
	for i, u := range us {
		out[i] = rcp.Hit{ID: rcp.StringID(u.ID), Score: u.Score}
	}
	return out
}

// graphHits turns ranked units into wire hits (text, citation, trust and
// provenance, as retrieve gives them); units the index no longer holds
// are skipped.
func (e *Engine) graphHits(ctx context.Context, units []graph.UnitHit) ([]rcp.Hit, error) {
	out := make([]rcp.Hit, 0, len(units))
	for _, u := range units {
		d, err := e.ix.Get(ctx, u.ID)
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		if d == nil {
			continue
		}
		text := d.Text
		h := rcp.Hit{ID: rcp.StringID(u.ID), Score: u.Score, Text: &text, Unit: rcp.UnitDocument, Modality: rcp.ModalityText}
		zero := 0
		h.Level = &zero
		if d.Chunk != nil {
			h.Unit = rcp.UnitChunk
			h.Chunk = &rcp.ChunkRef{DocID: d.Chunk.DocID, Index: d.Chunk.Index}
		}
		h.Citation, h.Trust = e.unitCitation(d, nil)
		if len(u.Nodes) > 0 || len(u.Path) > 0 {
			pv := &rcp.Provenance{Nodes: u.Nodes, Path: u.Path}
			for _, ed := range u.Edges {
				w := ed.Weight
				pv.Edges = append(pv.Edges, rcp.Edge{Src: ed.Src, Dst: ed.Dst, Weight: &w})
			}
			h.Provenance = pv
		}
		out = append(out, h)
	}
	return out, nil
}

// memoryBuildParams is memory/build's request with presence-aware fields.
type memoryBuildParams struct {
	Documents *[]json.RawMessage `json:"documents"`
	MemoryID  *string            `json:"memoryId"`
	Scope     *string            `json:"scope"`
	Meta      rcp.Meta           `json:"_meta"`
}

func (e *Engine) memoryBuild(ctx context.Context, p *memoryBuildParams) (*rcp.MemoryBuildResult, error) {
	scope, id := "", ""
	if p.Scope != nil {
		scope = *p.Scope
		if scope != memory.ScopeGlobal && scope != memory.ScopeSession {
			return nil, rcp.OptionUnsupported("scope", "scope %q is not one of global, session", scope)
		}
	}
	if p.MemoryID != nil {
		id = *p.MemoryID
	}
	if p.Documents == nil {
		// The memory over the live index: bring it up to date.
		if id != "" && id != GlobalMemoryID {
			return nil, rcp.InvalidParams("documents", "memory %q is built from inline documents: documents is required", id)
		}
		if scope == memory.ScopeSession {
			return nil, rcp.InvalidParams("documents", "a session memory is built from inline documents")
		}
		if err := e.kg.b.Sync(ctx); err != nil {
			return nil, err
		}
		t := e.kg.g.Tokens()
		return &rcp.MemoryBuildResult{MemoryID: GlobalMemoryID, Tokens: &t}, nil
	}
	if id == GlobalMemoryID {
		return nil, rcp.InvalidParams("memoryId", "the global memory follows the index: add documents with index/add")
	}
	if len(*p.Documents) > e.cfg.maxAddDocs {
		return nil, writer.TooMany("documents", rcp.MethodMemoryBuild, len(*p.Documents), e.cfg.maxAddDocs)
	}
	docs := make([]memory.Doc, len(*p.Documents))
	for i, raw := range *p.Documents {
		id, text, err := writer.DecodeDocument(raw, i)
		if err != nil {
			return nil, err
		}
		docs[i] = memory.Doc{ID: id, Text: text}
	}
	newID, tokens, err := e.kg.mem.Build(ctx, id, scope, docs)
	switch {
	case errors.Is(err, memory.ErrNotFound):
		return nil, &rcp.Error{Code: rcp.CodeNotFound, Message: "unknown memoryId", Data: &rcp.ErrorData{Field: "memoryId", Detail: err.Error()}}
	case errors.Is(err, memory.ErrTooLarge):
		return nil, &rcp.Error{Code: rcp.CodePayloadTooLarge, Message: "memory too large", Data: &rcp.ErrorData{Field: "documents", Detail: err.Error()}}
	case err != nil && strings.Contains(err.Error(), "has scope"):
		return nil, rcp.InvalidParams("scope", "%s", err.Error())
	case err != nil:
		return nil, fmt.Errorf("engine: %w", err)
	}
	return &rcp.MemoryBuildResult{MemoryID: newID, Tokens: &tokens}, nil
}

type memoryRecallParams struct {
	Query     *string  `json:"query"`
	MemoryID  *string  `json:"memoryId"`
	SessionID *string  `json:"sessionId"`
	N         *int     `json:"n"`
	Meta      rcp.Meta `json:"_meta"`
}

// memoryRecall returns clues — entities the query's entities lead to in
// the memory, each as a surrogate query for retrieve and a seed id for
// graph local — and, for the global memory, the graph local hits as
// drafts.
func (e *Engine) memoryRecall(ctx context.Context, p *memoryRecallParams) (*rcp.MemoryRecallResult, error) {
	if p.Query == nil || strings.TrimSpace(*p.Query) == "" {
		return nil, rcp.InvalidParams("query", "query is required")
	}
	n := 5
	if p.N != nil {
		if *p.N < 1 || *p.N > maxRecallClues {
			return nil, rcp.InvalidParams("n", "n must be in [1, %d], got %d", maxRecallClues, *p.N)
		}
		n = *p.N
	}
	g, global := e.kg.g, true
	if p.MemoryID == nil || *p.MemoryID == "" || *p.MemoryID == GlobalMemoryID {
		// The global memory is the graph: its first build must be done.
		if _, err := e.awaitDerived(ctx, derivedMemory); err != nil {
			return nil, err
		}
	}
	if p.MemoryID != nil && *p.MemoryID != "" && *p.MemoryID != GlobalMemoryID {
		var err error
		if g, err = e.kg.mem.Get(*p.MemoryID); err != nil {
			return nil, &rcp.Error{Code: rcp.CodeNotFound, Message: "unknown memoryId", Data: &rcp.ErrorData{Field: "memoryId", Detail: err.Error()}}
		}
		global = false
	}
	// Seeds: the query's mentions and the passages that match it — by
	// retrieve over the index, by their words in a memory of inline
	// documents — so recall answers whenever the memory holds matching
	// content.
	seeds := graph.Seeds{Query: *p.Query, Units: g.MatchUnits(*p.Query, graphSeedPassages)}
	if global {
		var err error
		if seeds, err = e.graphSeeds(ctx, *p.Query, nil); err != nil {
			return nil, err
		}
	}
	clues, err := g.Clues(ctx, seeds, n, 0)
	if err != nil {
		return nil, err
	}
	res := &rcp.MemoryRecallResult{Clues: make([]rcp.Clue, len(clues))}
	for i, c := range clues {
		w := c.Weight
		res.Clues[i] = rcp.Clue{Query: c.Query, SeedIDs: []string{c.Node}, Weight: &w}
	}
	drafts, err := g.Local(ctx, seeds, n, 0)
	if err != nil {
		return nil, err
	}
	if global {
		res.Hits, err = e.graphHits(ctx, drafts)
		return res, err
	}
	// A memory's documents are not in the index: they cite the memory
	// they were given to.
	for _, d := range drafts {
		res.Hits = append(res.Hits, rcp.Hit{ID: rcp.StringID(d.ID), Score: d.Score, Unit: rcp.UnitDocument,
			Citation: &rcp.Citation{Source: "memory:" + *p.MemoryID}})
	}
	return res, nil
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
		top[catalog.TopLevel(id)] = true
	}
	return graph.Enqueue(tx, graphQueueBucket, sortedKeys(top)...)
}

// graphQueue is the graph's queue for the write path (nil without the
// graph).
func (e *Engine) graphQueue() writer.Graph {
	if e.kg == nil {
		return nil
	}
	return graphQueue{e}
}

type graphQueue struct{ e *Engine }

func (q graphQueue) Enqueue(tx *bolt.Tx, docs ...string) error { return q.e.graphEnqueue(tx, docs...) }
func (q graphQueue) Notify()                                   { q.e.graphNotify() }
