package engine

// The agentic loop of RCP §7.7.3: query/transform (§7.8), retrieve.rewrite
// and pseudo-relevance feedback, sessionId dedup (session) and feedback
// (§7.16). The retrieve path calls in at two points: planAgentic while
// validating (nil when the request uses none of it) and runPlanned in
// place of pipeline.Run, which for a nil plan only adds the feedback
// verdicts when any exist.

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rcpgo/rcpgo/engine/chunk"
	"github.com/rcpgo/rcpgo/engine/feedback"
	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
	"github.com/rcpgo/rcpgo/engine/session"
	"github.com/rcpgo/rcpgo/engine/transform"
	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/fusion"
)

// MetaPRF is the retrieve _meta key that asks rcpd for RM3-style
// pseudo-relevance feedback ({"x-rcpgo/prf": true}); advertised as
// option "prf" of the x-rcpgo capability.
const MetaPRF = "x-rcpgo/prf"

// OptionPRF names PRF in the x-rcpgo capability's options.
const OptionPRF = "prf"

// WordNetNone disables WordNet (Config.WordNetDir).
const WordNetNone = "none"

// lexiconRefresh is how long a corpus vocabulary serves a changed index
// before it is rebuilt.
const lexiconRefresh = time.Minute

// agentic is the engine's transform, session and feedback state.
type agentic struct {
	build    sync.Mutex // one vocabulary build at a time
	tr       atomic.Pointer[builtTransformer]
	sessions *session.Store
	fb       *feedback.Store
}

type builtTransformer struct {
	version string
	built   time.Time
	t       *transform.Transformer
}

func (e *Engine) openAgentic() error {
	fb, err := feedback.Open(e.db, "feedback", e.withLogger(e.cfg.Feedback))
	if err != nil {
		return err
	}
	e.ag = &agentic{sessions: session.New(e.cfg.Session), fb: fb}
	rcp.Handle(e.router, rcp.MethodTransform, e.transform)
	rcp.Handle(e.router, rcp.MethodFeedback, e.feedback)
	e.handleQuarantine()
	return nil
}

func (e *Engine) withLogger(o feedback.Options) feedback.Options {
	if o.Logger == nil {
		o.Logger = e.log
	}
	return o
}

// describeAgentic adds transform, session and feedback to caps.
func (e *Engine) describeAgentic(caps *rcp.Capabilities, vendor *rcp.RCPGoCap) {
	methods := slices.Clone(transform.OfflineMethods)
	if e.cfg.Chat != nil {
		methods = []string{transform.Rewrite, transform.HyDE, transform.MultiQuery, transform.Decompose, transform.StepBack}
	}
	caps.Transform = &rcp.TransformCap{Methods: methods}
	ttl := e.cfg.Session.TTL
	if ttl <= 0 {
		ttl = session.DefaultTTL
	}
	caps.Session = &rcp.SessionCap{Dedup: true, TTLSeconds: int(ttl / time.Second)}
	caps.Feedback = &rcp.EmptyCap{}
	vendor.Options = append(vendor.Options, OptionPRF)
	vendor.Methods = append(vendor.Methods, rcp.MethodRCPGoQuarantineList, rcp.MethodRCPGoQuarantineLift)
}

// transformer returns the transformer for the current corpus, building the
// vocabulary on first use and rebuilding it when the index changed and
// the last build is older than lexiconRefresh (other requests keep the
// previous one meanwhile).
func (e *Engine) transformer(ctx context.Context) (*transform.Transformer, error) {
	cur := e.ag.tr.Load()
	version := e.ix.Version()
	if cur != nil && (cur.version == version || time.Since(cur.built) < lexiconRefresh) {
		return cur.t, nil
	}
	if cur != nil {
		if !e.ag.build.TryLock() {
			return cur.t, nil
		}
	} else {
		e.ag.build.Lock()
	}
	defer e.ag.build.Unlock()
	if again := e.ag.tr.Load(); again != cur {
		return again.t, nil
	}
	started := time.Now()
	stem := func(w string) string {
		if ts := e.an.Terms(w); len(ts) > 0 {
			return ts[0]
		}
		return w
	}
	lex, err := transform.BuildLexicon(ctx, e.corpusTexts(ctx), stem)
	if err != nil {
		if cur != nil {
			return cur.t, nil
		}
		return nil, fmt.Errorf("engine: transform vocabulary: %w", err)
	}
	wn := e.loadWordNet(lex)
	t := transform.New(transform.Config{Lexicon: lex, WordNet: wn, Stem: stem, Chat: e.cfg.Chat, Logger: e.log})
	e.ag.tr.Store(&builtTransformer{version: version, built: time.Now(), t: t})
	e.log.Info("engine: transform vocabulary built", "docs", lex.Docs(), "words", lex.Size(),
		"wordnet", wn != nil, "ms", time.Since(started).Milliseconds())
	return t, nil
}

func (e *Engine) loadWordNet(lex *transform.Lexicon) *transform.WordNet {
	dir := e.cfg.WordNetDir
	if dir == WordNetNone {
		return nil
	}
	explicit := dir != ""
	if !explicit {
		dir = transform.DefaultWordNetDir
	}
	wn, err := transform.LoadWordNet(dir, func(w string) bool { return lex.DF(w) > 0 })
	if err != nil {
		if explicit || !errors.Is(err, os.ErrNotExist) {
			e.log.Warn("engine: WordNet not loaded; expansion uses the corpus only", "err", err)
		}
		return nil
	}
	return wn
}

// corpusTexts yields the title and text of catalogued documents in id
// order (a chunked document's original text).
func (e *Engine) corpusTexts(ctx context.Context) iter.Seq[string] {
	return func(yield func(string) bool) {
		type item struct{ id, text, title string }
		var items []item
		_ = e.catalog.Scan("", false, func(id string, rec *catalog.Record) bool {
			items = append(items, item{id, rec.Text, rec.Title})
			return len(items) < transform.MaxLexiconDocs
		})
		for _, it := range items {
			text := it.text
			if text == "" {
				d, err := e.ix.Get(ctx, it.id)
				if err != nil {
					return
				}
				if d == nil {
					continue
				}
				text = d.Text
			}
			if !yield(it.title + "\n" + text) {
				return
			}
		}
	}
}

// ---- query/transform ----

func (e *Engine) transform(ctx context.Context, p *rcp.TransformParams) (*rcp.TransformResult, error) {
	if strings.TrimSpace(p.Query) == "" {
		return nil, rcp.InvalidParams("query", "query is required")
	}
	if len(p.Query) > transform.MaxQueryBytes {
		return nil, rcp.InvalidParams("query", "query is %d bytes; at most %d", len(p.Query), transform.MaxQueryBytes)
	}
	if p.Method == "" {
		return nil, rcp.InvalidParams("method", "method is required")
	}
	if !slices.Contains(e.descSparse.Capabilities.Transform.Methods, p.Method) {
		return nil, rcp.OptionUnsupported(p.Method, "transform method %q is not advertised (transform.methods: %s)",
			p.Method, strings.Join(e.descSparse.Capabilities.Transform.Methods, ", "))
	}
	n := 0
	if p.N != nil {
		if *p.N < 1 || *p.N > transform.MaxN {
			return nil, rcp.InvalidParams("n", "n must be an integer in [1, %d], got %d", transform.MaxN, *p.N)
		}
		n = *p.N
	}
	var seed uint64
	if p.Seed != nil {
		seed = uint64(*p.Seed)
	}
	t, err := e.transformer(ctx)
	if err != nil {
		return nil, err
	}
	res, err := t.Transform(ctx, transform.Request{Query: p.Query, Method: p.Method, N: n, Seed: seed})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		yes := true
		return nil, &rcp.Error{Code: rcp.CodeBackendUnavailable, Message: "the chat model behind " + p.Method + " failed",
			Data: &rcp.ErrorData{Field: "method", Retryable: &yes, Detail: err.Error()}}
	}
	return &rcp.TransformResult{Queries: res.Queries, Hypothetical: res.Hypothetical}, nil
}

// ---- retrieve: rewrite, PRF, session ----

// agenticPlan is what a retrieve asked of the agentic features.
type agenticPlan struct {
	method  string // retrieve.rewrite, "" when absent
	seed    uint64
	prf     bool
	session string // sessionId, when dedup applies
}

// planAgentic validates retrieve.rewrite, the PRF option and sessionId
// against the capabilities; the plan is nil when none applies, and note
// says what strict:false let it ignore. It takes no closure and allocates
// nothing for a plain retrieve.
func (e *Engine) planAgentic(p *retrieveParams) (_ *agenticPlan, note string, _ error) {
	caps := e.descSparse.Capabilities
	var plan agenticPlan
	if p.Rewrite != nil && *p.Rewrite != "" {
		m := string(*p.Rewrite)
		if caps.Transform == nil || !slices.Contains(caps.Transform.Methods, m) || m == transform.HyDE {
			// hyde yields a passage, not queries: served by query/transform only.
			if p.IsStrict() {
				return nil, "", rcp.OptionUnsupported(m, "query rewrite %q is not advertised for retrieve", m)
			}
			note = fmt.Sprintf("query rewrite %q is not advertised for retrieve; ignored (strict:false)", m)
		} else {
			plan.method = m
		}
	}
	if p.Seed != nil {
		plan.seed = uint64(*p.Seed)
	}
	var prf bool
	if p.Meta.Get(MetaPRF, &prf) && prf {
		plan.prf = true
	}
	if p.SessionID != "" {
		if len(p.SessionID) > session.MaxIDBytes {
			return nil, "", rcp.InvalidParams("sessionId", "sessionId is %d bytes; at most %d", len(p.SessionID), session.MaxIDBytes)
		}
		if caps.Session != nil && caps.Session.Dedup {
			plan.session = p.SessionID
		}
	}
	if plan == (agenticPlan{seed: plan.seed}) {
		return nil, note, nil
	}
	out := plan
	return &out, note, nil
}

// rewriteKey is the part of the cursor hash the agentic options define.
func rewriteKey(p *retrieveParams) string {
	var b strings.Builder
	if p.Rewrite != nil {
		b.WriteString(string(*p.Rewrite))
	}
	var prf bool
	if p.Meta.Get(MetaPRF, &prf) && prf {
		b.WriteString("|prf")
	}
	return b.String()
}

// runPlanned runs the pipeline for req under plan and returns the page and
// the rewritten query ("" when not rewritten).
func (e *Engine) runPlanned(ctx context.Context, deps *pipeline.Deps, req *pipeline.Request, plan *agenticPlan) (*pipeline.Page, string, error) {
	if snap := e.ag.fb.Snapshot(); snap.Len() > 0 {
		deps.Feedback = snap.Verdict
	}
	if plan == nil {
		page, err := pipeline.Run(ctx, deps, req)
		return page, "", err
	}
	if plan.session != "" {
		plan.session = sessionKey(ctx, plan.session)
	}
	queries := []string{req.Query}
	if plan.method != "" {
		var err error
		if queries, err = e.planQueries(ctx, plan, req.Query); err != nil {
			return nil, "", err
		}
	}
	var notes []string
	rewritten := ""
	if plan.method != "" {
		rewritten = strings.Join(queries, " | ")
	}
	if plan.prf {
		expanded := make([]string, len(queries))
		for i, q := range queries {
			var err error
			if expanded[i], err = e.prfQuery(ctx, deps, req, q); err != nil {
				return nil, "", err
			}
		}
		queries = expanded
		rewritten = strings.Join(queries, " | ")
		notes = append(notes, "pseudo-relevance feedback (RM3) from the top hits")
	}
	wantText := req.IncludeText
	k := req.K
	var remembered int
	if plan.session != "" {
		remembered = e.ag.sessions.Remembered(plan.session)
		req.K = min(req.K+remembered, e.cfg.MaxCandidates)
		req.IncludeText = true // content hashes
	}
	var page *pipeline.Page
	var err error
	if len(queries) == 1 {
		sub := *req
		sub.Query = queries[0]
		page, err = pipeline.Run(ctx, deps, &sub)
	} else {
		page, err = e.runFused(ctx, deps, req, queries)
	}
	if err != nil {
		return nil, "", err
	}
	page.Notes = append(page.Notes, notes...)
	if plan.session != "" {
		e.dedup(page, plan.session, k, remembered)
		if !wantText {
			for i := range page.Hits {
				page.Hits[i].Text = nil
			}
		}
	}
	return page, rewritten, nil
}

// planQueries runs the rewrite method, reusing the session's cached plan so
// a trajectory sees one plan per (method, query, seed).
func (e *Engine) planQueries(ctx context.Context, plan *agenticPlan, query string) ([]string, error) {
	if len(query) > transform.MaxQueryBytes { // the cap of query/transform: each word is corrected
		return nil, rcp.InvalidParams("query", "a query rewritten with %q is at most %d bytes; this one is %d",
			plan.method, transform.MaxQueryBytes, len(query))
	}
	key := fmt.Sprintf("%s\x00%d\x00%s", plan.method, plan.seed, query)
	if plan.session != "" {
		if qs, ok := e.ag.sessions.Plan(plan.session, key); ok {
			return qs, nil
		}
	}
	t, err := e.transformer(ctx)
	if err != nil {
		return nil, err
	}
	res, err := t.Transform(ctx, transform.Request{Query: query, Method: plan.method, Seed: plan.seed})
	if err != nil || len(res.Queries) == 0 {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return []string{query}, nil // the offline fallback already ran; keep the query
	}
	if plan.session != "" {
		e.ag.sessions.SetPlan(plan.session, key, res.Queries)
	}
	return res.Queries, nil
}

// prfQuery expands q from the top hits of a first sparse pass at the same
// snapshot.
func (e *Engine) prfQuery(ctx context.Context, deps *pipeline.Deps, req *pipeline.Request, q string) (string, error) {
	first := pipeline.Request{Query: q, K: transform.DefaultPRF.Docs, CandidateK: max(transform.DefaultPRF.Docs, 20),
		Mode: rcp.ModeSparse, Filter: req.Filter, Unit: rcp.UnitChunk, IncludeText: true, Version: req.Version}
	fd := *deps
	fd.Reranker, fd.Observe, fd.Feedback = nil, nil, nil
	page, err := pipeline.Run(ctx, &fd, &first)
	if err != nil {
		return "", err
	}
	if req.Version == "" {
		req.Version = page.Version // the second pass reads the same snapshot
	}
	texts := make([]string, len(page.Hits))
	scores := make([]float64, len(page.Hits))
	for i, h := range page.Hits {
		texts[i], scores[i] = h.TextOf(), h.Score
	}
	t, err := e.transformer(ctx)
	if err != nil {
		return "", err
	}
	return t.PRF(q, texts, scores, transform.DefaultPRF), nil
}

// runFused retrieves every sub-query at one snapshot and fuses the ranked
// lists with RRF (§16.3); the page is cut from the fused list.
func (e *Engine) runFused(ctx context.Context, deps *pipeline.Deps, req *pipeline.Request, queries []string) (*pipeline.Page, error) {
	// Every sub-list is cut at candidateK whatever the page, so the fused
	// list, and hence every page of it, is the same for every offset.
	depth := max(req.CandidateK, req.Offset+req.K)
	lists := make([]fusion.List, 0, len(queries))
	out := &pipeline.Page{Next: -1}
	version := req.Version
	for i, q := range queries {
		sub := *req
		sub.Query, sub.Offset, sub.K, sub.TokenBudget, sub.Version = q, 0, depth, nil, version
		page, err := pipeline.Run(ctx, deps, &sub)
		if err != nil {
			return nil, err
		}
		version = page.Version
		out.Candidates += page.Candidates
		out.Reranked += page.Reranked
		out.Notes = append(out.Notes, fmt.Sprintf("sub-query %d %q: %d candidates, %d hits", i+1, q, page.Candidates, len(page.Hits)))
		lists = append(lists, fusion.List{Engine: fmt.Sprintf("q%d", i+1), Hits: page.Hits})
	}
	fused, err := fusion.FuseContext(ctx, lists, fusion.Options{})
	if err != nil {
		return nil, fmt.Errorf("engine: rewrite fusion: %w", err)
	}
	out.Version = version
	hits := fusion.Hits(fused)
	for i := range hits {
		delete(hits[i].Meta, "engine") // sub-query lists are not engines
		if len(hits[i].Meta) == 0 {
			hits[i].Meta = nil
		}
	}
	if req.Offset < len(hits) {
		end := min(req.Offset+req.K, len(hits))
		page := hits[req.Offset:end]
		if end < len(hits) {
			out.Next = end
		}
		for _, h := range page {
			n := chunk.Tokens(h.TextOf())
			if req.TokenBudget != nil && out.Tokens+n > *req.TokenBudget && len(out.Hits) > 0 {
				out.Next = req.Offset + len(out.Hits)
				break
			}
			out.Tokens += n
			out.Hits = append(out.Hits, h)
		}
	}
	out.Notes = append(out.Notes, fmt.Sprintf("%d sub-queries fused by rrf", len(queries)))
	return out, nil
}

// dedup drops hits session sid returned before (by id or by content hash),
// keeps the best k of the rest and remembers them.
func (e *Engine) dedup(page *pipeline.Page, sid string, k, remembered int) {
	s := e.ag.sessions
	ids := make([]uint64, len(page.Hits))
	hashes := make([]uint64, len(page.Hits))
	for i, h := range page.Hits {
		ids[i] = s.IDHash(h.ID.String())
		if t := h.TextOf(); t != "" {
			hashes[i] = s.ContentHash(t)
		}
	}
	seen := s.Seen(sid, ids, hashes)
	kept := page.Hits[:0]
	var keptIDs, keptHashes []uint64
	dropped := 0
	for i, h := range page.Hits {
		dupHere := slices.Contains(keptHashes, hashes[i]) && hashes[i] != 0
		if seen[i] || dupHere {
			dropped++
			continue
		}
		if len(kept) == k {
			break
		}
		kept = append(kept, h)
		keptIDs, keptHashes = append(keptIDs, ids[i]), append(keptHashes, hashes[i])
	}
	page.Hits = kept
	page.Tokens = 0
	for _, h := range kept {
		page.Tokens += chunk.Tokens(h.TextOf())
	}
	s.Record(sid, keptIDs, keptHashes)
	if dropped > 0 || remembered > 0 {
		page.Notes = append(page.Notes, fmt.Sprintf("session: %d hits already returned in this session skipped", dropped))
	}
}

// ---- feedback ----

func (e *Engine) feedback(ctx context.Context, p *rcp.FeedbackParams) (*rcp.FeedbackResult, error) {
	if p.Signals == nil {
		return nil, rcp.InvalidParams("signals", "signals is required")
	}
	if len(p.Signals) > feedback.MaxSignals {
		return nil, rcp.InvalidParams("signals", "%d signals; at most %d per call", len(p.Signals), feedback.MaxSignals)
	}
	if len(p.SessionID) > session.MaxIDBytes {
		return nil, rcp.InvalidParams("sessionId", "sessionId is %d bytes; at most %d", len(p.SessionID), session.MaxIDBytes)
	}
	signals := make([]feedback.Signal, 0, len(p.Signals))
	for i, s := range p.Signals {
		field := fmt.Sprintf("signals[%d]", i)
		if s.HitID.IsZero() {
			return nil, rcp.InvalidParams(field+".hitId", "hitId is required")
		}
		if r := s.Reward; r != nil && (math.IsNaN(*r) || *r < -1 || *r > 1) {
			return nil, rcp.InvalidParams(field+".reward", "reward must be in [-1, 1], got %v", *r)
		}
		signals = append(signals, feedback.Signal{HitID: s.HitID.String(), Used: isTrue(s.Used), Cited: isTrue(s.Cited),
			Helpful: s.Helpful, Reward: s.Reward, Poison: isTrue(s.PoisonSuspected), Injection: isTrue(s.InjectionSuspected)})
	}
	// Signals about units the index does not hold are not recorded: the
	// store grows with the corpus, never with client-chosen ids.
	known := signals[:0]
	for _, s := range signals {
		d, err := e.ix.Get(ctx, s.HitID)
		if err != nil {
			return nil, err
		}
		if d != nil {
			known = append(known, s)
		}
	}
	n, err := e.ag.fb.Record(e.feedbackCaller(ctx, p.Meta), known)
	if err != nil {
		return nil, err
	}
	return &rcp.FeedbackResult{Accepted: n}, nil
}

func isTrue(b *bool) bool { return b != nil && *b }
