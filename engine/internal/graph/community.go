package graph

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	gg "gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/community"
	"gonum.org/v1/gonum/graph/simple"
	"math/rand/v2"
)

// Community summary limits.
const (
	summaryEntities = 6
	summaryLeads    = 3
	maxLeaves       = 20
	MaxLevels       = 4
)

// Hierarchy is the community structure of one graph version: Louvain
// levels, level 0 the finest (most specific), each a partition of the
// connected nodes.
type Hierarchy struct {
	Version uint64 // the graph version it was computed from
	Levels  [][]*Community
}

// Community is one community with its extractive summary.
type Community struct {
	ID      string
	Level   int
	Size    int      // member nodes
	Summary string   // key entities and the leads of the units most about them
	Leaves  []string // the units behind the summary, most central first
	members map[string]bool
	terms   map[string]bool
}

// Communities returns the latest hierarchy (nil before the first Rebuild).
func (g *Graph) Communities() *Hierarchy { return g.comms.Load() }

// Rebuild recomputes the communities and publishes them. Louvain (gonum,
// fixed seed: the same graph gives the same communities) runs on the
// graph's core — nodes mentioned by at least two units — and every other
// node joins the community of its strongest core neighbour (coreGraph):
// most nodes of a corpus are mentioned once, hang off one unit's clique and
// would join that clique's community anyway, and Louvain's cost grows
// with the edges they bring. The graph is copied under the read lock; the
// clustering runs without it.
func (g *Graph) Rebuild(ctx context.Context) error { return g.rebuild(ctx, coreMinUnits) }

// coreMinUnits is how many units must mention a node for it to join the
// core Louvain runs on (1: every connected node, the whole graph).
const coreMinUnits = 2

func (g *Graph) rebuild(ctx context.Context, minUnits int) error {
	g.mu.RLock()
	ver := g.version.Load()
	attach, wg := g.coreGraphLocked(minUnits)
	g.mu.RUnlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	h := &Hierarchy{Version: ver}
	if wg.Nodes().Len() > 0 || len(attach) > 0 {
		var levels [][][]gg.Node
		if wg.Nodes().Len() > 0 {
			// The bottom of the chain (no parent) is the singleton partition.
			r, _ := community.Modularize(wg, 1, rand.NewPCG(1, 1)).(*community.ReducedUndirected)
			for r != nil {
				next, _ := r.Expanded().(*community.ReducedUndirected)
				if next == nil {
					break
				}
				levels = append(levels, r.Communities())
				r = next
			}
			// Modularize returns the coarsest level first; level 0 is the finest.
			slices.Reverse(levels)
			if len(levels) > MaxLevels {
				levels = levels[:MaxLevels]
			}
		}
		if len(levels) == 0 {
			levels = [][][]gg.Node{nil}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		g.mu.RLock()
		for l, parts := range levels {
			h.Levels = append(h.Levels, g.summarizeLocked(l, g.attachSatellitesLocked(parts, attach)))
		}
		g.mu.RUnlock()
	}
	g.comms.Store(h)
	return nil
}

// coreGraphLocked splits the connected nodes into the core (mentioned by
// minUnits or more units, with an edge to another core node), returned as a
// weighted graph, and the rest, each mapped to its strongest core
// neighbour (-1: none — such nodes are grouped by connected component).
func (g *Graph) coreGraphLocked(minUnits int) (attach map[int32]int32, wg *simple.WeightedUndirectedGraph) {
	core := map[int32]bool{}
	for a := range g.nodes {
		if len(g.nodes[a].units) < minUnits {
			continue
		}
		for b := range g.adj[a] {
			if len(g.nodes[b].units) >= minUnits {
				core[int32(a)] = true
				break
			}
		}
	}
	wg = simple.NewWeightedUndirectedGraph(0, 0)
	attach = map[int32]int32{}
	for a := range g.nodes {
		n := int32(a)
		if len(g.adj[a]) == 0 {
			continue
		}
		if core[n] {
			wg.AddNode(simple.Node(n))
			continue
		}
		best, bestW := int32(-1), float32(0)
		for b, w := range g.adj[a] {
			if core[b] && (w > bestW || (w == bestW && b < best)) {
				best, bestW = b, w
			}
		}
		attach[n] = best
	}
	for a := range core {
		for b, w := range g.adj[a] {
			if a < b && core[b] {
				wg.SetWeightedEdge(wg.NewWeightedEdge(simple.Node(a), simple.Node(b), float64(w)))
			}
		}
	}
	return attach, wg
}

// attachSatellitesLocked adds the non-core nodes to a partition of the
// core: each joins its core neighbour's community; those without one form
// communities of their own, one per connected component among them.
func (g *Graph) attachSatellitesLocked(parts [][]gg.Node, attach map[int32]int32) [][]gg.Node {
	commOf := map[int32]int{}
	out := make([][]gg.Node, len(parts))
	for i, p := range parts {
		out[i] = slices.Clone(p)
		for _, n := range p {
			commOf[int32(n.ID())] = i
		}
	}
	sats := make([]int32, 0, len(attach))
	for n := range attach {
		sats = append(sats, n)
	}
	slices.Sort(sats)
	placed := map[int32]bool{}
	for _, n := range sats {
		if c, ok := commOf[attach[n]]; ok && attach[n] >= 0 {
			out[c] = append(out[c], simple.Node(n))
			placed[n] = true
		}
	}
	for _, n := range sats {
		if placed[n] {
			continue
		}
		var comp []gg.Node
		stack := []int32{n}
		placed[n] = true
		for len(stack) > 0 {
			a := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			comp = append(comp, simple.Node(a))
			for _, b := range sortedNeighbors(g.adj[a]) {
				if _, sat := attach[b]; sat && !placed[b] {
					placed[b] = true
					stack = append(stack, b)
				}
			}
		}
		out = append(out, comp)
	}
	return out
}

func (g *Graph) summarizeLocked(level int, parts [][]gg.Node) []*Community {
	sort.SliceStable(parts, func(i, j int) bool { return len(parts[i]) > len(parts[j]) })
	out := make([]*Community, 0, len(parts))
	for i, p := range parts {
		c := &Community{ID: fmt.Sprintf("c%d.%d", level, i), Level: level, Size: len(p),
			members: make(map[string]bool, len(p)), terms: map[string]bool{}}
		ids := make([]int32, len(p))
		for j, n := range p {
			ids[j] = int32(n.ID())
			if int(ids[j]) < len(g.nodes) {
				c.members[g.nodes[ids[j]].key] = true
			}
		}
		g.summarize(c, ids)
		out = append(out, c)
	}
	return out
}

// summarize writes c's summary: its most connected members (entities
// first), then the lead of the unit that mentions most of them.
func (g *Graph) summarize(c *Community, ids []int32) {
	in := make(map[int32]bool, len(ids))
	for _, n := range ids {
		in[n] = true
	}
	strength := make(map[int32]float64, len(ids))
	perUnit := map[int32]int{}
	for _, a := range ids {
		if int(a) >= len(g.nodes) {
			continue
		}
		for b, w := range g.adj[a] {
			if in[b] {
				strength[a] += float64(w)
			}
		}
		for _, un := range g.nodes[a].units {
			perUnit[un]++
		}
	}
	key := append([]int32(nil), ids...)
	sort.Slice(key, func(i, j int) bool {
		a, b := key[i], key[j]
		if ka, kb := g.nodes[a].kind == KindEntity, g.nodes[b].kind == KindEntity; ka != kb {
			return ka
		}
		if strength[a] != strength[b] {
			return strength[a] > strength[b]
		}
		return g.nodes[a].name < g.nodes[b].name
	})
	names := make([]string, 0, summaryEntities)
	for _, n := range key[:min(summaryEntities, len(key))] {
		names = append(names, g.nodes[n].name)
	}
	units := make([]int32, 0, len(perUnit))
	for un := range perUnit {
		units = append(units, un)
	}
	sort.Slice(units, func(i, j int) bool {
		a, b := units[i], units[j]
		if perUnit[a] != perUnit[b] {
			return perUnit[a] > perUnit[b]
		}
		return g.units[a].id < g.units[b].id
	})
	var leads []string
	for _, un := range units {
		u := g.units[un]
		if len(c.Leaves) < maxLeaves {
			c.Leaves = append(c.Leaves, u.id)
		}
		if u.lead != "" && len(leads) < summaryLeads {
			leads = append(leads, u.lead)
		}
		if len(c.Leaves) >= maxLeaves && len(leads) >= summaryLeads {
			break
		}
	}
	// Readable: the key phrases, then one representative sentence (the
	// lead of the unit naming most members); ranking reads the other leads
	// too.
	c.Summary = "Key phrases: " + strings.Join(names, ", ") + "."
	if len(leads) > 0 {
		c.Summary += " " + leads[0]
	}
	for _, t := range g.an.Terms(c.Summary + " " + strings.Join(leads, " ")) {
		c.terms[t] = true
	}
}

// Depth is the number of levels (0 for a nil hierarchy).
func (h *Hierarchy) Depth() int {
	if h == nil {
		return 0
	}
	return len(h.Levels)
}

// Level returns the communities of one level (nil when out of range).
func (h *Hierarchy) Level(l int) []*Community {
	if h == nil || l < 0 || l >= len(h.Levels) {
		return nil
	}
	return h.Levels[l]
}

// ScoredCommunity is a community ranked for a query.
type ScoredCommunity struct {
	*Community
	Score float64
}

// Rank scores the communities of level l for a query (GraphRAG global
// search without an LLM map step): query terms found in the summary,
// weighted by their rarity among the level's communities, plus the
// query's entities among the members. Communities scoring 0 are dropped.
func (h *Hierarchy) Rank(ctx context.Context, g *Graph, query string, l, k int) ([]ScoredCommunity, error) {
	comms := h.Level(l)
	if len(comms) == 0 {
		return nil, nil
	}
	qterms := g.an.Terms(query)
	df := map[string]int{}
	for _, c := range comms {
		for _, t := range qterms {
			if c.terms[t] {
				df[t]++
			}
		}
	}
	g.mu.RLock()
	seeds, _ := g.seedsLocked(Seeds{Query: query})
	seedNames := make(map[string]float64, len(seeds))
	for n, w := range seeds {
		seedNames[g.nodes[n].key] = w
	}
	g.mu.RUnlock()
	names := slices.Sorted(maps.Keys(seedNames))
	var out []ScoredCommunity
	for i, c := range comms {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		var s float64
		for _, t := range qterms {
			if c.terms[t] {
				s += math.Log(1 + float64(len(comms))/float64(df[t]))
			}
		}
		for _, name := range names { // (in name order: reproducible sums)
			if c.members[name] {
				s += 2 * seedNames[name]
			}
		}
		if s > 0 {
			out = append(out, ScoredCommunity{Community: c, Score: s})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out[:min(k, len(out))], nil
}
