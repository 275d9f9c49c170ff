package federation_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/rcp"
)

// syncBuffer is a goroutine-safe bytes.Buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func writeRegistry(t *testing.T, reg *federation.Registry) string {
	t.Helper()
	b, err := json.Marshal(reg)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "rcp.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var urlLine = regexp.MustCompile(`url=(http://\S+/rcp)`)

// startGatewayMain runs GatewayMain over HTTP in-process and returns its URL.
func startGatewayMain(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- federation.GatewayMain(ctx, args, &bytes.Buffer{}, &stderr) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("GatewayMain exited %d:\n%s", code, stderr.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := urlLine.FindStringSubmatch(stderr.String()); m != nil && strings.Contains(stderr.String(), "gateway ready") {
			return m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("GatewayMain exited %d:\n%s", code, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("gateway did not start:\n%s", stderr.String())
	return ""
}

func TestGatewayMainHTTPWithToken(t *testing.T) {
	tr := trio(t)
	url := startGatewayMain(t, "--registry", writeRegistry(t, tr.reg), "--http", "127.0.0.1:0", "--token", "s3cret", "--id", "gw-main")
	ctx := ctxT(t, 20*time.Second)
	// No token: the handshake is refused with -32012 (§15.6).
	_, err := rcp.ConnectHTTP(ctx, url, &rcp.ClientOptions{Logger: quiet})
	if codeOf(err) != rcp.CodeUnauthorized {
		t.Fatalf("without token: %v", err)
	}
	c := dial(t, url, &rcp.ClientOptions{Logger: quiet, BearerToken: "s3cret"})
	var ident struct{ ID string }
	c.InitializeResult().Meta.Get(rcp.MetaFederation, &ident)
	if ident.ID != "gw-main" || c.InitializeResult().Server.Name != "rcpd-gateway" {
		t.Errorf("identity %+v %+v", ident, c.InitializeResult().Server)
	}
	cat, err := c.CatalogList(ctx)
	if err != nil || len(cat.Engines) != 3 {
		t.Fatalf("catalog: %v %+v", err, cat)
	}
	res, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("federated search"), K: 3})
	if err != nil || len(res.Hits) == 0 {
		t.Fatalf("retrieve: %v %+v", err, res)
	}
}

func TestGatewayMainUsage(t *testing.T) {
	reg := writeRegistry(t, &federation.Registry{Engines: []federation.EngineSpec{{ID: "x", URL: "http://127.0.0.1:1/rcp"}}})
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"engines":[{"id":"x","transport":"carrier-pigeon"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{nil, "--registry is required"},
		{[]string{"--registry", reg, "--http", "127.0.0.1:0", "--stdio"}, "not both"},
		{[]string{"--registry", reg, "--token", "t"}, "--token needs --http"},
		{[]string{"--registry", reg, "--fusion", "magic"}, "unknown --fusion"},
		{[]string{"--registry", bad}, `engines[0].transport`},
		{[]string{"--registry", filepath.Join(t.TempDir(), "missing.json")}, "no such file"},
	}
	for _, tc := range tests {
		var stderr bytes.Buffer
		if code := federation.GatewayMain(context.Background(), tc.args, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// A stdio gateway whose registry lists itself: the spawn chain is bounded
// and a query terminates.
func TestGatewayMainStdioSelfListing(t *testing.T) {
	_, beta := httpEngine(t, "beta", nil)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	regPath := filepath.Join(dir, "rcp.json")
	args := strings.Join([]string{"--registry", regPath, "--stdio", "--log-level", "error"}, "\x1f")
	reg := &federation.Registry{Engines: []federation.EngineSpec{
		{ID: "beta", URL: beta.URL},
		{ID: "myself", Command: []string{exe}, Env: map[string]string{envGatewayArgs: args}},
	}}
	b, _ := json.Marshal(reg)
	if err := os.WriteFile(regPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 30*time.Second)
	c, err := rcp.ConnectStdio(ctx, []string{exe}, &rcp.ClientOptions{Logger: quiet, Env: []string{envGatewayArgs + "=" + args}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("dense retrieval vector"), K: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stdio self-listing gateway: %d hits, notes %q", len(res.Hits), res.Usage.Notes)
	if len(res.Hits) == 0 || res.Hits[0].ID.String() != "b-dense" {
		t.Errorf("hits = %+v", res.Hits)
	}
	if !notesContain(res, "hop budget exhausted") {
		t.Errorf("notes = %q", res.Usage.Notes)
	}
}

// An HTTP gateway whose registry lists its own address starts at once (it
// does not dial itself before serving) and notes the cycle at query time.
func TestGatewayMainHTTPSelfListing(t *testing.T) {
	_, beta := httpEngine(t, "beta", nil)
	ln := listen(t)
	addr := ln.Addr().String()
	_ = ln.Close()
	reg := &federation.Registry{Engines: []federation.EngineSpec{
		{ID: "beta", URL: beta.URL},
		{ID: "me", URL: "http://" + addr + "/rcp"},
	}}
	start := time.Now()
	url := startGatewayMain(t, "--registry", writeRegistry(t, reg), "--http", addr)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("start took %v", took)
	}
	res, err := retrieve(t, dial(t, url, nil), "dense retrieval", 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("self-listing rcpd gateway: %d hits, notes %q", len(res.Hits), res.Usage.Notes)
	if len(res.Hits) == 0 || !notesContain(res, "federation cycle") {
		t.Errorf("hits %d, notes %q", len(res.Hits), res.Usage.Notes)
	}
}
