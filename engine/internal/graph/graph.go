// Package graph is rcpd's knowledge graph (GraphRAG / HippoRAG style, built
// offline): nodes are the entities and keyphrases extracted from every unit
// of the index (a document or a chunk, see Extract), edges join nodes that
// co-occur in a unit (weighted by how often, entity–entity pairs counting
// most), and triples keep the words that relate two entities of a sentence.
// On top of it: personalised PageRank from a query's entities (Local),
// neighbourhoods (Neighbors), Louvain communities at several levels with an
// extractive summary each (Communities, Global).
//
// A Graph is safe for concurrent use: writers (the background builder)
// take a short write lock per batch; queries read under a read lock.
// Persistence (Save/Load) stores the units' extractions; the adjacency is
// rebuilt from them on Load, so a snapshot cannot disagree with itself.
package graph

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/kljensen/snowball/english"

	"github.com/rcpgo/rcpgo/engine/analysis"
)

// Edge weights by the kinds of the two nodes: an entity pair is a stronger
// relation than a shared keyphrase.
const (
	weightEntityPair = 1.0
	weightMixedPair  = 0.25
)

type node struct {
	name  string // display form: the smallest surface form seen
	key   string // the words stemmed: inflections and case variants are one node
	kind  uint8
	units []int32 // units mentioning the node; empty: the node is free
}

type triple struct {
	s, o       int32
	pred       string
	terms      []string // analysed predicate terms (query matching)
	start, end int      // evidence sentence, byte offsets in the unit's text (-1: the title)
}

type unit struct {
	id, parent string
	nodes      []int32
	groups     [][]int32 // co-occurrence windows (nil: all nodes together)
	triples    []triple
	lead       string
	terms      []string // Extraction.Terms (sorted), for MatchUnits
}

// Graph is the knowledge graph of one index.
type Graph struct {
	an *analysis.Analyzer

	mu        sync.RWMutex
	nodes     []node
	byKey     map[string]int32   // node key → node
	byWord    map[string][]int32 // stemmed word → nodes whose name holds it
	freeNodes []int32
	adj       []map[int32]float32
	units     []*unit // nil: a free slot
	unitByID  map[string]int32
	byParent  map[string][]int32
	freeUnits []int32
	live      int // units present

	version atomic.Uint64             // bumped by every mutation
	comms   atomic.Pointer[Hierarchy] // the latest community hierarchy
}

// New returns an empty graph; an analyses predicates and queries (the
// index's analyzer, so stemming agrees with retrieve).
func New(an *analysis.Analyzer) *Graph {
	return &Graph{an: an, byKey: map[string]int32{}, byWord: map[string][]int32{}, unitByID: map[string]int32{}, byParent: map[string][]int32{}}
}

// Stats counts the graph's contents.
type Stats struct {
	Units, Nodes, Edges int
}

// Stats reports the graph's size.
func (g *Graph) Stats() Stats {
	g.mu.RLock()
	defer g.mu.RUnlock()
	s := Stats{Units: g.live, Nodes: len(g.byKey)}
	for _, m := range g.adj {
		s.Edges += len(m)
	}
	s.Edges /= 2
	return s
}

// Version counts mutations: equal versions mean equal contents.
func (g *Graph) Version() uint64 { return g.version.Load() }

// Put adds unit id (of top-level document parent; parent == id for a
// whole document) with its extraction, replacing a previous version.
func (g *Graph) Put(id, parent string, ex Extraction) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removeLocked(id)
	u := &unit{id: id, parent: parent, lead: ex.Lead, terms: slices.Compact(slices.Sorted(slices.Values(ex.Terms)))}
	u.nodes = make([]int32, 0, len(ex.Nodes))
	idx := make([]int32, len(ex.Nodes))
	for i, m := range ex.Nodes {
		n := g.nodeLocked(m)
		idx[i] = n
		if !slices.Contains(u.nodes, n) { // two mentions may merge into one node
			u.nodes = append(u.nodes, n)
		}
	}
	for _, grp := range ex.Groups {
		var ids []int32
		for _, i := range grp {
			if i >= 0 && i < len(idx) && !slices.Contains(ids, idx[i]) {
				ids = append(ids, idx[i])
			}
		}
		u.groups = append(u.groups, ids)
	}
	for _, t := range ex.Triples {
		if t.S < 0 || t.S >= len(idx) || t.O < 0 || t.O >= len(idx) || idx[t.S] == idx[t.O] {
			continue
		}
		u.triples = append(u.triples, triple{s: idx[t.S], o: idx[t.O], pred: t.Pred, terms: g.an.Terms(t.Pred), start: t.Start, end: t.End})
	}
	var n int32
	if k := len(g.freeUnits); k > 0 {
		n, g.freeUnits = g.freeUnits[k-1], g.freeUnits[:k-1]
		g.units[n] = u
	} else {
		n = int32(len(g.units))
		g.units = append(g.units, u)
	}
	g.unitByID[id] = n
	g.byParent[parent] = append(g.byParent[parent], n)
	g.live++
	for _, a := range u.nodes {
		g.nodes[a].units = append(g.nodes[a].units, n)
	}
	g.eachPair(u, func(a, b int32, w float32) {
		g.adj[a][b] += w
		g.adj[b][a] += w
	})
	g.version.Add(1)
}

// eachPair calls fn once for every pair of u's nodes that co-occur (in one
// of its windows, or anywhere in it when it has none) with the pair's
// weight.
func (g *Graph) eachPair(u *unit, fn func(a, b int32, w float32)) {
	if len(u.groups) == 0 {
		for i, a := range u.nodes {
			for _, b := range u.nodes[i+1:] {
				fn(a, b, pairWeight(g.nodes[a].kind, g.nodes[b].kind))
			}
		}
		return
	}
	seen := map[[2]int32]bool{}
	for _, grp := range u.groups {
		for i, a := range grp {
			for _, b := range grp[i+1:] {
				p := [2]int32{min(a, b), max(a, b)}
				if seen[p] {
					continue
				}
				seen[p] = true
				fn(a, b, pairWeight(g.nodes[a].kind, g.nodes[b].kind))
			}
		}
	}
}

// Remove deletes unit id (no-op when absent).
func (g *Graph) Remove(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.removeLocked(id) {
		g.version.Add(1)
	}
}

// UnitsOf returns the ids of the units of top-level document parent.
func (g *Graph) UnitsOf(parent string) []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []string
	for _, n := range g.byParent[parent] {
		out = append(out, g.units[n].id)
	}
	return out
}

// UnitIDs returns every unit id (for reconciliation against the index).
func (g *Graph) UnitIDs() []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]string, 0, len(g.unitByID))
	for id := range g.unitByID {
		out = append(out, id)
	}
	return out
}

func pairWeight(a, b uint8) float32 {
	if a == KindEntity && b == KindEntity {
		return weightEntityPair
	}
	return weightMixedPair
}

func (g *Graph) nodeLocked(m Mention) int32 {
	k := Key(m.Name)
	if n, ok := g.byKey[k]; ok {
		if m.Kind == KindEntity {
			g.nodes[n].kind = KindEntity // a phrase seen as a name anywhere is a name
		}
		if m.Name < g.nodes[n].name {
			g.nodes[n].name = m.Name // a deterministic display form, whatever the order of writes
		}
		return n
	}
	var n int32
	nd := node{name: m.Name, key: k, kind: m.Kind}
	if f := len(g.freeNodes); f > 0 {
		n, g.freeNodes = g.freeNodes[f-1], g.freeNodes[:f-1]
		g.nodes[n] = nd
		g.adj[n] = map[int32]float32{}
	} else {
		n = int32(len(g.nodes))
		g.nodes = append(g.nodes, nd)
		g.adj = append(g.adj, map[int32]float32{})
	}
	g.byKey[k] = n
	for _, w := range strings.Fields(k) {
		g.byWord[w] = append(g.byWord[w], n)
	}
	return n
}

func (g *Graph) removeLocked(id string) bool {
	n, ok := g.unitByID[id]
	if !ok {
		return false
	}
	u := g.units[n]
	g.eachPair(u, func(a, b int32, w float32) {
		decr(g.adj[a], b, w)
		decr(g.adj[b], a, w)
	})
	for _, a := range u.nodes {
		g.nodes[a].units = without(g.nodes[a].units, n)
		if len(g.nodes[a].units) == 0 {
			k := g.nodes[a].key
			delete(g.byKey, k)
			for _, w := range strings.Fields(k) {
				if rest := without(g.byWord[w], a); len(rest) > 0 {
					g.byWord[w] = rest
				} else {
					delete(g.byWord, w)
				}
			}
			g.nodes[a] = node{}
			g.adj[a] = nil
			g.freeNodes = append(g.freeNodes, a)
		}
	}
	if rest := without(g.byParent[u.parent], n); len(rest) > 0 {
		g.byParent[u.parent] = rest
	} else {
		delete(g.byParent, u.parent)
	}
	delete(g.unitByID, id)
	g.units[n] = nil
	g.freeUnits = append(g.freeUnits, n)
	g.live--
	return true
}

func decr(m map[int32]float32, k int32, w float32) {
	if m == nil {
		return
	}
	if v := m[k] - w; v > 1e-4 {
		m[k] = v
	} else {
		delete(m, k)
	}
}

func without(s []int32, x int32) []int32 {
	for i, v := range s {
		if v == x {
			s[i] = s[len(s)-1]
			return s[:len(s)-1]
		}
	}
	return s
}

// lookupNode resolves a wire node id (a phrase, in any inflection or
// case) to a node.
func (g *Graph) lookupNode(name string) (int32, bool) {
	n, ok := g.byKey[Key(strings.ToLower(strings.TrimSpace(name)))]
	return n, ok
}

// Key is a node's identity: its words lower-cased and stemmed (Snowball
// English), so "Posting lists" and "posting list" are one node.
func Key(name string) string {
	ws := strings.Fields(name)
	for i, w := range ws {
		ws[i] = stemWord(strings.ToLower(w))
	}
	return strings.Join(ws, " ")
}

func stemWord(w string) string {
	if len(w) <= 3 || !isLetters(w) {
		return w
	}
	return english.Stem(w, true)
}

func isLetters(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) && r != '-' {
			return false
		}
	}
	return true
}

// Tokens estimates the graph's size in words: node names and unit leads.
func (g *Graph) Tokens() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n := 0
	for k := range g.byKey {
		n += strings.Count(k, " ") + 1
	}
	for _, u := range g.units {
		if u != nil {
			n += len(strings.Fields(u.lead))
		}
	}
	return n
}

// UnitNodes returns the node names of unit id (nil when absent).
func (g *Graph) UnitNodes(id string) []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	un, ok := g.unitByID[id]
	if !ok {
		return nil
	}
	out := make([]string, len(g.units[un].nodes))
	for i, n := range g.units[un].nodes {
		out[i] = g.nodes[n].name
	}
	return out
}

// Parents returns the top-level documents the graph holds units of.
func (g *Graph) Parents() []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]string, 0, len(g.byParent))
	for p := range g.byParent {
		out = append(out, p)
	}
	return out
}

// Names returns the names of the nodes of kind (0: every kind), sorted.
func (g *Graph) Names(kind uint8) []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]string, 0, len(g.byKey))
	for _, n := range g.byKey {
		if kind == 0 || g.nodes[n].kind == kind {
			out = append(out, g.nodes[n].name)
		}
	}
	slices.Sort(out)
	return out
}

// MatchUnits ranks the units that keep their terms (Extraction.Terms) by
// the query terms they hold, each weighted by its inverse unit frequency:
// up to k, best first, weighted for Seeds.Units. A memory of inline
// documents finds its passages this way, as the index's graph finds them
// by retrieve.
func (g *Graph) MatchUnits(query string, k int) []UnitSeed {
	g.mu.RLock()
	defer g.mu.RUnlock()
	q := slices.Compact(slices.Sorted(slices.Values(g.an.Terms(query))))
	if len(q) == 0 {
		return nil
	}
	df := make([]int, len(q))
	n := 0
	for _, u := range g.units {
		if u == nil || len(u.terms) == 0 {
			continue
		}
		n++
		for i, t := range q {
			if _, ok := slices.BinarySearch(u.terms, t); ok {
				df[i]++
			}
		}
	}
	var out []UnitSeed
	for _, u := range g.units {
		if u == nil || len(u.terms) == 0 {
			continue
		}
		var s float64
		for i, t := range q {
			if _, ok := slices.BinarySearch(u.terms, t); ok {
				s += math.Log(1 + float64(n)/float64(df[i]))
			}
		}
		if s > 0 {
			out = append(out, UnitSeed{ID: u.id, Weight: s})
		}
	}
	slices.SortFunc(out, func(a, b UnitSeed) int {
		if c := cmp.Compare(b.Weight, a.Weight); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out[:min(k, len(out))]
}
