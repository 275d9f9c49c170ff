// Package pipeline runs one retrieve request through the stages of RCP §3:
// recall → fuse → rerank → feedback → diversify → pack + cite, one file
// per stage, named for it. Each stage is a function taking a context and
// the shared *State; none of them knows the transport. The engine plans
// the request against the session's capabilities and passes the backends
// in (Deps), in the vocabulary of engine/search; progress and diagnostics
// leave through the Observer callback.
//
// # Ranked list and pages
//
// A request defines one ranked list: recall fetches CandidateK candidates
// (sparse and/or dense), fusion merges them, score adjustments (recency)
// re-sort them, unit=document collapses chunks to the best chunk per
// document, minScore cuts the tail and MMR (when asked) reorders the whole
// list greedily. A page is the slice [Offset, Offset+K) of that list, further
// cut by TokenBudget. Because the list is a deterministic function of the
// request and the snapshot, pages taken at one snapshot never overlap and
// never skip a hit.
package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/trust"
	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/filter"
	"github.com/rcpgo/rcpgo/rcp/fusion"
)

// Recency is the retrieve.recency option, resolved.
type Recency struct {
	Field    string
	HalfLife time.Duration
	Now      time.Time
}

// Request is one validated retrieve request.
type Request struct {
	Query       string
	MaxTerms    int // distinct query terms allowed (search.Query.MaxTerms)
	K           int // page size
	Offset      int // first rank of the page
	CandidateK  int
	Mode        string             // rcp.ModeSparse, ModeDense or ModeHybrid
	Fusion      fusion.Options     // Method, RRFK and Alpha (documents are keyed by id; K and Key are not read)
	Weights     map[string]float64 // fusion weights by list ("dense", "sparse")
	MMRLambda   *float64
	Filter      *filter.Node
	MinScore    *float64
	Recency     *Recency
	Unit        string // rcp.UnitChunk, rcp.UnitDocument or rcp.UnitPage (chunks grouped by page)
	TokenBudget *int
	IncludeText bool
	Vectors     bool // fill Page.Vectors
	Version     string
	Confidence  bool
	// RerankTopN > 0 rescores the top RerankTopN candidates with
	// Deps.Reranker (the funnel candidateK ≥ topN ≥ k is checked by the
	// caller).
	RerankTopN int
	// PageDepth lets recall fetch only what the page needs when no stage
	// looks past it (see State.recallDepth). The caller sets it when
	// CandidateK is its own default rather than the client's, and the
	// sparse backend ranks by a total order, so that its top n is the first
	// n of any deeper search.
	PageDepth bool
}

// Observer receives stage progress (progress ∈ [0,1]) and optional partial
// hits. It must not block.
type Observer func(stage string, progress float64, msg string, partial []rcp.Hit)

// Deps are the backends of one run.
type Deps struct {
	Sparse   search.Searcher
	Dense    Dense // nil: dense recall unavailable
	Compile  func(*filter.Node) (search.Filter, error)
	Trust    trust.Policy
	Observe  Observer
	BM25Sat  float64 // k1+1 of the sparse scorer, for confidence (default 2.2)
	Screen   bool    // run the injection screen
	WireName string  // Source.Name of documents written over the wire
	// Reranker rescores (query, passage) pairs: a cross-encoder or LLM
	// judge from engine/embed. nil: no rerank stage.
	Reranker embed.Scorer
	// Feedback, when set, returns the feedback verdict on a unit (its id,
	// and the id of its document for a chunk); it is applied after rerank
	// and recency, before unit collapsing and pagination.
	Feedback func(id, docID string) (Verdict, bool)
}

// Page is the result of a run.
type Page struct {
	Hits       []rcp.Hit
	Vectors    [][]float32 // parallel to Hits when Request.Vectors
	Version    string
	Next       int // offset of the next page, or -1
	Candidates int // recall candidates considered
	Reranked   int // candidates rescored by the reranker
	Tokens     int // tokens packed (see chunk.Tokens)
	Notes      []string
}

// State is what the stages share.
type State struct {
	Req   *Request
	Deps  *Deps
	Cands []*Candidate
	Page  Page
	// termMax is Σ over query words of the best single-word sparse score
	// (the confidence normaliser).
	termMax float64
}

// Stage is one pipeline step.
type Stage struct {
	Name string
	Run  func(ctx context.Context, s *State) error
}

// Stages returns the stages in order.
func Stages() []Stage {
	return []Stage{
		{"recall", recall},
		{"fuse", fuse},
		{"rerank", rerank},
		{"feedback", applyFeedback},
		{"diversify", diversify},
		{"pack", pack},
	}
}

// Run executes every stage.
func Run(ctx context.Context, deps *Deps, req *Request) (*Page, error) {
	s := newState(deps, req)
	if err := s.run(ctx, Stages()); err != nil {
		return nil, err
	}
	return &s.Page, nil
}

// pinned fills in the page's version when no sparse recall set it: a
// dense-only list is resolved against the snapshot the caller pinned.
func (s *State) pinned() {
	if s.Page.Version == "" {
		s.Page.Version = s.Req.Version
	}
}

func newState(deps *Deps, req *Request) *State {
	s := &State{Req: req, Deps: deps}
	s.Page.Next = -1
	if deps.BM25Sat == 0 {
		deps.BM25Sat = 2.2
	}
	return s
}

// run executes stages in order.
func (s *State) run(ctx context.Context, stages []Stage) error {
	for _, st := range stages {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := st.Run(ctx, s); err != nil {
			return err
		}
	}
	s.pinned()
	return nil
}

// observing reports whether anyone receives stage reports: callers check it
// before formatting one, so an unobserved request pays nothing for them.
func (s *State) observing() bool { return s.Deps.Observe != nil }

func (s *State) observe(stage string, progress float64, msg string, partial []rcp.Hit) {
	s.Deps.Observe(stage, progress, msg, partial)
}

func (s *State) note(format string, args ...any) {
	s.Page.Notes = append(s.Page.Notes, fmt.Sprintf(format, args...))
}

func byScore(a, b *Candidate) int {
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}
