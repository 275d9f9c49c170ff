package graph

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Search limits: a query touches a bounded region of the graph whatever
// its seeds (hubs included).
const (
	DefaultHops    = 2
	MaxHops        = 4
	maxRegionNodes = 20000
	pprIterations  = 20
	pprRestart     = 0.5 // HippoRAG's damping: half the mass returns to the seeds
	maxPathNodes   = 8
	maxProvNodes   = 5
	// predicateBoost scales the extra score of a triple whose predicate
	// words occur in the query (the relation the question asks about).
	predicateBoost = 1.0
	// relationBoost scales the weight of an edge from a query seed to a
	// node joined to it by a triple whose predicate the query uses.
	relationBoost = 2.0
)

// Seeds are the entry points of a search: the query's mentions of nodes
// (by stem, case and fuzzy form), explicit seed ids (node names, or unit
// ids whose nodes are taken) and the units a retrieval ranked for the
// query, whose nodes seed the walk by rank (HippoRAG / LightRAG).
type Seeds struct {
	Query string
	IDs   []string
	Units []UnitSeed
}

// UnitSeed is a unit retrieval ranked for the query, with its weight
// (higher first; rcpd passes 1/(rank+1)).
type UnitSeed struct {
	ID     string
	Weight float64
}

// UnitHit is one unit ranked by Local, with its provenance in the graph.
type UnitHit struct {
	ID    string
	Score float64
	Nodes []string   // the unit's nodes carrying the most rank
	Path  []string   // a shortest seed → node path to the unit's best node
	Edges []EdgeInfo // the path's edges
}

// EdgeInfo is a weighted edge between two nodes (by name).
type EdgeInfo struct {
	Src, Dst string
	Weight   float64
}

// NodeScore is a node with its rank.
type NodeScore struct {
	ID    string
	Score float64
}

// region is the part of the graph a search explores: the nodes within the
// hop limit of the seeds, their personalised PageRank and BFS parents.
type region struct {
	seeds  map[int32]float64 // the primary seeds: the query's mentions and explicit ids
	order  []int32           // BFS order
	parent map[int32]int32   // BFS tree (seeds map to -1)
	rank   map[int32]float64
	qterms map[string]bool
}

// Seed weights by how a node was reached: a query phrase naming it, a
// query word inside its name, a query word within one edit of a word of
// its name; and the share of the walk's restart mass the retrieved units'
// nodes get when the query names nodes itself.
const (
	seedPhrase       = 1.0
	seedWord         = 0.5
	seedFuzzy        = 0.3
	maxWordSeeds     = 8 // nodes a single query word seeds, most specific first
	minFuzzyWordRune = 5
)

// unitSeedShare is the share of the walk's restart mass the retrieved
// units' nodes get when the query names nodes itself (all of it when not).
const unitSeedShare = 0.5

// seedsLocked resolves s into weighted seed nodes: all of them, and the
// primary ones (the query's mentions and the explicit ids).
func (g *Graph) seedsLocked(s Seeds) (all, primary map[int32]float64) {
	seeds := g.querySeedsLocked(s.Query)
	for _, raw := range s.IDs {
		if id, ok := g.lookupNode(raw); ok {
			seeds[id] += g.specificity(id)
			continue
		}
		if un, ok := g.unitByID[raw]; ok {
			u := g.units[un]
			for _, n := range u.nodes {
				seeds[n] += 1 / float64(len(u.nodes))
			}
		}
	}
	units := map[int32]float64{}
	var total float64
	for _, us := range s.Units {
		un, ok := g.unitByID[us.ID]
		if !ok || len(g.units[un].nodes) == 0 || us.Weight <= 0 {
			continue
		}
		u := g.units[un]
		var spec float64
		for _, n := range u.nodes {
			spec += g.specificity(n)
		}
		for _, n := range u.nodes {
			w := us.Weight * g.specificity(n) / spec
			units[n] += w
			total += w
		}
	}
	primary = maps.Clone(seeds)
	if total == 0 {
		return seeds, primary
	}
	var qtotal float64
	for _, n := range slices.Sorted(maps.Keys(seeds)) { // (in id order: reproducible sums)
		qtotal += seeds[n]
	}
	scale := 1 / total
	if qtotal > 0 {
		scale = unitSeedShare * qtotal / total
	}
	for n, w := range units {
		seeds[n] += w * scale
	}
	return seeds, primary
}

// querySeedsLocked links the query to nodes: its n-grams (longest first,
// not overlapping) whose stemmed form names a node, weighted by the node's
// specificity; then each content word not inside such a phrase seeds the
// most specific nodes whose names hold it (or, failing that, a word within
// one edit of it).
func (g *Graph) querySeedsLocked(query string) map[int32]float64 {
	seeds := map[int32]float64{}
	toks := tokenize(query)
	covered := make([]bool, len(toks))
	for i := 0; i < len(toks); {
		matched := 0
		for n := min(maxEntityWords, len(toks)-i); n >= 1; n-- {
			if n == 1 && (toks[i].stop || genericWords[toks[i].lower]) {
				break
			}
			if id, ok := g.byKey[Key(phrase(toks[i:i+n]))]; ok {
				seeds[id] += seedPhrase * g.specificity(id)
				matched = n
				break
			}
		}
		for j := i; j < i+matched; j++ {
			covered[j] = true
		}
		i += max(matched, 1)
	}
	for i, t := range toks {
		if covered[i] || t.stop || genericWords[t.lower] || t.letters < 3 {
			continue
		}
		w := stemWord(t.lower)
		weight := seedWord
		nodes := g.byWord[w]
		if len(nodes) == 0 && utf8.RuneCountInString(w) >= minFuzzyWordRune {
			nodes, weight = g.fuzzyWordLocked(w), seedFuzzy
		}
		// The nodes a word seeds share its weight, the most specific
		// getting most: a word in many names is weak evidence for each.
		top := g.mostSpecific(nodes, maxWordSeeds)
		var sum float64
		for _, n := range top {
			sum += g.specificity(n)
		}
		for _, n := range top {
			seeds[n] += weight * g.specificity(n) * g.specificity(n) / sum / float64(strings.Count(g.nodes[n].key, " ")+1)
		}
	}
	return seeds
}

// mostSpecific returns up to k of nodes, those mentioned by the fewest
// units first (ties by id).
func (g *Graph) mostSpecific(nodes []int32, k int) []int32 {
	out := slices.Clone(nodes)
	slices.SortFunc(out, func(a, b int32) int {
		if c := cmp.Compare(len(g.nodes[a].units), len(g.nodes[b].units)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return out[:min(k, len(out))]
}

// fuzzyWordLocked returns the nodes holding a word within one edit of w
// (a typo), scanning the node vocabulary of words of about w's length.
func (g *Graph) fuzzyWordLocked(w string) []int32 {
	var out []int32
	for v, nodes := range g.byWord {
		if d := len(v) - len(w); d < -1 || d > 1 || v[0] != w[0] {
			continue
		}
		if withinOneEdit(w, v) {
			out = append(out, nodes...)
		}
	}
	return out
}

// withinOneEdit reports whether a and b differ by at most one insertion,
// deletion, substitution or transposition of adjacent bytes.
func withinOneEdit(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	if i == len(a) {
		return len(b)-len(a) <= 1
	}
	if len(a) == len(b) {
		return a[i+1:] == b[i+1:] || (i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:])
	}
	return a[i:] == b[i+1:]
}

func (g *Graph) specificity(n int32) float64 {
	return 1 / math.Log(2+float64(len(g.nodes[n].units)))
}

// regionLocked explores up to hops from the seeds and runs personalised
// PageRank on the explored subgraph. It checks ctx between iterations.
func (g *Graph) regionLocked(ctx context.Context, seeds, primary map[int32]float64, hops int, query string) (*region, error) {
	r := &region{seeds: primary, parent: map[int32]int32{}, rank: map[int32]float64{}, qterms: map[string]bool{}}
	for _, t := range g.an.Terms(query) {
		r.qterms[t] = true
	}
	// The query's own seeds are explored first, so a node they reach has
	// a path from them; the retrieved units' nodes they do not reach are
	// roots of their own.
	if err := g.exploreLocked(ctx, r, primary, hops); err != nil {
		return nil, err
	}
	if err := g.exploreLocked(ctx, r, seeds, hops); err != nil {
		return nil, err
	}
	// The relation the question names steers the walk: an edge from a
	// primary seed to a node it is related to by a triple whose predicate
	// the query uses ("the person who advised A") weighs more.
	bonus, _ := g.relationLinks(r)
	weight := func(a, b int32, w float32) float64 {
		if _, seed := r.seeds[a]; seed {
			return float64(w) * (1 + relationBoost*bonus[b])
		}
		return float64(w)
	}
	rank, err := g.pprLocked(ctx, r.order, seeds, weight)
	if err != nil {
		return nil, err
	}
	r.rank = rank
	return r, nil
}

// walk is the explored region as dense arrays: node i of the region is
// order[i]; its out-edges are col/frac[off[i]:off[i+1]], in region order,
// frac the share of i's mass each carries (0 edges: a dangling node).
type walk struct {
	off  []int32
	col  []int32
	frac []float64
}

// walkLocked lays out the region's edges (both ends in the region) with
// their weights by weight, normalised per node. Sums run in region
// order, so identical graphs give bit-identical ranks.
func (g *Graph) walkLocked(order []int32, pos map[int32]int32, weight func(a, b int32, w float32) float64) walk {
	wk := walk{off: make([]int32, len(order)+1)}
	type edge struct {
		j int32
		w float64
	}
	var es []edge
	for i, a := range order {
		es = es[:0]
		for b, w := range g.adj[a] {
			if j, in := pos[b]; in {
				es = append(es, edge{j, weight(a, b, w)})
			}
		}
		slices.SortFunc(es, func(x, y edge) int { return cmp.Compare(x.j, y.j) })
		var deg float64
		for _, e := range es {
			deg += e.w
		}
		for _, e := range es {
			if deg > 0 {
				wk.col = append(wk.col, e.j)
				wk.frac = append(wk.frac, e.w/deg)
			}
		}
		wk.off[i+1] = int32(len(wk.col))
	}
	return wk
}

// pprLocked is personalised PageRank over the region order from the
// seeds (HippoRAG): pprIterations steps in which pprRestart of the mass
// returns to the seeds (by weight) and the rest follows the edges (a
// dangling node keeps its mass). It returns the nodes with a positive
// rank. Dense arrays rather than maps: no map-order float sums (scores
// are reproducible to the bit) and no hashing in the inner loop.
func (g *Graph) pprLocked(ctx context.Context, order []int32, seeds map[int32]float64, weight func(a, b int32, w float32) float64) (map[int32]float64, error) {
	pos := make(map[int32]int32, len(order))
	for i, a := range order {
		pos[a] = int32(i)
	}
	restart := make([]float64, len(order))
	var total float64
	for _, a := range slices.Sorted(maps.Keys(seeds)) {
		if i, in := pos[a]; in {
			restart[i] = seeds[a]
			total += seeds[a]
		}
	}
	if total == 0 {
		return map[int32]float64{}, nil
	}
	for i := range restart {
		restart[i] /= total
	}
	wk := g.walkLocked(order, pos, weight)
	rank, next := slices.Clone(restart), make([]float64, len(order))
	for it := 0; it < pprIterations; it++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i, v := range restart {
			next[i] = pprRestart * v
		}
		for i, v := range rank {
			if v == 0 {
				continue
			}
			lo, hi := wk.off[i], wk.off[i+1]
			if lo == hi {
				next[i] += (1 - pprRestart) * v // a dangling node keeps its mass
				continue
			}
			m := (1 - pprRestart) * v
			for e := lo; e < hi; e++ {
				next[wk.col[e]] += m * wk.frac[e]
			}
		}
		rank, next = next, rank
	}
	out := make(map[int32]float64, len(order))
	for i, v := range rank {
		if v > 0 {
			out[order[i]] = v
		}
	}
	return out, nil
}

// exploreLocked adds to r the roots not yet in it and everything within
// hops of them (breadth first, bounded by maxRegionNodes).
func (g *Graph) exploreLocked(ctx context.Context, r *region, roots map[int32]float64, hops int) error {
	frontier := make([]int32, 0, len(roots))
	for n := range roots {
		if _, seen := r.parent[n]; !seen {
			frontier = append(frontier, n)
			r.parent[n] = -1
		}
	}
	sort.Slice(frontier, func(a, b int) bool { return frontier[a] < frontier[b] })
	r.order = append(r.order, frontier...)
	for h := 0; h < hops && len(frontier) > 0 && len(r.order) < maxRegionNodes; h++ {
		var next []int32
		for _, a := range frontier {
			for _, b := range sortedNeighbors(g.adj[a]) {
				if _, seen := r.parent[b]; seen || len(r.order) >= maxRegionNodes {
					continue
				}
				r.parent[b] = a
				r.order = append(r.order, b)
				next = append(next, b)
			}
		}
		frontier = next
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

func sortedNeighbors(m map[int32]float32) []int32 {
	out := make([]int32, 0, len(m))
	for b := range m {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// retrievalPrior is the weight, against a graph score normalised to 1 at
// the best unit, of a unit's retrieval weight normalised the same way.
const retrievalPrior = 0.5

// Local ranks units by the personalised PageRank of their nodes from the
// seeds (HippoRAG), plus a bonus for triples whose predicate words the
// query uses (the relation asked about), normalised by the unit's node
// count so that long units do not win by size; with s.Units, each unit's
// graph score (scaled to 1 at the best) is added to retrievalPrior times
// its retrieval weight (scaled likewise), so a passage retrieval ranked
// first stays in view when the graph knows nothing of the question. hops
// bounds the explored region (0: DefaultHops). A hit the graph did not
// reach has no Nodes.
func (g *Graph) Local(ctx context.Context, s Seeds, k, hops int) ([]UnitHit, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, err := g.searchRegionLocked(ctx, s, hops)
	if err != nil {
		return nil, err
	}
	scores := map[int32]float64{}
	if r != nil {
		for _, a := range r.order {
			for _, un := range g.nodes[a].units {
				if _, done := scores[un]; done {
					continue
				}
				scores[un] = g.unitScore(g.units[un], r)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.addPrior(scores, s.Units)
	ranked := topUnits(scores, g.units, k)
	out := make([]UnitHit, len(ranked))
	for i, un := range ranked {
		out[i] = g.unitHit(g.units[un], scores[un], r)
	}
	return out, nil
}

// addPrior scales scores to 1 at the best unit and adds retrievalPrior
// times each retrieved unit's weight (scaled to 1 at the best).
func (g *Graph) addPrior(scores map[int32]float64, units []UnitSeed) {
	var best, bestW float64
	for _, v := range scores {
		best = math.Max(best, v)
	}
	for _, us := range units {
		bestW = math.Max(bestW, us.Weight)
	}
	if best > 0 {
		for un, v := range scores {
			scores[un] = v / best
		}
	}
	if bestW <= 0 {
		return
	}
	for _, us := range units {
		if un, ok := g.unitByID[us.ID]; ok && us.Weight > 0 {
			scores[un] += retrievalPrior * us.Weight / bestW
		}
	}
}

func (g *Graph) searchRegionLocked(ctx context.Context, s Seeds, hops int) (*region, error) {
	if hops <= 0 {
		hops = DefaultHops
	}
	hops = min(hops, MaxHops)
	seeds, primary := g.seedsLocked(s)
	if len(seeds) == 0 {
		return nil, ctx.Err()
	}
	return g.regionLocked(ctx, seeds, primary, hops, s.Query)
}

func (g *Graph) unitScore(u *unit, r *region) float64 {
	var s float64
	for _, n := range u.nodes {
		s += r.rank[n]
	}
	for _, t := range u.triples {
		if m := overlap(t.terms, r.qterms); m > 0 {
			s += predicateBoost * m * (r.rank[t.s] + r.rank[t.o])
		}
	}
	return s / math.Sqrt(float64(max(len(u.nodes), 1)))
}

// overlap is the fraction of terms the query uses.
func overlap(terms []string, q map[string]bool) float64 {
	if len(terms) == 0 {
		return 0
	}
	n := 0
	for _, t := range terms {
		if q[t] {
			n++
		}
	}
	return float64(n) / float64(len(terms))
}

func topUnits(scores map[int32]float64, units []*unit, k int) []int32 {
	out := make([]int32, 0, len(scores))
	for un, s := range scores {
		if s > 0 {
			out = append(out, un)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if scores[a] != scores[b] {
			return scores[a] > scores[b]
		}
		return units[a].id < units[b].id
	})
	return out[:min(k, len(out))]
}

func (g *Graph) unitHit(u *unit, score float64, r *region) UnitHit {
	h := UnitHit{ID: u.id, Score: score}
	if r == nil {
		return h
	}
	nodes := append([]int32(nil), u.nodes...)
	sort.SliceStable(nodes, func(i, j int) bool { return r.rank[nodes[i]] > r.rank[nodes[j]] })
	for _, n := range nodes[:min(maxProvNodes, len(nodes))] {
		if r.rank[n] > 0 {
			h.Nodes = append(h.Nodes, g.nodes[n].name)
		}
	}
	if len(h.Nodes) == 0 {
		return h
	}
	path := g.pathTo(nodes[0], r)
	for i, n := range path {
		h.Path = append(h.Path, g.nodes[n].name)
		if i > 0 {
			h.Edges = append(h.Edges, EdgeInfo{Src: g.nodes[path[i-1]].name, Dst: g.nodes[n].name,
				Weight: float64(g.adj[path[i-1]][n])})
		}
	}
	return h
}

// pathTo follows BFS parents from n back to a seed.
func (g *Graph) pathTo(n int32, r *region) []int32 {
	var rev []int32
	for cur, ok := n, true; ok && cur >= 0 && len(rev) < maxPathNodes; cur, ok = r.parent[cur] {
		rev = append(rev, cur)
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// Neighbors returns the k highest-ranked nodes within hops of the seeds
// and the weighted edges among them.
func (g *Graph) Neighbors(ctx context.Context, s Seeds, k, hops int) ([]NodeScore, []EdgeInfo, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, err := g.searchRegionLocked(ctx, s, hops)
	if err != nil || r == nil {
		return nil, nil, err
	}
	top := g.topNodes(r, k, nil)
	in := map[int32]bool{}
	var nodes []NodeScore
	for _, n := range top {
		in[n] = true
		nodes = append(nodes, NodeScore{ID: g.nodes[n].name, Score: r.rank[n]})
	}
	var edges []EdgeInfo
	for _, a := range top {
		for _, b := range sortedNeighbors(g.adj[a]) {
			if in[b] && a < b {
				edges = append(edges, EdgeInfo{Src: g.nodes[a].name, Dst: g.nodes[b].name, Weight: float64(g.adj[a][b])})
			}
		}
	}
	return nodes, edges, nil
}

// topNodes ranks the region's nodes by rank, skipping those in skip.
func (g *Graph) topNodes(r *region, k int, skip map[int32]float64) []int32 {
	var out []int32
	for _, n := range r.order {
		if _, s := skip[n]; !s && r.rank[n] > 0 {
			out = append(out, n)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return r.rank[out[i]] > r.rank[out[j]] })
	return out[:min(k, len(out))]
}

// Clue is a follow-up entry point: a surrogate query naming a node the
// seeds lead to, that node as a seed id, and its share of the rank.
type Clue struct {
	Query  string
	Node   string
	Weight float64
}

// Clues returns up to n follow-ups from the neighbourhood of the query's
// seeds: the highest-ranked nodes that are not seeds — a node a seed
// reaches through a triple whose predicate the query uses (the relation
// asked about: "the person who trained A") ranks first — each turned into
// a surrogate query: the node's name plus the query's content words minus
// those of the relation already followed, so a retrieve on it finds what
// the question asks about that node.
func (g *Graph) Clues(ctx context.Context, s Seeds, n, hops int) ([]Clue, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, err := g.searchRegionLocked(ctx, s, hops)
	if err != nil || r == nil {
		return nil, err
	}
	bonus, via := g.relationLinks(r)
	score := func(nd int32) float64 { return r.rank[nd] * (1 + 2*bonus[nd]) }
	cands := g.topNodes(r, len(r.order), r.seeds)
	sort.SliceStable(cands, func(i, j int) bool { return score(cands[i]) > score(cands[j]) })
	cands = cands[:min(n, len(cands))]
	var best float64
	for _, nd := range cands {
		best = math.Max(best, score(nd))
	}
	words := g.contentWords(s.Query, r.seeds)
	out := make([]Clue, len(cands))
	for i, nd := range cands {
		q := []string{g.nodes[nd].name}
		for _, w := range words {
			if !via[nd][w.term] {
				q = append(q, w.word)
			}
		}
		out[i] = Clue{Query: strings.Join(q, " "), Node: g.nodes[nd].name, Weight: score(nd) / best}
	}
	return out, nil
}

// relationLinks finds, for nodes joined to a seed by a triple, how much of
// the triple's predicate the query uses (bonus) and the predicate's terms
// (via: the part of the question that link already answers).
func (g *Graph) relationLinks(r *region) (map[int32]float64, map[int32]map[string]bool) {
	bonus := map[int32]float64{}
	via := map[int32]map[string]bool{}
	for _, seed := range slices.Sorted(maps.Keys(r.seeds)) { // (ties go to the first seed)
		for _, un := range g.nodes[seed].units {
			for _, t := range g.units[un].triples {
				other := t.o
				if t.o == seed {
					other = t.s
				} else if t.s != seed {
					continue
				}
				if m := overlap(t.terms, r.qterms); m > bonus[other] {
					bonus[other] = m
					via[other] = map[string]bool{}
					for _, term := range t.terms {
						via[other][term] = true
					}
				}
			}
		}
	}
	return bonus, via
}

type queryWord struct{ word, term string }

// contentWords is the query without the words naming a seed node and
// without stop words, each with its analysed term.
func (g *Graph) contentWords(query string, seeds map[int32]float64) []queryWord {
	names := map[string]bool{}
	for n := range seeds {
		for _, w := range strings.Fields(g.nodes[n].name) {
			names[w] = true
		}
	}
	var out []queryWord
	for _, t := range tokenize(query) {
		if t.stop || names[t.lower] {
			continue
		}
		term := ""
		if ts := g.an.Terms(t.lower); len(ts) > 0 {
			term = ts[0]
		}
		out = append(out, queryWord{word: t.lower, term: term})
	}
	return out
}
