package pipeline

// Stage rerank: the configured reranker rescores the top candidates, then
// recency decays scores by age.

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rcpgo/rcpgo/engine/search"
)

// rerank rescores the top RerankTopN candidates with Deps.Reranker (when
// one is configured), then applies recency decay.
func rerank(ctx context.Context, s *State) error {
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
