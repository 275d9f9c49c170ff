// Package knowledge keeps what the engine derives from its documents
// beyond the dense index, and serves it: the knowledge graph behind graph
// (§7.9) and memory/build + memory/recall (§7.17), with the graph units of
// retrieve (community, node, triplet, path, subgraph), and the summary
// tree behind unit tree-node (tree.go). Package graph builds the graph
// offline in the background: writes record the documents they touch in a
// durable queue (Enqueue, inside the catalog transaction), the builder
// re-reads them and publishes; queries read whatever the graph holds and
// never wait for it. Plain retrieve does not touch it.
package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/derive"
	"github.com/rcpgo/rcpgo/engine/internal/fault"
	"github.com/rcpgo/rcpgo/engine/internal/gate"
	"github.com/rcpgo/rcpgo/engine/internal/graph"
	"github.com/rcpgo/rcpgo/engine/internal/readiness"
	"github.com/rcpgo/rcpgo/engine/internal/writer"
	"github.com/rcpgo/rcpgo/engine/llm"
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

// Knowledge is the engine's knowledge state: the graph, the memories and
// the summary tree. Safe for concurrent use.
type Knowledge struct {
	opts    Options
	db      *bolt.DB
	ix      search.Backend
	an      *analysis.Analyzer
	log     *slog.Logger
	catalog *catalog.Catalog
	gate    *gate.Gate
	dense   *derive.Dense
	board   *readiness.Board

	g *graph.Graph
	b *graph.Builder
	// loaded: Open found a graph snapshot, so the graph is served (stale)
	// while the builder catches up; without one it is building until the
	// queue first drains.
	loaded bool
	mem    *memory.Store
	rt     *raptor // the summary tree; nil without a dense encoder
}

// Options configure the knowledge state.
type Options struct {
	Dir      string // the data directory (graph.snap, tree.snap, memory/)
	ReadOnly bool
	// Graph builds the knowledge graph (and the tree, with Dense): without
	// it Open drops stale snapshots and returns nil.
	Graph   bool
	DB      *bolt.DB
	Index   search.Backend
	An      *analysis.Analyzer
	Log     *slog.Logger
	Catalog *catalog.Catalog
	Gate    *gate.Gate
	// Dense, with a deriver of its own (DenseLog), is what the tree
	// clusters.
	Dense    *derive.Dense
	DenseLog bool
	Board    *readiness.Board
	// Chat, when set, extracts triples and writes tree summaries.
	Chat   llm.Chat
	Memory memory.Options
	// MaxK bounds k and seedIds; MaxAddDocs the documents of memory/build.
	MaxK, MaxAddDocs int
	// TrustedSources, Screen and WireSource rate the units hits cite.
	TrustedSources map[string]string
	Screen         bool
	WireSource     string
	// Preloaded: the engine opened with a preload, whose tree is built
	// before Start returns.
	Preloaded bool
	// Call serves a retrieve for the passages that seed a graph query (the
	// engine's own Call).
	Call func(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// Open loads the graph snapshot and creates the queue before any write
// (preload included) can enqueue. With the graph disabled it drops stale
// snapshots (writes made meanwhile are not queued, so a later enable must
// rebuild from the index) and returns nil.
func Open(opts Options) (*Knowledge, error) {
	snap := filepath.Join(opts.Dir, graphSnapshot)
	if !opts.Graph {
		if !opts.ReadOnly {
			_ = os.Remove(filepath.Join(opts.Dir, treeSnapshot))
		}
		if err := os.Remove(snap); err != nil && !errors.Is(err, os.ErrNotExist) && !opts.ReadOnly {
			return nil, fmt.Errorf("engine: %w", err)
		}
		return nil, nil
	}
	kn := &Knowledge{opts: opts, db: opts.DB, ix: opts.Index, an: opts.An, log: opts.Log, catalog: opts.Catalog,
		gate: opts.Gate, dense: opts.Dense, board: opts.Board}
	kn.g = graph.New(kn.an)
	var err error
	if kn.b, err = graph.OpenBuilder(graph.BuilderOptions{DB: kn.db, Bucket: graphQueueBucket, Snapshot: snap,
		Source: graphSource{kn}, Graph: kn.g, Logger: kn.log, Chat: opts.Chat}); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	kn.loaded = kn.g.Version() > 0 // (read before Start: the builder bumps it)
	if kn.mem, err = memory.Open(filepath.Join(opts.Dir, memoryDir), kn.an, opts.Memory); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return kn, nil
}

// Start queues what the graph and the catalog disagree on (a first build,
// a crash between an index write and its queue entry), starts the
// builder and the tree's keeper, registers the structures' readiness and
// serves graph and memory on r.
func (kn *Knowledge) Start(r *rcp.Router) error {
	ids, err := kn.catalog.IDs()
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if err := kn.b.Reconcile(func(yield func(string) bool) {
		for _, id := range ids {
			if !yield(id) {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	kn.b.Start()
	kn.b.Notify()
	rcp.Handle(r, rcp.MethodGraph, kn.graphOp)
	rcp.Handle(r, rcp.MethodMemoryBuild, kn.memoryBuild)
	rcp.Handle(r, rcp.MethodMemoryRecall, kn.memoryRecall)
	kn.openTree()
	kn.openReadiness()
	return nil
}

// Close stops the tree's keeper and the graph builder.
func (kn *Knowledge) Close() error {
	if kn.rt != nil {
		kn.rt.close()
	}
	return kn.b.Close()
}

// Enqueue records top-level documents as changed, in the caller's catalog
// transaction (writer.Graph).
func (kn *Knowledge) Enqueue(tx *bolt.Tx, docs ...string) error {
	if len(docs) == 0 {
		return nil
	}
	return graph.Enqueue(tx, graphQueueBucket, docs...)
}

// Notify wakes the builder after a write (writer.Graph).
func (kn *Knowledge) Notify() { kn.b.Notify() }

// SyncGraph waits until the graph reflects every acknowledged write and
// its communities are current (tests, benchmarks, memory/build).
func (kn *Knowledge) SyncGraph(ctx context.Context) error { return kn.b.Sync(ctx) }

// GraphStats reports the graph's size.
func (kn *Knowledge) GraphStats() graph.Stats { return kn.g.Stats() }

// Describe adds graph, memory and the graph units of retrieve to caps.
func (kn *Knowledge) Describe(caps *rcp.Capabilities) {
	caps.Graph = &rcp.GraphCap{Ops: graphOps}
	caps.Retrieve.Units = append(caps.Retrieve.Units, rcp.UnitNode, rcp.UnitTriplet, rcp.UnitPath, rcp.UnitSubgraph, rcp.UnitCommunity)
	// (retrieve.levels is what exists when a session starts: WithTree.)
	caps.Memory = &rcp.MemoryCap{Scopes: []string{memory.ScopeGlobal, memory.ScopeSession}, Clues: true}
}

// Requeue queues the top-level documents of ids for the graph builder, in
// a transaction of the catalog's recovery, when the queue exists (without
// it, the graph's first start queues every document).
func Requeue(tx *bolt.Tx, ids []string) error {
	if tx.Bucket([]byte(graphQueueBucket)) == nil {
		return nil
	}
	top := map[string]bool{}
	for _, id := range ids {
		top[catalog.TopLevel(id)] = true
	}
	return graph.Enqueue(tx, graphQueueBucket, slices.Sorted(maps.Keys(top))...)
}

// graphSource reads a document's live units for the builder, under the
// catalog lock so it never sees half of a write.
type graphSource struct{ kn *Knowledge }

func (s graphSource) Units(ctx context.Context, doc string) ([]graph.SourceUnit, error) {
	kn := s.kn
	kn.gate.RLockCatalog()
	defer kn.gate.RUnlockCatalog()
	d, err := kn.ix.Get(ctx, doc)
	if err != nil {
		return nil, err
	}
	if d != nil && d.Chunk == nil {
		return []graph.SourceUnit{{ID: d.ID, Title: d.Title, Text: d.Text}}, nil
	}
	rec, err := kn.catalog.Record(doc)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, nil
	}
	var out []graph.SourceUnit
	for i := 0; i < rec.Chunks; i++ {
		c, err := kn.ix.Get(ctx, catalog.ChunkID(doc, i))
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

func (kn *Knowledge) planGraph(p *graphParams) (*graphPlan, error) {
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
		if *p.K < 1 || *p.K > kn.opts.MaxK {
			return nil, rcp.InvalidParams("k", "k must be in [1, %d], got %d", kn.opts.MaxK, *p.K)
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
		if n := kn.g.Communities().Depth(); *p.Level >= max(n, 1) {
			return nil, rcp.InvalidParams("level", "level %d is beyond the deepest community level %d", *p.Level, max(n, 1)-1)
		}
		pl.level = *p.Level
	}
	if len(pl.seeds) > kn.opts.MaxK {
		return nil, rcp.InvalidParams("seedIds", "at most %d seedIds, got %d", kn.opts.MaxK, len(pl.seeds))
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

func (kn *Knowledge) graphOp(ctx context.Context, p *graphParams) (*graphResult, error) {
	pl, err := kn.planGraph(p)
	if err != nil {
		return nil, err
	}
	notes, err := kn.awaitDerived(ctx, graphNeeds(pl.op)...)
	if err != nil {
		return nil, err
	}
	res, err := kn.runGraphOp(ctx, pl)
	if res != nil && len(notes) > 0 {
		if res.Usage == nil {
			res.Usage = &rcp.Usage{}
		}
		res.Usage.Notes = append(notes, res.Usage.Notes...)
	}
	return res, err
}

// runGraphOp answers a planned graph request.
func (kn *Knowledge) runGraphOp(ctx context.Context, pl *graphPlan) (*graphResult, error) {
	g := kn.g
	seeds := graph.Seeds{Query: pl.query, IDs: pl.seeds}
	switch pl.op {
	case "local":
		hits, _, err := kn.graphLocal(ctx, pl)
		if err != nil {
			return nil, err
		}
		out, err := kn.graphHits(ctx, hits)
		return &graphResult{Hits: &out, Usage: notesUsage(fallbackNote(hits))}, err
	case "drift":
		return kn.graphDrift(ctx, pl)
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

// graphLocal is graph local's hits: the units around the query's seeds,
// or the units retrieval found when the graph has none; seeds are the
// seeds it started from.
func (kn *Knowledge) graphLocal(ctx context.Context, pl *graphPlan) (hits []graph.UnitHit, seeds graph.Seeds, err error) {
	seeds, err = kn.graphSeeds(ctx, pl.query, pl.seeds)
	if err != nil {
		return nil, seeds, err
	}
	hits, err = kn.g.Local(ctx, seeds, pl.k, pl.hops)
	if err != nil {
		return nil, seeds, err
	}
	return orRetrieved(hits, seeds, pl.k), seeds, nil
}

// graphDrift is DRIFT without an LLM: the local hits, follow-up queries
// drawn from the seeds' neighbourhood (a bridge entity plus the
// question's own words), and a sparse search for each follow-up, fused
// with the local hits by weighted RRF (a follow-up weighs its share of the
// rank).
func (kn *Knowledge) graphDrift(ctx context.Context, pl *graphPlan) (*graphResult, error) {
	local, seeds, err := kn.graphLocal(ctx, pl)
	if err != nil {
		return nil, err
	}
	clues, err := kn.g.Clues(ctx, seeds, driftFollowups, pl.hops)
	if err != nil {
		return nil, err
	}
	lists := []fusion.List{{Engine: "local", Hits: idHits(local)}}
	followups := make([]string, 0, len(clues))
	for _, c := range clues {
		followups = append(followups, c.Query)
		res, err := kn.ix.Search(ctx, search.Query{Text: c.Query, K: pl.k, SkipDocs: true})
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
	hits, err := kn.graphHits(ctx, units)
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
func (kn *Knowledge) graphHits(ctx context.Context, units []graph.UnitHit) ([]rcp.Hit, error) {
	out := make([]rcp.Hit, 0, len(units))
	for _, u := range units {
		d, err := kn.ix.Get(ctx, u.ID)
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
		h.Citation, h.Trust = kn.unitCitation(d, nil)
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

func (kn *Knowledge) memoryBuild(ctx context.Context, p *memoryBuildParams) (*rcp.MemoryBuildResult, error) {
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
		if err := kn.b.Sync(ctx); err != nil {
			return nil, err
		}
		t := kn.g.Tokens()
		return &rcp.MemoryBuildResult{MemoryID: GlobalMemoryID, Tokens: &t}, nil
	}
	if id == GlobalMemoryID {
		return nil, rcp.InvalidParams("memoryId", "the global memory follows the index: add documents with index/add")
	}
	if len(*p.Documents) > kn.opts.MaxAddDocs {
		return nil, writer.TooMany("documents", rcp.MethodMemoryBuild, len(*p.Documents), kn.opts.MaxAddDocs)
	}
	docs := make([]memory.Doc, len(*p.Documents))
	for i, raw := range *p.Documents {
		id, text, err := writer.DecodeDocument(raw, i)
		if err != nil {
			return nil, err
		}
		docs[i] = memory.Doc{ID: id, Text: text}
	}
	newID, tokens, err := kn.mem.Build(ctx, id, scope, docs)
	switch {
	case errors.Is(err, memory.ErrNotFound):
		return nil, &fault.Error{Err: err, Message: "unknown memoryId", Field: "memoryId", Detail: err.Error()}
	case errors.Is(err, memory.ErrTooLarge):
		return nil, &fault.Error{Err: err, Message: "memory too large", Field: "documents", Detail: err.Error()}
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
func (kn *Knowledge) memoryRecall(ctx context.Context, p *memoryRecallParams) (*rcp.MemoryRecallResult, error) {
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
	g, global := kn.g, true
	if p.MemoryID == nil || *p.MemoryID == "" || *p.MemoryID == GlobalMemoryID {
		// The global memory is the graph: its first build must be done.
		if _, err := kn.awaitDerived(ctx, derivedMemory); err != nil {
			return nil, err
		}
	}
	if p.MemoryID != nil && *p.MemoryID != "" && *p.MemoryID != GlobalMemoryID {
		var err error
		if g, err = kn.mem.Get(*p.MemoryID); err != nil {
			return nil, &fault.Error{Err: err, Message: "unknown memoryId", Field: "memoryId", Detail: err.Error()}
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
		if seeds, err = kn.graphSeeds(ctx, *p.Query, nil); err != nil {
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
		res.Hits, err = kn.graphHits(ctx, drafts)
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

// Graph is the knowledge graph (diagnostics and the engine's tests).
func (kn *Knowledge) Graph() *graph.Graph { return kn.g }

// Pending is the number of documents queued for the graph builder.
func (kn *Knowledge) Pending() int { return kn.b.Pending() }

// Units are document doc's live units as the graph builder reads them.
func (kn *Knowledge) Units(ctx context.Context, doc string) ([]graph.SourceUnit, error) {
	return graphSource{kn}.Units(ctx, doc)
}
