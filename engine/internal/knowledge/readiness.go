package knowledge

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rcpgo/rcpgo/engine/internal/readiness"
	"github.com/rcpgo/rcpgo/engine/internal/tree"
	"github.com/rcpgo/rcpgo/rcp"
)

// Names of the knowledge structures among the derived ones (keys of
// rcp.Readiness) and how answers name them.
const (
	derivedGraph       = "graph"
	derivedCommunities = "communities"
	derivedTree        = "tree"
	derivedMemory      = "memory"
)

var derivedLabels = map[string]string{
	derivedGraph:       "the knowledge graph",
	derivedCommunities: "the graph's communities",
	derivedTree:        "the summary tree",
	derivedMemory:      "the global memory",
}

// openReadiness registers the knowledge structures (the dense side
// registers its own).
func (kn *Knowledge) openReadiness() {
	built := &atomic.Bool{}
	built.Store(kn.loaded) // (not the graph's version now: the builder started before this)
	graphProbe := func() readiness.Observation { return kn.graphProbe(built) }
	kn.board.Add(derivedGraph, derivedLabels[derivedGraph], graphProbe)
	kn.board.Add(derivedCommunities, derivedLabels[derivedCommunities], func() readiness.Observation {
		return kn.communitiesProbe(graphProbe())
	})
	kn.board.Add(derivedMemory, derivedLabels[derivedMemory], graphProbe)
	if kn.rt != nil {
		kn.board.Add(derivedTree, derivedLabels[derivedTree], kn.treeProbe)
	}
}

// graphProbe observes the graph builder's queue; built is set once the
// queue has been drained (or a snapshot was loaded).
func (kn *Knowledge) graphProbe(built *atomic.Bool) readiness.Observation {
	pending := kn.b.Pending()
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
func (kn *Knowledge) communitiesProbe(graph readiness.Observation) readiness.Observation {
	h := kn.g.Communities()
	o := readiness.Observation{Built: h != nil, Current: h != nil && graph.Current && h.Version == kn.g.Version()}
	if !o.Current {
		o.Phase = "communities"
		if !graph.Current {
			o.Phase, o.Detail = "extract", "the graph is being updated"
		}
	}
	return o
}

// treeProbe observes the summary tree against the index.
func (kn *Knowledge) treeProbe() readiness.Observation {
	t := kn.Tree()
	o := readiness.Observation{Built: t != nil, Current: t != nil && t.Version == kn.ix.Version()}
	if t == nil && kn.dense.Published() == nil {
		if why := kn.dense.Waiting(); why != "" {
			o.Waiting = "the summary tree clusters the dense vectors: " + why
		}
	}
	if !o.Current && o.Waiting == "" {
		o.Phase = "cluster"
		if g := kn.dense.Published(); g != nil && kn.dense.Backlog(g) > 0 {
			o.Phase, o.Detail = "embed", "waiting for recent writes to be embedded"
		}
	}
	return o
}

// awaitDerived waits until the structures named are built, within ctx's
// deadline (else -32010 retryable with retryAfterMs), and returns the
// usage notes of those served stale.
func (kn *Knowledge) awaitDerived(ctx context.Context, names ...string) ([]string, error) {
	states, err := kn.board.Wait(ctx, names...)
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

// AwaitUnit waits for the structures a graph unit of retrieve reads, within
// ctx's deadline (else -32010 retryable with retryAfterMs), and returns
// the usage notes of those served stale.
func (kn *Knowledge) AwaitUnit(ctx context.Context, unit string) ([]string, error) {
	needs := []string{derivedGraph}
	if unit == rcp.UnitCommunity {
		needs = append(needs, derivedCommunities)
	}
	return kn.awaitDerived(ctx, needs...)
}

// TreeNodes answers tree-node hits above the leaves from tree t. A stale
// tree that has no cluster for a query the index does match (its units are
// all newer than the tree) would answer an empty success: the tree is
// rebuilt now instead, within the call's deadline (else -32010 retryable).
func (kn *Knowledge) TreeNodes(ctx context.Context, t *tree.Tree, query string, level, k int, notes *[]string, started time.Time) (*rcp.RetrieveResult, error) {
	before := len(*notes)
	res, err := kn.retrieveTreeNode(ctx, t, query, level, k, notes, started)
	if err != nil || len(res.Hits) > 0 || t.Version == kn.ix.Version() || res.Usage == nil || *res.Usage.Candidates == 0 {
		return res, err
	}
	rctx, cancel := context.WithTimeout(ctx, readiness.Budget(ctx, time.Now()))
	defer cancel()
	if err := kn.SyncTree(rctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s, _ := kn.board.State(derivedTree)
		s.State = rcp.StateBuilding
		return nil, readiness.NotReady(derivedLabels[derivedTree], s)
	}
	*notes = (*notes)[:before]
	res, err = kn.retrieveTreeNode(ctx, kn.Tree(), query, level, k, notes, started)
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
func (kn *Knowledge) levels(t *tree.Tree) int {
	n := 0
	if t.Depth() >= 2 {
		n = t.Depth()
	}
	n = max(n, kn.g.Communities().Depth())
	return n
}
