package engine

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// TestSessionMemoryRecallsItsTexts: a session memory built from a few
// sentences recalls clues for questions about them — the entity the
// question's entity leads to, and, for a question naming no node, the
// entities of the documents holding its words — never an empty answer
// while the memory holds matching content. (Before: clues [] for every
// question about Alice.)
func TestSessionMemoryRecallsItsTexts(t *testing.T) {
	e := graphEngine(t, t.TempDir())
	defer e.Close()
	docs := []map[string]any{
		{"id": "m1", "text": "Alice works at Acme. She leads the search team there."},
		{"id": "m2", "text": "Acme is a small company in Berlin. Acme builds search engines."},
		{"id": "m3", "text": "Bob joined Acme in 2021 and reports to Alice."},
	}
	var b rcp.MemoryBuildResult
	if err := json.Unmarshal(mustCall(t, e, rcp.MethodMemoryBuild, map[string]any{"scope": "session", "documents": docs}), &b); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query, clue, hit string
	}{
		{"Where does Alice work?", "acme", "m1"},
		{"Who does Bob report to?", "alice", "m3"},
		{"what does the company build", "acme", "m2"},
	} {
		var r rcp.MemoryRecallResult
		if err := json.Unmarshal(mustCall(t, e, rcp.MethodMemoryRecall, map[string]any{"query": tc.query, "memoryId": b.MemoryID}), &r); err != nil {
			t.Fatal(err)
		}
		var seeds []string
		for _, c := range r.Clues {
			seeds = append(seeds, c.SeedIDs...)
		}
		if !slices.Contains(seeds, tc.clue) || len(r.Hits) == 0 || r.Hits[0].ID.String() != tc.hit {
			t.Errorf("%q: clues %v, hits %v; want clue %q and %s first", tc.query, seeds, r.Hits, tc.clue, tc.hit)
		}
		for _, h := range r.Hits {
			if h.Citation == nil || h.Citation.Source != "memory:"+b.MemoryID {
				t.Errorf("%q: hit %s cites %+v", tc.query, h.ID, h.Citation)
			}
		}
	}
}
