package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/fusion"
)

// DefaultDepth is the RECOMMENDED hop budget of a federated query (§16.2).
const DefaultDepth = 3

// FusionAuto selects convex combination when every answering engine
// advertises retrieve.scoreFloor and RRF otherwise (§16.3 SHOULD prefer).
const FusionAuto = "auto"

// Dedup policies (§16.3): the stringified id by default; citation.uri or a
// content hash when the engines are known to share a corpus.
const (
	DedupID          = "id"
	DedupCitationURI = "uri"
	DedupContent     = "content"
)

// Options configure a Federation. The zero value (or nil) is usable.
type Options struct {
	// Client options used to dial registry engines (nil: defaults).
	Client *rcp.ClientOptions
	// EngineTimeout is the client-side deadline of one engine call,
	// including a dial when the engine is not connected (default 10 s). It
	// is further bounded by the caller's remaining deadline minus a reserve
	// for fusion, and that smaller budget is sent as _meta.deadlineMs.
	EngineTimeout time.Duration
	// Depth is the hop budget set on queries this federation originates
	// (default DefaultDepth).
	Depth int
	// Fusion is the default method: rcp.FusionRRF (default), FusionAuto,
	// rcp.FusionWeighted or rcp.FusionConvex (which falls back to RRF unless
	// every engine advertises scoreFloor). A request's fusion.method wins.
	Fusion string
	// RRFK and Alpha are the fusion constants (nil: 60 and 0.5).
	RRFK  *float64
	Alpha *float64
	// Dedup picks the identity of a document across engines (default DedupID).
	Dedup string
	// Overfetch multiplies k in the per-engine request to give fusion
	// headroom (default 1; the engine's maxK still clamps).
	Overfetch int
	// Identity names this federation in _meta.federation.path when it
	// forwards a request it received (the gateway sets it). A library
	// client originating queries leaves it empty.
	Identity string
	// Logger receives diagnostics (default slog.Default()).
	Logger *slog.Logger
}

// Federation is the §16 client facade over N engines: concurrent fan-out to
// the engines advertising the needed capability, partial-failure rules,
// loop detection, deadline propagation and fusion. It is safe for
// concurrent use.
type Federation struct {
	engines []*Engine // registry order: the canonical fusion order
	ranked  []*Engine // priority order, for routing single-engine methods
	opts    Options
	log     *slog.Logger
}

// New returns a Federation over the registry's engines. Nothing is dialled
// until a call needs it (or Connect is called).
func New(reg *Registry, opts *Options) *Federation {
	var o Options
	if opts != nil {
		o = *opts
	}
	engines := make([]*Engine, len(reg.Engines))
	for i, spec := range reg.Engines {
		engines[i] = NewEngine(spec, o.Client)
	}
	return NewFromEngines(engines, &o)
}

// NewFromEngines returns a Federation over prepared engine handles (for
// example in-process engines built with NewEngineFunc).
func NewFromEngines(engines []*Engine, opts *Options) *Federation {
	f := &Federation{engines: slices.Clone(engines)}
	if opts != nil {
		f.opts = *opts
	}
	if f.opts.EngineTimeout <= 0 {
		f.opts.EngineTimeout = 10 * time.Second
	}
	if f.opts.Depth <= 0 {
		f.opts.Depth = DefaultDepth
	}
	if f.opts.Overfetch <= 0 {
		f.opts.Overfetch = 1
	}
	f.log = f.opts.Logger
	if f.log == nil {
		f.log = slog.Default()
	}
	f.ranked = byPriority(f.engines)
	return f
}

// Engines returns the engine handles in registry order.
func (f *Federation) Engines() []*Engine { return slices.Clone(f.engines) }

// Engine returns the handle with id.
func (f *Federation) Engine(id string) (*Engine, bool) {
	for _, e := range f.engines {
		if e.ID() == id {
			return e, true
		}
	}
	return nil, false
}

// Connect dials every engine that is not connected, concurrently, bounded
// by ctx and EngineTimeout. It returns the failures joined (nil when every
// engine answered); a failed engine is dialled again lazily later.
func (f *Federation) Connect(ctx context.Context) error { return f.connect(ctx, nil) }

// connect is Connect without the engines skip reports true for.
func (f *Federation) connect(ctx context.Context, skip func(*Engine) bool) error {
	var wg sync.WaitGroup
	errs := make([]error, len(f.engines))
	for i, e := range f.engines {
		if skip != nil && skip(e) {
			continue
		}
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, f.opts.EngineTimeout)
			defer cancel()
			if _, err := e.Client(cctx); err != nil {
				errs[i] = fmt.Errorf("engine %s: %w", e.ID(), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close closes every engine connection.
func (f *Federation) Close() error {
	var errs []error
	for _, e := range f.engines {
		if err := e.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Effective returns the union of the capabilities of the engines whose
// handshake is known (§16.4: the federation can embed if any engine can).
func (f *Federation) Effective() rcp.Capabilities { return unionCaps(f.knownCaps()) }

// Guaranteed returns the intersection of the capabilities of the engines
// whose handshake is known (§16.4). Engines never reached do not count.
func (f *Federation) Guaranteed() rcp.Capabilities { return intersectCaps(f.knownCaps()) }

func (f *Federation) knownCaps() []rcp.Capabilities {
	var out []rcp.Capabilities
	for _, e := range f.ranked {
		if init, ok := e.Known(); ok {
			out = append(out, init.Capabilities)
		}
	}
	return out
}

// Hop is the §16.2 hop budget carried in _meta.federation.
type Hop struct {
	Depth int      `json:"depth"`
	Path  []string `json:"path"`
}

// HopOf reads _meta.federation; ok is false when absent or malformed.
func HopOf(meta rcp.Meta) (h Hop, ok bool) {
	if !meta.Get(rcp.MetaFederation, &h) {
		return Hop{}, false
	}
	if h.Path == nil {
		h.Path = []string{}
	}
	return h, true
}

// Forwarded returns the hop an aggregator named id sends downstream:
// depth decremented, id appended to the path (§16.2).
func (h Hop) Forwarded(id string) Hop {
	return Hop{Depth: h.Depth - 1, Path: append(slices.Clone(h.Path), id)}
}

// identityOf returns the federation identity an engine advertised in its
// initialize _meta.federation.id (aggregators do; plain engines do not).
func identityOf(init rcp.InitializeResult) string {
	var v struct {
		ID string `json:"id"`
	}
	init.Meta.Get(rcp.MetaFederation, &v)
	return v.ID
}

type progressKey struct{}

// WithProgress returns a context whose federated calls ask every engine for
// progress (§9) and hand each frame to fn with the engine's id.
func WithProgress(ctx context.Context, fn func(engine string, p rcp.ProgressParams)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

type doneKey struct{}

// withEngineDone reports each engine's completion (the gateway turns it
// into its own progress frames).
func withEngineDone(ctx context.Context, fn func(engine string, done, total int)) context.Context {
	return context.WithValue(ctx, doneKey{}, fn)
}

// EngineStatus is one engine's part in a federated call, reported in the
// result's _meta.engines.
type EngineStatus struct {
	ID        string   `json:"id"`
	Status    string   `json:"status"` // "ok" | "failed" | "skipped"
	Hits      int      `json:"hits,omitempty"`
	Code      rcp.Code `json:"code,omitempty"`
	Message   string   `json:"message,omitempty"`
	LatencyMs int64    `json:"latencyMs"`
}

// Degraded is one entry of _meta.degraded: an engine that failed.
type Degraded struct {
	Engine  string   `json:"engine"`
	Code    rcp.Code `json:"code"`
	Message string   `json:"message"`
}

// Meta keys this package adds to federated results.
const MetaEngines = "engines"

type outcome struct {
	e       *Engine
	status  EngineStatus
	res     *rcp.RetrieveResult
	err     error
	caps    *rcp.Capabilities
	skipped string // why, when skipped
	cycle   bool
}

// Retrieve runs a federated retrieve (§16.2, §16.3): it fans p out to every
// engine advertising retrieve (and p.mode, when given), concurrently, each
// under its own deadline, and fuses the answers. It succeeds while at least
// one engine answered; failures are listed in usage.notes and
// _meta.degraded. A failing required engine fails the call with its code;
// when every engine fails the error is -32010.
//
// p._meta.federation, when present, is forwarded as is (the gateway puts
// the decremented hop there); otherwise the query is an originating one
// with depth Options.Depth and an empty path. Engines whose advertised
// identity is already in the path are skipped and the cycle is noted.
//
// p.fusion selects the federated fusion (it is not forwarded) and
// p.minScore applies to the fused scores (engines' scores are on their own
// scales, so it is not forwarded either).
func (f *Federation) Retrieve(ctx context.Context, p *rcp.RetrieveParams) (*rcp.RetrieveResult, error) {
	start := time.Now()
	if p.Cursor != "" {
		return nil, rcp.OptionUnsupported("cursor", "a federated retrieve cannot paginate")
	}
	if p.K < 0 {
		return nil, rcp.InvalidParams("k", "k must be ≥ 0")
	}
	fo, err := f.fusionOf(p)
	if err != nil {
		return nil, err
	}
	hop, ok := HopOf(p.Meta)
	if !ok {
		hop = Hop{Depth: f.opts.Depth, Path: []string{}}
	}
	// The per-engine request: fusion is the federation's, the budget and
	// hop are rewritten, the caller's progress token is not forwarded.
	q := *p
	q.Fusion = nil
	q.MinScore = nil // applies to the fused scores, see below
	q.K = p.K * f.opts.Overfetch
	q.Meta = forwardMeta(p.Meta, hop)
	byID, err := f.fanOut(ctx, &q, hop)
	if err != nil {
		return nil, err
	}
	g := f.gather(byID, fo.weights)
	if len(g.lists) == 0 {
		if err := f.noAnswer(byID, g, p.Mode); err != nil {
			return nil, err
		}
	}
	eff := fo.method
	switch fo.method {
	case FusionAuto:
		eff = fusion.EffectiveMethod(g.lists, rcp.FusionConvex)
	case rcp.FusionConvex:
		if eff = fusion.EffectiveMethod(g.lists, fo.method); eff != fo.method {
			g.notes = append(g.notes, "fusion: convex needs every engine to advertise retrieve.scoreFloor; fell back to rrf")
		}
	}
	k := p.K
	fused, err := fusion.FuseContext(ctx, g.lists, fusion.Options{Method: eff, RRFK: fo.rrfK, Alpha: fo.alpha, K: &k, Key: f.keyFunc()})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, rcp.NewError(rcp.CodeInternalError, "fusion failed: %v", err)
	}
	hits := make([]rcp.Hit, 0, len(fused))
	for _, r := range fused {
		// minScore is read on the scale of the scores this call returns:
		// the fused ones. Engine scores are not comparable (§4.6), so it is
		// not forwarded.
		if p.MinScore == nil || r.Score >= *p.MinScore {
			hits = append(hits, r.Hit)
		}
	}
	latency := float64(time.Since(start).Microseconds()) / 1000
	res := &rcp.RetrieveResult{Hits: hits, Usage: &rcp.Usage{Candidates: &g.cand, LatencyMs: &latency, Notes: g.notes}}
	res.Meta = res.Meta.Set(MetaEngines, g.statuses)
	res.Meta = res.Meta.Set("fusion", map[string]any{"method": fusionName(eff)})
	if len(g.degraded) > 0 {
		res.Meta = res.Meta.Set(rcp.MetaDegraded, g.degraded)
	}
	return res, nil
}

// unadvertisedRewrite is the query rewrite q asks for when caps do not
// advertise it as a transform method, or "".
func unadvertisedRewrite(q *rcp.RetrieveParams, caps *rcp.Capabilities) string {
	if q.Rewrite == nil || *q.Rewrite == "" {
		return ""
	}
	m := string(*q.Rewrite)
	if caps.Transform != nil && slices.Contains(caps.Transform.Methods, m) {
		return ""
	}
	return m
}

// federatedFusion is the fusion a federated retrieve applies: the
// request's fusion options over the federation's.
type federatedFusion struct {
	method  string
	weights map[string]float64 // per engine id; absent: the engine's weight
	rrfK    *float64
	alpha   *float64
}

// fusionOf reads p.fusion over the federation's options.
func (f *Federation) fusionOf(p *rcp.RetrieveParams) (federatedFusion, error) {
	fo := federatedFusion{method: f.opts.Fusion, rrfK: f.opts.RRFK, alpha: f.opts.Alpha}
	if p.Fusion != nil {
		if p.Fusion.Method != "" {
			fo.method = p.Fusion.Method
		}
		fo.weights = p.Fusion.Weights
		if p.Fusion.RRFK != nil {
			fo.rrfK = p.Fusion.RRFK
		}
		if p.Fusion.Alpha != nil {
			fo.alpha = p.Fusion.Alpha
		}
	}
	switch fo.method {
	case "", rcp.FusionRRF, rcp.FusionWeighted, rcp.FusionConvex, FusionAuto:
		return fo, nil
	}
	return fo, rcp.OptionUnsupported("fusion.method", "unknown fusion method %q", fo.method)
}

// fanOut sends q to every engine concurrently and collects their outcomes
// by engine id. A failing required engine fails the call with its code,
// and the others are not waited for.
func (f *Federation) fanOut(ctx context.Context, q *rcp.RetrieveParams, hop Hop) (map[string]*outcome, error) {
	fanCtx, cancelFan := context.WithCancel(ctx)
	defer cancelFan()
	progress, _ := ctx.Value(progressKey{}).(func(string, rcp.ProgressParams))
	onDone, _ := ctx.Value(doneKey{}).(func(string, int, int))

	results := make(chan *outcome, len(f.engines))
	var wg sync.WaitGroup
	for _, e := range f.engines {
		wg.Go(func() { results <- f.retrieveOne(fanCtx, e, q, hop, progress) })
	}
	go func() { wg.Wait(); close(results) }()

	byID := map[string]*outcome{}
	var fatal *outcome
	done := 0
	for o := range results {
		byID[o.e.ID()] = o
		done++
		if onDone != nil {
			onDone(o.e.ID(), done, len(f.engines))
		}
		if o.err != nil && o.e.spec.Required && fatal == nil && ctx.Err() == nil {
			fatal = o
			cancelFan() // the call fails as a whole: stop waiting for the others
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if fatal != nil {
		e := engineError(fatal.e.ID(), fatal.err)
		e.Message = "required " + e.Message
		return nil, e
	}
	return byID, nil
}

// gathered is what the engines' outcomes give a federated retrieve, in the
// federation's engine order.
type gathered struct {
	lists    []fusion.List // the answering engines' hits, weighted
	notes    []string      // cycles, failures and the engines' own notes
	degraded []Degraded
	statuses []EngineStatus
	failed   []string // a note per failed engine
	cand     int      // the hits fused
}

// gather turns the outcomes into fusion lists (weights: the request's per
// engine, else the engine's), notes and statuses.
func (f *Federation) gather(byID map[string]*outcome, weights map[string]float64) gathered {
	var g gathered
	for _, e := range f.engines {
		o := byID[e.ID()]
		g.statuses = append(g.statuses, o.status)
		switch {
		case o.skipped != "":
			if o.cycle {
				g.notes = append(g.notes, o.skipped)
			}
		case o.err != nil:
			note := fmt.Sprintf("engine %s failed (%d %s): %s", e.ID(), int(o.status.Code), o.status.Code, o.status.Message)
			g.notes = append(g.notes, note)
			g.failed = append(g.failed, note)
			g.degraded = append(g.degraded, Degraded{Engine: e.ID(), Code: o.status.Code, Message: o.status.Message})
		default:
			w := e.spec.EffectiveWeight()
			if ww, ok := weights[e.ID()]; ok {
				w = ww
			}
			l := fusion.List{Engine: e.ID(), Hits: o.res.Hits, Weight: &w}
			if o.caps != nil && o.caps.Retrieve != nil {
				l.ScoreFloor = o.caps.Retrieve.ScoreFloor
			}
			g.lists = append(g.lists, l)
			g.cand += len(o.res.Hits)
			if o.res.Usage != nil {
				for _, n := range o.res.Usage.Notes {
					g.notes = append(g.notes, e.ID()+": "+n)
				}
			}
		}
	}
	return g
}

// noAnswer is the error of a federated retrieve no engine answered: the
// error every attempted engine gave the caller, -32010 when engines
// failed, or when none could be asked; nil when cycles alone explain it
// (the answer is then empty, with the cycles noted).
func (f *Federation) noAnswer(byID map[string]*outcome, g gathered, mode string) error {
	if e := commonCallerError(f.engines, byID); e != nil {
		return e
	}
	if len(g.failed) > 0 {
		return &rcp.Error{Code: rcp.CodeBackendUnavailable, Message: "no federated engine answered",
			Data: &rcp.ErrorData{Retryable: ptrTo(true), Detail: strings.Join(g.failed, "; ")}}
	}
	if len(g.notes) == 0 { // nothing was attempted and no cycle explains it
		return &rcp.Error{Code: rcp.CodeBackendUnavailable, Message: "no reachable engine advertises retrieve" + modeSuffix(mode),
			Data: &rcp.ErrorData{Retryable: ptrTo(true)}}
	}
	return nil
}

// commonCallerError returns the error every attempted engine answered when
// they all rejected the request itself (-32602 or -32005, the same code):
// then the request is at fault, not the engines, and -32010 would mislead.
func commonCallerError(engines []*Engine, byID map[string]*outcome) *rcp.Error {
	var first *rcp.Error
	for _, e := range engines {
		o := byID[e.ID()]
		if o.skipped != "" {
			continue
		}
		re, ok := errors.AsType[*rcp.Error](o.err)
		if !ok || o.err == nil || re.Code != rcp.CodeInvalidParams && re.Code != rcp.CodeOptionUnsupported {
			return nil
		}
		if first == nil {
			first = re
		} else if re.Code != first.Code {
			return nil
		}
	}
	if first == nil {
		return nil
	}
	return &rcp.Error{Code: first.Code, Message: first.Message, Data: first.Data}
}

func modeSuffix(mode string) string {
	if mode == "" {
		return ""
	}
	return " with mode " + mode
}

func fusionName(m string) string {
	if m == "" {
		return rcp.FusionRRF
	}
	return m
}

func (f *Federation) keyFunc() fusion.KeyFunc {
	switch f.opts.Dedup {
	case DedupCitationURI:
		return fusion.KeyByCitationURI
	case DedupContent:
		return fusion.KeyByContentHash
	}
	return nil
}

// retrieveOne serves one engine's part of a fan-out.
func (f *Federation) retrieveOne(ctx context.Context, e *Engine, q *rcp.RetrieveParams, hop Hop, progress func(string, rcp.ProgressParams)) *outcome {
	start := time.Now()
	o := &outcome{e: e, status: EngineStatus{ID: e.ID(), Status: "skipped"}}
	skip := func(why string, cycle bool) *outcome {
		o.skipped, o.cycle = why, cycle
		o.status.Message = why
		o.status.LatencyMs = time.Since(start).Milliseconds()
		return o
	}
	// Capabilities known from an earlier handshake decide before dialling.
	if init, ok := e.Known(); ok {
		if why, cycle := f.unfit(e, init, q.Mode, hop); why != "" {
			return skip(why, cycle)
		}
	}
	ectx, cancel, budget := f.engineDeadline(ctx)
	defer cancel()
	var res *rcp.RetrieveResult
	unrewritten := "" // the rewrite method this engine does not advertise, left out of its request
	err := e.Do(ectx, func(c *rcp.Client) error {
		init := c.InitializeResult()
		o.caps = &init.Capabilities
		if why, cycle := f.unfit(e, init, q.Mode, hop); why != "" {
			o.skipped, o.cycle = why, cycle
			return nil
		}
		eq := *q
		if m := unadvertisedRewrite(q, &init.Capabilities); m != "" {
			// The gateway advertised the method (another engine serves
			// it); this engine still answers the query as asked.
			eq.Rewrite, unrewritten = nil, m
		}
		eq.Meta = rcp.Meta(copyMeta(q.Meta)).Set(rcp.MetaDeadlineMs, max(budget.Milliseconds(), 1))
		cctx := ectx
		if progress != nil {
			cctx = rcp.WithProgress(ectx, func(pp rcp.ProgressParams) { progress(e.ID(), pp) })
		}
		var err error
		res, err = c.Retrieve(cctx, &eq)
		return err
	})
	o.status.LatencyMs = time.Since(start).Milliseconds()
	if o.skipped != "" {
		return skip(o.skipped, o.cycle)
	}
	if err != nil {
		if ectx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no answer within %v: %w", budget.Round(time.Millisecond), context.DeadlineExceeded)
		}
		o.err = err
		ee := engineError(e.ID(), err)
		o.status.Status, o.status.Code = "failed", ee.Code
		o.status.Message = err.Error()
		if re, ok := errors.AsType[*rcp.Error](err); ok {
			o.status.Message = re.Message
		}
		return o
	}
	for i := range res.Hits {
		if res.Hits[i].ID.IsZero() {
			// A malformed answer costs this engine its place, not the call.
			o.err = rcp.NewError(rcp.CodeInternalError, "hit %d has no id", i+1)
			o.status.Status, o.status.Code, o.status.Message = "failed", rcp.CodeInternalError, "malformed answer: hit without id"
			return o
		}
	}
	if unrewritten != "" {
		if res.Usage == nil {
			res.Usage = &rcp.Usage{}
		}
		res.Usage.Notes = append([]string{fmt.Sprintf("query rewrite %q is not advertised by this engine; its query was sent as is", unrewritten)}, res.Usage.Notes...)
	}
	o.res = res
	o.status.Status, o.status.Hits = "ok", len(res.Hits)
	return o
}

// unfit explains why e must not get this retrieve ("" when it may).
func (f *Federation) unfit(e *Engine, init rcp.InitializeResult, mode string, hop Hop) (why string, cycle bool) {
	if id := identityOf(init); id != "" && (slices.Contains(hop.Path, id) || id == f.opts.Identity) {
		return fmt.Sprintf("federation cycle: engine %s is aggregator %q, already in path [%s]; not forwarding", e.ID(), id, strings.Join(hop.Path, ", ")), true
	}
	caps := &init.Capabilities
	if caps.Retrieve == nil {
		return fmt.Sprintf("engine %s does not advertise retrieve", e.ID()), false
	}
	if modes := caps.RetrieveModes(); mode != "" && len(modes) > 0 && !slices.Contains(modes, mode) {
		return fmt.Sprintf("engine %s does not advertise mode %q", e.ID(), mode), false
	}
	return "", false
}

// engineDeadline derives one engine call's context: EngineTimeout, bounded
// by the caller's remaining time minus a reserve for fusion, so the budget
// sent downstream is strictly smaller than the one received (§16.2).
func (f *Federation) engineDeadline(ctx context.Context) (context.Context, context.CancelFunc, time.Duration) {
	budget := f.opts.EngineTimeout
	if dl, ok := ctx.Deadline(); ok {
		remaining := time.Until(dl)
		reserve := min(max(remaining/10, 5*time.Millisecond), 250*time.Millisecond)
		budget = min(budget, remaining-reserve)
	}
	if budget < time.Millisecond {
		budget = time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	return ctx, cancel, budget
}

// forwardMeta builds the downstream _meta: the caller's keys minus its
// progress token and deadline (both are re-derived per engine), plus hop.
func forwardMeta(in rcp.Meta, hop Hop) rcp.Meta {
	out := copyMeta(in)
	delete(out, rcp.MetaProgressToken)
	delete(out, rcp.MetaDeadlineMs)
	return rcp.Meta(out).Set(rcp.MetaFederation, hop)
}

func copyMeta(in rcp.Meta) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(in)+2)
	for k, v := range in {
		out[k] = v
	}
	return out
}
