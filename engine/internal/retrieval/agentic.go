package retrieval

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rcpgo/rcpgo/engine/chunk"
	"github.com/rcpgo/rcpgo/engine/internal/agentic"
	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
	"github.com/rcpgo/rcpgo/engine/session"
	"github.com/rcpgo/rcpgo/engine/transform"
	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/fusion"
)

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
func (rv *Retriever) planAgentic(p *retrieveParams) (_ *agenticPlan, note string, _ error) {
	var plan agenticPlan
	if p.Rewrite != nil && *p.Rewrite != "" {
		m := string(*p.Rewrite)
		if !slices.Contains(rv.agentic.Methods(), m) || m == transform.HyDE {
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
	if p.Meta.Get(agentic.MetaPRF, &prf) && prf {
		plan.prf = true
	}
	if p.SessionID != "" {
		if len(p.SessionID) > session.MaxIDBytes {
			return nil, "", rcp.InvalidParams("sessionId", "sessionId is %d bytes; at most %d", len(p.SessionID), session.MaxIDBytes)
		}
		plan.session = p.SessionID // sessions dedup (session.dedup is advertised)
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
	if p.Meta.Get(agentic.MetaPRF, &prf) && prf {
		b.WriteString("|prf")
	}
	return b.String()
}

// runPlanned runs the pipeline for req under plan and returns the page and
// the rewritten query ("" when not rewritten).
func (rv *Retriever) runPlanned(ctx context.Context, deps *pipeline.Deps, req *pipeline.Request, plan *agenticPlan) (*pipeline.Page, string, error) {
	if snap := rv.agentic.Feedback().Snapshot(); snap.Len() > 0 {
		deps.Feedback = snap.Verdict
	}
	if plan == nil {
		page, err := pipeline.Run(ctx, deps, req)
		return page, "", err
	}
	if plan.session != "" {
		plan.session = agentic.SessionKey(ctx, plan.session)
	}
	queries := []string{req.Query}
	if plan.method != "" {
		var err error
		if queries, err = rv.planQueries(ctx, plan, req.Query); err != nil {
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
			if expanded[i], err = rv.prfQuery(ctx, deps, req, q); err != nil {
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
		remembered = rv.agentic.Sessions().Remembered(plan.session)
		req.K = min(req.K+remembered, rv.opts.MaxCandidates)
		req.IncludeText = true // content hashes
	}
	var page *pipeline.Page
	var err error
	if len(queries) == 1 {
		sub := *req
		sub.Query = queries[0]
		page, err = pipeline.Run(ctx, deps, &sub)
	} else {
		page, err = rv.runFused(ctx, deps, req, queries)
	}
	if err != nil {
		return nil, "", err
	}
	page.Notes = append(page.Notes, notes...)
	if plan.session != "" {
		rv.dedup(page, plan.session, k, remembered)
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
func (rv *Retriever) planQueries(ctx context.Context, plan *agenticPlan, query string) ([]string, error) {
	if len(query) > transform.MaxQueryBytes { // the cap of query/transform: each word is corrected
		return nil, rcp.InvalidParams("query", "a query rewritten with %q is at most %d bytes; this one is %d",
			plan.method, transform.MaxQueryBytes, len(query))
	}
	key := fmt.Sprintf("%s\x00%d\x00%s", plan.method, plan.seed, query)
	if plan.session != "" {
		if qs, ok := rv.agentic.Sessions().Plan(plan.session, key); ok {
			return qs, nil
		}
	}
	t, err := rv.agentic.Transformer(ctx)
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
		rv.agentic.Sessions().SetPlan(plan.session, key, res.Queries)
	}
	return res.Queries, nil
}

// prfQuery expands q from the top hits of a first sparse pass at the same
// snapshot.
func (rv *Retriever) prfQuery(ctx context.Context, deps *pipeline.Deps, req *pipeline.Request, q string) (string, error) {
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
	t, err := rv.agentic.Transformer(ctx)
	if err != nil {
		return "", err
	}
	return t.PRF(q, texts, scores, transform.DefaultPRF), nil
}

// runFused retrieves every sub-query at one snapshot and fuses the ranked
// lists with RRF (§16.3); the page is cut from the fused list.
func (rv *Retriever) runFused(ctx context.Context, deps *pipeline.Deps, req *pipeline.Request, queries []string) (*pipeline.Page, error) {
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
func (rv *Retriever) dedup(page *pipeline.Page, sid string, k, remembered int) {
	s := rv.agentic.Sessions()
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
