package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// lengthScorer is a test double for a cross-encoder: it prefers longer
// passages, an order unrelated to BM25, so the tests can see the stage act.
type lengthScorer struct{ calls *int }

func (s lengthScorer) Score(_ context.Context, _ string, ps []string) ([]float32, error) {
	*s.calls++
	out := make([]float32, len(ps))
	for i, p := range ps {
		out[i] = float32(len(p))/100 - 2 // negative logits too
	}
	return out, nil
}
func (lengthScorer) Identity() string { return "test-length-scorer" }

func TestRerank(t *testing.T) {
	calls := 0
	e := newEngine(t, func(c *Config) { c.Reranker = lengthScorer{&calls}; c.RerankMaxCandidates = 50 })
	caps := e.Describe(context.Background()).Capabilities
	if caps.Rerank == nil || caps.Rerank.Methods[0] != rcp.RerankCrossEncoder || !caps.Retrieve.RerankBuiltin || caps.Retrieve.ScoreFloor != nil {
		t.Fatalf("capabilities %+v %+v", caps.Rerank, caps.Retrieve)
	}
	// rerank method (§7.6)
	b, err := call(t, e, rcp.MethodRerank, map[string]any{"query": "q", "passages": []any{"short", "a much longer passage", "mid length"}, "topN": 2})
	if err != nil {
		t.Fatal(err)
	}
	var rr rcp.RerankResult
	_ = json.Unmarshal(b, &rr)
	if len(rr.Scores) != 3 || len(rr.Order) != 2 || rr.Order[0] != 1 || rr.Order[1] != 2 || len(rr.Results) != 2 {
		t.Fatalf("%s", b)
	}
	for _, tc := range []struct {
		params string
		code   rcp.Code
	}{
		{`{"query":"q"}`, rcp.CodeInvalidParams},
		{`{"query":"q","passages":["a"],"method":"colbert"}`, rcp.CodeOptionUnsupported},
		{`{"query":"q","passages":["a"],"topN":-1}`, rcp.CodeInvalidParams},
		{`{"query":"q","passages":[` + strings.Repeat(`"a",`, 60) + `"a"]}`, rcp.CodePayloadTooLarge},
	} {
		if _, err := call(t, e, rcp.MethodRerank, tc.params); err == nil || err.Code != tc.code {
			t.Errorf("%.50s: %v, want %d", tc.params, err, tc.code)
		}
	}
	if _, err := call(t, e, rcp.MethodRerank, `{"query":"q","documents":["legacy field"]}`); err != nil {
		t.Fatalf("legacy documents: %v", err)
	}

	// retrieve reranks by default, honours topN and rerank:false.
	r := retrieve(t, e, map[string]any{"query": "index", "k": 5, "rerank": map[string]any{"method": "cross-encoder", "topN": 8}})
	if r.Usage.Reranked == nil || *r.Usage.Reranked != 8 || *r.Usage.Candidates < 8 || len(r.Hits) != 5 {
		t.Fatalf("usage %+v hits %d", r.Usage, len(r.Hits))
	}
	for i, h := range r.Hits {
		if _, ok := h.Scores["rerank"]; !ok || h.Score != h.Scores["rerank"] || (i > 0 && h.Score > r.Hits[i-1].Score) {
			t.Fatalf("hit %d %+v", i, h)
		}
		if *h.Confidence <= 0 || *h.Confidence >= 1 {
			t.Fatalf("confidence %v", *h.Confidence)
		}
	}
	if d := retrieve(t, e, map[string]any{"query": "index", "k": 5}); d.Usage.Reranked == nil || *d.Usage.Reranked != min(20, *d.Usage.Candidates) {
		t.Fatalf("default rerank %+v", d.Usage)
	}
	before := calls
	if off := retrieve(t, e, map[string]any{"query": "index", "k": 5, "rerank": false}); off.Usage.Reranked != nil || calls != before {
		t.Fatalf("rerank:false still reranked")
	}
	// pages of a reranked list stay within the reranked top N
	p1 := retrieve(t, e, map[string]any{"query": "index", "k": 4, "rerank": map[string]any{"topN": 6}})
	p2 := retrieve(t, e, map[string]any{"query": "index", "k": 4, "rerank": map[string]any{"topN": 6}, "cursor": p1.NextCursor})
	if len(p2.Hits) != 2 || p2.NextCursor != "" {
		t.Fatalf("page 2: %v next %q", ids(p2), p2.NextCursor)
	}
	if _, err := call(t, e, rcp.MethodRetrieve, map[string]any{"query": "index", "k": 5, "rerank": map[string]any{"method": "llm"}}); err == nil || err.Code != rcp.CodeOptionUnsupported {
		t.Fatalf("llm: %v", err)
	}
}
