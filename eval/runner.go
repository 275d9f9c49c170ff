package eval

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Options are the retrieval options of one mode, passed through to the
// RetrieveFunc untouched. Keys follow the RCP retrieve params (spec §7.7):
// {"mode": "hybrid", "fusion": {"method": "rrf"}, "rerank": false, ...}.
type Options map[string]any

// RetrieveFunc returns the top k documents for query under opts, best first.
// It is where the transport lives; an RCP adapter fixes seed and pins
// indexVersion (spec §7.7.1) so a run is repeatable.
type RetrieveFunc func(ctx context.Context, query string, k int, opts Options) ([]Ranked, error)

// Mode is one named option set to evaluate.
type Mode struct {
	Name    string  `json:"name"`
	Options Options `json:"options,omitempty"`
}

// Progress is a snapshot of a running task.
type Progress struct {
	Mode    string        // the mode being run (empty for ingest)
	Done    int64         // items finished
	Total   int64         // items expected (0 when unknown)
	Errors  int64         // items that failed so far
	Elapsed time.Duration // since the task started
	Rate    float64       // items per second
	ETA     time.Duration // 0 when unknown
}

func newProgress(mode string, done, total, errs int64, elapsed time.Duration) Progress {
	p := Progress{Mode: mode, Done: done, Total: total, Errors: errs, Elapsed: elapsed}
	if elapsed > 0 {
		p.Rate = float64(done) / elapsed.Seconds()
	}
	if total > done && p.Rate > 0 {
		p.ETA = time.Duration(float64(total-done) / p.Rate * float64(time.Second))
	}
	return p
}

// Runner runs a dataset's queries through a RetrieveFunc for each mode and
// scores the rankings.
type Runner struct {
	Retrieve RetrieveFunc
	// K is the ranking depth asked for; 0 means the deepest metric cutoff,
	// or 100 when a metric has none.
	K int
	// Metrics to report; nil means DefaultMetrics.
	Metrics []Metric
	// Concurrency bounds the queries in flight (default 4).
	Concurrency int
	// QueryTimeout bounds one retrieval (0: none beyond ctx).
	QueryTimeout time.Duration
	// MaxErrors is how many failed queries a mode tolerates; a failed query
	// scores 0. The default 0 makes any failure fail the mode, since the
	// figures would otherwise be silently low.
	MaxErrors int
	// Progress, when set, is called after every query (from the worker
	// goroutines, serialised).
	Progress func(Progress)
	// KeepPerQuery keeps per-query figures and rankings in the results.
	KeepPerQuery bool
}

// QueryError records a failed query.
type QueryError struct {
	QueryID string `json:"queryId"`
	Error   string `json:"error"`
}

// Latency summarises per-query wall times in milliseconds.
type Latency struct {
	MeanMs float64 `json:"meanMs"`
	P50Ms  float64 `json:"p50Ms"`
	P95Ms  float64 `json:"p95Ms"`
	P99Ms  float64 `json:"p99Ms"`
	MaxMs  float64 `json:"maxMs"`
}

// ModeResult is the outcome of one mode.
type ModeResult struct {
	Mode     Mode         `json:"mode"`
	K        int          `json:"k"`
	Scores   *Scores      `json:"scores"`
	Latency  Latency      `json:"latency"`
	Elapsed  float64      `json:"elapsedSeconds"`
	QPS      float64      `json:"queriesPerSecond"`
	Errors   []QueryError `json:"errors,omitempty"`
	Failures int          `json:"failures"`
	// RecallCurve is mean recall@k at CurveKs up to K, for the chart.
	RecallCurve []CurvePoint `json:"recallCurve"`
	// Run holds the rankings (not in the JSON; write it with WriteRun).
	Run Run `json:"-"`
}

// ErrTooManyErrors is wrapped by Run when a mode fails more queries than
// Runner.MaxErrors allows.
var ErrTooManyErrors = errors.New("eval: too many failed queries")

// Run evaluates every mode in turn on ds and returns a report. It stops at
// the first mode that fails.
func (r *Runner) Run(ctx context.Context, ds *Dataset, modes []Mode) (*Report, error) {
	if len(modes) == 0 {
		modes = []Mode{{Name: "default"}}
	}
	rep := &Report{Dataset: ds.Name, Split: ds.Split, Queries: len(ds.Queries), Started: time.Now().UTC()}
	for _, m := range r.metrics() {
		rep.Metrics = append(rep.Metrics, m.String())
	}
	for _, m := range modes {
		res, err := r.RunMode(ctx, ds.Queries, ds.Qrels, m)
		if err != nil {
			return rep, err
		}
		rep.Modes = append(rep.Modes, res)
	}
	return rep, nil
}

func (r *Runner) metrics() []Metric {
	if len(r.Metrics) == 0 {
		return DefaultMetrics
	}
	return r.Metrics
}

// Depth returns the ranking depth the Runner asks for.
func (r *Runner) Depth() int {
	if r.K > 0 {
		return r.K
	}
	if d := MaxDepth(r.metrics()); d > 0 {
		return d
	}
	return 100
}

// RunMode retrieves every query under one mode and scores the rankings
// against qrels.
func (r *Runner) RunMode(ctx context.Context, queries []Query, qrels Qrels, mode Mode) (*ModeResult, error) {
	if r.Retrieve == nil {
		return nil, errors.New("eval: Runner.Retrieve is nil")
	}
	conc := r.Concurrency
	if conc <= 0 {
		conc = 4
	}
	k := r.Depth()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type outcome struct {
		ranking []Ranked
		latency time.Duration
		err     error
	}
	results := make([]outcome, len(queries))
	var (
		next, done, failed atomic.Int64
		firstErr           atomic.Pointer[QueryError]
		progMu             sync.Mutex
		wg                 sync.WaitGroup
	)
	start := time.Now()
	total := int64(len(queries))
	for w := 0; w < min(conc, len(queries)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(queries) || ctx.Err() != nil {
					return
				}
				qctx, qcancel := ctx, context.CancelFunc(func() {})
				if r.QueryTimeout > 0 {
					qctx, qcancel = context.WithTimeout(ctx, r.QueryTimeout)
				}
				t0 := time.Now()
				ranking, err := r.Retrieve(qctx, queries[i].Text, k, mode.Options)
				qcancel()
				if err == nil && len(ranking) > k {
					ranking = ranking[:k]
				}
				results[i] = outcome{ranking, time.Since(t0), err}
				if err != nil {
					firstErr.CompareAndSwap(nil, &QueryError{QueryID: queries[i].ID, Error: err.Error()})
					if failed.Add(1) > int64(r.MaxErrors) {
						cancel()
					}
				}
				d := done.Add(1)
				if r.Progress != nil {
					progMu.Lock()
					r.Progress(newProgress(mode.Name, d, total, failed.Load(), time.Since(start)))
					progMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	res := &ModeResult{Mode: mode, K: k, Run: make(Run, len(queries)), Elapsed: elapsed.Seconds()}
	lat := make([]time.Duration, 0, len(queries))
	for i, q := range queries {
		o := results[i]
		if o.err != nil {
			res.Errors = append(res.Errors, QueryError{QueryID: q.ID, Error: o.err.Error()})
			continue
		}
		if o.latency > 0 {
			lat = append(lat, o.latency)
		}
		res.Run[q.ID] = o.ranking
	}
	res.Failures = len(res.Errors)
	if err := ctx.Err(); err != nil && res.Failures <= r.MaxErrors {
		return nil, fmt.Errorf("eval: mode %q: %w", mode.Name, context.Cause(ctx))
	}
	if res.Failures > r.MaxErrors {
		first := *firstErr.Load()
		return nil, fmt.Errorf("%w: mode %q: %d failed (allowed %d); query %s: %s",
			ErrTooManyErrors, mode.Name, res.Failures, r.MaxErrors, first.QueryID, first.Error)
	}
	if done.Load() != total {
		return nil, fmt.Errorf("eval: mode %q: %d of %d queries ran", mode.Name, done.Load(), total)
	}
	res.Latency = summarise(lat)
	if elapsed > 0 {
		res.QPS = float64(total) / elapsed.Seconds()
	}
	res.Scores = Evaluate(qrels, res.Run, r.metrics())
	res.RecallCurve = RecallCurve(qrels, res.Run, k)
	if !r.KeepPerQuery {
		res.Scores.PerQuery = nil
	}
	return res, nil
}

func summarise(lat []time.Duration) Latency {
	if len(lat) == 0 {
		return Latency{}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	// nearest-rank percentile
	pct := func(p float64) float64 {
		i := int(p*float64(len(lat))+0.999999) - 1
		return ms(lat[min(max(i, 0), len(lat)-1)])
	}
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	return Latency{
		MeanMs: ms(sum) / float64(len(lat)),
		P50Ms:  pct(0.50), P95Ms: pct(0.95), P99Ms: pct(0.99),
		MaxMs: ms(lat[len(lat)-1]),
	}
}
