package federation_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/testutil/within"
	"github.com/rcpgo/rcpgo/rcp"
)

// runServe runs Gateway.Serve for a gateway over reg with opts (its
// server logging nowhere) until stop is called or the test ends, then
// closes the gateway: stop cancels Serve, which must return nil within
// 15 s.
func runServe(t *testing.T, reg *federation.Registry, opts federation.ServeOptions) (stop func()) {
	t.Helper()
	gw := federation.NewGateway(reg, &federation.GatewayOptions{Federation: federation.Options{Client: clientOpts(), Logger: quiet}})
	opts.Server = &rcp.ServerOptions{Logger: quiet}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Serve(ctx, opts) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			defer gw.Close()
			cancel()
			if err := within.RecvIn(t, 15*time.Second, done, "Serve to return after cancel"); err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
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

// A stdio gateway whose registry lists itself: the spawn chain is bounded
// and a query terminates.
func TestServeStdioSelfListing(t *testing.T) {
	_, beta := httpEngine(t, "beta", nil)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	regPath := filepath.Join(t.TempDir(), "rcp.json")
	reg := &federation.Registry{Engines: []federation.EngineSpec{
		{ID: "beta", URL: beta.URL},
		{ID: "myself", Command: []string{exe}, Env: map[string]string{envGatewayRegistry: regPath}},
	}}
	b, _ := json.Marshal(reg)
	if err := os.WriteFile(regPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 30*time.Second)
	c, err := rcp.ConnectStdio(ctx, []string{exe}, &rcp.ClientOptions{Logger: quiet, Env: []string{envGatewayRegistry + "=" + regPath}})
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
func TestServeHTTPSelfListing(t *testing.T) {
	_, beta := httpEngine(t, "beta", nil)
	ln := listen(t)
	reg := &federation.Registry{Engines: []federation.EngineSpec{
		{ID: "beta", URL: beta.URL},
		{ID: "me", URL: "http://" + ln.Addr().String() + "/rcp"},
	}}
	start := time.Now()
	runServe(t, reg, federation.ServeOptions{Listener: ln, HTTP: &rcp.HTTPOptions{Sessions: rcp.SessionStateful}})
	c := dial(t, "http://"+ln.Addr().String()+"/rcp", nil)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("start took %v", took)
	}
	res, err := retrieve(t, c, "dense retrieval", 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("self-listing gateway: %d hits, notes %q", len(res.Hits), res.Usage.Notes)
	if len(res.Hits) == 0 || !notesContain(res, "federation cycle") {
		t.Errorf("hits %d, notes %q", len(res.Hits), res.Usage.Notes)
	}
}

// Mount adds routes beside the RCP endpoint (rcpd's web console at "/"),
// which keeps /rcp and its bearer token; cancelling ctx stops both.
func TestServeHTTPMount(t *testing.T) {
	_, beta := httpEngine(t, "beta", nil)
	ln := listen(t)
	reg := &federation.Registry{Engines: []federation.EngineSpec{{ID: "beta", URL: beta.URL}}}
	stop := runServe(t, reg, federation.ServeOptions{Listener: ln, HTTP: &rcp.HTTPOptions{BearerTokens: []string{"tok"}},
		Mount: func(mux *http.ServeMux, srv *rcp.Server) {
			msg := "console"
			if srv == nil {
				msg = "no server"
			}
			mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, msg) })
		}})
	base := "http://" + ln.Addr().String()
	c := dial(t, base+"/rcp", &rcp.ClientOptions{BearerToken: "tok"})
	if res, err := retrieve(t, c, "dense retrieval", 3, nil); err != nil || len(res.Hits) == 0 {
		t.Fatalf("retrieve through the mounted listener: %v", err)
	}
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "console" {
		t.Errorf("GET / = %q", body)
	}
	resp, err = http.Post(base+"/rcp/ping", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("ping without the token: %d", resp.StatusCode)
	}
	stop()
}

// With routes mounted (the console, on by default) the gateway's listener
// keeps the connection limits of rcp.HTTPLimits: beyond MaxConns a new
// connection evicts a silent one (item 4: the mounted listener was a bare
// http.Server whose silent connections piled up until file descriptors ran
// out).
func TestServeHTTPMountLimits(t *testing.T) {
	_, beta := httpEngine(t, "beta", nil)
	ln := listen(t)
	reg := &federation.Registry{Engines: []federation.EngineSpec{{ID: "beta", URL: beta.URL}}}
	runServe(t, reg, federation.ServeOptions{Listener: ln, HTTP: &rcp.HTTPOptions{Limits: rcp.HTTPLimits{MaxConns: 2}},
		Mount: func(mux *http.ServeMux, _ *rcp.Server) {}})
	var conns []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
		time.Sleep(50 * time.Millisecond) // accepted in order
	}
	_ = conns[0].SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := conns[0].Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the oldest silent connection beyond MaxConns 2: read %v, want EOF (evicted)", err)
	}
	resp, err := http.Post("http://"+ln.Addr().String()+"/rcp/ping", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("ping beside the silent connections: HTTP %d", resp.StatusCode)
	}
}
