package knowledge

// Seed linking for the graph (HippoRAG / LightRAG style): besides the
// query's own mentions of nodes, the passages retrieve ranks for the
// question seed graph local, drift and memory/recall, weighted by rank —
// so a question asked in plain words, naming no entity the way the corpus
// spells it, still starts the walk where the answer is, and the passages
// themselves stay in view when the graph adds nothing.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rcpgo/rcpgo/engine/internal/graph"
	"github.com/rcpgo/rcpgo/rcp"
)

// graphSeedPassages is how many retrieved passages seed a graph search.
const graphSeedPassages = 10

// retrievedUnits returns the units retrieve ranks first for query (the
// engine's default mode), weighted 1/(rank+1). A retrieve that fails for
// another reason than the request's own end leaves the graph to the
// query's mentions (logged).
func (kn *Knowledge) retrievedUnits(ctx context.Context, query string) ([]graph.UnitSeed, error) {
	if strings.TrimSpace(query) == "" {
		return nil, nil
	}
	raw, err := json.Marshal(map[string]any{"query": query, "k": graphSeedPassages, "includeText": false})
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	res, err := kn.opts.Call(ctx, rcp.MethodRetrieve, raw)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		kn.log.Warn("graph: retrieve for seed passages failed; seeding from the query alone", "err", err)
		return nil, nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	var rr rcp.RetrieveResult
	if err := json.Unmarshal(b, &rr); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	out := make([]graph.UnitSeed, len(rr.Hits))
	for i, h := range rr.Hits {
		out[i] = graph.UnitSeed{ID: h.ID.String(), Weight: 1 / float64(i+1)}
	}
	return out, nil
}

// graphSeeds are the seeds of a graph search for plan pl: its query, its
// seed ids and the passages retrieve ranks for the query.
func (kn *Knowledge) graphSeeds(ctx context.Context, query string, ids []string) (graph.Seeds, error) {
	units, err := kn.retrievedUnits(ctx, query)
	return graph.Seeds{Query: query, IDs: ids, Units: units}, err
}

// fallbackNote says, for usage.notes, how many hits the graph did not
// reach (they come from retrieval alone); "" when it reached them all.
func fallbackNote(hits []graph.UnitHit) string {
	reached := 0
	for _, h := range hits {
		if len(h.Nodes) > 0 {
			reached++
		}
	}
	switch {
	case len(hits) == 0 || reached == len(hits):
		return ""
	case reached == 0:
		return "graph: nothing in the graph links to this question; the hits are the passages retrieve ranks for it"
	}
	return fmt.Sprintf("graph: %d of %d hits come from retrieval alone (the graph did not reach them)", len(hits)-reached, len(hits))
}

// notesUsage is a usage carrying note, nil without one.
func notesUsage(note string) *rcp.Usage {
	if note == "" {
		return nil
	}
	return &rcp.Usage{Notes: []string{note}}
}

// orRetrieved returns hits, or — when the graph has none (it has not
// caught up with the retrieved units yet) — the retrieved units
// themselves, so graph local never answers empty where retrieve answers.
func orRetrieved(hits []graph.UnitHit, s graph.Seeds, k int) []graph.UnitHit {
	if len(hits) > 0 {
		return hits
	}
	for _, u := range s.Units[:min(k, len(s.Units))] {
		hits = append(hits, graph.UnitHit{ID: u.ID, Score: retrievalOnlyScore * u.Weight})
	}
	return hits
}

// retrievalOnlyScore scales the score of a hit from retrieval alone as
// graph.Local scales its prior.
const retrievalOnlyScore = 0.5
