package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/bench/gen"
	"github.com/rcpgo/rcpgo/internal/testutil/shared"
	"github.com/rcpgo/rcpgo/rcp"
)

// fakeClock is advanced by the fake callers, so that latencies are exact.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func nonce(t *testing.T, params any) int64 {
	v, ok := params.(map[string]any)["nonce"].(int64)
	if !ok {
		t.Fatalf("ping params %v", params)
	}
	return v
}

func within(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

// 1000 pings with a known latency schedule and known failures; the
// expected percentiles are worked out in the comments.
func TestPercentilesThroughputErrors(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	caller := CallerFunc(func(ctx context.Context, method string, params any) (json.RawMessage, error) {
		n := nonce(t, params) % 100
		switch {
		case n < 90:
			clk.advance(time.Millisecond)
		case n < 99:
			clk.advance(5 * time.Millisecond)
		default:
			clk.advance(20 * time.Millisecond)
		}
		switch n {
		case 95:
			return nil, &rcp.Error{Code: rcp.CodeRateLimited, Message: "slow down"}
		case 96:
			return nil, errors.New("connection reset")
		}
		return json.RawMessage(`{}`), nil
	})
	res, err := Run(context.Background(), Config{
		Workload: Ping{}, Targets: []Target{{"A", caller}}, Concurrency: 1, Requests: 1000, now: clk.now,
	})
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Targets[0]
	// ok: 900 × 1ms, 70 × 5ms, 10 × 20ms = 980 calls; errors: 20 × 5ms
	if tr.Calls != 1000 || tr.OK != 980 || tr.Errors != 20 || tr.ErrorRate != 0.02 || res.Operations != 1000 || res.StoppedBy != "requests" {
		t.Fatalf("counts %+v", tr)
	}
	if tr.ErrorsByCode["RateLimited(-32011)"] != 10 || tr.ErrorsByCode["transport"] != 10 || len(tr.ErrorsByCode) != 2 {
		t.Fatalf("errors by code %v", tr.ErrorsByCode)
	}
	l := tr.Latency
	// ranks (HDR: ⌊q·980+0.5⌋): p50 490 → 1ms, p90 882 → 1ms, p95 931 → 5ms,
	// p99 970 → 5ms (900+70), p99.9 979 → 20ms; mean (900+350+200)/980.
	// HDR at 3 significant digits is exact to 0.1%.
	checks := []struct {
		name      string
		got, want float64
	}{
		{"p50", l.P50Ms, 1}, {"p90", l.P90Ms, 1}, {"p95", l.P95Ms, 5}, {"p99", l.P99Ms, 5},
		{"p99.9", l.P999Ms, 20}, {"max", l.MaxMs, 20}, {"min", l.MinMs, 1},
		{"mean", l.MeanMs, 1450.0 / 980},
		{"error p50", tr.ErrorLatency.P50Ms, 5},
		// elapsed is the sum of all latencies: 900 + 90·5 + 10·20 = 1550ms
		{"elapsed", res.Elapsed, 1.55},
		{"throughput", tr.Throughput, 980 / 1.55},
		{"items/s", tr.ItemsPerSec, 980 / 1.55},
	}
	for _, c := range checks {
		if !within(c.got, c.want, 0.001) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if l.Count != 980 || tr.Methods["ping"].Count != 980 {
		t.Errorf("latency counts %d / %d", l.Count, tr.Methods["ping"].Count)
	}
	if len(res.Ratios) != 0 {
		t.Errorf("ratios in a single-target run: %v", res.Ratios)
	}
}

func TestABInterleavedRatios(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	var mu sync.Mutex
	var order []string
	mk := func(name string, base time.Duration) Caller {
		return CallerFunc(func(ctx context.Context, method string, params any) (json.RawMessage, error) {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			d := base
			if nonce(t, params)%100 == 99 { // 1% tail at 10× latency
				d *= 10
			}
			clk.advance(d)
			if name == "B" && nonce(t, params)%20 == 0 {
				return nil, &rcp.Error{Code: rcp.CodeBackendUnavailable, Message: "down"}
			}
			return json.RawMessage(`{}`), nil
		})
	}
	res, err := Run(context.Background(), Config{
		Workload: Ping{}, Concurrency: 1, Requests: 400, Warmup: 100, now: clk.now,
		Targets: []Target{{"A", mk("A", time.Millisecond)}, {"B", mk("B", 2*time.Millisecond)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Same operations to both, first caller alternating: A B, B A, A B, …
	if len(order) != 1000 || order[0] != "A" || order[2] != "B" || order[4] != "A" {
		t.Fatalf("call order %v…", order[:6])
	}
	a, b := res.Targets[0], res.Targets[1]
	if a.Calls != 400 || b.Calls != 400 || b.Errors != 20 || b.ErrorsByCode["BackendUnavailable(-32010)"] != 20 {
		t.Fatalf("A %+v B %+v", a, b)
	}
	r := res.Ratios[0]
	// Recorded nonces 100..499. A: 396 × 1ms + 4 × 10ms (nonces 199, 299,
	// 399, 499). B fails on the 20 nonces ≡ 0 mod 20 (none in the tail), so
	// its successes are 376 × 2ms + 4 × 20ms. Percentiles (HDR rank
	// ⌊q·n+0.5⌋) stay below the 4-call tail up to p99, so they are exactly 2×.
	meanA, meanB := (396+40)/400.0, (376*2+80)/380.0
	for name, c := range map[string][2]float64{
		"mean": {r.MeanMs, meanB / meanA}, "p50": {r.P50Ms, 2}, "p90": {r.P90Ms, 2}, "p99": {r.P99Ms, 2},
		"capacity": {r.Throughput, meanA / meanB}, "A mean": {a.Latency.MeanMs, meanA},
		"A p99": {a.Latency.P99Ms, 1}, "A p99.9": {a.Latency.P999Ms, 10}, "B p99.9": {b.Latency.P999Ms, 20},
	} {
		if !within(c[0], c[1], 0.001) {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
	if !within(r.ErrorRateDelta, 0.05, 1e-9) || r.Target != "B" || r.Baseline != "A" {
		t.Errorf("ratio %+v", r)
	}
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back.Ratios[0].P50Ms != r.P50Ms {
		t.Fatalf("JSON: %v", err)
	}
	tab := res.Table()
	for _, want := range []string{"A/B", "2.000×", "0.498×", "BackendUnavailable(-32010) ×20", "+5.00 pp"} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
}

// Real time: 8 workers against a 5ms server for 300ms.
func TestDurationBoundRealTime(t *testing.T) {
	caller := CallerFunc(func(ctx context.Context, method string, params any) (json.RawMessage, error) {
		select {
		case <-time.After(5 * time.Millisecond):
			return json.RawMessage(`{}`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	var progress []Progress
	start := time.Now()
	res, err := Run(context.Background(), Config{
		Workload: Ping{}, Targets: []Target{{"srv", caller}}, Concurrency: 8, Duration: 300 * time.Millisecond,
		ProgressEvery: 50 * time.Millisecond, Progress: func(p Progress) { progress = append(progress, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	tr := res.Targets[0]
	// A shared machine can starve the workers (a landing saw 6 calls finish
	// in the 300 ms), so only what holds whatever the scheduling is checked:
	// the time bound, at least one call, the ceiling of 8 / 5ms = 1600
	// ops/s, and Little's law for a closed loop: throughput × mean latency
	// ≤ the 8 requests in flight.
	if res.StoppedBy != "duration" || took < 300*time.Millisecond || took > 5*time.Second {
		t.Fatalf("stopped by %s after %v", res.StoppedBy, took)
	}
	if tr.OK < 1 || tr.Errors != 0 || tr.Throughput > 1600*1.02 || tr.Latency.P50Ms < 5 || tr.Latency.MinMs < 5 {
		t.Fatalf("ok %d errors %d throughput %.0f latency %+v", tr.OK, tr.Errors, tr.Throughput, tr.Latency)
	}
	if inFlight := tr.Throughput * tr.Latency.MeanMs / 1000; inFlight > 8*1.02 {
		t.Fatalf("Little's law: %.2f requests in flight > 8", inFlight)
	}
	if !within(tr.Throughput, float64(tr.OK)/res.Elapsed, 1e-9) {
		t.Fatalf("throughput %v ≠ ok/elapsed %v", tr.Throughput, float64(tr.OK)/res.Elapsed)
	}
	if len(progress) == 0 || progress[len(progress)-1].Done != res.Operations {
		t.Fatalf("progress %v", progress)
	}
}

func TestTimeoutsAndCancel(t *testing.T) {
	hang := CallerFunc(func(ctx context.Context, method string, params any) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	res, err := Run(context.Background(), Config{Workload: Ping{}, Targets: []Target{{"h", hang}}, Concurrency: 2, Requests: 6, Timeout: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Targets[0].ErrorsByCode["timeout"] != 6 {
		t.Fatalf("errors %v", res.Targets[0].ErrorsByCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	res, err = Run(ctx, Config{Workload: Ping{}, Targets: []Target{{"h", hang}}, Concurrency: 2, Duration: time.Minute})
	if err != nil || res.StoppedBy != "context" || res.Targets[0].Calls != 0 {
		t.Fatalf("cancelled run: %v %+v", err, res)
	}
	for _, bad := range []Config{{}, {Workload: Ping{}}, {Workload: Ping{}, Targets: []Target{{"x", nil}}},
		{Workload: Ping{}, Targets: []Target{{"x", hang}}, Requests: -1}} {
		if _, err := Run(context.Background(), bad); err == nil {
			t.Errorf("Run(%+v) accepted it", bad)
		}
	}
}

func TestWorkloads(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	r := &Retrieve{Queries: []string{"a", "b", "c"}, K: 5, Options: map[string]any{"mode": "hybrid"}}
	op := r.Next(rng, 4)
	p := op.Params.(map[string]any)
	if op.Method != "retrieve" || p["query"] != "b" || p["k"] != 5 || p["mode"] != "hybrid" || len(r.Options) != 1 {
		t.Fatalf("retrieve op %+v", op)
	}
	g, err := gen.New(gen.Config{Seed: 3, Docs: 10, Queries: 4})
	if err != nil {
		t.Fatal(err)
	}
	ix := &Index{Gen: g, Batch: 4}
	op = ix.Next(rng, 2) // docs 8, 9, 0, 1
	ps := op.Params.(rcp.IndexAddParams)
	if op.Method != "index/add" || op.Items != 4 || ps.Documents[0].ID != "bench-d8" || ps.Documents[2].ID != "bench-d0" ||
		ps.Documents[1].Meta["lang"] == nil || !strings.Contains(ps.Documents[0].Text, "\n\n") {
		t.Fatalf("index op %+v", op)
	}
	if again := ix.Next(rng, 2).Params.(rcp.IndexAddParams); again.Documents[3].Text != ps.Documents[3].Text {
		t.Fatal("index batches are not reproducible")
	}
	mixed, err := NewMixed(Weighted{Ping{}, 3}, Weighted{r, 1})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for i := range int64(4000) {
		counts[mixed.Next(rng, i).Method]++
	}
	if counts["ping"] < 2800 || counts["ping"] > 3200 || counts["retrieve"]+counts["ping"] != 4000 {
		t.Fatalf("mix %v", counts)
	}
	if _, err := NewMixed(Weighted{Ping{}, 0}); err == nil {
		t.Fatal("zero weights accepted")
	}
	if qs := GeneratedQueries(g, 4); len(qs) != 4 || qs[0] == "" {
		t.Fatalf("generated queries %q", qs)
	}
}

func TestQueriesFromFile(t *testing.T) {
	qs, err := QueriesFromFile(shared.Path(t, "datasets", "scifact", "queries.jsonl"))
	if err != nil || len(qs) != 300 {
		t.Fatalf("%d queries, %v", len(qs), err)
	}
	p := filepath.Join(t.TempDir(), "q.txt")
	if err := os.WriteFile(p, []byte("one\n\n two \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if qs, err := QueriesFromFile(p); err != nil || len(qs) != 2 || qs[1] != "two" {
		t.Fatalf("%q %v", qs, err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := QueriesFromFile(p); err == nil {
		t.Fatal("empty query file accepted")
	}
}

// A mixed run against an in-process handler: per-method rows in the table.
func TestMixedRunTable(t *testing.T) {
	g, _ := gen.New(gen.Config{Seed: 5, Docs: 100, Queries: 10})
	var mu sync.Mutex
	indexed := map[string]bool{}
	srv := CallerFunc(func(ctx context.Context, method string, params any) (json.RawMessage, error) {
		switch method {
		case rcp.MethodIndexAdd:
			mu.Lock()
			for _, d := range params.(rcp.IndexAddParams).Documents {
				indexed[d.ID] = true
			}
			mu.Unlock()
		case rcp.MethodRetrieve:
			if params.(map[string]any)["query"] == "" {
				return nil, &rcp.Error{Code: rcp.CodeInvalidParams, Message: "empty"}
			}
		}
		return json.RawMessage(`{}`), nil
	})
	mixed, _ := NewMixed(Weighted{Ping{}, 1}, Weighted{&Retrieve{Queries: GeneratedQueries(g, 10)}, 2}, Weighted{&Index{Gen: g, Batch: 10}, 1})
	res, err := Run(context.Background(), Config{Workload: mixed, Targets: []Target{{"local", srv}}, Concurrency: 3, Requests: 300})
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Targets[0]
	if tr.OK != 300 || len(tr.Methods) != 3 || len(indexed) == 0 || len(indexed) > 100 {
		t.Fatalf("%+v, %d docs indexed", tr, len(indexed))
	}
	tab := res.Table()
	if !strings.Contains(tab, "by method") || !strings.Contains(tab, "index/add") || !strings.HasPrefix(tab, "mixed(ping:1,retrieve:2,index(batch=10):1)") {
		t.Fatalf("table:\n%s", tab)
	}
}

func TestFromCall(t *testing.T) {
	var gotMethod string
	call := func(ctx context.Context, method string, params, result any) error {
		gotMethod = method
		if method == "fail" {
			return &rcp.Error{Code: rcp.CodeTimeout, Message: "late"}
		}
		return json.Unmarshal([]byte(`{"nonce":1}`), result)
	}
	c := FromCall(call)
	raw, err := c.Call(context.Background(), "ping", nil)
	if err != nil || string(raw) != `{"nonce":1}` || gotMethod != "ping" {
		t.Fatalf("%s %v", raw, err)
	}
	if _, err := c.Call(context.Background(), "fail", nil); ErrorLabel(err) != "Timeout(-32014)" {
		t.Fatalf("label %q", ErrorLabel(err))
	}
}
