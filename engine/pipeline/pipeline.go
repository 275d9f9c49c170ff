// Package pipeline runs one retrieve request through the stages of RCP §3:
// recall → fuse → rerank → diversify → pack + cite. Each stage is a small
// function taking a context and the shared *State; none of them knows the
// transport. The engine validates the request, resolves capabilities and
// passes the backends in (Deps); progress and diagnostics leave through the
// Observer callback.
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
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rcpgo/rcpgo/engine/ann"
	"github.com/rcpgo/rcpgo/engine/chunk"
	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/query"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/trust"
	"github.com/rcpgo/rcpgo/internal/wording"
	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/filter"
	"github.com/rcpgo/rcpgo/rcp/fusion"
)

// Dense is the dense backend: an embedding provider plus a vector index.
type Dense interface {
	// Recall returns up to k documents of the current snapshot most similar
	// to query, best first (ties by id), with strictly positive similarity,
	// restricted to documents for which keep returns true (keep nil: no
	// restriction). ef > 0 sets the search's candidate list (an
	// approximate index's effort); 0 leaves it to the backend.
	Recall(ctx context.Context, query string, k, ef int, keep func(*search.Document) bool) ([]*Candidate, error)
	// Vectors returns the stored embeddings of ids (nil for unknown ids).
	Vectors(ctx context.Context, ids []string) ([][]float32, error)
}

// Candidate is one document or chunk flowing through the pipeline.
type Candidate struct {
	ID  string
	Doc *search.Document // nil until loaded (sparse candidates)
	// Num is the document number of a sparse candidate, for loading it.
	Num     search.DocNum
	hasNum  bool
	hasText bool // Doc.Text is loaded
	// Facts come with documents read by the sparse backend: the
	// index-time screen verdict and the text's length, so a hit needs
	// neither the screen nor (includeText:false) its text at query time.
	// Candidates without them (dense recall) are computed from Doc.Text.
	Facts     search.Facts
	Sparse    float64
	HasSparse bool
	Dense     float64
	HasDense  bool
	Fused     float64
	HasFused  bool
	Rerank    float64
	HasRerank bool
	Score     float64 // the ranking score of the current stage
	conf      float64
	vec       []float32
	// GroupID is the document a hit stands for under unit=document.
	groupID string
	verdict *Verdict // client feedback about this candidate (Deps.Feedback)
}

// StoredDense is a dense candidate whose document the sparse backend
// stores as num: like a sparse candidate, it is loaded only if a stage
// needs its metadata or text (the page, the reranked top N, unit
// grouping, recency, feedback).
func StoredDense(id string, num search.DocNum, score float64) Candidate {
	return Candidate{ID: id, Num: num, hasNum: true, Dense: score, HasDense: true, Score: score}
}

// Verdict is what client feedback (engine/feedback) says about a unit.
type Verdict struct {
	// Factor multiplies a non-negative score and divides a negative one
	// (the ranking prior; 1 is neutral).
	Factor float64
	// Quarantined demotes the unit below every other candidate and marks
	// its hit trust.level "untrusted".
	Quarantined bool
	// Injection sets trust.injectionSuspected on a quarantined hit.
	Injection bool
}

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
		{"rerank", adjust},
		{"feedback", applyFeedback},
		{"diversify", diversify},
		{"pack", pack},
	}
}

// Run executes every stage.
func Run(ctx context.Context, deps *Deps, req *Request) (*Page, error) {
	s := &State{Req: req, Deps: deps}
	s.Page.Next = -1
	if deps.BM25Sat == 0 {
		deps.BM25Sat = 2.2
	}
	for _, st := range Stages() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := st.Run(ctx, s); err != nil {
			return nil, err
		}
	}
	return &s.Page, nil
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

// recall fetches CandidateK candidates from the sparse and/or dense backend.
// A hybrid request runs the two one after the other: running the dense one
// on a second goroutine beside the sparse search was measured slower at the
// median on a loaded 2-core machine (docs/benchmarks.md, "Hybrid ÷ sparse").
func recall(ctx context.Context, s *State) error {
	r := s.Req
	var sparse, dense []*Candidate
	var err error
	if r.Mode != rcp.ModeDense {
		if sparse, err = recallSparse(ctx, s); err != nil {
			return err
		}
	}
	if r.Mode != rcp.ModeSparse {
		if s.Deps.Dense == nil {
			return fmt.Errorf("pipeline: dense recall requested without a dense backend")
		}
		if dense, err = recallDense(ctx, s); err != nil {
			return err
		}
	}
	switch r.Mode {
	case rcp.ModeSparse:
		s.Cands = sparse
	case rcp.ModeDense:
		s.Cands = dense
	default:
		s.Cands = merge(sparse, dense)
	}
	s.Page.Candidates = len(s.Cands)
	if s.observing() {
		partial := make([]rcp.Hit, 0, min(len(s.Cands), 20))
		for _, c := range s.Cands[:min(len(s.Cands), 20)] {
			partial = append(partial, rcp.Hit{ID: rcp.StringID(c.ID), Score: c.Score})
		}
		s.observe("recall", 0.4, fmt.Sprintf("recall: %d sparse, %d dense candidates", len(sparse), len(dense)), partial)
	}
	return nil
}

// merge is the hybrid candidate list: the sparse candidates, then the
// dense ones the sparse list lacks; a dense hit on a sparse candidate
// gives it its dense score. Each id appears once (the backends return
// each document once; a repeat would be kept at its first, best rank).
func merge(sparse, dense []*Candidate) []*Candidate {
	out := make([]*Candidate, 0, len(sparse)+len(dense))
	byID := make(map[string]*Candidate, len(sparse)+len(dense))
	for _, c := range sparse {
		if _, ok := byID[c.ID]; !ok {
			byID[c.ID] = c
			out = append(out, c)
		}
	}
	for _, c := range dense {
		o, ok := byID[c.ID]
		switch {
		case !ok:
			byID[c.ID] = c
			out = append(out, c)
		case !o.HasDense:
			o.Dense, o.HasDense = c.Dense, true
			if o.Doc == nil {
				o.Doc, o.hasText = c.Doc, c.hasText
			}
		}
	}
	return out
}

// recallSparse searches the index for the request's sparse candidates and
// records the snapshot version searched.
func recallSparse(ctx context.Context, s *State) ([]*Candidate, error) {
	r := s.Req
	var f search.Filter
	if r.Filter != nil {
		var err error
		if f, err = s.Deps.Compile(r.Filter); err != nil {
			return nil, err
		}
	}
	res, err := s.Deps.Sparse.Search(ctx, search.Query{Text: r.Query, K: s.recallDepth(), Filter: f, Version: r.Version, SkipDocs: true, MaxTerms: r.MaxTerms})
	if err != nil {
		return nil, err
	}
	s.Page.Version = res.Version
	cands := make([]Candidate, len(res.Hits)) // one allocation for all
	sparse := make([]*Candidate, len(res.Hits))
	for i, h := range res.Hits {
		cands[i] = Candidate{ID: h.ID, Num: h.DocNum, hasNum: true, Sparse: h.Score, HasSparse: true, Score: h.Score}
		if h.Doc != nil {
			// A remote backend answers with the stored documents (one
			// round trip): nothing is loaded later.
			cands[i].Doc, cands[i].Facts, cands[i].hasText, cands[i].hasNum = h.Doc, h.Facts, true, false
		}
		sparse[i] = &cands[i]
	}
	if r.Confidence && len(sparse) > 0 {
		s.termMax = termMax(ctx, s.Deps.Sparse, query.RankText(r.Query), res.Version)
	}
	return sparse, nil
}

// recallDense asks the dense backend for the request's dense candidates.
func recallDense(ctx context.Context, s *State) ([]*Candidate, error) {
	r := s.Req
	var keep func(*search.Document) bool // nil: no filter, every unit is admitted
	if r.Filter != nil {
		keep = func(d *search.Document) bool { return r.Filter.Match(d.Meta) }
	}
	depth, ef := s.recallDepth(), 0
	if depth < r.CandidateK { // the server's fusion window: the walk's effort follows it
		ef = depth
	}
	dense, err := s.Deps.Dense.Recall(ctx, r.Query, depth, ef, keep)
	if err != nil {
		return nil, err
	}
	for _, c := range dense {
		c.hasText = c.Doc != nil
	}
	return dense, nil
}

// recallDepth is how many candidates recall fetches from each backend.
// The ranked list a request defines is CandidateK long; when every stage
// after recall keeps the recall order and drops at most a tail (no rerank,
// no recency, no feedback, chunk units so nothing collapses, no MMR;
// minScore cuts a tail) and the caller allows it (PageDepth), recall
// fetches less:
//
//   - sparse: the list's first n entries are the backend's top n, so a
//     request fetches Offset+K candidates and one more, which tells whether
//     a next page exists. Pages, cursors, scores and confidence are then
//     those of the full-depth list.
//   - hybrid: the fusion window is hybridDepth(K) per list — the fused list
//     of that window is the request's list, so every page of one query
//     (same K) fuses the same two lists and pages stay consistent; it ends
//     where the two windows' union ends. A client wanting a deeper list
//     sets candidateK.
//
// usage.candidates reports the candidates fetched.
func (s *State) recallDepth() int {
	r := s.Req
	if !r.PageDepth || s.Deps.Reranker != nil && r.RerankTopN > 0 ||
		r.Recency != nil || s.Deps.Feedback != nil || r.Unit != rcp.UnitChunk || r.MMRLambda != nil {
		return r.CandidateK
	}
	switch r.Mode {
	case rcp.ModeSparse:
		if r.Offset >= r.CandidateK-r.K { // the page reaches the end of the list (no overflow)
			return r.CandidateK
		}
		return r.Offset + r.K + 1
	case rcp.ModeHybrid:
		return min(r.CandidateK, hybridDepth(r.K))
	}
	return r.CandidateK
}

// The hybrid fusion window when the server chooses it: hybridDepthPerK
// candidates per hit asked for, at least hybridDepthMin, from each list,
// and the dense walk's ef is the window. Chosen on SciFact and Cranfield
// (docs/benchmarks.md, "Hybrid fusion window"): against the window of 40
// it replaced, 20 loses no top-10 nDCG@10 by more than 1.2 paired
// standard errors on either set, with either fusion (none significant;
// SciFact convex −0.0050 ± 0.0042 is the largest), and the walk at ef 20
// scores 0.57× the codes of one at ef 40 (1 M vectors).
const (
	hybridDepthPerK = 2
	hybridDepthMin  = 20
)

func hybridDepth(k int) int { return max(hybridDepthPerK*k, hybridDepthMin) }

// termMax sums, over the distinct query words, the best score any document
// reaches for that word alone (the confidence normaliser; at most 16 words).
func termMax(ctx context.Context, sp search.Searcher, query, version string) float64 {
	total := 0.0
	var buf [16]string // the words, on the stack
	for _, w := range distinctWords(buf[:0], query) {
		if best, err := sp.WordMax(ctx, version, w); err == nil {
			total += best
		}
	}
	return total
}

// distinctWords appends query's lower-cased words to words, each once, up
// to cap(words).
func distinctWords(words []string, query string) []string {
	for w := range strings.FieldsSeq(strings.ToLower(query)) {
		if len(words) == cap(words) {
			break
		}
		if !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	return words
}

// fuse merges the sparse and dense rankings (hybrid) with rcp/fusion.
func fuse(ctx context.Context, s *State) error {
	r := s.Req
	if r.Mode != rcp.ModeHybrid {
		for _, c := range s.Cands {
			if r.Mode == rcp.ModeDense {
				c.Score = c.Dense
			}
		}
		slices.SortFunc(s.Cands, byScore)
		if s.observing() {
			s.observe("fuse", 0.6, fmt.Sprintf("fuse: single %s list of %d, nothing to fuse", r.Mode, len(s.Cands)), nil)
		}
		return nil
	}
	floor := 0.0
	lists := []fusion.List{
		{Engine: "sparse", Role: fusion.RoleLexical, ScoreFloor: &floor},
		{Engine: "dense", Role: fusion.RoleDense, ScoreFloor: &floor},
	}
	if w, ok := r.Weights["sparse"]; ok {
		lists[0].Weight = &w
	}
	if w, ok := r.Weights["dense"]; ok {
		lists[1].Weight = &w
	}
	sp, dn := ranked(s.Cands, sparseScore), ranked(s.Cands, denseScore)
	scores := make([]float64, len(sp)+len(dn))
	for i, c := range sp {
		scores[i] = c.Sparse
	}
	for i, c := range dn {
		scores[len(sp)+i] = c.Dense
	}
	scales, err := fusion.Scales(lists, [][]float64{scores[:len(sp)], scores[len(sp):]}, r.Fusion)
	if err != nil {
		return fmt.Errorf("pipeline: fuse: %w", err)
	}
	// Each id is one candidate (merge), so adding its contributions in
	// list order from 0 gives rcp/fusion's scores bit for bit
	// (TestFuseMatchesFusion), without building hits, keys or maps.
	for _, c := range s.Cands {
		c.Fused = 0
	}
	for i, c := range sp {
		c.Fused += scales[0].Contribution(i+1, c.Sparse)
	}
	for i, c := range dn {
		c.Fused += scales[1].Contribution(i+1, c.Dense)
	}
	for _, c := range s.Cands {
		c.HasFused, c.Score = true, c.Fused
	}
	slices.SortFunc(s.Cands, byScore)
	method := fusion.EffectiveMethod(lists, r.Fusion.Method)
	if method == "" {
		method = rcp.FusionRRF
	}
	if s.observing() {
		s.observe("fuse", 0.6, fmt.Sprintf("fused %d sparse + %d dense by %s into %d", len(sp), len(dn), method, len(s.Cands)), nil)
	}
	return nil
}

// ranked returns the candidates that have a score by(c) (ok), best first,
// ties by id: one list of the fusion.
func ranked(cs []*Candidate, by func(*Candidate) (float64, bool)) []*Candidate {
	out := make([]*Candidate, 0, len(cs))
	for _, c := range cs {
		if _, ok := by(c); ok {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b *Candidate) int {
		x, _ := by(a)
		y, _ := by(b)
		return byKey(x, y, a.ID, b.ID)
	})
	return out
}

func sparseScore(c *Candidate) (float64, bool) { return c.Sparse, c.HasSparse }
func denseScore(c *Candidate) (float64, bool)  { return c.Dense, c.HasDense }

func byKey(a, b float64, ida, idb string) int {
	if c := cmp.Compare(b, a); c != 0 {
		return c
	}
	return strings.Compare(ida, idb)
}

// adjust is the rerank stage: it rescores the top RerankTopN candidates
// with Deps.Reranker (when one is configured), then applies recency decay.
func adjust(ctx context.Context, s *State) error {
	r := s.Req
	if s.Deps.Reranker != nil && r.RerankTopN > 0 && len(s.Cands) > 0 {
		n := min(r.RerankTopN, len(s.Cands))
		if err := s.load(ctx, s.Cands[:n], true); err != nil {
			return err
		}
		passages := make([]string, n)
		for i, c := range s.Cands[:n] {
			passages[i] = textOf(c)
		}
		scores, err := s.Deps.Reranker.Score(ctx, r.Query, passages)
		if err != nil {
			return fmt.Errorf("pipeline: rerank: %w", err)
		}
		if len(scores) != n {
			return fmt.Errorf("pipeline: rerank: %d scores for %d passages", len(scores), n)
		}
		top := s.Cands[:n]
		for i, c := range top {
			c.Rerank, c.HasRerank, c.Score = float64(scores[i]), true, float64(scores[i])
		}
		slices.SortStableFunc(top, byScore)
		// The funnel returns the best k of the reranked top N: candidates
		// below N are not comparable with reranker scores and are dropped.
		s.Cands = top
		s.Page.Reranked = n
		if s.observing() {
			s.observe("rerank", 0.7, fmt.Sprintf("reranked %d/%d with %s", n, len(s.Cands), s.Deps.Reranker.Identity()), nil)
		}
		if r.Recency == nil {
			return nil
		}
	}
	if r.Recency != nil {
		if err := s.load(ctx, s.Cands, false); err != nil {
			return err
		}
		oldest := time.Time{}
		dates := make([]time.Time, len(s.Cands))
		for i, c := range s.Cands {
			if t, ok := dateOf(c.Doc, r.Recency.Field); ok {
				dates[i] = t
				if oldest.IsZero() || t.Before(oldest) {
					oldest = t
				}
			}
		}
		for i, c := range s.Cands {
			t := dates[i]
			if t.IsZero() {
				t = oldest // undated: as old as the oldest dated candidate
			}
			factor := 1.0
			if !t.IsZero() {
				age := r.Recency.Now.Sub(t)
				if age < 0 {
					age = 0
				}
				factor = math.Pow(0.5, age.Hours()/r.Recency.HalfLife.Hours())
			} else {
				factor = 0.5 // nothing dated at all: uniform, order unchanged
			}
			c.Score *= factor
		}
		slices.SortStableFunc(s.Cands, byScore)
	}
	if s.Page.Reranked == 0 {
		if s.observing() {
			s.observe("rerank", 0.7, "rerank: no reranker configured; order kept"+map[bool]string{true: " (recency decay applied)", false: ""}[r.Recency != nil], nil)
		}
	}
	return nil
}

// applyFeedback scales each candidate by its feedback prior and moves
// quarantined candidates below all others (stable otherwise); a no-op
// without Deps.Feedback.
func applyFeedback(ctx context.Context, s *State) error {
	if s.Deps.Feedback == nil {
		return nil
	}
	// A chunk's verdict may come from its document: read the metadata of
	// candidates not loaded yet (sparse and stored dense ones).
	if err := s.load(ctx, s.Cands, false); err != nil {
		return err
	}
	adjusted := false
	for _, c := range s.Cands {
		doc := ""
		if c.Doc != nil && c.Doc.Chunk != nil {
			doc = c.Doc.Chunk.DocID
		}
		v, ok := s.Deps.Feedback(c.ID, doc)
		if !ok {
			continue
		}
		adjusted = true
		c.verdict = &v
		if c.Score >= 0 {
			c.Score *= v.Factor
		} else if v.Factor > 0 {
			c.Score /= v.Factor
		}
	}
	if !adjusted {
		return nil
	}
	slices.SortStableFunc(s.Cands, func(a, b *Candidate) int {
		qa, qb := a.verdict != nil && a.verdict.Quarantined, b.verdict != nil && b.verdict.Quarantined
		if qa != qb {
			if qa {
				return 1
			}
			return -1
		}
		return byScore(a, b)
	})
	// Hits are ordered by descending score (§4.6): a quarantined candidate
	// moved below the others scores no higher than the one above it.
	for i := 1; i < len(s.Cands); i++ {
		if c := s.Cands[i]; c.verdict != nil && c.verdict.Quarantined && c.Score > s.Cands[i-1].Score {
			c.Score = s.Cands[i-1].Score
		}
	}
	s.note("feedback prior applied")
	return nil
}

// dateOf reads a date from meta field: RFC 3339 or YYYY-MM-DD strings,
// epoch milliseconds, or a bare year (1000..9999).
func dateOf(d *search.Document, field string) (time.Time, bool) {
	if d == nil {
		return time.Time{}, false
	}
	v, ok := d.Meta[field]
	if !ok {
		return time.Time{}, false
	}
	return search.MetaDate(v)
}

// diversify groups chunks by document (unit=document), applies minScore,
// computes confidence and reorders by MMR when asked.
func diversify(ctx context.Context, s *State) error {
	r := s.Req
	if r.Unit == rcp.UnitDocument || r.Unit == rcp.UnitPage {
		if err := s.load(ctx, s.Cands, false); err != nil {
			return err
		}
		seen := map[string]bool{}
		out := s.Cands[:0]
		unpaged := 0
		for _, c := range s.Cands {
			g := c.ID
			if c.Doc != nil && c.Doc.Chunk != nil && c.Doc.Chunk.DocID != "" {
				g = c.Doc.Chunk.DocID
			}
			if r.Unit == rcp.UnitPage {
				pg := pageOf(c.Doc)
				if pg == 0 {
					unpaged++ // HTML, Markdown, text: sections are chunks, not pages
					continue
				}
				g = PageID(g, pg)
			}
			if seen[g] {
				continue
			}
			seen[g] = true
			c.groupID = g
			out = append(out, c)
		}
		s.Cands = out
		if unpaged > 0 {
			s.note("unit page: %s of documents without pages (only paginated formats such as PDF have pages) left out; unit chunk or document retrieves them",
				wording.Plural(unpaged, "candidate", "candidates"))
		}
	}
	if r.MinScore != nil {
		s.Cands = slices.DeleteFunc(s.Cands, func(c *Candidate) bool { return c.Score < *r.MinScore })
	}
	if r.Confidence {
		s.confidence()
	}
	if (r.MMRLambda != nil || r.Vectors) && len(s.Cands) > 0 {
		if s.Deps.Dense == nil {
			return fmt.Errorf("pipeline: vectors needed without a dense backend")
		}
		ids := make([]string, len(s.Cands))
		for i, c := range s.Cands {
			ids[i] = c.ID
		}
		vecs, err := s.Deps.Dense.Vectors(ctx, ids)
		if err != nil {
			return err
		}
		for i, c := range s.Cands {
			c.vec = vecs[i]
		}
	}
	if r.MMRLambda != nil && len(s.Cands) > 1 {
		maxScore := s.Cands[0].Score
		cands := make([]ann.Candidate, len(s.Cands))
		for i, c := range s.Cands {
			rel := 0.0
			if maxScore > 0 {
				rel = c.Score / maxScore
			}
			v := c.vec
			if v == nil {
				v = make([]float32, 1) // no vector: dissimilar to everything
			}
			cands[i] = ann.Candidate{ID: uint64(i), Vec: v, Relevance: float32(rel)}
		}
		order, err := ann.MMR(cands, len(cands), *r.MMRLambda)
		if err != nil {
			return fmt.Errorf("pipeline: mmr: %w", err)
		}
		out := make([]*Candidate, 0, len(order))
		for _, i := range order {
			out = append(out, s.Cands[i])
		}
		s.Cands = out
		if s.observing() {
			s.observe("diversify", 0.8, fmt.Sprintf("mmr λ=%g over %d candidates", *r.MMRLambda, len(out)), nil)
		}
	}
	return nil
}

// confidence sets c.conf ∈ [0,1] for every candidate (see the engine
// documentation for the calibration) and makes it non-increasing down the
// list.
func (s *State) confidence() {
	prev := 1.0
	for _, c := range s.Cands {
		v := 0.0 // the largest of the parts below
		if c.HasRerank {
			// the reranker's judgement supersedes recall scores:
			// a logistic of its score (cross-encoder logits)
			v = math.Max(v, 1/(1+math.Exp(-c.Rerank)))
		} else if c.HasSparse && s.termMax > 0 {
			x := c.Sparse / s.termMax
			v = math.Max(v, 1/(1+math.Exp(-8*(x-0.35))))
		}
		if c.HasDense && !c.HasRerank {
			v = math.Max(v, math.Max(0, math.Min(1, c.Dense)))
		}
		v = math.Min(v, prev)
		c.conf, prev = v, v
	}
}

// load reads the stored documents of the sparse candidates cs not loaded
// yet: metadata, and the text when withText — or when a record carries no
// facts under the current screen rules, which its hit then computes from
// the text.
func (s *State) load(ctx context.Context, cs []*Candidate, withText bool) error {
	err := s.loadWhere(ctx, cs, withText, func(c *Candidate) bool { return c.Doc == nil || withText && !c.hasText })
	if err != nil {
		return err
	}
	return s.loadWhere(ctx, cs, true, func(c *Candidate) bool { return !c.hasText && !hasFacts(c) })
}

func (s *State) loadWhere(ctx context.Context, cs []*Candidate, withText bool, need func(*Candidate) bool) error {
	var nums []search.DocNum
	var todo []*Candidate
	for _, c := range cs {
		if c.hasNum && need(c) {
			if nums == nil {
				nums, todo = make([]search.DocNum, 0, len(cs)), make([]*Candidate, 0, len(cs))
			}
			nums = append(nums, c.Num)
			todo = append(todo, c)
		}
	}
	if len(nums) == 0 {
		return nil
	}
	docs, facts, err := s.Deps.Sparse.Load(ctx, nums, withText)
	if err != nil {
		return err
	}
	for i, c := range todo {
		c.Doc, c.Facts, c.hasText = docs[i], facts[i], withText
	}
	return nil
}

// pack slices the page, packs the token budget and builds cited hits.
func pack(ctx context.Context, s *State) error {
	r := s.Req
	start := min(r.Offset, len(s.Cands))
	end := min(start+r.K, len(s.Cands))
	page := s.Cands[start:end]
	if err := s.load(ctx, page, r.IncludeText); err != nil {
		return err
	}
	tokens := 0
	if r.TokenBudget != nil {
		n := 0
		for _, c := range page {
			t := tokensOf(c)
			if tokens+t > *r.TokenBudget {
				break
			}
			tokens += t
			n++
		}
		if n == 0 && len(page) > 0 {
			s.note("tokenBudget %d is smaller than the best hit (%d tokens); no hit packed", *r.TokenBudget, tokensOf(page[0]))
		}
		page = page[:n]
		end = start + n
	} else {
		for _, c := range page {
			tokens += tokensOf(c)
		}
	}
	s.Page.Tokens = tokens
	if end < len(s.Cands) && r.K > 0 && end > start {
		s.Page.Next = end
	}
	s.Page.Hits = make([]rcp.Hit, 0, len(page))
	parts := make([]hitParts, len(page))
	for i, c := range page {
		s.Page.Hits = append(s.Page.Hits, s.hit(c, &parts[i]))
		if r.Vectors {
			s.Page.Vectors = append(s.Page.Vectors, c.vec)
		}
	}
	if s.observing() {
		s.observe("pack", 1, fmt.Sprintf("packed %s (%s)", wording.Plural(len(page), "hit", "hits"), wording.Plural(tokens, "token", "tokens")), nil)
	}
	return nil
}

// hasFacts reports whether c carries index-time facts under the current
// screen rules.
func hasFacts(c *Candidate) bool { return c.Facts.ScreenRules == trust.RulesVersion }

func tokensOf(c *Candidate) int {
	if hasFacts(c) {
		return c.Facts.Tokens
	}
	return chunk.Tokens(textOf(c))
}

func textOf(c *Candidate) string {
	if c.Doc == nil {
		return ""
	}
	return c.Doc.Text
}

// Internal metadata the engine stores under MetaKey on chunk documents.
const MetaKey = "_rcpd"

// ChunkInfo is stored under meta[MetaKey] of chunks: rune offsets into the
// parent text, the section path and the situating context (contextual).
type ChunkInfo struct {
	Start   int
	End     int
	Page    int // 1-based page of a paged document's chunk (0: unpaged)
	Section []string
	Context string
}

// PageID names page n of document doc (unit "page").
func PageID(doc string, n int) string { return doc + "#p" + strconv.Itoa(n) }

// pageOf is the 1-based page a unit lies on, 0 for a unit of a document
// without pages: only paginated documents (PDF, whose text arrives with
// form feeds between pages, or a document whose meta names its page) have
// page units.
func pageOf(d *search.Document) int {
	if d != nil && d.Source != nil && d.Source.Page > 0 {
		return d.Source.Page
	}
	return 0
}

// ReadChunkInfo decodes meta[MetaKey].
func ReadChunkInfo(meta map[string]any) (ChunkInfo, bool) {
	m, ok := meta[MetaKey].(map[string]any)
	if !ok {
		return ChunkInfo{}, false
	}
	num := func(k string) int {
		switch v := m[k].(type) {
		case float64:
			return int(v)
		case int:
			return v
		case interface{ Int64() (int64, error) }:
			n, _ := v.Int64()
			return int(n)
		}
		return 0
	}
	ci := ChunkInfo{Start: num("start"), End: num("end"), Page: num("page")}
	ci.Context, _ = m["context"].(string)
	if sec, ok := m["section"].([]any); ok {
		for _, x := range sec {
			if str, ok := x.(string); ok {
				ci.Section = append(ci.Section, str)
			}
		}
	}
	return ci, true
}

// CiteSource fills cit's title, source, uri and page from d the way every
// hit cites its unit (page points at storage for the page number): the
// source is meta.source when the document has one (a file's URI, set by
// `rcp index add`), else Source.Name, else wireName. It reports whether d
// was written over the wire (for the trust policy).
func CiteSource(d *search.Document, wireName string, cit *rcp.Citation, page *int) bool {
	cit.Title = d.Title
	wire := true
	if d.Source != nil {
		cit.Source, cit.URI = d.Source.Name, d.Source.URI
		if d.Source.Page > 0 {
			*page = d.Source.Page
			cit.Page = page
		}
		wire = d.Source.Name == wireName
	}
	if src, ok := d.Meta["source"].(string); ok && src != "" {
		cit.Source = src
	}
	if cit.Source == "" {
		cit.Source = wireName
	}
	return wire
}

// UnitSpan returns the rune offsets [start, end) d's citation covers: its
// span of the parent document for a chunk (chunk info), else the whole
// text.
func UnitSpan(d *search.Document) (start, end int) {
	if d.Chunk != nil {
		if ci, ok := ReadChunkInfo(d.Meta); ok {
			return ci.Start, ci.End
		}
	}
	return 0, utf8.RuneCountInString(d.Text)
}

// hitParts holds what one wire hit points to, so that a page allocates
// them at once instead of a handful of small objects per hit.
type hitParts struct {
	conf, trustScore float64
	text             string
	start, end, page int
	suspected        bool
	cit              rcp.Citation
	chunk            rcp.ChunkRef
	trust            rcp.Trust
}

// scoreCount is the number of entries of c's hit.scores.
func scoreCount(c *Candidate) int {
	n := 0
	for _, has := range [...]bool{c.HasSparse, c.HasDense, c.HasFused, c.HasRerank} {
		if has {
			n++
		}
	}
	return n
}

// hit builds the wire hit for c, its parts in p.
func (s *State) hit(c *Candidate, p *hitParts) rcp.Hit {
	r := s.Req
	d := c.Doc
	id := c.ID
	unit := rcp.UnitChunk
	if r.Unit == rcp.UnitDocument || r.Unit == rcp.UnitPage {
		id, unit = c.groupID, r.Unit
	} else if d != nil && d.Chunk == nil {
		unit = rcp.UnitDocument // an unchunked document is its own unit
	}
	h := rcp.Hit{ID: rcp.StringID(id), Score: c.Score, Unit: unit, Modality: rcp.ModalityText}
	if r.Confidence {
		p.conf = c.conf
		h.Confidence = &p.conf
	}
	h.Scores = make(map[string]float64, scoreCount(c))
	if c.HasSparse {
		h.Scores["sparse"] = c.Sparse
	}
	if c.HasDense {
		h.Scores["dense"] = c.Dense
	}
	if c.HasFused {
		h.Scores["fused"] = c.Fused
	}
	if c.HasRerank {
		h.Scores["rerank"] = c.Rerank
	}
	if d == nil {
		return h
	}
	if r.IncludeText {
		p.text = d.Text
		h.Text = &p.text
	}
	if _, internal := d.Meta[MetaKey]; !internal && len(d.Meta) > 0 {
		h.Meta = d.Meta // read for this request alone: no copy
	} else if len(d.Meta) > 1 {
		h.Meta = make(map[string]any, len(d.Meta)-1)
		for k, v := range d.Meta {
			if k != MetaKey {
				h.Meta[k] = v
			}
		}
	}
	cit := &p.cit
	wire := CiteSource(d, s.Deps.WireName, cit, &p.page)
	if d.Chunk != nil {
		p.chunk = rcp.ChunkRef{DocID: d.Chunk.DocID, Index: d.Chunk.Index}
		h.Chunk = &p.chunk
		if ci, ok := ReadChunkInfo(d.Meta); ok {
			p.start, p.end = ci.Start, ci.End
			cit.Start, cit.End = &p.start, &p.end
			h.Chunk.Context = ci.Context
		}
	} else {
		p.start, p.end = 0, c.Facts.Runes
		if !hasFacts(c) {
			p.end = utf8.RuneCountInString(d.Text)
		}
		cit.Start, cit.End = &p.start, &p.end
	}
	h.Citation = cit
	srcName := ""
	if d.Source != nil {
		srcName = d.Source.Name
	}
	t := &p.trust
	t.Level = s.Deps.Trust.Level(srcName, wire)
	if s.Deps.Screen {
		verdict, susp := c.Facts.ScreenScore, c.Facts.Suspected // screened at index time
		if !hasFacts(c) {
			sc := trust.Screen(d.Title + "\n" + d.Text)
			verdict, susp = sc.Score, sc.Suspected
		}
		p.trustScore, p.suspected = 1-verdict, susp // trust.score: higher is more trustworthy
		t.Score = &p.trustScore
		t.InjectionSuspected = &p.suspected
	}
	if v := c.verdict; v != nil && v.Quarantined {
		// Quarantined by client reports (§15.3): advisory, never trusted.
		t.Level = rcp.TrustUntrusted
		if v.Injection {
			yes := true
			t.InjectionSuspected = &yes
		}
	}
	h.Trust = t
	return h
}
