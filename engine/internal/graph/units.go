package graph

import (
	"context"
	"slices"
	"sort"
	"strings"
)

// maxNodeFacts bounds the triples shown in a node's text.
const maxNodeFacts = 5

// NodeHit is a node ranked for a query with the facts (triples) it takes
// part in.
type NodeHit struct {
	Name  string
	Score float64
	Facts []string // "subject predicate object"
	Units []string // units mentioning the node (at most maxUnitLeaves), those stating its facts first
}

// TripleHit is a triple ranked for a query.
type TripleHit struct {
	S, Pred, O string
	Score      float64
	Unit       string // the unit it was read from
	// Start and End are the byte offsets of the evidence sentence in the
	// unit's text (-1: the unit's title).
	Start, End int
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
		var rest []string
		for _, un := range g.nodes[n].units {
			stated := false
			for _, t := range g.units[un].triples {
				if (t.s == n || t.o == n) && len(h.Facts) < maxNodeFacts {
					stated = true
					f := g.nodes[t.s].name + " " + t.pred + " " + g.nodes[t.o].name
					if !seen[f] {
						seen[f] = true
						h.Facts = append(h.Facts, f)
					}
				}
			}
			if stated {
				h.Units = append(h.Units, g.units[un].id)
			} else {
				rest = append(rest, g.units[un].id)
			}
		}
		slices.Sort(h.Units)
		slices.Sort(rest)
		h.Units = append(h.Units, rest...)
		h.Units = h.Units[:min(maxUnitLeaves, len(h.Units))]
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
				th := TripleHit{S: g.nodes[t.s].name, Pred: t.pred, O: g.nodes[t.o].name, Score: sc, Unit: u.id, Start: t.start, End: t.end}
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

// Path and subgraph unit limits.
const (
	maxSubgraphNodes = 8
	maxUnitLeaves    = 10
)

// PathHit is a seed → node path through the graph ranked for a query: the
// relation chain a multi-hop question follows.
type PathHit struct {
	Nodes  []string   // seed first
	Edges  []EdgeInfo // consecutive node pairs
	Facts  []string   // one line per edge: a triple joining the pair, else their co-occurrence
	Leaves []string   // units supporting the edges
	Score  float64
}

// SubgraphHit is a connected piece of the query's neighbourhood: a
// high-ranked node and its highest-ranked neighbours, with the edges and
// facts among them.
type SubgraphHit struct {
	Center string
	Nodes  []string
	Edges  []EdgeInfo
	Facts  []string
	Leaves []string // units mentioning at least two of the nodes
	Score  float64
}

// Paths ranks the paths from the query's seeds to the highest-ranked
// nodes of the region (paths of at least one edge), each scored by its end
// node's rank times the mean rank along it, so a path through weak bridges
// ranks below one through strong ones.
func (g *Graph) Paths(ctx context.Context, s Seeds, k, hops int) ([]PathHit, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, err := g.searchRegionLocked(ctx, s, hops)
	if err != nil || r == nil {
		return nil, err
	}
	var out []PathHit
	seen := map[string]bool{}
	for _, n := range g.topNodes(r, len(r.order), nil) {
		if len(out) >= k {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		path := g.pathTo(n, r)
		if len(path) < 2 {
			continue
		}
		h := PathHit{}
		var mean float64
		for i, a := range path {
			h.Nodes = append(h.Nodes, g.nodes[a].name)
			mean += r.rank[a]
			if i > 0 {
				h.Edges = append(h.Edges, EdgeInfo{Src: g.nodes[path[i-1]].name, Dst: g.nodes[a].name, Weight: float64(g.adj[path[i-1]][a])})
				fact, leaves := g.linkLocked(path[i-1], a)
				h.Facts = append(h.Facts, fact)
				h.Leaves = appendNew(h.Leaves, leaves...)
			}
		}
		key := strings.Join(h.Nodes, "\x00")
		if seen[key] {
			continue
		}
		seen[key] = true
		h.Score = r.rank[n] * mean / float64(len(path))
		h.Leaves = h.Leaves[:min(maxUnitLeaves, len(h.Leaves))]
		out = append(out, h)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out, nil
}

// Subgraphs covers the query's neighbourhood greedily: the highest-ranked
// node not yet in a subgraph becomes a centre, joined by its
// highest-ranked neighbours in the region. A subgraph scores the sum of
// its nodes' ranks.
func (g *Graph) Subgraphs(ctx context.Context, s Seeds, k, hops int) ([]SubgraphHit, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, err := g.searchRegionLocked(ctx, s, hops)
	if err != nil || r == nil {
		return nil, err
	}
	covered := map[int32]bool{}
	var out []SubgraphHit
	for _, c := range g.topNodes(r, len(r.order), nil) {
		if len(out) >= k {
			break
		}
		if covered[c] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var nbrs []int32
		for b := range g.adj[c] {
			if r.rank[b] > 0 {
				nbrs = append(nbrs, b)
			}
		}
		if len(nbrs) == 0 {
			continue
		}
		sort.Slice(nbrs, func(i, j int) bool {
			if r.rank[nbrs[i]] != r.rank[nbrs[j]] {
				return r.rank[nbrs[i]] > r.rank[nbrs[j]]
			}
			return nbrs[i] < nbrs[j]
		})
		members := append([]int32{c}, nbrs[:min(maxSubgraphNodes-1, len(nbrs))]...)
		out = append(out, g.subgraphLocked(members, r))
		for _, m := range members {
			covered[m] = true
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out, nil
}

func (g *Graph) subgraphLocked(members []int32, r *region) SubgraphHit {
	h := SubgraphHit{Center: g.nodes[members[0]].name}
	in := make(map[int32]bool, len(members))
	for _, m := range members {
		in[m] = true
		h.Nodes = append(h.Nodes, g.nodes[m].name)
		h.Score += r.rank[m]
	}
	count := map[int32]int{}
	for i, a := range members {
		for _, b := range members[i+1:] {
			if w, ok := g.adj[a][b]; ok {
				h.Edges = append(h.Edges, EdgeInfo{Src: g.nodes[a].name, Dst: g.nodes[b].name, Weight: float64(w)})
				fact, _ := g.linkLocked(a, b)
				h.Facts = append(h.Facts, fact)
			}
		}
		for _, un := range g.nodes[a].units {
			count[un]++
		}
	}
	units := make([]int32, 0, len(count))
	for un, c := range count {
		if c >= 2 {
			units = append(units, un)
		}
	}
	sort.Slice(units, func(i, j int) bool {
		if count[units[i]] != count[units[j]] {
			return count[units[i]] > count[units[j]]
		}
		return g.units[units[i]].id < g.units[units[j]].id
	})
	for _, un := range units[:min(maxUnitLeaves, len(units))] {
		h.Leaves = append(h.Leaves, g.units[un].id)
	}
	return h
}

// linkLocked describes the edge a–b: a triple relating the two when a unit
// states one, else their co-occurrence; with the units behind it.
func (g *Graph) linkLocked(a, b int32) (string, []string) {
	var fact string
	var leaves []string
	for _, un := range g.nodes[a].units {
		u := g.units[un]
		both := false
		for _, n := range u.nodes {
			if n == b {
				both = true
				break
			}
		}
		if !both {
			continue
		}
		if len(leaves) < maxUnitLeaves {
			leaves = append(leaves, u.id)
		}
		for _, t := range u.triples {
			if fact == "" && ((t.s == a && t.o == b) || (t.s == b && t.o == a)) {
				fact = g.nodes[t.s].name + " " + t.pred + " " + g.nodes[t.o].name
			}
		}
	}
	if fact == "" {
		fact = g.nodes[a].name + " — " + g.nodes[b].name
	}
	sort.Strings(leaves)
	return fact, leaves
}

func appendNew(dst []string, xs ...string) []string {
	for _, x := range xs {
		if !slices.Contains(dst, x) {
			dst = append(dst, x)
		}
	}
	return dst
}
