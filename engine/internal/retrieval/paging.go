package retrieval

// Paging lists that use dense recall (issue 31). A sparse list is computed
// again at the snapshot its cursor names; dense recall walks the vectors as
// they are now, so the first page of a dense, hybrid, MMR or includeVectors
// list keeps the whole ranked list (pipeline.RunKeeping) and its cursor
// names it: later pages are slices of it (pipeline.Replay), with no hit
// twice and none skipped, whatever was written in between. Kept lists are
// bounded (denseListBytes, least recently used out) and expire
// denseListTTL after their last page, like a past snapshot; a cursor whose
// list is gone gets -32015 ("restart pagination").

import (
	"context"
	"time"

	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
	"github.com/rcpgo/rcpgo/rcp"
)

// Bounds of the kept ranked lists.
const (
	denseListBytes = 64 << 20
	denseListTTL   = 10 * time.Minute
)

// runPaged runs pl's pipeline (under the read lock); a list that uses
// dense recall is kept for its later pages, and served from there.
func (rv *Retriever) runPaged(ctx context.Context, deps *pipeline.Deps, pl *retrievePlan, usesDense bool) (*pipeline.Page, string, error) {
	req := pl.req
	if usesDense && pl.fromCursor && pl.list != "" {
		r, ok := rv.lists.Get(pl.list)
		if !ok {
			return nil, "", pl.snapshotGone("its ranked list is no longer kept (dense pages are kept 10 minutes after the last one, 64 MiB in all)", "")
		}
		page, err := pipeline.Replay(ctx, deps, req, r)
		return page, "", err
	}
	if usesDense && req.Version != "" && req.Version != rv.ix.Version() {
		return nil, "", pl.snapshotGone("the index changed and dense retrieval serves only the current snapshot",
			"dense retrieval serves only the current snapshot")
	}
	if usesDense && req.Version == "" {
		req.Version = rv.ix.Version() // the snapshot the page is resolved against (indexVersion; a remote backend names its collection)
	}
	if !usesDense || pl.agentic != nil {
		return rv.runPlanned(ctx, deps, req, pl.agentic)
	}
	if snap := rv.agentic.Feedback().Snapshot(); snap.Len() > 0 {
		deps.Feedback = snap.Verdict
	}
	page, r, err := pipeline.RunKeeping(ctx, deps, req)
	if err == nil && page.Next >= 0 {
		pl.list = rv.lists.Put(r)
	}
	return page, "", err
}

// pagedStructured pages the hits of a graph unit or of tree-node above the
// leaves, which rank(n) ranks (the first n): the first page ranks the
// request's candidateK and keeps the list when more hits follow; a
// cursor's pages are slices of the kept list (the graph and the tree
// change under writes like the dense vectors).
func (rv *Retriever) pagedStructured(pl *retrievePlan, k int, rank func(n int) (*rcp.RetrieveResult, error)) (*rcp.RetrieveResult, error) {
	if err := planCursor(pl); err != nil {
		return nil, err
	}
	var res *rcp.RetrieveResult
	if pl.fromCursor {
		r, ok := rv.lists.Get(pl.list)
		if !ok || pl.list == "" {
			return nil, pl.snapshotGone("its ranked list is no longer kept (pages are kept 10 minutes after the last one, 64 MiB in all)", "")
		}
		n := len(r.Hits())
		lat := float64(time.Since(pl.started).Microseconds()) / 1000
		res = &rcp.RetrieveResult{Hits: r.Hits(), IndexVersion: pl.req.Version, Usage: &rcp.Usage{Candidates: &n, LatencyMs: &lat, Notes: pl.notes}}
	} else {
		var err error
		if res, err = rank(max(k, pl.req.CandidateK)); err != nil {
			return nil, err
		}
	}
	all := res.Hits
	start := min(pl.req.Offset, len(all))
	end := min(start+k, len(all))
	res.Hits = all[start:end]
	if end < len(all) {
		if !pl.fromCursor {
			pl.list = rv.lists.Put(pipeline.KeepHits(all))
		}
		res.NextCursor = encodeCursor(cursor{Version: res.IndexVersion, Offset: end, Hash: pl.hash, List: pl.list})
	}
	return res, nil
}

// DropLists forgets every kept ranked list (their cursors expire): the
// engine's tests, or an operator freeing their memory.
func (rv *Retriever) DropLists() { rv.lists = pipeline.NewLists(denseListBytes, denseListTTL) }
