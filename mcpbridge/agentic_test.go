package mcpbridge

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/rcp"
)

// TestAgenticTools serves the real engine and drives the agentic loop
// through MCP: search with sessionId twice (no passage twice), search with
// rewrite, and the feedback tool.
func TestAgenticTools(t *testing.T) {
	ctx := context.Background()
	var pre []engine.Preload
	for _, d := range []struct{ id, text string }{
		{"p1", "The pump moves water from the well to the tank."},
		{"p2", "Check the pump impeller every spring."},
		{"p3", "Replace the pump shaft seal when it drips."},
		{"p4", "A failed capacitor makes the pump hum without starting."},
	} {
		pre = append(pre, engine.Preload{ID: d.id, Text: d.text, Source: "handbook"})
	}
	eng, err := engine.Open(ctx, engine.Config{Dir: t.TempDir(), Name: "kb", Dense: engine.DenseNone, Logger: discardLogger(),
		WordNetDir: engine.WordNetNone, Preload: pre})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	cs := bridgeEngine(t, eng)
	if names := toolNames(t, cs); !slices.Contains(names, ToolFeedback) || !slices.Contains(names, ToolTransform) {
		t.Fatalf("tools %v lack feedback/transform", names)
	}
	first := structured[SearchOutput](t, callTool(t, cs, "search", map[string]any{"query": "pump", "k": 2, "sessionId": "trip"}))
	second := structured[SearchOutput](t, callTool(t, cs, "search", map[string]any{"query": "pump", "k": 2, "sessionId": "trip"}))
	if len(first.Hits) != 2 || len(second.Hits) != 2 {
		t.Fatalf("hits %d, %d", len(first.Hits), len(second.Hits))
	}
	for _, h := range second.Hits {
		if slices.ContainsFunc(first.Hits, func(f Hit) bool { return f.ID == h.ID }) {
			t.Fatalf("passage %s returned twice in one session", h.ID)
		}
	}
	rw := structured[SearchOutput](t, callTool(t, cs, "search", map[string]any{"query": "pmup impeler", "k": 1, "rewrite": "rewrite"}))
	if len(rw.Hits) != 1 || rw.Hits[0].ID != "p2" {
		t.Fatalf("rewrite search: %+v", rw.Hits)
	}
	fb := structured[FeedbackOutput](t, callTool(t, cs, "feedback", map[string]any{"sessionId": "trip",
		"signals": []map[string]any{{"hitId": first.Hits[0].ID, "used": true, "helpful": true}, {"hitId": "nope", "helpful": false}}}))
	if fb.Sent != 2 || fb.Accepted != 1 {
		t.Fatalf("feedback: %+v (an unknown hit id is not recorded)", fb)
	}
}

// bridgeEngine serves eng through a bridge over an in-process RCP client
// and returns an MCP session on it; everything closes with the test.
func bridgeEngine(t *testing.T, eng *engine.Engine) *mcp.ClientSession {
	t.Helper()
	b, err := New(engineClient(t, eng), Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := connect(t, b)
	return cs
}

// engineClient is an in-process RCP client of eng (a stream peer), closed
// with the test.
func engineClient(t *testing.T, eng *engine.Engine) *rcp.Client {
	t.Helper()
	cl, err := rcp.ConnectInProcess(context.Background(), rcp.NewServer(eng, &rcp.ServerOptions{Logger: discardLogger()}),
		&rcp.ClientOptions{Info: rcp.PeerInfo{Name: "test", Version: "1"}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}
