package mcpbridge

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

// TestTaskProgressOverHTTP: progress of a task-augmented call keeps using
// the request's progress token after the CreateTaskResult (MCP 2025-11-25
// progress §3) and reaches the client over streamable HTTP — on the GET
// stream, since the request's own stream has ended — tied to the task by
// io.modelcontextprotocol/related-task.
func TestTaskProgressOverHTTP(t *testing.T) {
	e := newTestEngine(fullCaps())
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	r := e.router()
	rcp.Handle(r, rcp.MethodIndexAdd, func(ctx context.Context, p *rcp.IndexAddParams) (*rcp.IndexAddResult, error) {
		_ = rcp.ReportProgress(ctx, rcp.ProgressParams{Progress: ptr(0.5), Stage: "index", Message: "halfway"})
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &rcp.IndexAddResult{IDs: []string{p.Documents[0].ID}}, nil
	})
	srv, sid := httpSessionOver(t, r)
	stream := openStream(t, srv.URL, sid)
	_, m := postRaw(t, srv.URL, sid, `{"jsonrpc":"2.0","id":"tp","method":"tools/call","params":{"name":"index_add",`+
		`"arguments":{"documents":[{"id":"p1","text":"progress"}]},"task":{"ttl":60000},"_meta":{"progressToken":"tok"}}}`)
	id := result(t, m)["task"].(map[string]any)["taskId"].(string)
	timeout := time.After(10 * time.Second)
	for progressed := false; ; {
		select {
		case m := <-stream:
			p, _ := m["params"].(map[string]any)
			switch m["method"] {
			case "notifications/progress":
				related, _ := p["_meta"].(map[string]any)["io.modelcontextprotocol/related-task"].(map[string]any)
				if p["progressToken"] != "tok" || related["taskId"] != id {
					t.Errorf("task progress %v", m)
				}
				validateMCP(t, "ProgressNotification", m)
				progressed = true
				once.Do(func() { close(release) })
			case "notifications/tasks/status":
				if !progressed || p["status"] != "completed" {
					t.Fatalf("status %v before any progress", m)
				}
				return
			}
		case <-timeout:
			t.Fatal("no progress of the task on the GET stream")
		}
	}
}
