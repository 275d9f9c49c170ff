package pipeline

// Stage recall: candidates from the sparse and/or dense backend.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rcpgo/rcpgo/engine/query"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp"
)

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
	s.Page.Notes = append(s.Page.Notes, res.Notes...)
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
