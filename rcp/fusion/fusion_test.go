package fusion

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

func ptr[T any](v T) *T { return &v }

func hitList(ids ...string) []rcp.Hit {
	out := make([]rcp.Hit, len(ids))
	for i, id := range ids {
		out[i] = rcp.Hit{ID: rcp.StringID(id), Score: math.NaN()}
	}
	return out
}

func keys(rs []Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Key
	}
	return out
}

// randomLists builds n lists over a shared id space with dyadic scores and
// weights, so every sum is exact and order independence is exact.
func randomLists(r *rand.Rand, n, length int, withText bool) []List {
	lists := make([]List, n)
	for i := range lists {
		hits := make([]rcp.Hit, length)
		for j := range hits {
			hits[j] = rcp.Hit{ID: rcp.StringID(fmt.Sprintf("d%03d", r.IntN(3*length))), Score: float64(r.IntN(9))}
			if withText {
				// distinct richness per occurrence, so the kept body is order-free
				txt := fmt.Sprintf("%0*d", 1+i*length+j, 0)
				hits[j].Text = &txt
			}
		}
		if length >= 2 { // min 0, max 8: every norm is k/8
			hits[0].Score, hits[1].Score = 8, 0
		}
		lists[i] = List{Engine: fmt.Sprintf("e%d", i), Hits: hits, Weight: ptr([]float64{0.5, 1, 2, 0.25}[r.IntN(4)])}
	}
	return lists
}

func TestOrderIndependence(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 200; iter++ {
		lists := randomLists(r, 2+r.IntN(5), 1+r.IntN(20), true)
		for _, method := range []string{rcp.FusionRRF, rcp.FusionWeighted} {
			opts := Options{Method: method}
			if method == rcp.FusionRRF {
				opts.RRFK = ptr(0.0) // 1/rank with dyadic weights: still inexact, compared loosely below
			}
			base, err := Fuse(lists, opts)
			if err != nil {
				t.Fatal(err)
			}
			perm := slices.Clone(lists)
			r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			got, err := Fuse(perm, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(base) {
				t.Fatalf("%s: %d vs %d results", method, len(got), len(base))
			}
			byKey := map[string]Result{}
			for _, b := range base {
				byKey[b.Key] = b
			}
			for i, g := range got {
				b, ok := byKey[g.Key]
				if !ok || b.Weight != g.Weight {
					t.Fatalf("%s: key %s missing or weight differs", method, g.Key)
				}
				if math.Abs(b.Score-g.Score) > 1e-15*math.Max(1, math.Abs(b.Score)) {
					t.Fatalf("%s: %s score %v vs %v", method, g.Key, b.Score, g.Score)
				}
				// richness is distinct, so the kept body and its engine do not depend on order
				if *b.Hit.Text != *g.Hit.Text || b.Engine != g.Engine || b.Hit.Meta["engine"] != g.Hit.Meta["engine"] {
					t.Fatalf("%s: kept body differs for %s", method, g.Key)
				}
				if method == rcp.FusionWeighted && base[i].Key != g.Key {
					// dyadic norms (scores 0..8 → k/8 or 1.0) and weights: exact sums, exact order
					t.Fatalf("weighted: order differs at %d: %s vs %s", i, base[i].Key, g.Key)
				}
			}
		}
	}
}

func TestDeterministicAcrossRuns(t *testing.T) {
	// internal maps (dedup index, meta) must not leak iteration order
	r := rand.New(rand.NewPCG(3, 4))
	lists := randomLists(r, 5, 50, false)
	for i := range lists {
		for j := range lists[i].Hits {
			lists[i].Hits[j].Meta = map[string]any{fmt.Sprintf("k%d", j%7): i, "shared": j}
		}
	}
	first, _ := Fuse(lists, Options{})
	for run := 0; run < 20; run++ {
		got, _ := Fuse(lists, Options{})
		for i := range got {
			if got[i].Key != first[i].Key || got[i].Score != first[i].Score || fmt.Sprint(got[i].Hit.Meta) != fmt.Sprint(first[i].Hit.Meta) {
				t.Fatalf("run %d differs at %d", run, i)
			}
		}
	}
}

func TestSingleListPreservesOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for iter := 0; iter < 100; iter++ {
		n := 1 + r.IntN(300)
		ids := r.Perm(n * 2)[:n]
		names := make([]string, n)
		for i, id := range ids {
			names[i] = fmt.Sprintf("x%d", id)
		}
		for _, k := range []float64{0, 1, 60, 1000.5} {
			got, err := Fuse([]List{{Engine: "A", Hits: hitList(names...), Weight: ptr(0.3)}}, Options{RRFK: ptr(k)})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(keys(got), names) {
				t.Fatalf("rrfK=%v: order not preserved", k)
			}
		}
	}
}

func TestConvexFallsBackToRRF(t *testing.T) {
	dense := List{Engine: "dense", Role: RoleDense, ScoreFloor: ptr(-1.0), Hits: []rcp.Hit{{ID: rcp.StringID("a"), Score: 0.9}, {ID: rcp.StringID("b"), Score: 0.1}}}
	lex := List{Engine: "lex", Role: RoleLexical, Hits: []rcp.Hit{{ID: rcp.StringID("b"), Score: 12}, {ID: rcp.StringID("c"), Score: 3}}}
	lists := []List{dense, lex}
	if m := EffectiveMethod(lists, rcp.FusionConvex); m != rcp.FusionRRF {
		t.Fatalf("EffectiveMethod = %q", m)
	}
	convex, err := Fuse(lists, Options{Method: rcp.FusionConvex})
	if err != nil {
		t.Fatal(err)
	}
	rrf, _ := Fuse(lists, Options{})
	for i := range rrf {
		if convex[i].Key != rrf[i].Key || convex[i].Score != rrf[i].Score {
			t.Fatalf("fallback differs from RRF at %d", i)
		}
	}
	lists[1].ScoreFloor = ptr(0.0)
	if m := EffectiveMethod(lists, rcp.FusionConvex); m != rcp.FusionConvex {
		t.Fatalf("EffectiveMethod = %q", m)
	}
	got, err := Fuse(lists, Options{Method: rcp.FusionConvex, Alpha: ptr(0.25)})
	if err != nil {
		t.Fatal(err)
	}
	// b: 0.25*(0.1+1)/(0.9+1) + 0.75*12/12
	want := 0.25*((0.1+1)/(0.9+1)) + 0.75*1
	if got[0].Key != "b" || got[0].Score != want {
		t.Fatalf("convex: %s %v, want b %v", got[0].Key, got[0].Score, want)
	}
}

func TestOptionsErrors(t *testing.T) {
	l := []List{{Engine: "A", Hits: hitList("a")}}
	for name, o := range map[string]Options{
		"method":    {Method: "borda"},
		"rrfK<0":    {RRFK: ptr(-1.0)},
		"rrfK NaN":  {RRFK: ptr(math.NaN())},
		"alpha > 1": {Method: rcp.FusionConvex, Alpha: ptr(1.5)},
	} {
		if _, err := Fuse(l, o); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if _, err := Fuse([]List{{Engine: "A", Hits: hitList("a"), Weight: ptr(math.Inf(1))}}, Options{}); err == nil {
		t.Error("infinite weight accepted")
	}
	inf := []List{{Engine: "A", Hits: []rcp.Hit{{ID: rcp.IntID(1), Score: math.Inf(1)}}}}
	if _, err := Fuse(inf, Options{Method: rcp.FusionWeighted}); err == nil {
		t.Error("infinite score accepted")
	}
	if rs, err := Fuse(inf, Options{}); err != nil || rs[0].Hit.Meta["engineScore"] != nil {
		t.Errorf("RRF with an infinite score: %v %v", err, rs)
	}
}

func TestAlternativeKeys(t *testing.T) {
	text := "same body"
	a := rcp.Hit{ID: rcp.StringID("a1"), Citation: &rcp.Citation{URI: "https://x/doc"}, Text: &text, Meta: map[string]any{"from": "A"}}
	b := rcp.Hit{ID: rcp.StringID("b7"), Citation: &rcp.Citation{URI: "https://x/doc"}, Text: &text, Meta: map[string]any{"extra": true}}
	c := rcp.Hit{ID: rcp.StringID("c")}
	lists := []List{{Engine: "A", Hits: []rcp.Hit{a, c}}, {Engine: "B", Hits: []rcp.Hit{b}}}
	for name, kf := range map[string]KeyFunc{"uri": KeyByCitationURI, "hash": KeyByContentHash} {
		got, err := Fuse(lists, Options{Key: kf})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].ID != "a1" || got[0].Weight != 2 {
			t.Fatalf("%s: %+v", name, got)
		}
		if got[0].Hit.Meta["from"] != "A" || got[0].Hit.Meta["extra"] != true || got[0].Hit.Meta["engine"] != "A" {
			t.Fatalf("%s: meta not merged: %v", name, got[0].Hit.Meta)
		}
	}
	if got, _ := Fuse(lists, Options{}); len(got) != 3 {
		t.Fatalf("by id: %d results", len(got))
	}
}

func TestTruncateAndHits(t *testing.T) {
	l := []List{{Engine: "A", Hits: hitList("a", "b", "c")}}
	for k, want := range map[int]int{0: 0, 2: 2, 5: 3, -1: 0} {
		got, _ := Fuse(l, Options{K: ptr(k)})
		if len(got) != want {
			t.Errorf("K=%d: %d results", k, len(got))
		}
	}
	got, _ := Fuse(l, Options{})
	hs := Hits(got)
	if len(hs) != 3 || hs[0].Score != got[0].Score || hs[0].Meta["engineRank"] != 1 {
		t.Fatalf("Hits: %+v", hs)
	}
	// input hits are not modified
	if !math.IsNaN(l[0].Hits[0].Score) || l[0].Hits[0].Meta != nil {
		t.Fatal("input mutated")
	}
}

func BenchmarkFuse8x1000(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	lists := make([]List, 8)
	for i := range lists {
		hits := make([]rcp.Hit, 1000)
		for j := range hits {
			hits[j] = rcp.Hit{ID: rcp.StringID(fmt.Sprintf("doc-%05d", r.IntN(4000))), Score: r.Float64()}
		}
		lists[i] = List{Engine: fmt.Sprintf("engine-%d", i), Hits: hits, ScoreFloor: ptr(0.0), Role: []Role{RoleDense, RoleLexical}[i%2]}
	}
	for _, m := range []string{rcp.FusionRRF, rcp.FusionWeighted, rcp.FusionConvex} {
		b.Run(m, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Fuse(lists, Options{Method: m, K: ptr(100)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
