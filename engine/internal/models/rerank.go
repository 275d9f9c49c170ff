package models

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/rcpgo/rcpgo/engine/internal/fault"
	"github.com/rcpgo/rcpgo/rcp"
)

// Rerank serves rerank (§7.6) with the configured reranker.
func (m *Models) Rerank(ctx context.Context, p *rcp.RerankParams) (*rcp.RerankResult, error) {
	if p.Query.IsZero() {
		return nil, rcp.InvalidParams("query", "query is required")
	}
	if err := m.Fetch.Resolve(ctx, p.Query.Blocks, "query"); err != nil {
		return nil, err
	}
	passages, field := p.Passages, "passages"
	if passages == nil {
		passages, field = p.Documents, "documents"
	}
	if passages == nil {
		return nil, rcp.InvalidParams("passages", "passages is required")
	}
	if len(passages) > m.RerankMax {
		return nil, &fault.Error{Err: ErrTooLarge, Message: fmt.Sprintf("at most %d passages (rerank.maxCandidates)", m.RerankMax),
			Field: field, Detail: fmt.Sprintf("%d passages > %d", len(passages), m.RerankMax)}
	}
	texts := make([]string, len(passages))
	for i, c := range passages {
		if err := c.Validate(); err != nil {
			return nil, rcp.InvalidParams(fmt.Sprintf("%s[%d]", field, i), "%v", err)
		}
		if !c.IsText() {
			return nil, rcp.OptionUnsupported(c.Type, "%s[%d]: content of type %q is not supported", field, i, c.Type)
		}
	}
	if err := m.Fetch.Resolve(ctx, passages, field); err != nil {
		return nil, err
	}
	for i, c := range passages {
		texts[i] = c.Text
	}
	if p.Method != "" && p.Method != m.RerankMethod {
		return nil, rcp.OptionUnsupported(p.Method, "rerank method %q is not advertised", p.Method)
	}
	if p.Model != "" && p.Model != m.Reranker.Identity() {
		return nil, rcp.OptionUnsupported(p.Model, "rerank model %q is not advertised", p.Model)
	}
	if p.TopN != nil && *p.TopN < 0 {
		return nil, rcp.InvalidParams("topN", "topN must be a non-negative integer")
	}
	res := &rcp.RerankResult{Scores: []float64{}}
	if len(texts) > 0 {
		scores, err := m.Reranker.Score(ctx, p.Query.String(), texts)
		if err != nil {
			return nil, fmt.Errorf("engine: rerank: %w", err)
		}
		if len(scores) != len(texts) {
			return nil, fmt.Errorf("engine: rerank: %d scores for %d passages", len(scores), len(texts))
		}
		res.Scores = make([]float64, len(scores))
		for i, s := range scores {
			res.Scores[i] = float64(s)
		}
	}
	order := make([]int, len(res.Scores))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(res.Scores[b], res.Scores[a]) })
	if p.TopN != nil && *p.TopN < len(order) {
		order = order[:*p.TopN]
	}
	res.Order = order
	res.Results = make([]rcp.RerankScore, len(order))
	for i, j := range order {
		res.Results[i] = rcp.RerankScore{Index: j, Score: res.Scores[j]}
	}
	n := len(texts)
	res.Usage = &rcp.Usage{Reranked: &n}
	return res, nil
}
