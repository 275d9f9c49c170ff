// Package agentic keeps the state of the agentic loop of RCP §7.7.3: the
// query transformer over the corpus vocabulary (query/transform, §7.8, and
// retrieve.rewrite), the sessions behind sessionId dedup, and client
// feedback (§7.16) with its quarantine. The retrieve path reads them
// (engine/internal/retrieve); this package serves their own methods.
package agentic

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/feedback"
	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/fault"
	"github.com/rcpgo/rcpgo/engine/llm"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/session"
	"github.com/rcpgo/rcpgo/engine/transform"
	"github.com/rcpgo/rcpgo/rcp"
	bolt "go.etcd.io/bbolt"
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

// Agentic is the engine's transform, session and feedback state. Safe for
// concurrent use.
type Agentic struct {
	opts     Options
	build    sync.Mutex // one vocabulary build at a time
	tr       atomic.Pointer[builtTransformer]
	sessions *session.Store
	fb       *feedback.Store
}

// Options configure the agentic state.
type Options struct {
	DB      *bolt.DB
	Index   search.Backend
	An      *analysis.Analyzer
	Catalog *catalog.Catalog
	Log     *slog.Logger
	// Chat, when set, runs every transform method (the offline one serves
	// when it fails) and adds hyde.
	Chat llm.Chat
	// WordNetDir holds WordNet's data files ("" the default when
	// installed, WordNetNone: none).
	WordNetDir string
	Session    session.Options
	Feedback   feedback.Options
}

// ErrModelFailed: the chat model behind a transform method failed.
var ErrModelFailed = errors.New("the chat model failed")

type builtTransformer struct {
	version string
	built   time.Time
	t       *transform.Transformer
}

// Open opens the feedback store (engine.db's "feedback" bucket) and the
// sessions.
func Open(opts Options) (*Agentic, error) {
	fo := opts.Feedback
	if fo.Logger == nil {
		fo.Logger = opts.Log
	}
	fb, err := feedback.Open(opts.DB, "feedback", fo)
	if err != nil {
		return nil, err
	}
	return &Agentic{opts: opts, sessions: session.New(opts.Session), fb: fb}, nil
}

// Handle registers query/transform, feedback and the quarantine methods on
// r.
func (a *Agentic) Handle(r *rcp.Router) {
	rcp.Handle(r, rcp.MethodTransform, a.transform)
	rcp.Handle(r, rcp.MethodFeedback, a.feedback)
	a.handleQuarantine(r)
}

// Sessions are the sessions behind sessionId dedup.
func (a *Agentic) Sessions() *session.Store { return a.sessions }

// Feedback is the feedback store (its Snapshot ranks and quarantines).
func (a *Agentic) Feedback() *feedback.Store { return a.fb }

// Methods are the transform methods served: the offline ones, or with a
// chat model those it runs.
func (a *Agentic) Methods() []string {
	if a.opts.Chat != nil {
		return []string{transform.Rewrite, transform.HyDE, transform.MultiQuery, transform.Decompose, transform.StepBack}
	}
	return slices.Clone(transform.OfflineMethods)
}

// Describe adds transform, session and feedback to caps, and PRF and the
// quarantine methods to the x-rcpgo capability.
func (a *Agentic) Describe(caps *rcp.Capabilities, vendor *rcp.RCPGoCap) {
	caps.Transform = &rcp.TransformCap{Methods: a.Methods()}
	ttl := a.opts.Session.TTL
	if ttl <= 0 {
		ttl = session.DefaultTTL
	}
	caps.Session = &rcp.SessionCap{Dedup: true, TTLSeconds: int(ttl / time.Second)}
	caps.Feedback = &rcp.EmptyCap{}
	vendor.Options = append(vendor.Options, OptionPRF)
	vendor.Methods = append(vendor.Methods, rcp.MethodRCPGoQuarantineList, rcp.MethodRCPGoQuarantineLift)
}

// Transformer returns the transformer for the current corpus, building the
// vocabulary on first use and rebuilding it when the index changed and
// the last build is older than lexiconRefresh (other requests keep the
// previous one meanwhile).
func (a *Agentic) Transformer(ctx context.Context) (*transform.Transformer, error) {
	cur := a.tr.Load()
	version := a.opts.Index.Version()
	if cur != nil && (cur.version == version || time.Since(cur.built) < lexiconRefresh) {
		return cur.t, nil
	}
	if cur != nil {
		if !a.build.TryLock() {
			return cur.t, nil
		}
	} else {
		a.build.Lock()
	}
	defer a.build.Unlock()
	if again := a.tr.Load(); again != cur {
		return again.t, nil
	}
	started := time.Now()
	stem := func(w string) string {
		if ts := a.opts.An.Terms(w); len(ts) > 0 {
			return ts[0]
		}
		return w
	}
	lex, err := transform.BuildLexicon(ctx, a.corpusTexts(ctx), stem)
	if err != nil {
		if cur != nil {
			return cur.t, nil
		}
		return nil, fmt.Errorf("engine: transform vocabulary: %w", err)
	}
	wn := a.loadWordNet(lex)
	t := transform.New(transform.Config{Lexicon: lex, WordNet: wn, Stem: stem, Chat: a.opts.Chat, Logger: a.opts.Log})
	a.tr.Store(&builtTransformer{version: version, built: time.Now(), t: t})
	a.opts.Log.Info("engine: transform vocabulary built", "docs", lex.Docs(), "words", lex.Size(),
		"wordnet", wn != nil, "ms", time.Since(started).Milliseconds())
	return t, nil
}

func (a *Agentic) loadWordNet(lex *transform.Lexicon) *transform.WordNet {
	dir := a.opts.WordNetDir
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
			a.opts.Log.Warn("engine: WordNet not loaded; expansion uses the corpus only", "err", err)
		}
		return nil
	}
	return wn
}

// corpusTexts yields the title and text of catalogued documents in id
// order (a chunked document's original text).
func (a *Agentic) corpusTexts(ctx context.Context) iter.Seq[string] {
	return func(yield func(string) bool) {
		type item struct{ id, text, title string }
		var items []item
		_ = a.opts.Catalog.Scan("", false, func(id string, rec *catalog.Record) bool {
			items = append(items, item{id, rec.Text, rec.Title})
			return len(items) < transform.MaxLexiconDocs
		})
		for _, it := range items {
			text := it.text
			if text == "" {
				d, err := a.opts.Index.Get(ctx, it.id)
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

func (a *Agentic) transform(ctx context.Context, p *rcp.TransformParams) (*rcp.TransformResult, error) {
	if strings.TrimSpace(p.Query) == "" {
		return nil, rcp.InvalidParams("query", "query is required")
	}
	if len(p.Query) > transform.MaxQueryBytes {
		return nil, rcp.InvalidParams("query", "query is %d bytes; at most %d", len(p.Query), transform.MaxQueryBytes)
	}
	if p.Method == "" {
		return nil, rcp.InvalidParams("method", "method is required")
	}
	if !slices.Contains(a.Methods(), p.Method) {
		return nil, rcp.OptionUnsupported(p.Method, "transform method %q is not advertised (transform.methods: %s)",
			p.Method, strings.Join(a.Methods(), ", "))
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
	t, err := a.Transformer(ctx)
	if err != nil {
		return nil, err
	}
	res, err := t.Transform(ctx, transform.Request{Query: p.Query, Method: p.Method, N: n, Seed: seed})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &fault.Error{Err: ErrModelFailed, Message: "the chat model behind " + p.Method + " failed",
			Field: "method", Detail: err.Error()}
	}
	return &rcp.TransformResult{Queries: res.Queries, Hypothetical: res.Hypothetical}, nil
}

// ---- feedback ----

func (a *Agentic) feedback(ctx context.Context, p *rcp.FeedbackParams) (*rcp.FeedbackResult, error) {
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
		d, err := a.opts.Index.Get(ctx, s.HitID)
		if err != nil {
			return nil, err
		}
		if d != nil {
			known = append(known, s)
		}
	}
	n, err := a.fb.Record(a.feedbackCaller(ctx, p.Meta), known)
	if err != nil {
		return nil, err
	}
	return &rcp.FeedbackResult{Accepted: n}, nil
}

func isTrue(b *bool) bool { return b != nil && *b }
