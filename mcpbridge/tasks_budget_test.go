package mcpbridge

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/mcpbridge/tasks"
)

// Issue 33 item 6: 61 sessions × 100 task-augmented calls then DELETE held
// 206 MB of live heap 10 min later: the only bound was per session, and a
// closed session's tasks were kept. Tasks now have a global budget (count
// and kept result bytes) and end with their session.
func TestTasksGlobalBudgetAndSessionEnd(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{Tasks: tasks.Options{MaxPerSession: 3, MaxTasks: 5}})
	srv := serveHTTP(t, b, HTTPOptions{})
	sidA, _ := rawInitialize(t, srv.URL)
	postRaw(t, srv.URL, sidA, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	a := func(body string) map[string]any { _, m := postRaw(t, srv.URL, sidA, body); return m }
	other := httpSession(t, srv.URL)
	create := func(post func(string) map[string]any, n int) (ok, refused int) {
		for i := range n {
			m := post(taskCall(fmt.Sprintf("c%d-%d", n, i), fmt.Sprintf("d%d", i), 3600000))
			if _, has := m["result"]; has {
				ok++
			} else {
				refused++
			}
		}
		return ok, refused
	}
	if ok, refused := create(a, 4); ok != 3 || refused != 1 {
		t.Fatalf("session a: %d created, %d refused; want 3 and 1 (per-session bound)", ok, refused)
	}
	if ok, refused := create(func(s string) map[string]any { _, m := other(s); return m }, 3); ok != 2 || refused != 1 {
		t.Fatalf("session b: %d created, %d refused; want 2 and 1 (global bound 5)", ok, refused)
	}
	if live := b.tasks.Live(); live != 5 {
		t.Fatalf("%d live tasks, want 5", live)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL, nil)
	req.Header.Set(headerSessionID, sidA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for b.tasks.Live() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d live tasks 10 s after session a ended, want b's 2", b.tasks.Live())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ok, _ := create(func(s string) map[string]any { _, m := other(s); return m }, 1); ok != 1 {
		t.Fatal("the budget a's tasks held was not returned")
	}
	_, m := other(taskCall("x", "x", 3600000))
	if e, _ := m["error"].(map[string]any); e == nil || !strings.Contains(fmt.Sprint(e["message"]), "session already has 3") {
		t.Fatalf("b's fourth task: %v", m)
	}
}

// A result that would take the kept results over MaxResultBytes fails its
// task instead of being kept.
func TestTaskResultBytesBudget(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{Tasks: tasks.Options{MaxResultBytes: 64}})
	srv := serveHTTP(t, b, HTTPOptions{})
	post := httpSession(t, srv.URL)
	_, m := post(taskCall("big", "big", 60000))
	id, _ := result(t, m)["task"].(map[string]any)["taskId"].(string)
	var status, msg any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, g := post(taskReq("tasks/get", id))
		r := result(t, g)
		if status, msg = r["status"], r["statusMessage"]; status != "working" {
			break
		}
	}
	if status != "failed" || !strings.Contains(fmt.Sprint(msg), "exceeds what the server keeps") {
		t.Fatalf("task over the result budget: %v %v", status, msg)
	}
}
