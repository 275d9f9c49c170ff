package gatewaycmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/testutil/fedtest"
	"github.com/rcpgo/rcpgo/internal/testutil/syncbuf"
	"github.com/rcpgo/rcpgo/rcp"
)

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
	url, _ := startMainLog(t, args...)
	return url
}

// startMainLog is startMain that also returns Main's stderr.
func startMainLog(t *testing.T, args ...string) (string, *syncbuf.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncbuf.Buffer
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
			return m[1], &stderr
		}
		select {
		case code := <-done:
			t.Fatalf("Main exited %d:\n%s", code, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("gateway did not start:\n%s", stderr.String())
	return "", nil
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
		{[]string{"--registry", reg, "--token", "t"}, "--token and --token-file need --http"},
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

// httpDo sends one request and returns its status and body.
func httpDo(t *testing.T, method, url, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
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
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The gateway refuses DNS-rebinding and cross-site browser requests like
// rcpd serve (item 9), and --allow-host / --allow-origin widen the checks.
func TestMainHostAndOriginChecks(t *testing.T) {
	reg := &federation.Registry{Engines: []federation.EngineSpec{httpEngine(t, "beta")}}
	url := startMain(t, "--registry", writeRegistry(t, reg), "--http", "127.0.0.1:0",
		"--allow-host", "gw.example", "--allow-origin", "https://app.example")
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"plain client", map[string]string{}, 200},
		{"rebinding host", map[string]string{"Host": "evil.example"}, 403},
		{"allowed host", map[string]string{"Host": "gw.example"}, 200},
		{"allowed host with port", map[string]string{"Host": "gw.example:7800"}, 200},
		{"cross-site origin", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, 403},
		{"allowed origin", map[string]string{"Origin": "https://app.example", "Sec-Fetch-Site": "cross-site"}, 200},
		{"form post", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
	} {
		hdr := map[string]string{"Content-Type": "application/json"}
		for k, v := range tc.hdr {
			hdr[k] = v
		}
		if got, body := httpDo(t, http.MethodPost, url+"/ping", ping, hdr); got != tc.want {
			t.Errorf("%s: HTTP %d (%s), want %d", tc.name, got, body, tc.want)
		}
	}
	var stderr bytes.Buffer
	if code := Main(context.Background(), []string{"--registry", writeRegistry(t, reg), "--http", "127.0.0.1:0", "--allow-origin", "not an origin"},
		strings.NewReader(""), &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "--allow-origin") {
		t.Errorf("a malformed --allow-origin: exit %d, %s", code, stderr.String())
	}
}

// /metrics serves the Go runtime and process metrics (goroutines, RSS),
// behind the token under --token, or without auth on --metrics-addr only.
func TestMainMetrics(t *testing.T) {
	reg := &federation.Registry{Engines: []federation.EngineSpec{httpEngine(t, "beta")}}
	url := startMain(t, "--registry", writeRegistry(t, reg), "--http", "127.0.0.1:0", "--token", "s3cret")
	base := strings.TrimSuffix(url, "/rcp")
	if got, _ := httpDo(t, http.MethodGet, base+"/metrics", "", nil); got != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: HTTP %d", got)
	}
	got, body := httpDo(t, http.MethodGet, base+"/metrics", "", map[string]string{"Authorization": "Bearer s3cret"})
	if got != 200 || !strings.Contains(body, "\ngo_goroutines ") || !strings.Contains(body, "process_resident_memory_bytes") {
		t.Errorf("/metrics with the token: HTTP %d, %.200s", got, body)
	}

	url, stderr := startMainLog(t, "--registry", writeRegistry(t, reg), "--http", "127.0.0.1:0", "--token", "s3cret",
		"--metrics-addr", "127.0.0.1:0", "--no-ui")
	m := regexp.MustCompile(`url=(http://\S+/metrics)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no metrics address logged:\n%s", stderr.String())
	}
	if got, body := httpDo(t, http.MethodGet, m[1], "", nil); got != 200 || !strings.Contains(body, "go_goroutines") {
		t.Errorf("--metrics-addr /metrics: HTTP %d", got)
	}
	if got, _ := httpDo(t, http.MethodGet, strings.TrimSuffix(url, "/rcp")+"/metrics", "", map[string]string{"Authorization": "Bearer s3cret"}); got != http.StatusNotFound {
		t.Errorf("/metrics on --http beside --metrics-addr: HTTP %d, want 404", got)
	}
}
