// Package fedtest provides tiny, deterministic RCP engines with their own
// corpora for the federation tests and the gateway demo: word-overlap
// retrieve, a hashed embed, an overlap rerank and a neighbours graph op.
// Queries may carry control words the engines obey (tests only):
//
//	xslow<name>  engine <name> sleeps Slow (default 5 s) before answering
//	xhang<name>  engine <name> signals Started and blocks until its context ends
//	xhangall     every engine does that
//
// They are toys for protocol tests, not retrieval.
package fedtest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/rcpgo/rcpgo/rcp"
)

// Doc is one corpus entry.
type Doc struct{ ID, Text, URI string }

// Corpora are the engines' distinct document sets.
var Corpora = map[string][]Doc{
	"alpha": {
		{"a-rrf", "Reciprocal rank fusion merges ranked lists from several retrieval engines.", "https://alpha.example/rrf"},
		{"a-bm25", "BM25 ranks documents by term frequency and inverse document frequency.", "https://alpha.example/bm25"},
		{"a-paris", "Paris is the capital of France on the river Seine.", "https://alpha.example/paris"},
		{"shared-1", "Federated search queries every engine and fuses the ranked results.", "https://shared.example/federated"},
	},
	"beta": {
		{"b-dense", "Dense retrieval embeds queries and documents into one vector space.", "https://beta.example/dense"},
		{"b-fusion", "Fusion of ranked lists uses reciprocal ranks or normalised scores.", "https://beta.example/fusion"},
		{"b-tower", "The Eiffel Tower is a wrought iron tower in Paris.", "https://beta.example/tower"},
		{"shared-1", "Federated search fans a query out to every engine and fuses ranked results from all of them.", "https://shared.example/federated"},
	},
	"gamma": {
		{"g-graph", "A knowledge graph links entities so retrieval can follow relations.", "https://gamma.example/graph"},
		{"g-rerank", "Cross-encoder rerankers rescore the top ranked candidates of retrieval.", "https://gamma.example/rerank"},
		{"g-seine", "The Seine flows through Paris to the English Channel.", "https://gamma.example/seine"},
	},
}

// Features selects optional capabilities of an engine.
type Features struct {
	Embed      bool     // embed (dimension 8, identity "<name>-hash-8")
	Rerank     bool     // rerank (cross-encoder, word overlap)
	GraphOps   []string // graph ops served (any op returns the top docs as hits)
	ScoreFloor *float64 // retrieve.scoreFloor
	Modes      []string // retrieve modes (default hybrid only)
	// Rewrites are the query/transform methods served, which retrieve's
	// rewrite accepts too (it then notes the method; the toy query is
	// unchanged). Any other rewrite is -32005 under strict, as in a
	// conformant engine.
	Rewrites []string
}

// Engine is one test engine.
type Engine struct {
	Name     string
	Docs     []Doc
	Features Features
	// Slow is the delay of an "xslow" query (default 5 s).
	Slow time.Duration
	// Started receives one value each time an "xhang" query starts.
	Started chan string

	mu       sync.Mutex
	metas    []rcp.Meta // _meta of every retrieve received
	sessions []string   // sessionId of every retrieve received
}

// New returns an engine over Corpora[name].
func New(name string, f Features) *Engine {
	return &Engine{Name: name, Docs: Corpora[name], Features: f, Started: make(chan string, 16)}
}

// Metas returns the _meta objects of the retrieves received so far.
func (e *Engine) Metas() []rcp.Meta {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.metas)
}

// SessionIDs returns the sessionId of each retrieve received so far.
func (e *Engine) SessionIDs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.sessions)
}

// Describe reports the engine's identity and capabilities.
func (e *Engine) Describe(context.Context) rcp.Description {
	modes := e.Features.Modes
	if len(modes) == 0 {
		modes = []string{rcp.ModeHybrid}
	}
	caps := rcp.Capabilities{
		Retrieve:  &rcp.RetrieveCap{MaxK: 50, Modes: modes, DefaultMode: modes[0], Deterministic: true, ScoreFloor: e.Features.ScoreFloor},
		Citations: &rcp.EmptyCap{},
		Streaming: &rcp.EmptyCap{},
	}
	if e.Features.Embed {
		caps.Embed = &rcp.EmbedCap{Dimension: 8, Identity: e.Name + "-hash-8", Encodings: []string{rcp.EncodingJSON}}
	}
	if e.Features.Rerank {
		caps.Rerank = &rcp.RerankCap{Methods: []string{rcp.RerankCrossEncoder}, MaxCandidates: 100}
	}
	if len(e.Features.GraphOps) > 0 {
		caps.Graph = &rcp.GraphCap{Ops: e.Features.GraphOps}
	}
	if len(e.Features.Rewrites) > 0 {
		caps.Transform = &rcp.TransformCap{Methods: e.Features.Rewrites}
	}
	return rcp.Description{Server: rcp.PeerInfo{Name: "fedtest-" + e.Name, Version: "1.0"}, Capabilities: caps, Conformance: rcp.LevelL1}
}

// Router returns the engine as an rcp.Handler.
func (e *Engine) Router() *rcp.Router {
	r := rcp.NewRouter(e.Describe)
	rcp.Handle(r, rcp.MethodRetrieve, e.retrieve)
	if e.Features.Embed {
		rcp.Handle(r, rcp.MethodEmbed, e.embed)
	}
	if e.Features.Rerank {
		rcp.Handle(r, rcp.MethodRerank, e.rerank)
	}
	if len(e.Features.GraphOps) > 0 {
		rcp.Handle(r, rcp.MethodGraph, e.graph)
	}
	if len(e.Features.Rewrites) > 0 {
		rcp.Handle(r, rcp.MethodTransform, e.transform)
	}
	return r
}

// transform answers the query and its words as the rewritten queries.
func (e *Engine) transform(_ context.Context, p *rcp.TransformParams) (*rcp.TransformResult, error) {
	if !slices.Contains(e.Features.Rewrites, p.Method) {
		return nil, rcp.OptionUnsupported("method", "transform method %q is not advertised", p.Method)
	}
	return &rcp.TransformResult{Queries: append([]string{p.Query}, tokens(p.Query)...)}, nil
}

func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func overlap(query, text string) float64 {
	q := map[string]bool{}
	for _, t := range tokens(query) {
		q[t] = true
	}
	if len(q) == 0 {
		return 0
	}
	seen := map[string]bool{}
	for _, t := range tokens(text) {
		if q[t] {
			seen[t] = true
		}
	}
	return float64(len(seen)) / float64(len(q))
}

func (e *Engine) ranked(query string) []rcp.Hit {
	var hits []rcp.Hit
	for _, d := range e.Docs {
		s := overlap(query, d.Text)
		if s <= 0 {
			continue
		}
		text := d.Text
		hits = append(hits, rcp.Hit{ID: rcp.StringID(d.ID), Score: s, Text: &text,
			Citation: &rcp.Citation{URI: d.URI}, Meta: map[string]any{"corpus": e.Name}})
	}
	slices.SortStableFunc(hits, func(a, b rcp.Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.ID.String(), b.ID.String())
	})
	return hits
}

func (e *Engine) control(ctx context.Context, query string) error {
	words := tokens(query)
	switch {
	case slices.Contains(words, "xhang"+e.Name) || slices.Contains(words, "xhangall"):
		select {
		case e.Started <- e.Name:
		default:
		}
		<-ctx.Done()
		return ctx.Err()
	case slices.Contains(words, "xslow"+e.Name):
		d := cmp.Or(e.Slow, 5*time.Second)
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (e *Engine) retrieve(ctx context.Context, p *rcp.RetrieveParams) (*rcp.RetrieveResult, error) {
	if p.Query.IsZero() {
		return nil, rcp.InvalidParams("query", "query is required")
	}
	if p.K < 1 {
		return nil, rcp.InvalidParams("k", "k must be >= 1")
	}
	e.mu.Lock()
	e.metas = append(e.metas, p.Meta)
	e.sessions = append(e.sessions, p.SessionID)
	e.mu.Unlock()
	q := p.Query.String()
	if err := e.control(ctx, q); err != nil {
		return nil, err
	}
	if p.CandidateK != nil && *p.CandidateK < p.K {
		return nil, rcp.InvalidParams("candidateK", "candidateK < k")
	}
	var notes []string
	if p.Rewrite != nil && *p.Rewrite != "" {
		m := string(*p.Rewrite)
		if !slices.Contains(e.Features.Rewrites, m) {
			if p.IsStrict() {
				return nil, rcp.OptionUnsupported("rewrite", "query rewrite %q is not advertised", m)
			}
			notes = append(notes, fmt.Sprintf("query rewrite %q is not advertised; ignored", m))
		} else {
			notes = append(notes, fmt.Sprintf("query rewrite %q applied", m))
		}
	}
	hits := e.ranked(q)
	if p.MinScore != nil {
		hits = slices.DeleteFunc(hits, func(h rcp.Hit) bool { return h.Score < *p.MinScore })
	}
	_ = rcp.ReportProgress(ctx, rcp.ProgressParams{Stage: "recall", Message: fmt.Sprintf("%d candidates", len(hits))})
	if len(hits) > p.K {
		hits = hits[:p.K]
	}
	if hits == nil {
		hits = []rcp.Hit{}
	}
	res := &rcp.RetrieveResult{Hits: hits}
	if notes != nil {
		res.Usage = &rcp.Usage{Notes: notes}
	}
	return res, nil
}

func hashVec(s string) []float64 {
	v := make([]float64, 8)
	for _, t := range tokens(s) {
		h := fnv.New32a()
		_, _ = h.Write([]byte(t))
		v[h.Sum32()%8]++
	}
	return v
}

func (e *Engine) embed(ctx context.Context, p *rcp.EmbedParams) (*rcp.EmbedResult, error) {
	in := p.AllInputs()
	if len(in) == 0 {
		return nil, rcp.InvalidParams("inputs", "inputs is required")
	}
	if p.Encoding != "" && p.Encoding != rcp.EncodingJSON {
		return nil, rcp.OptionUnsupported("encoding", "encoding %q is not advertised", p.Encoding)
	}
	vecs := make([][]float64, len(in))
	for i, c := range in {
		vecs[i] = hashVec(e.Name + " " + c.Text) // engine-specific space
	}
	b, _ := json.Marshal(vecs)
	return &rcp.EmbedResult{Vectors: b, Dimension: 8, Meta: rcp.Meta{}.Set("engine", e.Name)}, nil
}

func (e *Engine) rerank(ctx context.Context, p *rcp.RerankParams) (*rcp.RerankResult, error) {
	ps := p.Passages
	if ps == nil {
		ps = p.Documents
	}
	if len(ps) == 0 {
		return nil, rcp.InvalidParams("passages", "passages is required")
	}
	if p.Method != "" && p.Method != rcp.RerankCrossEncoder {
		return nil, rcp.OptionUnsupported("method", "rerank method %q is not advertised", p.Method)
	}
	q := p.Query.String()
	scores := make([]float64, len(ps))
	order := make([]int, len(ps))
	for i, c := range ps {
		scores[i] = overlap(q, c.Text)
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	return &rcp.RerankResult{Scores: scores, Order: order, Meta: rcp.Meta{}.Set("engine", e.Name)}, nil
}

func (e *Engine) graph(ctx context.Context, p *rcp.GraphParams) (*rcp.GraphResult, error) {
	hits := e.ranked(p.Query)
	return &rcp.GraphResult{Hits: hits, Summary: e.Name + " " + p.Op, Meta: rcp.Meta{}.Set("engine", e.Name)}, nil
}

// HTTPServer is a test engine (or any handler) served over loopback HTTP.
// Kill closes the listener and every connection at once (transport death).
type HTTPServer struct {
	URL  string // base URL, ".../rcp"
	Addr string
	hs   *http.Server
	h    *rcp.HTTPHandler
	done chan struct{}
	once sync.Once
}

// ServeHTTP serves h on addr ("127.0.0.1:0" for any port) with opts.
func ServeHTTP(h rcp.Handler, addr string, opts *rcp.HTTPOptions, sopts *rcp.ServerOptions) (*HTTPServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fedtest: listen: %w", err)
	}
	return ServeListener(h, ln, opts, sopts), nil
}

// ServeListener is ServeHTTP on an existing listener.
func ServeListener(h rcp.Handler, ln net.Listener, opts *rcp.HTTPOptions, sopts *rcp.ServerOptions) *HTTPServer {
	srv := rcp.NewServer(h, sopts)
	hh := srv.HTTPHandler(opts)
	s := &HTTPServer{URL: "http://" + ln.Addr().String() + "/rcp", Addr: ln.Addr().String(),
		hs: &http.Server{Handler: hh, ReadHeaderTimeout: 5 * time.Second}, h: hh, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := s.hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener died: nothing to report in a test helper
		}
	}()
	return s
}

// Kill stops the server abruptly: listener and connections closed, in-flight
// requests cancelled. It is idempotent.
func (s *HTTPServer) Kill() {
	s.once.Do(func() {
		_ = s.hs.Close()
		_ = s.h.Close()
		<-s.done
	})
}
