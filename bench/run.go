package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rcpgo/rcpgo/rcp"
)

// Target is a named server under test.
type Target struct {
	Name   string
	Caller Caller
}

// Config describes a run. A run stops at the first of Requests and
// Duration; when neither is set it runs for DefaultDuration. MaxDuration
// bounds it in any case.
type Config struct {
	Workload Workload
	// Targets: one, or several for an A/B run. In an A/B run every
	// operation is sent to each target, in an order that rotates with the
	// operation number, by the same worker — so both see the same requests
	// under the same conditions — and ratios are reported against the
	// first target (the baseline).
	Targets     []Target
	Concurrency int           // workers, each with one request in flight (default 4)
	Requests    int64         // operations to run (0: no count bound)
	Duration    time.Duration // wall time to run (0: no time bound)
	Warmup      int64         // first operations not recorded
	Timeout     time.Duration // per call (default 30s)
	Seed        uint64        // for the workload's random choices (default 1)
	// Progress, when set, is called about every ProgressEvery (default
	// 500ms) and once at the end, from a single goroutine.
	Progress      func(Progress)
	ProgressEvery time.Duration

	now func() time.Time // tests
}

// DefaultDuration applies when a Config sets neither Requests nor Duration.
const DefaultDuration = 10 * time.Second

// MaxDuration bounds every run.
const MaxDuration = time.Hour

// Progress is a snapshot of a run.
type Progress struct {
	Done    int64 // operations finished (all targets called)
	Total   int64 // Requests, or 0 when time-bound
	Errors  int64
	Elapsed time.Duration
	Rate    float64       // operations per second
	ETA     time.Duration // from the count or the deadline
}

// Latency is a latency summary in milliseconds.
type Latency struct {
	Count  int64   `json:"count"`
	MeanMs float64 `json:"meanMs"`
	MinMs  float64 `json:"minMs"`
	P50Ms  float64 `json:"p50Ms"`
	P90Ms  float64 `json:"p90Ms"`
	P95Ms  float64 `json:"p95Ms"`
	P99Ms  float64 `json:"p99Ms"`
	P999Ms float64 `json:"p999Ms"`
	MaxMs  float64 `json:"maxMs"`
}

// TargetResult is what one target did.
type TargetResult struct {
	Name      string  `json:"name"`
	Calls     int64   `json:"calls"`
	OK        int64   `json:"ok"`
	Errors    int64   `json:"errors"`
	ErrorRate float64 `json:"errorRate"`
	// ErrorsByCode counts failures by RCP error symbol and code
	// ("RateLimited(-32011)"); errors without an RCP code are "transport",
	// calls cut by the per-call Timeout "timeout".
	ErrorsByCode map[string]int64 `json:"errorsByCode,omitempty"`
	// Throughput is successful calls per second of wall time. In an A/B
	// run the targets share the time, so compare Ratio.Throughput instead.
	Throughput  float64 `json:"throughput"`
	ItemsPerSec float64 `json:"itemsPerSecond"`
	// Latency covers successful calls; ErrorLatency failed ones.
	Latency      Latency            `json:"latency"`
	ErrorLatency Latency            `json:"errorLatency"`
	Methods      map[string]Latency `json:"methods"`
}

// Ratio compares a target with the baseline: each field is
// target ÷ baseline (latencies: >1 is slower; throughput: >1 is faster).
type Ratio struct {
	Target   string  `json:"target"`
	Baseline string  `json:"baseline"`
	MeanMs   float64 `json:"mean"`
	P50Ms    float64 `json:"p50"`
	P90Ms    float64 `json:"p90"`
	P99Ms    float64 `json:"p99"`
	// Throughput is the closed-loop capacity ratio, baseline mean latency
	// ÷ target mean latency: what each would sustain alone at the same
	// concurrency.
	Throughput float64 `json:"throughput"`
	// ErrorRate is target error rate − baseline error rate.
	ErrorRateDelta float64 `json:"errorRateDelta"`
}

// Result is the outcome of a run.
type Result struct {
	Workload    string         `json:"workload"`
	Concurrency int            `json:"concurrency"`
	Started     time.Time      `json:"started"`
	Elapsed     float64        `json:"elapsedSeconds"`
	Operations  int64          `json:"operations"`
	StoppedBy   string         `json:"stoppedBy"` // "requests", "duration", "context"
	Targets     []TargetResult `json:"targets"`
	Ratios      []Ratio        `json:"ratios,omitempty"`
}

// histogram range: 1µs .. 10 min, 3 significant digits
const (
	histMin = 1
	histMax = int64(10 * time.Minute / time.Microsecond)
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, 3) }

// tally is one worker's record for one target.
type tally struct {
	ok, errs   *hdrhistogram.Histogram
	methods    map[string]*hdrhistogram.Histogram
	items      int64
	errsByCode map[string]int64
}

func newTally() *tally {
	return &tally{ok: newHist(), errs: newHist(), methods: map[string]*hdrhistogram.Histogram{}, errsByCode: map[string]int64{}}
}

func record(h *hdrhistogram.Histogram, d time.Duration) {
	us := d.Microseconds()
	_ = h.RecordValue(min(max(us, 0), histMax)) // clamped: cannot fail
}

// ErrorLabel names an error the way ErrorsByCode counts it.
func ErrorLabel(err error) string {
	var e *rcp.Error
	switch {
	case errors.As(err, &e):
		return fmt.Sprintf("%s(%d)", e.Code, int(e.Code))
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	default:
		return "transport"
	}
}

// Run executes cfg. It returns an error only for a bad Config; failed calls
// are counted in the result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	r := newRun(cfg)
	var wg sync.WaitGroup
	for w := range cfg.Concurrency {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r.work(ctx, w)
		}(w)
	}
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go r.reportProgress(stopProgress, progressDone)
	wg.Wait()
	close(stopProgress)
	<-progressDone
	return r.result(ctx), nil
}

// check refuses a config that cannot run and fills in the defaults.
func (cfg *Config) check() error {
	if cfg.Workload == nil || len(cfg.Targets) == 0 {
		return errors.New("bench: a workload and at least one target are needed")
	}
	for _, t := range cfg.Targets {
		if t.Caller == nil {
			return fmt.Errorf("bench: target %q has no caller", t.Name)
		}
	}
	if cfg.Requests < 0 || cfg.Duration < 0 || cfg.Warmup < 0 {
		return errors.New("bench: negative bound")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.Requests == 0 && cfg.Duration == 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.Duration == 0 || cfg.Duration > MaxDuration {
		cfg.Duration = MaxDuration
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 500 * time.Millisecond
	}
	return nil
}

// run is the state of one Run: its clock, its bounds and what every
// worker recorded.
type run struct {
	cfg                  Config
	now                  func() time.Time
	start, deadline      time.Time
	seqCtr, done, failed atomic.Int64
	timeUp               atomic.Bool
	tallies              [][]*tally // [worker][target]
}

func newRun(cfg Config) *run {
	r := &run{cfg: cfg, now: cfg.now}
	if r.now == nil {
		r.now = time.Now
	}
	r.start = r.now()
	r.deadline = r.start.Add(cfg.Duration)
	r.tallies = make([][]*tally, cfg.Concurrency)
	for w := range r.tallies {
		r.tallies[w] = make([]*tally, len(cfg.Targets))
		for t := range r.tallies[w] {
			r.tallies[w][t] = newTally()
		}
	}
	return r
}

// work is worker w: it takes operation numbers until the run's bound, and
// sends each operation to every target, in an order that rotates with the
// number.
func (r *run) work(ctx context.Context, w int) {
	cfg, nt := &r.cfg, len(r.cfg.Targets)
	total := cfg.Requests + cfg.Warmup
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(w)))
	for ctx.Err() == nil {
		seq := r.seqCtr.Add(1) - 1
		if cfg.Requests > 0 && seq >= total {
			return
		}
		if !r.now().Before(r.deadline) {
			r.timeUp.Store(true)
			return
		}
		op := cfg.Workload.Next(rng, seq)
		for k := range nt {
			t := int((seq + int64(k)) % int64(nt)) // rotate who goes first
			cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			t0 := r.now()
			_, err := cfg.Targets[t].Caller.Call(cctx, op.Method, op.Params)
			lat := r.now().Sub(t0)
			cancel()
			if ctx.Err() != nil {
				return // the run was cancelled: this call says nothing about the target
			}
			if seq < cfg.Warmup {
				continue
			}
			r.tally(r.tallies[w][t], op, lat, err)
		}
		if seq >= cfg.Warmup {
			r.done.Add(1)
		}
	}
}

// tally records one call's outcome.
func (r *run) tally(tl *tally, op Op, lat time.Duration, err error) {
	if err != nil {
		record(tl.errs, lat)
		tl.errsByCode[ErrorLabel(err)]++
		r.failed.Add(1)
		return
	}
	record(tl.ok, lat)
	h := tl.methods[op.Method]
	if h == nil {
		h = newHist()
		tl.methods[op.Method] = h
	}
	record(h, lat)
	tl.items += int64(max(op.Items, 1))
}

// reportProgress calls cfg.Progress every ProgressEvery and once more at
// stop, then closes done.
func (r *run) reportProgress(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	if r.cfg.Progress == nil {
		<-stop
		return
	}
	tick := time.NewTicker(r.cfg.ProgressEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			r.report()
		case <-stop:
			r.report()
			return
		}
	}
}

func (r *run) report() {
	el := r.now().Sub(r.start)
	p := Progress{Done: r.done.Load(), Total: r.cfg.Requests, Errors: r.failed.Load(), Elapsed: el}
	if el > 0 {
		p.Rate = float64(p.Done) / el.Seconds()
	}
	if p.Total > 0 && p.Rate > 0 && p.Done < p.Total {
		p.ETA = time.Duration(float64(p.Total-p.Done) / p.Rate * float64(time.Second))
	}
	if left := r.deadline.Sub(r.now()); r.cfg.Duration < MaxDuration && left > 0 && (p.ETA == 0 || left < p.ETA) {
		p.ETA = left
	}
	r.cfg.Progress(p)
}

// result merges the workers' tallies into the run's result, with each
// target's ratios against the first.
func (r *run) result(ctx context.Context) *Result {
	elapsed := r.now().Sub(r.start)
	res := &Result{
		Workload: r.cfg.Workload.Name(), Concurrency: r.cfg.Concurrency, Started: r.start.UTC(),
		Elapsed: elapsed.Seconds(), Operations: r.done.Load(), StoppedBy: "requests",
	}
	switch {
	case ctx.Err() != nil:
		res.StoppedBy = "context"
	case r.timeUp.Load():
		res.StoppedBy = "duration"
	}
	for t, target := range r.cfg.Targets {
		res.Targets = append(res.Targets, r.targetResult(t, target.Name, elapsed))
	}
	base := res.Targets[0]
	for _, tr := range res.Targets[1:] {
		res.Ratios = append(res.Ratios, Ratio{
			Target: tr.Name, Baseline: base.Name,
			MeanMs: div(tr.Latency.MeanMs, base.Latency.MeanMs),
			P50Ms:  div(tr.Latency.P50Ms, base.Latency.P50Ms),
			P90Ms:  div(tr.Latency.P90Ms, base.Latency.P90Ms),
			P99Ms:  div(tr.Latency.P99Ms, base.Latency.P99Ms),
			// capacity at equal concurrency ∝ 1 / mean latency
			Throughput:     div(base.Latency.MeanMs, tr.Latency.MeanMs),
			ErrorRateDelta: tr.ErrorRate - base.ErrorRate,
		})
	}
	return res
}

// targetResult merges the workers' tallies of target t.
func (r *run) targetResult(t int, name string, elapsed time.Duration) TargetResult {
	ok, errs := newHist(), newHist()
	methods := map[string]*hdrhistogram.Histogram{}
	tr := TargetResult{Name: name, ErrorsByCode: map[string]int64{}, Methods: map[string]Latency{}}
	var items int64
	for w := range r.cfg.Concurrency {
		tl := r.tallies[w][t]
		ok.Merge(tl.ok)
		errs.Merge(tl.errs)
		for m, h := range tl.methods {
			if methods[m] == nil {
				methods[m] = newHist()
			}
			methods[m].Merge(h)
		}
		for c, n := range tl.errsByCode {
			tr.ErrorsByCode[c] += n
		}
		items += tl.items
	}
	tr.OK, tr.Errors = ok.TotalCount(), errs.TotalCount()
	tr.Calls = tr.OK + tr.Errors
	if tr.Calls > 0 {
		tr.ErrorRate = float64(tr.Errors) / float64(tr.Calls)
	}
	if elapsed > 0 {
		tr.Throughput = float64(tr.OK) / elapsed.Seconds()
		tr.ItemsPerSec = float64(items) / elapsed.Seconds()
	}
	tr.Latency, tr.ErrorLatency = summarise(ok), summarise(errs)
	for m, h := range methods {
		tr.Methods[m] = summarise(h)
	}
	return tr
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func summarise(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Latency{
		Count:  h.TotalCount(),
		MeanMs: h.Mean() / 1000,
		MinMs:  ms(h.Min()),
		P50Ms:  ms(h.ValueAtPercentile(50)),
		P90Ms:  ms(h.ValueAtPercentile(90)),
		P95Ms:  ms(h.ValueAtPercentile(95)),
		P99Ms:  ms(h.ValueAtPercentile(99)),
		P999Ms: ms(h.ValueAtPercentile(99.9)),
		MaxMs:  ms(h.Max()),
	}
}

// methodNames returns the method names of tr in order.
func methodNames(tr TargetResult) []string {
	var ms []string
	for m := range tr.Methods {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	return ms
}
