// Package soak holds a soak test of rcpd (issue 9, acceptance 3): the real
// binary, built from ./cmd/rcpd, serving HTTP on loopback, under 32 concurrent
// clients sending a mixed retrieve/index/ping load for a bounded time.
package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/bench"
	"github.com/rcpgo/rcpgo/bench/gen"
	"github.com/rcpgo/rcpgo/rcp"
)

const (
	clients         = 32
	defaultDuration = 20 * time.Second
	// DurationEnv overrides the soak duration (a Go duration, e.g. 5m).
	DurationEnv = "RCP_SOAK_DURATION"
	// ConfigEnv names an rcpd config file for the soaked server (e.g. one
	// setting queryConcurrency), passed as --config.
	ConfigEnv = "RCP_SOAK_CONFIG"
)

func soakDuration(t *testing.T) time.Duration {
	s := os.Getenv(DurationEnv)
	if s == "" {
		return defaultDuration
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > bench.MaxDuration {
		t.Fatalf("%s=%q: want a duration in (0, %v]", DurationEnv, s, bench.MaxDuration)
	}
	return d
}

// TestSoakRcpd runs 32 clients, each with its own HTTP session, against one
// rcpd process for RCP_SOAK_DURATION (default 20s) with a mixed workload of
// retrieve (8), index/add of synthetic batches (1) and ping (1). It asserts
// that no call failed (no transport error, no timeout, no RCP error), that
// the server is still healthy and serves the indexed documents afterwards,
// and logs the throughput, the latencies and the server's peak RSS.
func TestSoakRcpd(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test skipped in -short mode")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc for the server's RSS")
	}
	dur := soakDuration(t)
	// Everything below is bounded by this deadline: build, start, soak, stop.
	// A cold build of rcpd on a loaded 2-core machine takes minutes (a fresh
	// clone's run spent the whole of a 5-minute margin building and soaked 0 s).
	ctx, cancel := context.WithTimeout(context.Background(), dur+15*time.Minute)
	defer cancel()

	srv := startRcpd(ctx, t)
	base := srv.url

	// 32 clients, each its own session; a call takes a free client, so
	// every client has at most one request in flight.
	pool := make(chan *rcp.Client, clients)
	for i := 0; i < clients; i++ {
		c, err := rcp.ConnectHTTP(ctx, base, &rcp.ClientOptions{Info: rcp.PeerInfo{Name: fmt.Sprintf("soak-%02d", i), Version: "test"}})
		if err != nil {
			t.Fatalf("client %d: connect: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		pool <- c
	}
	caller := bench.CallerFunc(func(ctx context.Context, method string, params any) (json.RawMessage, error) {
		c := <-pool
		defer func() { pool <- c }()
		var raw json.RawMessage
		err := c.Call(ctx, method, params, &raw)
		return raw, err
	})

	g, err := gen.New(gen.Config{Seed: 7, Docs: 20_000, Queries: 500})
	if err != nil {
		t.Fatal(err)
	}
	// The index/add batches cycle through their generator's corpus (batch
	// s carries documents 16·s …): over g's 20 000 documents a batch
	// recurred every 1 250 operations, so past a few thousand operations
	// most adds under the mix re-added unchanged documents — answered
	// without a commit — while the unloaded baseline's never did, and the
	// ratio compared different work. The same documents numbered over 2 M
	// (generated lazily; document i is the same in both) keep every add of
	// a run a new write, on both sides of the ratio; the queries stay g's.
	docs, err := gen.New(gen.Config{Seed: 7, Docs: 2_000_000, Queries: 500})
	if err != nil {
		t.Fatal(err)
	}
	queries := append(bench.GeneratedQueries(g, 500),
		"eiffel tower", "photosynthesis", "retrieval augmented generation", "bm25 ranking")
	mixed, err := bench.NewMixed(
		bench.Weighted{Workload: &bench.Retrieve{Queries: queries, K: 10}, Weight: 8},
		bench.Weighted{Workload: &bench.Index{Gen: docs, Batch: 16, IDPrefix: "soak-"}, Weight: 1},
		bench.Weighted{Workload: bench.Ping{}, Weight: 1},
	)
	if err != nil {
		t.Fatal(err)
	}

	// index/add alone first (one client, the same batches): the baseline
	// of the loaded/unloaded ratio (issue 15, acceptance 5).
	alone, err := bench.Run(ctx, bench.Config{
		Workload:    &bench.Index{Gen: docs, Batch: 16, IDPrefix: "soak-alone-"},
		Targets:     []bench.Target{{Name: "rcpd", Caller: caller}},
		Concurrency: 1,
		Requests:    40,
		Timeout:     30 * time.Second,
	})
	if err != nil {
		t.Fatalf("bench (index/add alone): %v", err)
	}
	unloaded := alone.Targets[0].Methods[rcp.MethodIndexAdd].P50Ms

	stopRSS := srv.sampleRSS(250 * time.Millisecond)
	res, err := bench.Run(ctx, bench.Config{
		Workload:    mixed,
		Targets:     []bench.Target{{Name: "rcpd", Caller: caller}},
		Concurrency: clients,
		Duration:    dur,
		Timeout:     30 * time.Second,
	})
	peak, last := stopRSS()
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	tr := res.Targets[0]
	t.Logf("soak: %d clients, %s for %.1fs: %d calls, %.0f calls/s, %d errors %v",
		clients, res.Workload, res.Elapsed, tr.Calls, tr.Throughput, tr.Errors, tr.ErrorsByCode)
	methods := make([]string, 0, len(tr.Methods))
	for m := range tr.Methods {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	for _, m := range methods {
		l := tr.Methods[m]
		t.Logf("  %-12s n=%-7d p50 %.2f ms  p99 %.2f ms  max %.2f ms", m, l.Count, l.P50Ms, l.P99Ms, l.MaxMs)
	}
	t.Logf("rcpd RSS: peak (VmHWM) %.1f MiB, sampled peak %.1f MiB, at end %.1f MiB", srv.hwm(), peak, last)
	// index/add answers after its durable write and never waits for dense
	// upkeep, so load slows it only by contention.
	loaded := tr.Methods[rcp.MethodIndexAdd].P50Ms
	t.Logf("index/add p50: alone %.2f ms, under the mix %.2f ms (%.1f×)", unloaded, loaded, loaded/unloaded)

	if n := tr.ErrorsByCode["transport"]; n > 0 {
		t.Errorf("%d transport errors", n)
	}
	if n := tr.ErrorsByCode["timeout"]; n > 0 {
		t.Errorf("%d calls timed out", n)
	}
	if tr.Errors > 0 {
		t.Errorf("%d failed calls: %v", tr.Errors, tr.ErrorsByCode)
	}
	if tr.OK == 0 {
		t.Fatal("no successful call")
	}
	for _, m := range []string{rcp.MethodRetrieve, rcp.MethodIndexAdd, rcp.MethodPing} {
		if tr.Methods[m].Count == 0 {
			t.Errorf("no successful %s call", m)
		}
	}

	// Still healthy, and the indexed documents are served.
	hc, hcancel := context.WithTimeout(ctx, 10*time.Second)
	defer hcancel()
	req, _ := http.NewRequestWithContext(hc, http.MethodGet, strings.TrimSuffix(base, "/rcp")+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("healthz after soak: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("healthz after soak: %s", resp.Status)
	}
	// A document added now is retrievable at once (Add returns once visible).
	c := <-pool
	canary := rcp.Document{ID: "soak-canary", Text: "the quokkasoak canary sings after thirty two clients"}
	if err := c.Call(hc, rcp.MethodIndexAdd, rcp.IndexAddParams{Documents: []rcp.Document{canary}}, nil); err != nil {
		t.Fatalf("index/add after soak: %v", err)
	}
	var out rcp.RetrieveResult
	if err := c.Call(hc, rcp.MethodRetrieve, rcp.RetrieveParams{Query: rcp.TextQuery("quokkasoak canary"), K: 5}, &out); err != nil {
		t.Fatalf("retrieve after soak: %v", err)
	}
	pool <- c
	if len(out.Hits) == 0 || out.Hits[0].ID != rcp.StringID(canary.ID) {
		t.Errorf("retrieve after soak: want %s first, got %+v", canary.ID, out.Hits)
	}
	if err := srv.stop(); err != nil {
		t.Errorf("rcpd did not stop cleanly: %v", err)
	}
}

// ---------------------------------------------------------------- server

type server struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	done chan error
	once sync.Once
	err  error
}

// addrRE reads the HTTP base URL from rcpd's "serving HTTP (RCP at /rcp)" log line.
var addrRE = regexp.MustCompile(`serving HTTP.* url=(http://127\.0\.0\.1:\d+)`)

// startRcpd builds ./cmd/rcpd into a temporary directory and starts it on
// an ephemeral loopback port with a fresh data directory and the demo corpus.
// The process is stopped when the test ends whatever happens.
func startRcpd(ctx context.Context, t *testing.T) *server {
	t.Helper()
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "rcpd")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.CommandContext(ctx, goTool(), "build", "-o", bin, "github.com/rcpgo/rcpgo/cmd/rcpd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build rcpd: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve",
		"--http", "127.0.0.1:0",
		"--http-sessions", "stateful",
		"--data", filepath.Join(tmp, "data"),
		"--demo",
		"--log-level", "info")
	if c := os.Getenv(ConfigEnv); c != "" {
		cmd.Args = append(cmd.Args, "--config", c)
	}
	cmd.Env = append(os.Environ(), "RCPD_TOKEN=", "RCPD_CONFIG=", "RCPD_HTTP=", "RCPD_DATA=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start rcpd: %v", err)
	}
	s := &server{t: t, cmd: cmd, done: make(chan error, 1)}
	t.Cleanup(func() { _ = s.stop() })

	urlc := make(chan string, 1)
	var logMu sync.Mutex
	var logTail []string
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		found := false
		for sc.Scan() {
			line := sc.Text()
			logMu.Lock()
			logTail = append(logTail, line)
			if len(logTail) > 50 {
				logTail = logTail[1:]
			}
			logMu.Unlock()
			if !found {
				if m := addrRE.FindStringSubmatch(line); m != nil {
					found = true
					urlc <- m[1] + "/rcp"
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() { s.done <- cmd.Wait() }()

	select {
	case s.url = <-urlc:
	case err := <-s.done:
		s.done <- err
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("rcpd exited before serving: %v\n%s", err, strings.Join(logTail, "\n"))
	case <-time.After(2 * time.Minute):
		t.Fatal("rcpd did not report its HTTP address within 2 minutes")
	}
	return s
}

// goTool returns the go command that runs this test: go test puts its
// GOROOT/bin first on the PATH of the test binary (since Go 1.19).
func goTool() string {
	return "go"
}

// stop sends SIGTERM, then SIGKILL after 15 s; it reports an unclean exit.
func (s *server) stop() error {
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-s.done:
			s.err = err
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
			s.err = errors.New("killed after 15s without exiting on SIGTERM")
		}
	})
	return s.err
}

// status reads a field of /proc/PID/status in MiB.
func (s *server) status(field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			if f := strings.Fields(v); len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// hwm is the server's peak resident set so far (VmHWM).
func (s *server) hwm() float64 { return s.status("VmHWM") }

// sampleRSS polls VmRSS until the returned function is called, which
// returns the largest and the last sample.
func (s *server) sampleRSS(every time.Duration) func() (peak, last float64) {
	stop := make(chan struct{})
	var mu sync.Mutex
	var pk, ls float64
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			v := s.status("VmRSS")
			mu.Lock()
			pk, ls = max(pk, v), v
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	}()
	return func() (float64, float64) {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return pk, ls
	}
}
