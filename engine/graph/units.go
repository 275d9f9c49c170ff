package graph

import (
	"context"
	"sort"
)

// maxNodeFacts bounds the triples shown in a node's text.
const maxNodeFacts = 5

// NodeHit is a node ranked for a query with the facts (triples) it takes
// part in.
type NodeHit struct {
	Name  string
	Score float64
	Facts []string // "subject predicate object"
}

// TripleHit is a triple ranked for a query.
type TripleHit struct {
	S, Pred, O string
	Score      float64
	Unit       string // the unit it was read from
}

// Nodes ranks the nodes around the query's seeds (the seeds included) by
// personalised PageRank, each with up to maxNodeFacts triples.
func (g *Graph) Nodes(ctx context.Context, s Seeds, k, hops int) ([]NodeHit, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, err := g.searchRegionLocked(ctx, s, hops)
	if err != nil || r == nil {
		return nil, err
	}
	top := g.topNodes(r, k, nil)
	out := make([]NodeHit, len(top))
	for i, n := range top {
		h := NodeHit{Name: g.nodes[n].name, Score: r.rank[n]}
		seen := map[string]bool{}
		for _, un := range g.nodes[n].units {
			for _, t := range g.units[un].triples {
				if (t.s == n || t.o == n) && len(h.Facts) < maxNodeFacts {
					f := g.nodes[t.s].name + " " + t.pred + " " + g.nodes[t.o].name
					if !seen[f] {
						seen[f] = true
						h.Facts = append(h.Facts, f)
					}
				}
			}
		}
		out[i] = h
	}
	return out, nil
}

// Triples ranks the triples of the units around the query's seeds: the
// rank of their two ends, doubled by the share of their predicate the
// query uses.
func (g *Graph) Triples(ctx context.Context, s Seeds, k, hops int) ([]TripleHit, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, err := g.searchRegionLocked(ctx, s, hops)
	if err != nil || r == nil {
		return nil, err
	}
	best := map[string]TripleHit{}
	seenUnit := map[int32]bool{}
	for _, a := range r.order {
		for _, un := range g.nodes[a].units {
			if seenUnit[un] {
				continue
			}
			seenUnit[un] = true
			u := g.units[un]
			for _, t := range u.triples {
				sc := (r.rank[t.s] + r.rank[t.o]) * (1 + overlap(t.terms, r.qterms))
				th := TripleHit{S: g.nodes[t.s].name, Pred: t.pred, O: g.nodes[t.o].name, Score: sc, Unit: u.id}
				key := th.S + "\x00" + th.Pred + "\x00" + th.O
				if old, ok := best[key]; sc > 0 && (!ok || sc > old.Score || (sc == old.Score && u.id < old.Unit)) {
					best[key] = th
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	out := make([]TripleHit, 0, len(best))
	for _, th := range best {
		out = append(out, th)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Unit+out[i].S+out[i].Pred+out[i].O < out[j].Unit+out[j].S+out[j].Pred+out[j].O
	})
	return out[:min(k, len(out))], nil
}
