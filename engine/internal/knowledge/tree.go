package knowledge

// The RAPTOR tree behind retrieve unit "tree-node" (§7.7.2), kept with the
// knowledge graph (Config.Graph) when a dense encoder exists: package tree
// clusters the units' dense vectors (LSA or the configured encoder)
// level by level, each cluster with an extractive summary. Level 0 are
// the units themselves.
//
// Upkeep is a scheduled full rebuild, not incremental: clustering is
// global (one insert can move centroids everywhere) and a rebuild is cheap
// next to ingest (docs/rcpd.md gives the measured cost). The keeper
// builds the first tree as soon as every write is embedded (at Open for a
// preload), then rebuilds once the index has changed and stayed quiet for
// treeQuiet with every write embedded, or when the tree has been stale for
// treeMaxLag under steady writes; it saves each tree atomically (tree.snap) and loads
// it at start. Queries read the current tree and never wait; a tree lags
// the index by at most a rebuild, and its hits only count live units.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rcpgo/rcpgo/engine/internal/tree"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp"
)

const (
	treeSnapshot = "tree.snap"
	treePoll     = 2 * time.Second
	treeQuiet    = 10 * time.Second
	treeMaxLag   = 5 * time.Minute
	// treeCandidates is how many units a tree-node query scores its
	// clusters from.
	treeCandidates = 200
)

// raptor keeps the summary tree current in the background.
type raptor struct {
	kn     *Knowledge
	path   string
	llm    treeSummaries // model summaries by cluster (Config.Chat)
	cur    atomic.Pointer[tree.Tree]
	syncs  chan chan error
	cancel context.CancelFunc
	done   chan struct{}
}

// openTree loads the saved tree (when the graph and a dense encoder are
// on) or drops a stale snapshot (when not: the next enable rebuilds).
func (kn *Knowledge) openTree() {
	path := filepath.Join(kn.opts.Dir, treeSnapshot)
	if kn.dense == nil || !kn.opts.DenseLog {
		if !kn.opts.ReadOnly {
			_ = os.Remove(path)
		}
		return
	}
	rt := &raptor{kn: kn, path: path, syncs: make(chan chan error), done: make(chan struct{})}
	t, err := tree.Load(path)
	switch {
	case err == nil:
		rt.cur.Store(t)
	case !errors.Is(err, fs.ErrNotExist):
		kn.log.Warn("tree: snapshot unusable; rebuilding", "err", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rt.cancel = cancel
	kn.rt = rt
	if rt.cur.Load() == nil && kn.opts.Preloaded && rt.embedded() {
		// Like its embedding, the preload's tree is ready when Open returns.
		if err := rt.rebuild(ctx); err != nil {
			kn.log.Error("tree: first build failed", "err", err)
		}
	}
	go rt.run(ctx)
}

func (rt *raptor) close() {
	rt.cancel()
	<-rt.done
}

// SyncTree waits until every write is embedded and rebuilds the tree now
// (tests, benchmarks).
func (kn *Knowledge) SyncTree(ctx context.Context) error {
	if kn.rt == nil {
		return errors.New("engine: the tree is off (it needs the graph and a dense encoder)")
	}
	ch := make(chan error, 1)
	select {
	case kn.rt.syncs <- ch:
	case <-ctx.Done():
		return ctx.Err()
	case <-kn.rt.done:
		return errors.New("engine: tree keeper stopped")
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Tree is the tree queries use (nil: none built yet, or off).
func (kn *Knowledge) Tree() *tree.Tree {
	if kn == nil || kn.rt == nil {
		return nil
	}
	return kn.rt.cur.Load()
}

func (rt *raptor) run(ctx context.Context) {
	defer close(rt.done)
	tick := time.NewTicker(treePoll)
	defer tick.Stop()
	seen, changed, stale := "", time.Now(), time.Time{}
	for {
		var waiter chan error
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case waiter = <-rt.syncs:
		}
		now := time.Now()
		if v := rt.kn.ix.Version(); v != seen {
			seen, changed = v, now
		}
		if waiter != nil {
			err := rt.kn.dense.WaitIdle(ctx)
			if t := rt.cur.Load(); err == nil && (t == nil || t.Version != rt.kn.ix.Version()) {
				err = rt.rebuild(ctx) // (requests that queued behind a rebuild find the tree current)
			}
			waiter <- err
			continue
		}
		t := rt.cur.Load()
		if t != nil && t.Version == seen {
			stale = time.Time{}
			continue
		}
		if stale.IsZero() {
			stale = now
		}
		// The first tree is built as soon as every write is embedded; later
		// ones once writes pause, or after treeMaxLag of steady writes.
		due := rt.embedded() && (t == nil || now.Sub(changed) >= treeQuiet)
		if !due && (t == nil || now.Sub(stale) < treeMaxLag) {
			continue
		}
		if err := rt.rebuild(ctx); err != nil && ctx.Err() == nil {
			rt.kn.log.Error("tree: rebuild failed", "err", err)
		}
	}
}

// embedded reports whether the published generation has every write.
func (rt *raptor) embedded() bool {
	return rt.kn.dense.Embedded()
}

// rebuild clusters the current units and publishes and saves the tree.
func (rt *raptor) rebuild(ctx context.Context) error {
	start := time.Now()
	version := rt.kn.ix.Version() // read first: later writes make the tree stale
	leaves, err := rt.kn.dense.Leaves(ctx)
	if err != nil || leaves == nil {
		return err
	}
	texts := map[string]string{}
	if rt.kn.opts.Chat != nil {
		for _, l := range leaves {
			texts[l.ID] = l.Text
		}
	}
	t, err := tree.Build(ctx, version, leaves, tree.Options{})
	if err != nil {
		return err
	}
	leaves = nil
	calls := rt.kn.summarizeTree(ctx, &rt.llm, t, func(id string) string { return texts[id] })
	rt.cur.Store(t)
	if err := t.Save(rt.path); err != nil {
		return err
	}
	rt.kn.log.Info("tree: rebuilt", "leaves", t.Leaves(), "depth", t.Depth(), "modelCalls", calls, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// WithTree adds unit tree-node to a description once a tree exists, and
// retrieve.levels as they exist now (withLevels).
func (kn *Knowledge) WithTree(d rcp.Description) rcp.Description {
	t := kn.Tree()
	levels := kn.levels(t)
	tree := t != nil && t.Depth() >= 2
	if d.Capabilities.Retrieve == nil || !tree && levels == d.Capabilities.Retrieve.Levels {
		return d
	}
	ret := *d.Capabilities.Retrieve
	if tree {
		ret.Units = append(slices.Clip(ret.Units), rcp.UnitTreeNode)
	}
	ret.Levels = levels
	d.Capabilities.Retrieve = &ret
	return d
}

// retrieveTreeNode answers unit "tree-node" at level ≥ 1: the level's
// clusters ranked from the sparse scores of the query's top units.
func (kn *Knowledge) retrieveTreeNode(ctx context.Context, t *tree.Tree, query string, level, k int, notes *[]string, started time.Time) (*rcp.RetrieveResult, error) {
	if level >= t.Depth() {
		*notes = append(*notes, fmt.Sprintf("level %d clamped to the tree's top level %d", level, t.Depth()-1))
		level = t.Depth() - 1
	}
	res, err := kn.ix.Search(ctx, search.Query{Text: query, K: treeCandidates, SkipDocs: true})
	if err != nil {
		return nil, fmt.Errorf("engine: tree-node: %w", err)
	}
	scores := make(map[string]float64, len(res.Hits))
	for _, h := range res.Hits {
		scores[h.ID] = h.Score
	}
	hits := []rcp.Hit{}
	for _, n := range t.Rank(level, scores, k) {
		text, lv, by := n.Summary, n.Level, "extractive"
		if n.Model {
			by = "model"
		}
		h := rcp.Hit{ID: rcp.StringID(n.ID), Score: n.Score, Text: &text, Unit: rcp.UnitTreeNode, Level: &lv,
			Modality: rcp.ModalityText, Meta: map[string]any{"summary": by}}
		// Lineage never names a deleted unit: the tree lags deletes.
		leaves, err := kn.citeUnits(ctx, &h, n.Central)
		if err != nil {
			return nil, err
		}
		h.Provenance = &rcp.Provenance{Leaves: leaves}
		hits = append(hits, h)
	}
	if t.Version != kn.ix.Version() {
		*notes = append(*notes, "the tree is being rebuilt for recent writes; clusters reflect the index as of the last rebuild")
	}
	lat := float64(time.Since(started).Microseconds()) / 1000
	n := len(res.Hits)
	return &rcp.RetrieveResult{Hits: hits, IndexVersion: kn.ix.Version(),
		Usage: &rcp.Usage{Candidates: &n, LatencyMs: &lat, Notes: *notes}}, nil
}
