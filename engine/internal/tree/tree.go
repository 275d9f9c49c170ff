// Package tree is rcpd's RAPTOR-style summary tree over the index's chunk
// vectors: level 0 are the leaves (the units themselves), level 1 groups
// similar leaves, level 2 groups similar level-1 clusters, and so on, each
// cluster with an extractive summary (the leads of its most central
// members). Every level is a partition of the one below it, so a query can
// be answered at any level.
//
// Clustering is recursive spherical k-means, top-down, into groups of at
// most Options.GroupSize (deterministic: seeded k-means++): O(n·d·log n)
// per level rather than the O(n²) of agglomerative or GMM clustering, so a
// 100 k-unit index builds in seconds. A Tree is immutable once built; the
// engine rebuilds it in the background and swaps it in.
package tree

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"unicode"
)

// Defaults of Options.
const (
	DefaultGroupSize = 8
	DefaultMaxLevels = 4 // summary levels above the leaves
	maxCentral       = 20
	summaryLeads     = 3
	maxLeadRunes     = 240
	kmeansIters      = 8
	branching        = 8
)

// Options tune Build.
type Options struct {
	GroupSize int // most members per cluster (default 8)
	MaxLevels int // most summary levels (default 4)
}

// Leaf is one unit of the index with its vector.
type Leaf struct {
	ID   string
	Vec  []float32
	Text string
}

// Node is a cluster of one level ≥ 1.
type Node struct {
	ID      string // "t<level>.<i>"
	Level   int
	Size    int      // leaves under it
	Summary string   // leads of its most central members
	Central []string // up to 20 leaves under it, most central first
	Model   bool     // Summary was written by a chat model (else extractive)
}

// Tree is a built summary tree.
type Tree struct {
	// Version is the index version the leaves were read at.
	Version string
	// Levels[l-1] are the nodes of level l.
	Levels  [][]*Node
	leafIdx map[string]int32
	// nodeOf[l-1][leaf] is the node of level l above leaf.
	nodeOf [][]int32
}

// Depth is the number of levels including the leaves (1 + summary levels;
// 0 for a nil tree).
func (t *Tree) Depth() int {
	if t == nil {
		return 0
	}
	return 1 + len(t.Levels)
}

// Leaves counts the leaves.
func (t *Tree) Leaves() int {
	if t == nil {
		return 0
	}
	return len(t.leafIdx)
}

// Build clusters leaves level by level until a level has no more than
// GroupSize nodes or MaxLevels is reached. Leaves without a usable vector
// (zero) are skipped. Build normalises the leaves' vectors in place (it
// owns them: a 100 k-unit index holds no second copy).
func Build(ctx context.Context, version string, leaves []Leaf, o Options) (*Tree, error) {
	if o.GroupSize < 2 {
		o.GroupSize = DefaultGroupSize
	}
	if o.MaxLevels < 1 {
		o.MaxLevels = DefaultMaxLevels
	}
	t := &Tree{Version: version, leafIdx: make(map[string]int32, len(leaves))}
	var vecs [][]float32
	var texts []string
	var members [][]int32 // per current item: the leaves under it
	for _, l := range leaves {
		v := l.Vec
		if (len(vecs) > 0 && len(v) != len(vecs[0])) || !normalize(v) {
			continue
		}
		if _, dup := t.leafIdx[l.ID]; dup {
			continue
		}
		t.leafIdx[l.ID] = int32(len(vecs))
		vecs = append(vecs, v)
		texts = append(texts, lead(l.Text))
		members = append(members, []int32{int32(len(members))})
	}
	ids := make([]string, len(t.leafIdx))
	for id, i := range t.leafIdx {
		ids[i] = id
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for level := 1; level <= o.MaxLevels && len(vecs) > 1; level++ {
		groups, err := partition(ctx, vecs, seq(len(vecs)), o.GroupSize, rng)
		if err != nil {
			return nil, err
		}
		if len(groups) == len(vecs) {
			break // nothing merged: the level would repeat the one below
		}
		nodeOf := make([]int32, len(ids))
		nodes := make([]*Node, len(groups))
		nextVecs := make([][]float32, len(groups))
		nextTexts := make([]string, len(groups))
		nextMembers := make([][]int32, len(groups))
		for gi, g := range groups {
			c := centroid(vecs, g)
			sort.SliceStable(g, func(a, b int) bool { return dot(vecs[g[a]], c) > dot(vecs[g[b]], c) })
			n := &Node{ID: fmt.Sprintf("t%d.%d", level, gi), Level: level}
			var leads []string
			for _, item := range g {
				if texts[item] != "" && len(leads) < summaryLeads {
					leads = append(leads, texts[item])
				}
				for _, lf := range members[item] {
					nodeOf[lf] = int32(gi)
					nextMembers[gi] = append(nextMembers[gi], lf)
					if len(n.Central) < maxCentral {
						n.Central = append(n.Central, ids[lf])
					}
				}
			}
			n.Size = len(nextMembers[gi])
			n.Summary = strings.Join(leads, " ")
			nodes[gi], nextVecs[gi], nextTexts[gi] = n, c, lead(n.Summary)
		}
		t.Levels = append(t.Levels, nodes)
		t.nodeOf = append(t.nodeOf, nodeOf)
		vecs, texts, members = nextVecs, nextTexts, nextMembers
		if len(vecs) <= o.GroupSize {
			break
		}
	}
	return t, nil
}

// Scored is a node ranked for a query.
type Scored struct {
	*Node
	Score float64
}

// Rank scores the nodes of level (≥ 1) from the scores of leaves a query
// matched: the sum over a node's matched leaves, divided by the square
// root of its size so that big clusters do not win by size alone.
func (t *Tree) Rank(level int, leafScores map[string]float64, k int) []Scored {
	if t == nil || level < 1 || level > len(t.Levels) {
		return nil
	}
	sums := map[int32]float64{}
	for id, s := range leafScores {
		if i, ok := t.leafIdx[id]; ok && s > 0 {
			sums[t.nodeOf[level-1][i]] += s
		}
	}
	out := make([]Scored, 0, len(sums))
	for n, s := range sums {
		nd := t.Levels[level-1][n]
		out = append(out, Scored{Node: nd, Score: s / math.Sqrt(float64(nd.Size))})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID < out[j].ID
	})
	return out[:min(k, len(out))]
}

// NodeOf returns the node of level (≥ 1) above leaf id.
func (t *Tree) NodeOf(level int, id string) (*Node, bool) {
	if t == nil || level < 1 || level > len(t.Levels) {
		return nil, false
	}
	i, ok := t.leafIdx[id]
	if !ok {
		return nil, false
	}
	return t.Levels[level-1][t.nodeOf[level-1][i]], true
}

// partition splits items into groups of at most size by recursive k-means.
func partition(ctx context.Context, vecs [][]float32, items []int32, size int, rng *rand.Rand) ([][]int32, error) {
	if len(items) <= size {
		return [][]int32{items}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := min(branching, (len(items)+size-1)/size)
	groups := kmeans(vecs, items, k, rng)
	if len(groups) < 2 { // identical vectors: split evenly
		groups = nil
		for i := 0; i < len(items); i += size {
			groups = append(groups, items[i:min(i+size, len(items))])
		}
		return groups, nil
	}
	var out [][]int32
	for _, g := range groups {
		sub, err := partition(ctx, vecs, g, size, rng)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return out, nil
}

// kmeans runs spherical k-means (cosine) with k-means++ seeding on items
// and returns the non-empty clusters.
func kmeans(vecs [][]float32, items []int32, k int, rng *rand.Rand) [][]int32 {
	cents := seedCentroids(vecs, items, k, rng)
	assign := make([]int, len(items))
	for it := 0; it < kmeansIters; it++ {
		changed := false
		for i, item := range items {
			best, bestSim := 0, math.Inf(-1)
			for c, cv := range cents {
				if s := dot(vecs[item], cv); s > bestSim {
					best, bestSim = c, s
				}
			}
			if assign[i] != best || it == 0 {
				changed = changed || assign[i] != best
				assign[i] = best
			}
		}
		groups := make([][]int32, len(cents))
		for i, item := range items {
			groups[assign[i]] = append(groups[assign[i]], item)
		}
		for c, g := range groups {
			if len(g) > 0 {
				cents[c] = centroid(vecs, g)
			}
		}
		if !changed && it > 0 {
			break
		}
	}
	groups := make([][]int32, len(cents))
	for i, item := range items {
		groups[assign[i]] = append(groups[assign[i]], item)
	}
	out := groups[:0]
	for _, g := range groups {
		if len(g) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// seedCentroids picks k starting centroids by k-means++ (distance 1 − cos).
func seedCentroids(vecs [][]float32, items []int32, k int, rng *rand.Rand) [][]float32 {
	cents := [][]float32{vecs[items[rng.IntN(len(items))]]}
	dist := make([]float64, len(items))
	for i := range dist {
		dist[i] = math.Inf(1)
	}
	for len(cents) < k {
		last := cents[len(cents)-1]
		var total float64
		for i, item := range items {
			d := max(0, 1-dot(vecs[item], last))
			dist[i] = min(dist[i], d*d)
			total += dist[i]
		}
		if total == 0 {
			break
		}
		r := rng.Float64() * total
		pick := len(items) - 1
		for i := range items {
			if r -= dist[i]; r <= 0 {
				pick = i
				break
			}
		}
		cents = append(cents, vecs[items[pick]])
	}
	return cents
}

func centroid(vecs [][]float32, items []int32) []float32 {
	c := make([]float32, len(vecs[items[0]]))
	for _, it := range items {
		for j, x := range vecs[it] {
			c[j] += x
		}
	}
	if normalize(c) {
		return c
	}
	return vecs[items[0]]
}

func dot(a, b []float32) float64 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return float64(s)
}

// normalize scales v to unit length in place; false for a zero or
// non-finite vector (left as is).
func normalize(v []float32) bool {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		return false
	}
	inv := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= inv
	}
	return true
}

func seq(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// lead is the first sentence of text, at most maxLeadRunes runes; a
// heading line (a title above the text) prefixes it as "title: sentence".
func lead(text string) string {
	text = strings.TrimSpace(text)
	if i := strings.IndexByte(text, '\n'); i > 0 && !strings.ContainsAny(text[i-1:i], ".!?:") {
		if rest := firstSentence(text[i+1:]); rest != "" {
			text = strings.TrimSpace(text[:i]) + ": " + rest
		}
	}
	return firstSentence(text)
}

func firstSentence(text string) string {
	text = strings.TrimSpace(text)
	for i, r := range text {
		if (r == '.' || r == '!' || r == '?') && (i+1 == len(text) || unicode.IsSpace(rune(text[i+1]))) {
			text = text[:i+1]
			break
		}
	}
	if r := []rune(text); len(r) > maxLeadRunes {
		text = string(r[:maxLeadRunes]) + "…"
	}
	return strings.Join(strings.Fields(text), " ")
}
