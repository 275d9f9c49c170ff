package federation_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/testutil/fedtest"
	"github.com/rcpgo/rcpgo/rcp"
)

// Environment of a re-executed test binary acting as a stdio engine.
const (
	envEngine  = "FEDTEST_ENGINE"
	envPIDFile = "FEDTEST_PIDFILE"
	// envGatewayRegistry serves a stdio gateway over this registry.
	envGatewayRegistry = "FEDTEST_GATEWAY_REGISTRY"
)

func TestMain(m *testing.M) {
	if name := os.Getenv(envEngine); name != "" {
		os.Exit(serveStdioEngine(name))
	}
	if reg := os.Getenv(envGatewayRegistry); reg != "" {
		os.Exit(serveStdioGateway(reg))
	}
	code := m.Run()
	if code == 0 {
		if leaked := leakedGoroutines(3 * time.Second); leaked != "" {
			fmt.Fprintln(os.Stderr, "leaked goroutines:\n"+leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// serveStdioEngine runs a fedtest engine over stdin/stdout.
func serveStdioEngine(name string) int {
	if p := os.Getenv(envPIDFile); p != "" {
		if err := os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	e := fedtest.New(name, features(name))
	srv := rcp.NewServer(e.Router(), &rcp.ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := srv.ServeStdio(context.Background(), os.Stdin, os.Stdout); err != nil {
		return 1
	}
	return 0
}

// serveStdioGateway serves a gateway over the registry at path on
// stdin/stdout, with the spawn budget a parent gateway handed down.
func serveStdioGateway(path string) int {
	reg, err := federation.LoadRegistry(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	budget, err := federation.SpawnBudget(federation.DefaultDepth)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	gw := federation.NewGateway(reg, &federation.GatewayOptions{Federation: federation.Options{
		Client: &rcp.ClientOptions{Logger: quiet, Stderr: io.Discard, Env: []string{federation.SpawnEnv(budget)}},
		Logger: quiet,
	}})
	defer gw.Close()
	err = gw.Serve(context.Background(), federation.ServeOptions{Stdin: os.Stdin, Stdout: os.Stdout,
		Server: &rcp.ServerOptions{Logger: quiet}, EngineTimeout: 10 * time.Second, NoDial: budget <= 0})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// leakedGoroutines waits up to d for goroutines running this module's code
// (other than the test runner's) to finish and describes the survivors.
func leakedGoroutines(d time.Duration) string {
	deadline := time.Now().Add(d)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "github.com/rcpgo/rcpgo/") && !strings.Contains(g, "TestMain") &&
				!strings.Contains(g, "leakedGoroutines") && !strings.Contains(g, "testing.tRunner") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// features gives each corpus its optional capabilities.
func features(name string) fedtest.Features {
	switch name {
	case "alpha":
		return fedtest.Features{Embed: true}
	case "beta":
		return fedtest.Features{Embed: true, Rerank: true}
	case "gamma":
		return fedtest.Features{GraphOps: []string{"local"}}
	}
	return fedtest.Features{}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// httpEngine serves a fedtest engine over loopback HTTP with its own
// sessions per client; it is killed at cleanup.
func httpEngine(t *testing.T, name string, opts *rcp.HTTPOptions) (*fedtest.Engine, *fedtest.HTTPServer) {
	t.Helper()
	e := fedtest.New(name, features(name))
	e.Slow = 5 * time.Second
	o := rcp.HTTPOptions{Sessions: rcp.SessionStateless}
	if opts != nil {
		o = *opts
	}
	s, err := fedtest.ServeHTTP(e.Router(), "127.0.0.1:0", &o, &rcp.ServerOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return e, s
}

// stdioEngine returns the registry entry of a fedtest engine run as a child
// process (this test binary re-executed) and a function killing it.
func stdioEngine(t *testing.T, name string) (federation.EngineSpec, func()) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), name+".pid")
	spec := federation.EngineSpec{ID: name, Transport: federation.TransportStdio, Command: []string{exe},
		Env: map[string]string{envEngine: name, envPIDFile: pidFile}}
	kill := func() {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Errorf("stdio engine %s: %v", name, err)
			return
		}
		pid, _ := strconv.Atoi(string(b))
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Errorf("killing stdio engine %s: %v", name, err)
		}
	}
	return spec, kill
}

// clientOpts are the options the federations in these tests dial with.
func clientOpts() *rcp.ClientOptions {
	return &rcp.ClientOptions{Logger: quiet, Stderr: io.Discard}
}

// serveGateway serves gw over loopback HTTP (single shared session, like
// rcpd) and returns its base URL; everything is stopped at cleanup.
func serveGateway(t *testing.T, gw *federation.Gateway, opts *rcp.HTTPOptions) *fedtest.HTTPServer {
	t.Helper()
	o := rcp.HTTPOptions{Sessions: rcp.SessionStateless}
	if opts != nil {
		o = *opts
	}
	s, err := fedtest.ServeHTTP(gw, "127.0.0.1:0", &o, &rcp.ServerOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Kill(); _ = gw.Close() })
	return s
}

// dial connects a client to url, closed at cleanup.
func dial(t *testing.T, url string, opts *rcp.ClientOptions) *rcp.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o := rcp.ClientOptions{Logger: quiet}
	if opts != nil {
		o = *opts
	}
	c, err := rcp.ConnectHTTP(ctx, url, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func codeOf(err error) rcp.Code { return rcp.CodeOf(err) }

// trio starts alpha over stdio and beta and gamma over HTTP and returns the
// registry plus the handles the tests poke at.
type trioEngines struct {
	reg       *federation.Registry
	killAlpha func()
	beta      *fedtest.Engine
	gamma     *fedtest.Engine
	betaSrv   *fedtest.HTTPServer
	gammaSrv  *fedtest.HTTPServer
}

func trio(t *testing.T) *trioEngines {
	t.Helper()
	alpha, kill := stdioEngine(t, "alpha")
	beta, bs := httpEngine(t, "beta", nil)
	gamma, gs := httpEngine(t, "gamma", nil)
	reg := &federation.Registry{Engines: []federation.EngineSpec{
		alpha,
		{ID: "beta", Transport: federation.TransportHTTP, URL: bs.URL},
		{ID: "gamma", Transport: federation.TransportHTTP, URL: gs.URL},
	}}
	if err := reg.Validate(); err != nil {
		t.Fatal(err)
	}
	return &trioEngines{reg: reg, killAlpha: kill, beta: beta, gamma: gamma, betaSrv: bs, gammaSrv: gs}
}

// gatewayOver builds, connects and serves a gateway over reg.
func gatewayOver(t *testing.T, reg *federation.Registry, opts *federation.GatewayOptions) (*federation.Gateway, *fedtest.HTTPServer) {
	t.Helper()
	o := federation.GatewayOptions{}
	if opts != nil {
		o = *opts
	}
	o.Federation.Client = clientOpts()
	o.Federation.Logger = quiet
	gw := federation.NewGateway(reg, &o)
	s := serveGateway(t, gw, nil)
	if err := gw.Connect(ctxT(t, 10*time.Second)); err != nil {
		t.Logf("connect: %v", err)
	}
	return gw, s
}

// listen reserves a loopback port, closed at cleanup unless served.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// serveOn serves gw on ln; everything is stopped at cleanup.
func serveOn(t *testing.T, gw *federation.Gateway, ln net.Listener) *fedtest.HTTPServer {
	t.Helper()
	s := fedtest.ServeListener(gw, ln, &rcp.HTTPOptions{Sessions: rcp.SessionStateful}, &rcp.ServerOptions{Logger: quiet})
	t.Cleanup(func() { s.Kill(); _ = gw.Close() })
	return s
}
