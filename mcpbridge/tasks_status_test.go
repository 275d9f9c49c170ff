package mcpbridge

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// openStream opens the session's standalone SSE stream (GET) and returns
// the JSON-RPC messages that arrive on it.
func openStream(t *testing.T, url, sid string) <-chan map[string]any {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", ProtocolVersion)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET stream: %v %v", resp, err)
	}
	out := make(chan map[string]any, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(data), &m) == nil {
					out <- m
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return out
}

// TestTaskStatusNotifications: every status change of a task reaches its
// session as notifications/tasks/status (MCP 2025-11-25) on the GET
// stream, valid against the MCP schema: completed, cancelled by
// tasks/cancel, and cancelled at TTL expiry. The notification never leaks as the progress notification
// that carries it through the go-sdk.
func TestTaskStatusNotifications(t *testing.T) {
	b, e := newBridge(t, fullCaps(), Options{})
	srv := serveHTTP(t, b, HTTPOptions{})
	sid, _ := rawInitialize(t, srv.URL)
	postRaw(t, srv.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	stream := openStream(t, srv.URL, sid)
	next := func(taskID string) map[string]any {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case m := <-stream:
				if m["method"] == "notifications/progress" {
					t.Errorf("carrier leaked: %v", m)
				}
				if p, _ := m["params"].(map[string]any); m["method"] == "notifications/tasks/status" && p["taskId"] == taskID {
					validateMCP(t, "TaskStatusNotification", m)
					return p
				}
			case <-timeout:
				t.Fatalf("no status notification for task %s", taskID)
			}
		}
	}
	_, m := postRaw(t, srv.URL, sid, taskCall(1, "s1", 60000))
	id1 := result(t, m)["task"].(map[string]any)["taskId"].(string)
	if p := next(id1); p["status"] != "completed" || p["createdAt"] == nil || p["lastUpdatedAt"] == nil || p["ttl"].(float64) != 60000 {
		t.Errorf("completion notification %v", p)
	}

	e.mu.Lock()
	e.slowAdd = make(chan struct{})
	e.mu.Unlock()
	_, m = postRaw(t, srv.URL, sid, taskCall(2, "s2", 60000))
	id2 := result(t, m)["task"].(map[string]any)["taskId"].(string)
	if _, c := postRaw(t, srv.URL, sid, taskReq("tasks/cancel", id2)); result(t, c)["status"] != "cancelled" {
		t.Fatalf("tasks/cancel: %v", c)
	}
	if p := next(id2); p["status"] != "cancelled" || p["statusMessage"] == nil {
		t.Errorf("cancellation notification %v", p)
	}
	// A task still running when its TTL ends is cancelled, and told so.
	_, m = postRaw(t, srv.URL, sid, taskCall(3, "s3", 1000))
	id3 := result(t, m)["task"].(map[string]any)["taskId"].(string)
	if p := next(id3); p["status"] != "cancelled" || p["statusMessage"] != "TTL expired" {
		t.Errorf("expiry notification %v", p)
	}
}

// TestStdioTaskStatus: over stdio the status change of a task leaves as
// notifications/tasks/status too.
func TestStdioTaskStatus(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss, err := b.Server().Connect(context.Background(), &StdioTransport{Reader: inR, Writer: outW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan map[string]any, 64)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	t.Cleanup(func() { inW.Close(); _ = ss.Wait(); outW.Close() })
	for _, frame := range []string{strings.Replace(initBody, "2025-06-18", ProtocolVersion, 1),
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`, taskCall(2, "st", 60000)} {
		if _, err := io.WriteString(inW, frame+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m := <-lines:
			if m["method"] == "notifications/progress" {
				t.Errorf("carrier leaked: %v", m)
			}
			if p, _ := m["params"].(map[string]any); m["method"] == "notifications/tasks/status" {
				if p["status"] != "completed" {
					t.Errorf("status notification %v", m)
				}
				validateMCP(t, "TaskStatusNotification", m)
				return
			}
		case <-timeout:
			t.Fatal("no notifications/tasks/status over stdio")
		}
	}
}
