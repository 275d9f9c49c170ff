package engine

import (
	"fmt"
	"reflect"
	"testing"
)

// depthPreload is n documents over a small vocabulary, every fifth a copy
// of the one before (equal scores, ordered by id), with a year to filter.
func depthPreload(n int) []Preload {
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa"}
	out := make([]Preload, n)
	for i := range out {
		j := i
		if i%5 == 4 {
			j = i - 1
		}
		text := ""
		for w := 0; w < 3+j%7; w++ {
			text += words[(j*7+w*3)%len(words)] + " "
		}
		out[i] = Preload{ID: fmt.Sprintf("d%03d", i), Text: text, Meta: map[string]any{"year": 1990 + j%30}, Source: "demo"}
	}
	return out
}

// TestRetrieveDepthFromPlan: a plain sparse retrieve recalls only as deep
// as its page (usage.candidates), and its pages — hits, scores,
// confidence, text and cursors — equal those of the same request at the
// default depth given explicitly (candidateK 100), for every option that
// keeps the recall order.
func TestRetrieveDepthFromPlan(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense, c.Preload = "none", depthPreload(300) })
	for _, tc := range []struct {
		name   string
		params map[string]any
		depth  int // usage.candidates of the first page
	}{
		{"plain", map[string]any{"query": "alpha beta", "k": 10}, 11},
		{"k 7 without text", map[string]any{"query": "gamma delta kappa", "k": 7, "includeText": false}, 8},
		{"filter", map[string]any{"query": "alpha", "k": 10, "filter": map[string]any{"field": "year", "op": "gte", "value": 2005}}, 11},
		{"minScore", map[string]any{"query": "alpha beta", "k": 10, "minScore": 0.6}, 11},
		{"tokenBudget", map[string]any{"query": "theta zeta", "k": 10, "tokenBudget": 20}, 11},
		{"unit document (collapses chunks: full depth)", map[string]any{"query": "alpha beta", "k": 10, "unit": "document"}, 100},
		{"recency (rescores the list: full depth)", map[string]any{"query": "alpha beta", "k": 10, "recency": map[string]any{"field": "year", "halfLifeDays": 365}}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			explicit := map[string]any{"candidateK": 100}
			for k, v := range tc.params {
				explicit[k] = v
			}
			got, want := retrievePages(t, e, tc.params), retrievePages(t, e, explicit)
			if len(got) < 3 {
				t.Fatalf("only %d pages: the corpus does not exercise paging", len(got))
			}
			if c := *got[0].Usage.Candidates; c != tc.depth {
				t.Fatalf("first page recalled %d candidates, want %d", c, tc.depth)
			}
			if len(got) != len(want) {
				t.Fatalf("%d pages at the chosen depth, %d at candidateK 100", len(got), len(want))
			}
			for i := range got {
				if !reflect.DeepEqual(got[i].Hits, want[i].Hits) || got[i].NextCursor != want[i].NextCursor {
					t.Fatalf("page %d differs:\nchosen depth %v %q\ncandidateK   %v %q", i, ids(got[i]), got[i].NextCursor, ids(want[i]), want[i].NextCursor)
				}
			}
		})
	}
}

// retrievePages follows a request's cursors to the end of its list.
func retrievePages(t *testing.T, e *Engine, params map[string]any) []wireResult {
	t.Helper()
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	var out []wireResult
	for len(out) < 50 {
		r := retrieve(t, e, p)
		out = append(out, r)
		if r.NextCursor == "" {
			return out
		}
		p["cursor"] = r.NextCursor
	}
	t.Fatalf("more than 50 pages")
	return nil
}

// TestRetrieveHybridWindow: a hybrid retrieve whose candidateK the server
// chose fuses a window of max(2·k, 20) candidates per list
// (usage.candidates, the union, is at most twice that) and pages through
// the same fused list as the request with the window given as
// candidateK; an explicit candidateK is fused as deep as asked.
func TestRetrieveHybridWindow(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Preload = depthPreload(300) })
	settle(t, e)
	params := map[string]any{"query": "alpha beta gamma", "k": 3, "mode": "hybrid"}
	withK := func(candK int) map[string]any {
		p := map[string]any{"candidateK": candK}
		for k, v := range params {
			p[k] = v
		}
		return p
	}
	got, window, deep := retrievePages(t, e, params), retrievePages(t, e, withK(20)), retrievePages(t, e, withK(100))
	if c := *got[0].Usage.Candidates; c < 20 || c > 40 {
		t.Fatalf("the server's window fused %d candidates, want 20 to 40 (20 of each list)", c)
	}
	if c := *deep[0].Usage.Candidates; c < 100 {
		t.Fatalf("candidateK 100 fused %d candidates", c)
	}
	if len(got) != len(window) {
		t.Fatalf("%d pages from the server's window, %d at candidateK 20", len(got), len(window))
	}
	seen := map[string]bool{}
	for i := range got {
		if !reflect.DeepEqual(got[i].Hits, window[i].Hits) {
			t.Fatalf("page %d differs:\nserver's window %v\ncandidateK 20   %v", i, ids(got[i]), ids(window[i]))
		}
		for _, id := range ids(got[i]) {
			if seen[id] {
				t.Fatalf("%s on two pages", id)
			}
			seen[id] = true
		}
	}
}
