package graph

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/internal/testutil/shared"
)

// sciFactGraph builds the graph of the SciFact corpus (5 183 abstracts).
func sciFactGraph(tb testing.TB) *Graph {
	tb.Helper()
	g := New(analysis.Default())
	for _, line := range shared.JSONLines(tb, "datasets", "scifact", "corpus.jsonl") {
		var d struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(line, &d); err != nil {
			tb.Fatal(err)
		}
		g.Put(d.ID, d.ID, Extract(d.Title, d.Text, false))
	}
	return g
}

// BenchmarkRebuildSciFact measures a community rebuild of the SciFact
// graph (the cost the builder pays once the queue is quiet), Louvain on
// the core (what Rebuild does) against Louvain on the whole graph, in one
// run:
//
//	RCPGO_SHARED=../shared go test ./engine/internal/graph -run '^$' -bench RebuildSciFact -benchtime 1x
func BenchmarkRebuildSciFact(b *testing.B) {
	g := sciFactGraph(b)
	s := g.Stats()
	for _, arm := range []struct {
		name     string
		minUnits int
	}{{"core", coreMinUnits}, {"whole-graph", 1}} {
		b.Run(arm.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := g.rebuild(context.Background(), arm.minUnits); err != nil {
					b.Fatal(err)
				}
			}
			h := g.Communities()
			b.ReportMetric(float64(s.Nodes), "nodes")
			b.ReportMetric(float64(s.Edges), "edges")
			b.ReportMetric(float64(h.Depth()), "levels")
			b.ReportMetric(float64(len(h.Level(0))), "communities0")
		})
	}
}

// BenchmarkLocalSciFact measures graph local (seed resolution, the
// region's personalised PageRank, unit scoring) on the SciFact graph for
// its first 50 queries, one query per iteration:
//
//	RCPGO_SHARED=../shared go test ./engine/internal/graph -run '^$' -bench LocalSciFact -count 6
func BenchmarkLocalSciFact(b *testing.B) {
	g := sciFactGraph(b)
	var queries []string
	for _, line := range shared.JSONLines(b, "datasets", "scifact", "queries.jsonl") {
		var q struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(line, &q); err != nil {
			b.Fatal(err)
		}
		if queries = append(queries, q.Text); len(queries) == 50 {
			break
		}
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := g.Local(ctx, Seeds{Query: queries[i%len(queries)]}, 10, 0); err != nil {
			b.Fatal(err)
		}
	}
}
