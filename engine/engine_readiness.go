package engine

// Readiness of the derived structures (issue 31): the dense generation with
// its HNSW index, the knowledge graph, its communities, the summary tree
// and the global memory are each built in the background from the index.
// engine/readiness observes them through the probes below; /healthz, info
// (_meta "x-rcpgo/readiness", rcp.LiveMeta), the console and `rcp index
// status` show the states, and a call on a structure whose first build has
// not finished waits for it within its deadline (awaitDerived) instead of
// answering an empty success; an answer from a stale one says so in
// usage.notes.

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rcpgo/rcpgo/engine/readiness"
	"github.com/rcpgo/rcpgo/engine/tree"
	"github.com/rcpgo/rcpgo/rcp"
)

// Names of the derived structures (keys of rcp.Readiness) and how answers
// name them.
const (
	derivedDense       = "dense"
	derivedGraph       = "graph"
	derivedCommunities = "communities"
	derivedTree        = "tree"
	derivedMemory      = "memory"
)

var derivedLabels = map[string]string{
	derivedDense:       "the dense index",
	derivedGraph:       "the knowledge graph",
	derivedCommunities: "the graph's communities",
	derivedTree:        "the summary tree",
	derivedMemory:      "the global memory",
}

// openReadiness registers the engine's knowledge structures (the dense
// side registers its own, derive.Name).
func (e *Engine) openReadiness() {
	if e.kg != nil {
		built := &atomic.Bool{}
		built.Store(e.kg.g.Version() > 0) // a snapshot was loaded
		graphProbe := func() readiness.Observation { return e.graphProbe(built) }
		e.ready.Add(derivedGraph, derivedLabels[derivedGraph], graphProbe)
		e.ready.Add(derivedCommunities, derivedLabels[derivedCommunities], func() readiness.Observation {
			return e.communitiesProbe(graphProbe())
		})
		e.ready.Add(derivedMemory, derivedLabels[derivedMemory], graphProbe)
	}
	if e.rt != nil {
		e.ready.Add(derivedTree, derivedLabels[derivedTree], e.treeProbe)
	}
}

// graphProbe observes the graph builder's queue; built is set once the
// queue has been drained (or a snapshot was loaded).
func (e *Engine) graphProbe(built *atomic.Bool) readiness.Observation {
	pending := e.kg.b.Pending()
	if pending == 0 {
		built.Store(true)
	}
	o := readiness.Observation{Built: built.Load(), Current: pending == 0}
	if pending > 0 {
		o.Phase, o.Remaining, o.Unit = "extract", int64(pending), "documents"
	}
	return o
}

// communitiesProbe observes the community hierarchy of graph g (whose
// observation is graph).
func (e *Engine) communitiesProbe(graph readiness.Observation) readiness.Observation {
	h := e.kg.g.Communities()
	o := readiness.Observation{Built: h != nil, Current: h != nil && graph.Current && h.Version == e.kg.g.Version()}
	if !o.Current {
		o.Phase = "communities"
		if !graph.Current {
			o.Phase, o.Detail = "extract", "the graph is being updated"
		}
	}
	return o
}

// treeProbe observes the summary tree against the index.
func (e *Engine) treeProbe() readiness.Observation {
	t := e.currentTree()
	o := readiness.Observation{Built: t != nil, Current: t != nil && t.Version == e.ix.Version()}
	if t == nil && e.published() == nil && e.dense != nil {
		if why := e.dense.Waiting(); why != "" {
			o.Waiting = "the summary tree clusters the dense vectors: " + why
		}
	}
	if !o.Current && o.Waiting == "" {
		o.Phase = "cluster"
		if g := e.published(); g != nil && e.dense.Backlog(g) > 0 {
			o.Phase, o.Detail = "embed", "waiting for recent writes to be embedded"
		}
	}
	return o
}

// Readiness reports every derived structure's state (nil: none).
func (e *Engine) Readiness() rcp.Readiness {
	if e.ready == nil {
		return nil
	}
	return e.ready.Readiness()
}

// LiveMeta implements rcp.LiveMeta: the readiness of the derived
// structures in every initialize and info answer.
func (e *Engine) LiveMeta(context.Context) rcp.Meta {
	r := e.Readiness()
	if len(r) == 0 {
		return nil
	}
	return rcp.Meta{}.Set(rcp.MetaRCPGoReadiness, r)
}

// awaitDerived waits until the structures named are built, within ctx's
// deadline (else -32010 retryable with retryAfterMs), and returns the
// usage notes of those served stale.
func (e *Engine) awaitDerived(ctx context.Context, names ...string) ([]string, error) {
	states, err := e.ready.Wait(ctx, names...)
	if err != nil {
		return nil, err
	}
	var notes []string
	for _, name := range names {
		if n := readiness.Note(derivedLabels[name], states[name]); n != "" {
			notes = append(notes, n)
		}
	}
	return notes, nil
}

// awaitUnit waits for the structures a graph unit of retrieve reads and
// notes those served stale.
func (e *Engine) awaitUnit(ctx context.Context, pl *retrievePlan, unit string) error {
	needs := []string{derivedGraph}
	if unit == rcp.UnitCommunity {
		needs = append(needs, derivedCommunities)
	}
	notes, err := e.awaitDerived(ctx, needs...)
	pl.notes = append(pl.notes, notes...)
	return err
}

// treeNodes answers tree-node hits above the leaves from tree t. A stale
// tree that has no cluster for a query the index does match (its units are
// all newer than the tree) would answer an empty success: the tree is
// rebuilt now instead, within the call's deadline (else -32010 retryable).
func (e *Engine) treeNodes(ctx context.Context, t *tree.Tree, query string, level, k int, notes *[]string, started time.Time) (*rcp.RetrieveResult, error) {
	before := len(*notes)
	res, err := e.retrieveTreeNode(ctx, t, query, level, k, notes, started)
	if err != nil || len(res.Hits) > 0 || t.Version == e.ix.Version() || res.Usage == nil || *res.Usage.Candidates == 0 {
		return res, err
	}
	rctx, cancel := context.WithTimeout(ctx, readiness.Budget(ctx, time.Now()))
	defer cancel()
	if err := e.SyncTree(rctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s, _ := e.ready.State(derivedTree)
		s.State = rcp.StateBuilding
		return nil, readiness.NotReady(derivedLabels[derivedTree], s)
	}
	*notes = (*notes)[:before]
	res, err = e.retrieveTreeNode(ctx, e.currentTree(), query, level, k, notes, started)
	if err == nil && len(res.Hits) == 0 {
		res.Usage.Notes = append(res.Usage.Notes, fmt.Sprintf("none of the %d units matching the query is in the summary tree: "+
			"the tree clusters the units' dense vectors and these have none (with LSA, text whose terms the basis does not know "+
			"has none until the basis is refitted, when the corpus doubles)", *res.Usage.Candidates))
	}
	return res, err
}

// levels is retrieve.levels as the structures stand now (§6.1: "RAPTOR
// tree depth, Leiden levels"): the levels a session can ask for —
// tree-node levels 0 … depth−1 of tree t (level 0 the units, so a tree
// counts from one summary level on), community levels 0 … depth−1 — or 0
// (flat, omitted) when there are none.
func (e *Engine) levels(t *tree.Tree) int {
	n := 0
	if t.Depth() >= 2 {
		n = t.Depth()
	}
	if e.kg != nil {
		n = max(n, e.kg.g.Communities().Depth())
	}
	return n
}
