package mcpbridge

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// taskCall is a task-augmented index_add of one document.
func taskCall(id any, doc string, ttlMs int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"index_add","arguments":{"documents":[{"id":%q,"text":"task %s"}]},"task":{"ttl":%d}}}`,
		fmt.Sprint(id), doc, doc, ttlMs)
}

func result(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result: %v", m)
	}
	return r
}

func rpcCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return int(c)
}

func taskReq(method, id string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s-%s","method":%q,"params":{"taskId":%q}}`, method, id, method, id)
}

// TestTasks drives MCP tasks (2025-11-25) over streamable HTTP with raw
// JSON-RPC: create → poll → result, cancel mid-run, TTL expiry, list
// pagination, cross-session isolation, and taskSupport gating.
func TestTasks(t *testing.T) {
	b, e := newBridge(t, fullCaps(), Options{})
	srv := serveHTTP(t, b, HTTPOptions{})
	a, other := httpSession(t, srv.URL), httpSession(t, srv.URL)

	_, tools := a(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
	support := map[string]any{}
	for _, tool := range result(t, tools)["tools"].([]any) {
		m := tool.(map[string]any)
		if ex, ok := m["execution"].(map[string]any); ok {
			support[m["name"].(string)] = ex["taskSupport"]
		}
	}
	if support["index_add"] != "optional" || support["search"] != nil {
		t.Errorf("execution.taskSupport = %v", support)
	}

	t.Run("create, poll, result", func(t *testing.T) {
		_, m := a(taskCall(1, "t1", 60000))
		task := result(t, m)["task"].(map[string]any)
		id, _ := task["taskId"].(string)
		if id == "" || task["status"] != "working" || task["ttl"].(float64) != 60000 || task["createdAt"] == nil {
			t.Fatalf("CreateTaskResult = %v", m)
		}
		var status any
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			_, g := a(taskReq("tasks/get", id))
			if status = result(t, g)["status"]; status != "working" {
				break
			}
		}
		if status != "completed" {
			t.Fatalf("status = %v", status)
		}
		_, r := a(taskReq("tasks/result", id))
		res := result(t, r)
		ids, _ := res["structuredContent"].(map[string]any)["ids"].([]any)
		related, _ := res["_meta"].(map[string]any)["io.modelcontextprotocol/related-task"].(map[string]any)
		if len(ids) != 1 || ids[0] != "t1" || related["taskId"] != id {
			t.Errorf("tasks/result = %v", r)
		}
	})

	t.Run("cancel mid-run", func(t *testing.T) {
		slow := make(chan struct{})
		e.mu.Lock()
		e.slowAdd = slow
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			e.slowAdd = nil
			e.mu.Unlock()
			close(slow)
		}()
		_, m := a(taskCall(2, "t2", 60000))
		id := result(t, m)["task"].(map[string]any)["taskId"].(string)
		_, c := a(taskReq("tasks/cancel", id))
		if s := result(t, c)["status"]; s != "cancelled" {
			t.Fatalf("tasks/cancel = %v", c)
		}
		eventually(t, func() bool { return e.addCancelled.Load() > 0 }) // the engine saw it
		_, again := a(taskReq("tasks/cancel", id))
		if rpcCode(again) != -32602 {
			t.Errorf("cancelling a cancelled task: %v", again)
		}
		_, r := a(taskReq("tasks/result", id))
		if rpcCode(r) != -32602 {
			t.Errorf("result of a cancelled task: %v", r)
		}
		_, g := a(taskReq("tasks/get", id))
		if s := result(t, g)["status"]; s != "cancelled" {
			t.Errorf("status after cancel = %v (terminal states never change)", s)
		}
	})

	t.Run("cross-session isolation", func(t *testing.T) {
		_, m := a(taskCall(3, "t3", 60000))
		id := result(t, m)["task"].(map[string]any)["taskId"].(string)
		for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
			if _, r := other(taskReq(method, id)); rpcCode(r) != -32602 {
				t.Errorf("%s of another session's task: %v", method, r)
			}
		}
		_, l := other(`{"jsonrpc":"2.0","id":"ol","method":"tasks/list"}`)
		if n := len(result(t, l)["tasks"].([]any)); n != 0 {
			t.Errorf("the other session lists %d tasks", n)
		}
	})

	t.Run("list pagination", func(t *testing.T) {
		for i := range 55 {
			a(taskCall(fmt.Sprint("p", i), fmt.Sprint("p", i), 60000))
		}
		seen := map[string]bool{}
		pages := 0
		for cursor := ""; ; pages++ {
			params := "{}"
			if cursor != "" {
				params = fmt.Sprintf(`{"cursor":%q}`, cursor)
			}
			_, l := a(`{"jsonrpc":"2.0","id":"list","method":"tasks/list","params":` + params + `}`)
			r := result(t, l)
			for _, task := range r["tasks"].([]any) {
				seen[task.(map[string]any)["taskId"].(string)] = true
			}
			cursor, _ = r["nextCursor"].(string)
			if cursor == "" {
				break
			}
		}
		if len(seen) != 58 || pages != 1 {
			t.Errorf("listed %d tasks over %d+1 pages, want 58 over 2", len(seen), pages)
		}
		if _, bad := a(`{"jsonrpc":"2.0","id":"bad","method":"tasks/list","params":{"cursor":"!!"}}`); rpcCode(bad) != -32602 {
			t.Errorf("bad cursor: %v", bad)
		}
	})

	t.Run("TTL expiry", func(t *testing.T) {
		_, m := a(taskCall(4, "t4", 1000))
		id := result(t, m)["task"].(map[string]any)["taskId"].(string)
		time.Sleep(1300 * time.Millisecond)
		if _, g := a(taskReq("tasks/get", id)); rpcCode(g) != -32602 {
			t.Errorf("tasks/get after the TTL: %v", g)
		}
	})

	t.Run("taskSupport gating", func(t *testing.T) {
		_, m := a(`{"jsonrpc":"2.0","id":"f","method":"tools/call","params":{"name":"search","arguments":{"query":"Paris"},"task":{}}}`)
		if rpcCode(m) != -32601 {
			t.Errorf("task-augmented call of a forbidden tool: %v", m)
		}
		_, bad := a(`{"jsonrpc":"2.0","id":"g","method":"tools/call","params":{"name":"index_add","arguments":{"documents":[{"id":"x","text":"x"}]},"task":"soon"}}`)
		if rpcCode(bad) != -32602 {
			t.Errorf("malformed task: %v", bad)
		}
		if status, plain := a(`{"jsonrpc":"2.0","id":"h","method":"tools/call","params":{"name":"index_add","arguments":{"documents":[{"id":"y","text":"y"}]}}}`); status != http.StatusOK ||
			!strings.Contains(fmt.Sprint(plain["result"]), "structuredContent") {
			t.Errorf("the same tool without a task: %v", plain)
		}
	})
}
