package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/fusion"
)

// TestFuseMatchesFusion checks that the fuse stage, which adds
// fusion.Scales contributions onto the candidates, ranks and scores a
// hybrid list exactly as rcp/fusion.Fuse over hits does (what the stage
// did before): same order, same scores bit for bit, for every method,
// with ties in scores, ids in both lists or one, and list weights.
func TestFuseMatchesFusion(t *testing.T) {
	rrfK, alpha := 60.0, 0.2
	methods := []fusion.Options{
		{},
		{Method: rcp.FusionRRF, RRFK: &rrfK},
		{Method: rcp.FusionWeighted},
		{Method: rcp.FusionConvex, Alpha: &alpha},
	}
	weights := []map[string]float64{nil, {"sparse": 0.3}, {"sparse": 2, "dense": 0.5}}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		opts, w := methods[trial%len(methods)], weights[trial%len(weights)]
		sparse, dense := randomLists(rng)
		want := fuseWithFusion(t, sparse, dense, opts, w)
		s := &State{Req: &Request{Mode: rcp.ModeHybrid, Fusion: opts, Weights: w}, Deps: &Deps{}}
		s.Cands = merge(copyCands(sparse), copyCands(dense))
		if err := fuse(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		if len(s.Cands) != len(want) {
			t.Fatalf("trial %d: %d candidates, want %d", trial, len(s.Cands), len(want))
		}
		for i, c := range s.Cands {
			if c.ID != want[i].ID.String() || c.Score != want[i].Score || c.Fused != want[i].Score || !c.HasFused {
				t.Fatalf("trial %d (%+v, %v) rank %d: %s %v, want %s %v", trial, opts, w, i+1, c.ID, c.Score, want[i].ID, want[i].Score)
			}
		}
	}
}

// randomLists returns a sparse and a dense list, best first (ties by id),
// with scores drawn from a few values so that ties are common, and ids
// shared between the lists.
func randomLists(rng *rand.Rand) (sparse, dense []*Candidate) {
	n := 1 + rng.IntN(60)
	for _, i := range rng.Perm(n)[:rng.IntN(n)+1] {
		sc := float64(rng.IntN(8)) + 0.5
		sparse = append(sparse, &Candidate{ID: fmt.Sprintf("d%d", i), Sparse: sc, HasSparse: true, Score: sc})
	}
	for _, i := range rng.Perm(n)[:rng.IntN(n)+1] {
		sc := float64(rng.IntN(5)) / 7
		dense = append(dense, &Candidate{ID: fmt.Sprintf("d%d", i), Dense: sc, HasDense: true, Score: sc})
	}
	sortBy := func(cs []*Candidate, f func(*Candidate) float64) {
		slices.SortFunc(cs, func(a, b *Candidate) int {
			if c := cmp.Compare(f(b), f(a)); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
	}
	sortBy(sparse, func(c *Candidate) float64 { return c.Sparse })
	sortBy(dense, func(c *Candidate) float64 { return c.Dense })
	return sparse, dense
}

func copyCands(cs []*Candidate) []*Candidate {
	out := make([]*Candidate, len(cs))
	for i, c := range cs {
		cc := *c
		out[i] = &cc
	}
	return out
}

// fuseWithFusion is the stage as it was: both lists as hits through
// fusion.Fuse, then a stable sort by score and id.
func fuseWithFusion(t *testing.T, sparse, dense []*Candidate, opts fusion.Options, w map[string]float64) []rcp.Hit {
	t.Helper()
	floor := 0.0
	lists := []fusion.List{
		{Engine: "sparse", Role: fusion.RoleLexical, ScoreFloor: &floor},
		{Engine: "dense", Role: fusion.RoleDense, ScoreFloor: &floor},
	}
	if v, ok := w["sparse"]; ok {
		lists[0].Weight = &v
	}
	if v, ok := w["dense"]; ok {
		lists[1].Weight = &v
	}
	for _, c := range sparse {
		lists[0].Hits = append(lists[0].Hits, rcp.Hit{ID: rcp.StringID(c.ID), Score: c.Sparse})
	}
	for _, c := range dense {
		lists[1].Hits = append(lists[1].Hits, rcp.Hit{ID: rcp.StringID(c.ID), Score: c.Dense})
	}
	opts.Bare = true
	res, err := fusion.Fuse(lists, opts)
	if err != nil {
		t.Fatal(err)
	}
	hits := fusion.Hits(res)
	slices.SortStableFunc(hits, func(a, b rcp.Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.ID.String(), b.ID.String())
	})
	return hits
}

// TestMergeKeepsFirst: a dense hit on a sparse candidate gives it its
// dense score; an id repeated in a list is kept once, at its first rank.
func TestMergeKeepsFirst(t *testing.T) {
	sparse := []*Candidate{{ID: "a", Sparse: 3, HasSparse: true}, {ID: "b", Sparse: 2, HasSparse: true}}
	dense := []*Candidate{{ID: "c", Dense: 0.9, HasDense: true}, {ID: "b", Dense: 0.8, HasDense: true},
		{ID: "c", Dense: 0.1, HasDense: true}, {ID: "b", Dense: 0.05, HasDense: true}}
	got := merge(sparse, dense)
	var ids []string
	for _, c := range got {
		ids = append(ids, c.ID)
	}
	if !slices.Equal(ids, []string{"a", "b", "c"}) || got[1].Dense != 0.8 || !got[1].HasDense || got[2].Dense != 0.9 {
		t.Fatalf("merge: %v, b dense %v, c dense %v", ids, got[1].Dense, got[2].Dense)
	}
}
