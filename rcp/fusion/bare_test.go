package fusion

import (
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
