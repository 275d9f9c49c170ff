package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/internal/auth"
	"github.com/rcpgo/rcpgo/rcp"
)

// TestCORSForTrustedOrigins (defect 5): --allow-origin lets a browser
// client in: preflights are answered (also when a token is required), the
// trusted origin is allowed and can read Mcp-Session-Id; other origins
// are refused.
func TestCORSForTrustedOrigins(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	srv := serveHTTP(t, b, HTTPOptions{TrustedOrigins: []string{"https://app.example"}, Tokens: auth.Static("t", "s3cret")})
	do := func(method, origin string, header map[string]string, body string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL, strings.NewReader(body))
		req.Header.Set("Origin", origin)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	pre := do(http.MethodOptions, "https://app.example", map[string]string{"Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": "authorization, content-type, mcp-session-id"}, "")
	if pre.StatusCode != http.StatusNoContent || pre.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "Mcp-Session-Id") ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Errorf("preflight: %d %v", pre.StatusCode, pre.Header)
	}
	if r := do(http.MethodOptions, "https://evil.example", map[string]string{"Access-Control-Request-Method": "POST"}, ""); r.StatusCode != http.StatusForbidden {
		t.Errorf("untrusted preflight: %d", r.StatusCode)
	}
	hdr := map[string]string{"Authorization": "Bearer s3cret", "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Sec-Fetch-Site": "cross-site"}
	r := do(http.MethodPost, "https://app.example", hdr, initBody)
	if r.StatusCode != http.StatusOK || r.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") || r.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("trusted POST: %d %v", r.StatusCode, r.Header)
	}
	if r := do(http.MethodPost, "https://evil.example", hdr, initBody); r.StatusCode != http.StatusForbidden || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("untrusted POST: %d %v", r.StatusCode, r.Header)
	}
}

// rawInitialize opens a session over raw HTTP and returns its id and the
// initialize answer as sent.
func rawInitialize(t *testing.T, url string) (string, map[string]any) {
	t.Helper()
	resp, m := postRaw(t, url, "", strings.Replace(initBody, "2025-06-18", ProtocolVersion, 1))
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" || m["result"] == nil {
		t.Fatalf("initialize: %d %v", resp.StatusCode, m)
	}
	return sid, m
}

// postRaw posts one frame (in session sid) and decodes the JSON-RPC answer
// from a JSON or SSE body.
func postRaw(t *testing.T, url, sid, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", ProtocolVersion)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("POST %.60s: %v", body, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %.60s: reading: %v", body, err)
	}
	var m map[string]any
	text := strings.TrimSpace(string(raw))
	for _, line := range strings.Split(text, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			text = d
		}
	}
	_ = json.Unmarshal([]byte(text), &m)
	return resp, m
}

// httpSession opens an MCP session over raw HTTP and returns a function
// that posts one frame in it and returns the status and the JSON-RPC answer.
func httpSession(t *testing.T, url string) func(body string) (int, map[string]any) {
	t.Helper()
	sid, _ := rawInitialize(t, url)
	if r, _ := postRaw(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.StatusCode >= 300 {
		t.Fatalf("initialized: %d", r.StatusCode)
	}
	return func(body string) (int, map[string]any) {
		resp, m := postRaw(t, url, sid, body)
		return resp.StatusCode, m
	}
}

// TestHTTPHostileInput: over streamable HTTP every hostile request is
// answered (an HTTP error or a JSON-RPC error, never a hang), the server
// keeps serving, and shutdown is bounded.
func TestHTTPHostileInput(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- b.ServeHTTP(ctx, ln, "/mcp", HTTPOptions{}) }()
	url := "http://" + ln.Addr().String() + "/mcp"
	post := httpSession(t, url)
	search := func(id int, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search","arguments":%s}}`, id, args)
	}
	deep := func(n int) string {
		return strings.Repeat(`{"not":`, n) + `{"field":"lang","op":"eq","value":"en"}` + strings.Repeat(`}`, n)
	}
	tests := []struct {
		name    string
		body    string
		status  int // expected HTTP status (0: any 4xx)
		isError bool
	}{
		{"not JSON", `not json`, 0, false},
		{"truncated", `{"jsonrpc":"2.0","id":1,`, 0, false},
		{"filter 2000 levels deep", search(2, `{"query":"q","filter":`+deep(2000)+`}`), 0, false},
		{"filter 300 levels deep", search(3, `{"query":"q","filter":`+deep(300)+`}`), http.StatusOK, true},
		{"filter 40 levels deep", search(4, `{"query":"q","filter":`+deep(40)+`}`), http.StatusOK, true},
		{"empty filter", search(5, `{"query":"q","filter":{}}`), http.StatusOK, true},
		{"query too long", search(6, `{"query":"`+strings.Repeat("a ", 5000)+`"}`), http.StatusOK, true},
		{"good search", search(7, `{"query":"Paris"}`), http.StatusOK, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, m := post(tt.body)
			switch {
			case tt.status == 0:
				if status < 400 || status >= 500 {
					t.Errorf("status = %d, want 4xx (%v)", status, m)
				}
			case status != tt.status:
				t.Errorf("status = %d, want %d (%v)", status, tt.status, m)
			default:
				res, _ := m["result"].(map[string]any)
				if res == nil || (res["isError"] == true) != tt.isError {
					t.Errorf("answer = %v, want isError=%v", m, tt.isError)
				}
			}
		})
	}
	// A storm of cancellations for unknown requests is harmless.
	for i := range 200 {
		post(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, 5000+i))
	}
	if status, m := post(`{"jsonrpc":"2.0","id":"p","method":"ping"}`); status != http.StatusOK || m["result"] == nil {
		t.Fatalf("ping after the storm: %d %v", status, m)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ServeHTTP: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeHTTP did not return within 5 s of its context ending")
	}
	t.Logf("shutdown took %v", time.Since(start).Round(time.Millisecond))
}

// TestShutdownWithStuckEngine: an engine call that never returns (it
// ignores cancellation) does not hold up ServeHTTP's shutdown beyond
// ShutdownGrace.
func TestShutdownWithStuckEngine(t *testing.T) {
	e := newTestEngine(fullCaps())
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	r := e.router()
	rcp.Handle(r, rcp.MethodRetrieve, func(context.Context, *rcp.RetrieveParams) (*rcp.RetrieveResult, error) {
		entered <- struct{}{}
		<-release
		return &rcp.RetrieveResult{}, nil
	})
	srv := rcp.NewServer(r, &rcp.ServerOptions{Logger: discardLogger()})
	c, err := rcp.ConnectInProcess(context.Background(), srv, &rcp.ClientOptions{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(release); _ = c.Close() })
	b, err := New(c, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- b.ServeHTTP(ctx, ln, "/mcp", HTTPOptions{}) }()
	post := httpSession(t, "http://"+ln.Addr().String()+"/mcp")
	go post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"stuck"}}}`)
	<-entered
	start := time.Now()
	cancel()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("ServeHTTP did not return within 5 s with a stuck engine call")
	}
	t.Logf("shutdown with a stuck call took %v", time.Since(start).Round(time.Millisecond))
}
