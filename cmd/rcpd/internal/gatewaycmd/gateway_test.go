package gatewaycmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/fedtest"
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

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

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

// httpEngine serves a fedtest engine over loopback HTTP until cleanup.
func httpEngine(t *testing.T, name string) federation.EngineSpec {
	t.Helper()
	e := fedtest.New(name, fedtest.Features{})
	s, err := fedtest.ServeHTTP(e.Router(), "127.0.0.1:0", &rcp.HTTPOptions{Sessions: rcp.SessionStateless}, &rcp.ServerOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return federation.EngineSpec{ID: name, URL: s.URL}
}

var urlLine = regexp.MustCompile(`url=(http://\S+/rcp)`)

// startMain runs Main over HTTP in-process and returns its URL.
func startMain(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- Main(ctx, args, strings.NewReader(""), &bytes.Buffer{}, &stderr) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("Main exited %d:\n%s", code, stderr.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := urlLine.FindStringSubmatch(stderr.String()); m != nil && strings.Contains(stderr.String(), "gateway ready") {
			return m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("Main exited %d:\n%s", code, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("gateway did not start:\n%s", stderr.String())
	return ""
}

func TestMainHTTPWithToken(t *testing.T) {
	reg := &federation.Registry{Engines: []federation.EngineSpec{httpEngine(t, "beta"), httpEngine(t, "gamma")}}
	url := startMain(t, "--registry", writeRegistry(t, reg), "--http", "127.0.0.1:0", "--token", "s3cret", "--id", "gw-main")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// No token: the handshake is refused with -32012 (§15.6).
	_, err := rcp.ConnectHTTP(ctx, url, &rcp.ClientOptions{Logger: quiet})
	if rcp.CodeOf(err) != rcp.CodeUnauthorized {
		t.Fatalf("without token: %v", err)
	}
	c, err := rcp.ConnectHTTP(ctx, url, &rcp.ClientOptions{Logger: quiet, BearerToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var ident struct{ ID string }
	c.InitializeResult().Meta.Get(rcp.MetaFederation, &ident)
	if ident.ID != "gw-main" || c.InitializeResult().Server.Name != "rcpd-gateway" {
		t.Errorf("identity %+v %+v", ident, c.InitializeResult().Server)
	}
	cat, err := c.CatalogList(ctx)
	if err != nil || len(cat.Engines) != 2 {
		t.Fatalf("catalog: %v %+v", err, cat)
	}
	res, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("dense retrieval"), K: 3})
	if err != nil || len(res.Hits) == 0 {
		t.Fatalf("retrieve: %v %+v", err, res)
	}
}

func TestMainUsage(t *testing.T) {
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
		if code := Main(context.Background(), tc.args, strings.NewReader(""), &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
