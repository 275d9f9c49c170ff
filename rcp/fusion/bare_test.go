package fusion

import (
	"math"
	"reflect"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// TestBare: Options.Bare fuses to the same keys, ids, scores, weights and
// order, and leaves each hit's meta as the kept hit had it.
func TestBare(t *testing.T) {
	lists := []List{
		{Engine: "a", Hits: []rcp.Hit{{ID: rcp.StringID("x"), Score: 3, Meta: map[string]any{"k": 1}}, {ID: rcp.StringID("y"), Score: 2}}},
		{Engine: "b", Hits: []rcp.Hit{{ID: rcp.StringID("y"), Score: 9}, {ID: rcp.StringID("z"), Score: 1}}},
	}
	for _, method := range []string{rcp.FusionRRF, rcp.FusionWeighted} {
		full, err := Fuse(lists, Options{Method: method})
		if err != nil {
			t.Fatal(err)
		}
		bare, err := Fuse(lists, Options{Method: method, Bare: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(bare) != len(full) {
			t.Fatalf("%s: %d bare results, %d full", method, len(bare), len(full))
		}
		for i := range full {
			f, b := full[i], bare[i]
			if f.Key != b.Key || f.ID != b.ID || f.Score != b.Score || f.Weight != b.Weight || f.Engine != b.Engine || f.Rank != b.Rank {
				t.Fatalf("%s result %d: bare %+v, full %+v", method, i, b, f)
			}
			if f.Hit.Meta["fusedScore"] == nil {
				t.Fatalf("%s: full result without fused meta: %v", method, f.Hit.Meta)
			}
		}
		want := map[string]map[string]any{"x": {"k": 1}, "y": nil, "z": nil}
		for _, b := range bare {
			if !reflect.DeepEqual(b.Hit.Meta, want[b.ID]) {
				t.Fatalf("%s: bare hit %s has meta %v, want %v", method, b.ID, b.Hit.Meta, want[b.ID])
			}
		}
	}
}

// TestScales: Scales' contributions, added per document in list order,
// are Fuse's scores and weights bit for bit; its checks are Fuse's.
func TestScales(t *testing.T) {
	floor, alpha, w := 0.0, 0.3, 0.7
	lists := []List{
		{Engine: "s", Role: RoleLexical, ScoreFloor: &floor, Hits: []rcp.Hit{
			{ID: rcp.StringID("a"), Score: 9.5}, {ID: rcp.StringID("b"), Score: 3.25}, {ID: rcp.StringID("c"), Score: math.NaN()}}},
		{Engine: "d", Role: RoleDense, ScoreFloor: &floor, Weight: &w, Hits: []rcp.Hit{
			{ID: rcp.StringID("c"), Score: 0.61}, {ID: rcp.StringID("a"), Score: 0.13}}},
	}
	scores := make([][]float64, len(lists))
	for i, l := range lists {
		for _, h := range l.Hits {
			scores[i] = append(scores[i], h.Score)
		}
	}
	for _, opts := range []Options{{}, {Method: rcp.FusionWeighted}, {Method: rcp.FusionConvex, Alpha: &alpha}} {
		res, err := Fuse(lists, opts)
		if err != nil {
			t.Fatal(err)
		}
		scales, err := Scales(lists, scores, opts)
		if err != nil {
			t.Fatal(err)
		}
		sum, weight := map[string]float64{}, map[string]float64{}
		for i, l := range lists {
			for j, h := range l.Hits {
				sum[h.ID.String()] += scales[i].Contribution(j+1, h.Score)
				weight[h.ID.String()] += scales[i].Weight
			}
		}
		for _, r := range res {
			if sum[r.ID] != r.Score || weight[r.ID] != r.Weight {
				t.Errorf("%q %s: Scales gives %v/%v, Fuse %v/%v", opts.Method, r.ID, sum[r.ID], weight[r.ID], r.Score, r.Weight)
			}
		}
	}
	bad := -1.0
	if _, err := Scales(lists, scores, Options{Alpha: &bad, Method: rcp.FusionConvex}); err == nil {
		t.Error("alpha -1 accepted")
	}
	if _, err := Scales(lists, scores[:1], Options{}); err == nil {
		t.Error("one score list for two lists accepted")
	}
}
