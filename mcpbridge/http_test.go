package mcpbridge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcpgo/rcpgo/internal/auth"
)

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func serveHTTP(t *testing.T, b *Bridge, opts HTTPOptions) *httptest.Server {
	t.Helper()
	h, err := b.HTTPHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		for ss := range b.Server().Sessions() {
			_ = ss.Close()
		}
		srv.Close()
	})
	return srv
}

func connectHTTP(t *testing.T, url string, hc *http.Client) (*mcp.ClientSession, *events) {
	t.Helper()
	ev := newEvents()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, ev.clientOptions()).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, ev
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func post(t *testing.T, url string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(initBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestStreamableHTTP(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	srv := serveHTTP(t, b, HTTPOptions{})
	cs, ev := connectHTTP(t, srv.URL, nil)
	if caps := cs.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.Subscribe || caps.Tools == nil {
		t.Errorf("capabilities over HTTP = %+v", caps)
	}
	p := &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "slow Eiffel tower", "k": 2}}
	p.SetProgressToken(7)
	out := structured[SearchOutput](t, mustCall(t, cs, p))
	if len(out.Hits) != 2 || out.Hits[0].ID != "eiffel" {
		t.Errorf("hits = %+v", out.Hits)
	}
	eventually(t, func() bool { ev.mu.Lock(); defer ev.mu.Unlock(); return len(ev.progress) > 0 })
	ev.mu.Lock()
	n := len(ev.progress)
	ev.mu.Unlock()
	if n == 0 {
		t.Error("no progress over HTTP")
	}
	if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "rcp://memtest/doc/paris"}); err != nil {
		t.Fatal(err)
	}
	mustCall(t, cs, &mcp.CallToolParams{Name: "index_add", Arguments: map[string]any{"documents": []map[string]any{{"id": "paris", "text": "Paris, updated."}}}})
	if got := wait(t, ev.updated, "resources/updated over HTTP"); got != "rcp://memtest/doc/paris" {
		t.Errorf("updated %s", got)
	}
}

func mustCall(t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		t.Fatalf("tools/call %s: %v", p.Name, err)
	}
	if res.IsError {
		t.Fatalf("tools/call %s: %s", p.Name, textOf(res))
	}
	return res
}

func TestHTTPProtections(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	open := serveHTTP(t, b, HTTPOptions{TrustedOrigins: []string{"https://app.example"}})
	locked := serveHTTP(t, b, HTTPOptions{Tokens: auth.Static("t", "s3cret")})
	tests := []struct {
		name   string
		url    string
		header map[string]string
		want   int
	}{
		{"plain", open.URL, nil, http.StatusOK},
		{"DNS rebinding: non-loopback Host", open.URL, map[string]string{"Host": "evil.example"}, http.StatusForbidden},
		{"DNS rebinding: Host with port", open.URL, map[string]string{"Host": "attacker.test:80"}, http.StatusForbidden},
		{"cross-site browser request", open.URL, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"cross-origin without fetch metadata", open.URL, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"trusted origin", open.URL, map[string]string{"Origin": "https://app.example", "Sec-Fetch-Site": "cross-site"}, http.StatusOK},
		{"no token", locked.URL, nil, http.StatusUnauthorized},
		{"wrong token", locked.URL, map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"right token", locked.URL, map[string]string{"Authorization": "Bearer s3cret"}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := post(t, tt.url, tt.header).StatusCode; got != tt.want {
				t.Errorf("status = %d, want %d", got, tt.want)
			}
		})
	}
	// A real client with the token works end to end.
	cs, _ := connectHTTP(t, locked.URL, &http.Client{Transport: bearerTransport{"s3cret"}})
	if names := toolNames(t, cs); len(names) == 0 {
		t.Error("no tools through the authenticated endpoint")
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:1": true, "[::1]:9": true, "127.0.0.2:1": true,
		":8080": false, "0.0.0.0:80": false, "192.168.1.2:80": false, "example.com:80": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
