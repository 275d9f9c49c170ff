package mcpbridge

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func initWith(t *testing.T, url, client string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"` + client + `","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// Sessions are capped with least-recently-used eviction, and the request
// opening one is bounded (item 5: 3 000 initialize calls with 200 KB
// clientInfo took rcpd mcp from 98 MB to 2.16 GB).
func TestMCPSessionBounds(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	srv := serveHTTP(t, b, HTTPOptions{MaxSessions: 3})
	var ids []string
	for range 6 {
		resp := initWith(t, srv.URL, "c")
		if resp.StatusCode != 200 {
			t.Fatalf("initialize: HTTP %d", resp.StatusCode)
		}
		ids = append(ids, resp.Header.Get(headerSessionID))
	}
	// An evicted session is listed until its connection has wound down.
	var live map[string]bool
	for deadline := time.Now().Add(5 * time.Second); ; {
		live = map[string]bool{}
		for ss := range b.Server().Sessions() {
			live[ss.ID()] = true
		}
		if len(live) <= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(live) > 3 {
		t.Fatalf("%d live sessions, cap 3", len(live))
	}
	if !live[ids[5]] || live[ids[0]] {
		t.Fatalf("live %v: want the newest kept and the oldest evicted (%v)", live, ids)
	}
	if resp := initWith(t, srv.URL, strings.Repeat("x", MaxInitializeBytes)); resp.StatusCode == 200 {
		t.Fatal("an initialize larger than MaxInitializeBytes opened a session")
	}
}
