package graph

import (
	"context"
	"math"
	"testing"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/internal/demo"
)

// demoGraph builds the graph of the demo corpus (forty passages).
func demoGraph(tb testing.TB) *Graph {
	tb.Helper()
	docs, err := demo.Docs()
	if err != nil {
		tb.Fatal(err)
	}
	g := New(analysis.Default())
	for _, d := range docs {
		g.Put(d.ID, d.ID, Extract(d.Title, d.Text, false))
	}
	if err := g.Rebuild(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return g
}

// scoresOf runs every ranking of the graph for query and returns the
// scores in answer order.
func scoresOf(t *testing.T, g *Graph, query string) []float64 {
	t.Helper()
	ctx := context.Background()
	s := Seeds{Query: query, Units: []UnitSeed{{ID: "bm25", Weight: 1}, {ID: "wand", Weight: 0.5}, {ID: "rrf", Weight: 1 / 3.0}}}
	var out []float64
	local, err := g.Local(ctx, s, 20, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range local {
		out = append(out, h.Score)
	}
	nodes, _, err := g.Neighbors(ctx, s, 20, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		out = append(out, n.Score)
	}
	clues, err := g.Clues(ctx, s, 5, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range clues {
		out = append(out, c.Weight)
	}
	ranked, err := g.Communities().Rank(ctx, g, query, 0, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ranked {
		out = append(out, c.Score)
	}
	return out
}

// TestRankingIsReproducible: two identical builds answer identical queries
// with bit-identical scores (personalised PageRank used to sum in map
// order, so scores differed in their last digits from run to run).
func TestRankingIsReproducible(t *testing.T) {
	queries := []string{"BM25 ranking of documents", "inverted index posting lists compression", "reciprocal rank fusion of dense and sparse retrieval"}
	a := demoGraph(t)
	want := map[string][]float64{}
	for _, q := range queries {
		want[q] = scoresOf(t, a, q)
		if len(want[q]) == 0 {
			t.Fatalf("%q: no scores", q)
		}
	}
	for run := 0; run < 10; run++ {
		b := demoGraph(t)
		for _, q := range queries {
			got := scoresOf(t, b, q)
			if len(got) != len(want[q]) {
				t.Fatalf("run %d %q: %d scores, want %d", run, q, len(got), len(want[q]))
			}
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(want[q][i]) {
					t.Fatalf("run %d %q: score %d is %v, was %v", run, q, i, got[i], want[q][i])
				}
			}
		}
	}
}
