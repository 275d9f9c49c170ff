package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// treeTopicDocs are n documents on each of three topics with disjoint words,
// so the tree's clusters are known: id "<topic>-<i>".
func treeTopicDocs(n int) []map[string]any {
	topics := map[string][]string{
		"volcano": {"basalt", "magma", "eruption", "lava", "crater", "ash", "caldera", "vent"},
		"ocean":   {"coral", "reef", "tide", "plankton", "kelp", "current", "salinity", "lagoon"},
		"market":  {"equity", "bond", "dividend", "inflation", "broker", "yield", "futures", "ledger"},
	}
	var docs []map[string]any
	for _, name := range []string{"volcano", "ocean", "market"} {
		w := topics[name]
		for i := 0; i < n; i++ {
			text := fmt.Sprintf("The %s and the %s shaped the %s. Observers noted %s near the %s and %s.",
				w[i%8], w[(i+1)%8], w[(i+2)%8], w[(i+3)%8], w[(i+4)%8], w[(i+5)%8])
			docs = append(docs, map[string]any{"id": fmt.Sprintf("%s-%d", name, i), "text": text})
		}
	}
	return docs
}

type treeHit struct {
	ID         string          `json:"id"`
	Text       string          `json:"text"`
	Unit       string          `json:"unit"`
	Level      *int            `json:"level"`
	Provenance *rcp.Provenance `json:"provenance"`
}

func retrieveTree(t *testing.T, e *Engine, params map[string]any) ([]treeHit, []string) {
	t.Helper()
	var r struct {
		Hits  []treeHit
		Usage struct{ Notes []string }
	}
	if err := json.Unmarshal(mustCall(t, e, rcp.MethodRetrieve, params), &r); err != nil {
		t.Fatal(err)
	}
	return r.Hits, r.Usage.Notes
}

func TestTreeNodeUnit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := Config{Dir: dir, Graph: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rcp.Contains(e.Describe(ctx).Capabilities.Retrieve.Units, rcp.UnitTreeNode) {
		t.Fatal("tree-node advertised before any tree exists")
	}
	mustCall(t, e, rcp.MethodIndexAdd, map[string]any{"documents": treeTopicDocs(24)})
	settle(t, e)
	if err := e.SyncTree(ctx); err != nil {
		t.Fatal(err)
	}
	ret := e.Describe(ctx).Capabilities.Retrieve
	if !rcp.Contains(ret.Units, rcp.UnitTreeNode) || ret.Levels < 2 {
		t.Fatalf("units %v levels %d", ret.Units, ret.Levels)
	}
	// Level 1: a cluster of the queried topic, its summary drawn from it.
	hits, _ := retrieveTree(t, e, map[string]any{"query": "magma eruption crater", "k": 3, "unit": "tree-node", "level": 1})
	if len(hits) == 0 {
		t.Fatal("no level-1 tree-node hits")
	}
	top := hits[0]
	if top.Unit != "tree-node" || top.Level == nil || *top.Level != 1 || top.Provenance == nil || len(top.Provenance.Leaves) == 0 || top.Text == "" {
		t.Fatalf("level-1 hit %+v", top)
	}
	if !(strings.Contains(top.Text, "magma") || strings.Contains(top.Text, "basalt") || strings.Contains(top.Text, "lava") ||
		strings.Contains(top.Text, "crater") || strings.Contains(top.Text, "eruption")) {
		t.Fatalf("volcano cluster summary %q", top.Text)
	}
	for _, l := range top.Provenance.Leaves {
		if !strings.HasPrefix(l, "volcano-") {
			t.Fatalf("volcano cluster holds %v", top.Provenance.Leaves)
		}
	}
	// Level 0 are the units themselves; a level above the top is clamped with a note.
	hits, _ = retrieveTree(t, e, map[string]any{"query": "coral reef", "k": 2, "unit": "tree-node", "level": 0})
	if len(hits) == 0 || hits[0].Unit != "tree-node" || *hits[0].Level != 0 || hits[0].Provenance.Leaves[0] != hits[0].ID {
		t.Fatalf("level-0 hits %+v", hits)
	}
	hits, notes := retrieveTree(t, e, map[string]any{"query": "coral reef", "k": 2, "unit": "tree-node", "level": 40})
	if len(hits) == 0 || *hits[0].Level != e.know.Tree().Depth()-1 || len(notes) == 0 {
		t.Fatalf("clamped hits %+v notes %v", hits, notes)
	}
	// tree-node pages (issue 31; TestStructuredUnitsPage): a foreign cursor is malformed.
	if _, rerr := call(t, e, rcp.MethodRetrieve, map[string]any{"query": "x", "k": 1, "unit": "tree-node", "level": 1, "cursor": "abc"}); rerr == nil || rerr.Code != rcp.CodeInvalidParams {
		t.Fatalf("cursor on tree-node: %v", rerr)
	}
	// A deleted unit leaves the lineage before the next rebuild; the tree
	// survives a restart and is advertised at once.
	mustCall(t, e, rcp.MethodIndexDelete, map[string]any{"ids": []string{"volcano-0", "volcano-1", "volcano-2", "volcano-3"}})
	hits, _ = retrieveTree(t, e, map[string]any{"query": "basalt magma eruption lava crater", "k": 10, "unit": "tree-node", "level": 1})
	for _, h := range hits {
		for _, l := range h.Provenance.Leaves {
			if l == "volcano-0" || l == "volcano-1" || l == "volcano-2" || l == "volcano-3" {
				t.Fatalf("deleted unit %s in %s's leaves", l, h.ID)
			}
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !rcp.Contains(e.Describe(ctx).Capabilities.Retrieve.Units, rcp.UnitTreeNode) {
		t.Fatal("tree-node not advertised after a restart")
	}
	if hits, _ := retrieveTree(t, e, map[string]any{"query": "equity bond dividend", "k": 1, "unit": "tree-node", "level": 1}); len(hits) != 1 ||
		!strings.HasPrefix(hits[0].Provenance.Leaves[0], "market-") {
		t.Fatalf("after restart %+v", hits)
	}
	// A damaged snapshot is dropped at Open (the index unharmed) and the
	// tree is rebuilt from the index.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "tree.snap")
	data, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(snap, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if e, err = Open(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.SyncTree(ctx); err != nil {
		t.Fatal(err)
	}
	if t2 := e.know.Tree(); t2 == nil || t2.Leaves() != 68 {
		t.Fatalf("rebuilt tree %v, want the 68 live units", t2)
	}
}
