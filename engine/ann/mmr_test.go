package ann

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestMMR(t *testing.T) {
	cands := []Candidate{
		{ID: 10, Vec: []float32{1, 0, 0}, Relevance: 0.9},
		{ID: 11, Vec: []float32{0.99, 0.1, 0}, Relevance: 0.89}, // near-duplicate of 10
		{ID: 12, Vec: []float32{0, 1, 0}, Relevance: 0.5},
		{ID: 13, Vec: []float32{0, 0, 1}, Relevance: 0.5}, // ties with 12 → 12 first by ID
	}
	tests := []struct {
		name   string
		lambda float64
		k      int
		want   []int
	}{
		{"pure relevance", 1, 4, []int{0, 1, 2, 3}},
		{"balanced", 0.5, 3, []int{0, 2, 3}},
		{"pure diversity", 0, 2, []int{0, 2}}, // all tie at step 1 → smallest ID
		{"k larger than n", 1, 9, []int{0, 1, 2, 3}},
		{"k zero", 0.5, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MMR(cands, tt.k, tt.lambda)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := MMR(cands, 2, 1.5); err == nil {
		t.Error("lambda 1.5 accepted")
	}
	bad := append(slices.Clone(cands), Candidate{ID: 1, Vec: []float32{1}})
	if _, err := MMR(bad, 2, 0.5); !errors.Is(err, ErrDimension) {
		t.Errorf("ragged: %v", err)
	}
	// By query: relevance = cosine to the query.
	got, err := MMRByQuery([]float32{0, 2, 0}, cands, 2, 0.7)
	if err != nil || !slices.Equal(got, []int{2, 1}) && !slices.Equal(got, []int{2, 0}) {
		t.Errorf("MMRByQuery = %v, %v", got, err)
	}
	// Deterministic under input permutation.
	perm := []Candidate{cands[3], cands[1], cands[2], cands[0]}
	a, _ := MMR(perm, 4, 0.5)
	var ids []uint64
	for _, i := range a {
		ids = append(ids, perm[i].ID)
	}
	if !slices.Equal(ids, []uint64{10, 12, 13, 11}) {
		t.Errorf("permuted selection = %v", ids)
	}
}

func TestMaxSim(t *testing.T) {
	q := [][]float32{{1, 0}, {0, 2}}
	d := [][]float32{{3, 0}, {0, 1}, {1, 1}}
	tests := []struct {
		name   string
		cosine bool
		want   float64
	}{
		{"dot", false, 3 + 2},   // max(3,0,1) + max(0,2,2)
		{"cosine", true, 1 + 1}, // each query row has an aligned doc row
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MaxSim(q, d, tt.cosine)
			if err != nil || math.Abs(float64(got)-tt.want) > 1e-6 {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if s, _ := MaxSim(q, nil, false); s != 0 {
		t.Errorf("empty doc = %v", s)
	}
	if _, err := MaxSim(q, [][]float32{{1, 2, 3}}, false); !errors.Is(err, ErrDimension) {
		t.Errorf("ragged: %v", err)
	}
}

func TestBitset(t *testing.T) {
	b := NewBitset(10)
	for _, id := range []uint64{0, 9, 63, 64, 1000} {
		b.Set(id)
	}
	for _, id := range []uint64{0, 9, 63, 64, 1000} {
		if !b.Has(id) {
			t.Errorf("missing %d", id)
		}
	}
	if b.Has(1) || b.Has(999) || b.Has(1<<40) || b.Count() != 5 {
		t.Errorf("count %d", b.Count())
	}
	vecs := Clustered(3000, 8, 4, 0.3, 12)
	ix := buildIndex(t, Config{Dim: 8, ExactThreshold: -1}, vecs)
	allow := NewBitset(3000)
	for id := uint64(0); id < 3000; id += 7 {
		allow.Set(id)
	}
	got, err := ix.Search(vecs[5], 10, SearchOptions{Filter: allow.Filter()})
	if err != nil || len(got) != 10 {
		t.Fatalf("%v %v", got, err)
	}
	for _, r := range got {
		if r.ID%7 != 0 {
			t.Errorf("id %d not allowed", r.ID)
		}
	}
}

func TestVisited(t *testing.T) {
	var v visited
	for round, n := range []int{100, 100, 5000, 5000, 70} {
		v.reset(n)
		for s := range int32(n) {
			if v.seen(s) {
				t.Fatalf("round %d: slot %d seen after reset", round, s)
			}
		}
		// Few slots (reset clears their words) in even rounds, every slot
		// (reset clears everything) in odd ones.
		step := int32(1)
		if round%2 == 0 {
			step = 37
		}
		for s := int32(0); s < int32(n); s += step {
			if !v.visit(s) {
				t.Fatalf("round %d: slot %d visited twice", round, s)
			}
			if v.visit(s) || !v.seen(s) {
				t.Fatalf("round %d: slot %d not marked", round, s)
			}
		}
	}
}
