package mcpbridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/engine/chunk"
	"github.com/rcpgo/rcpgo/rcp"
)

// TestGraphHitsCiteFilesOverMCP: over MCP, the graph tool's hits and the
// search tool's graph units name the file their unit came from — as the
// search tool's chunk hits do — never the RCP method that wrote it, for
// files indexed with and without chunking.
func TestGraphHitsCiteFilesOverMCP(t *testing.T) {
	ctx := context.Background()
	eng, err := engine.Open(ctx, engine.Config{Dir: t.TempDir(), Graph: true, Dense: engine.DenseNone,
		Chunk: chunk.Options{Size: 40, Overlap: 8}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	file := func(name, text string) map[string]any {
		uri := "file:///docs/" + name
		return map[string]any{"id": uri, "text": text, "meta": map[string]any{"source": uri, "title": name, "format": "html"}}
	}
	for _, add := range []map[string]any{
		{"chunk": false, "documents": []any{
			file("mem.html", "A goroutine is a lightweight thread. The sync package provides the Once type. A channel connects goroutines. "+
				"Channel communication synchronizes goroutines. The Once type runs initialization once."),
		}},
		{"chunk": true, "documents": []any{
			file("spec.html", "The go statement starts a goroutine. A select statement waits on channel operations. "+
				"Channels are typed conduits between goroutines. The go statement runs a function call in a new goroutine. "+
				"A select statement chooses one ready channel operation."),
		}},
	} {
		raw, _ := json.Marshal(add)
		if _, err := eng.Call(ctx, rcp.MethodIndexAdd, raw); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.SyncGraph(ctx); err != nil {
		t.Fatal(err)
	}
	cs := bridgeEngine(t, eng)
	query := "how do goroutines synchronize with channels"
	results := map[string][]Hit{
		"graph local": structured[GraphOutput](t, callTool(t, cs, ToolGraph, map[string]any{"op": "local", "query": query})).Hits,
		"graph drift": structured[GraphOutput](t, callTool(t, cs, ToolGraph, map[string]any{"op": "drift", "query": query})).Hits,
		"search":      structured[SearchOutput](t, callTool(t, cs, ToolSearch, map[string]any{"query": query})).Hits,
	}
	for _, unit := range []string{rcp.UnitNode, rcp.UnitTriplet, rcp.UnitPath, rcp.UnitSubgraph, rcp.UnitCommunity} {
		results["search "+unit] = structured[SearchOutput](t, callTool(t, cs, ToolSearch, map[string]any{"query": query, "unit": unit})).Hits
	}
	for name, hits := range results {
		if len(hits) == 0 {
			t.Errorf("%s: no hit", name)
		}
		for _, h := range hits {
			if !strings.HasPrefix(h.Source, "file:///docs/") {
				t.Errorf("%s: hit %s names source %q", name, h.ID, h.Source)
			}
		}
	}
}
