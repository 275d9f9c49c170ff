package derive

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/ann"
	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/embed/lsa"
	"github.com/rcpgo/rcpgo/engine/internal/fault"
	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
	"github.com/rcpgo/rcpgo/engine/query"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp"
)

// Serving side of the dense lifecycle (deriver.go builds it).
//
// Capabilities are frozen per session (§13.2): a session negotiated at a
// moment without a published generation is offered sparse only for its
// lifetime; one negotiated under a generation keeps its embed.identity, and
// once a refit has replaced that identity its dense calls (dense/hybrid
// retrieve, MMR, includeVectors, embed) fail with -32010 naming the new
// identity, so the client re-initializes. Sparse keeps working. New
// sessions are offered the newest generation without a restart.
//
// Units whose dense op the deriver has not yet applied are not in the
// vector index: dense recall misses them (hybrid still finds them through
// sparse), and retrieve says how many writes are pending in usage.notes.

// For returns the generation a request of a session with capabilities
// caps may use: the published one or one kept for the session
// (retain.go), once loaded.
func (d *Dense) For(ctx context.Context, caps rcp.Capabilities) (*Generation, error) {
	if caps.Embed == nil {
		return nil, rcp.NewError(rcp.CodeCapabilityMissing, "dense retrieval is not advertised to this session")
	}
	g, ok := d.generationOf(caps.Embed.Identity)
	if ok {
		// Right after a start the model and checkpoint may still be loading.
		if err := d.awaitLoaded(ctx, g); err != nil {
			return nil, err
		}
		if g.loadErr == nil {
			return g, nil
		}
	}
	return nil, d.notServed(caps.Embed.Identity)
}

// Backlog is the number of dense ops not yet applied to g.
func (d *Dense) Backlog(g *Generation) uint64 {
	if last, done := d.opSeq.Load(), g.applied.Load(); last > done {
		return last - done
	}
	return 0
}

// denseBackend adapts a generation to pipeline.Dense for one request.
type denseBackend struct {
	d *Dense
	g *Generation
}

// damaged answers a read that found the generation's mapped model or
// checkpoint damaged on disk (each block is checked when first read):
// the generation is withdrawn at once — the deriver rebuilds it — and the
// request gets -32010. Other errors pass through.
func (b denseBackend) damaged(err error) error {
	if !errors.Is(err, ann.ErrCorrupt) && !errors.Is(err, lsa.ErrCorrupt) {
		return err
	}
	b.d.kept.Withdraw(b.g)
	if b.d.gen.CompareAndSwap(b.g, nil) {
		b.d.log.Warn("engine: dense generation damaged; rebuilding it in the background", "generation", b.g.n, "err", err)
		b.d.deriver.notify()
	}
	return &fault.Error{Err: ErrDamaged, Detail: "re-initialize the session once it is offered again (sparse retrieval is unaffected)"}
}

func (b denseBackend) Recall(ctx context.Context, text string, k, ef int, keep func(*search.Document) bool) ([]*pipeline.Candidate, error) {
	qv, err := b.g.model.Embed(ctx, []string{query.RankText(text)}, embed.KindQuery) // "~N" is syntax
	if err != nil {
		return nil, b.damaged(fmt.Errorf("engine: embedding query: %w", err))
	}
	if len(qv) != 1 || zero(qv[0]) {
		return nil, nil
	}
	if lk, ok := b.d.ix.(numLookup); ok && keep == nil {
		return b.recallStored(ctx, lk, qv[0], k, ef)
	}
	var out []*pipeline.Candidate
	err = b.d.db.View(func(tx *bolt.Tx) error {
		keys := tx.Bucket(bucketDenseKeys)
		docs := map[uint64]*search.Document{}
		// resolve maps an ann key to its live document; a unit the index
		// lacks (deleted, or lost to a crash) resolves to nil and is dropped.
		resolve := func(key uint64) *search.Document {
			doc, ok := docs[key]
			if !ok {
				if id := keys.Get(be64(key)); id != nil {
					doc, _ = b.d.ix.Get(ctx, string(id))
				}
				docs[key] = doc
			}
			return doc
		}
		opts := ann.SearchOptions{Ef: ef}
		if keep != nil {
			// ann evaluates the filter inside its walk, on this goroutine.
			opts.Filter = func(key uint64) bool {
				doc := resolve(key)
				return doc != nil && keep(doc)
			}
		}
		res, err := b.g.ann.Search(qv[0], k, opts)
		if err != nil {
			return b.damaged(fmt.Errorf("engine: dense search: %w", err))
		}
		for _, r := range res {
			if doc := resolve(r.ID); doc != nil && r.Score > 0 {
				out = append(out, &pipeline.Candidate{ID: doc.ID, Doc: doc, Dense: float64(r.Score), HasDense: true, Score: float64(r.Score)})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortDense(out)
	return out, nil
}

// recallStored is Recall without a filter: nothing needs a document while
// the graph is walked, so the hits become stored candidates (id and
// document number) and the pipeline loads only the documents it uses —
// not all k with their texts. A hit's number comes from keyNums and is
// checked against the index's current snapshot in memory; only keys not
// seen before, or whose document was replaced or deleted since, are looked
// up in engine.db and the document store.
func (b denseBackend) recallStored(ctx context.Context, lk numLookup, qv []float32, k, ef int) ([]*pipeline.Candidate, error) {
	res, err := b.g.ann.Search(qv, k, ann.SearchOptions{Ef: ef})
	if err != nil {
		return nil, b.damaged(fmt.Errorf("engine: dense search: %w", err))
	}
	nums := make([]search.DocNum, len(res))
	b.d.keyNums.load(res, nums)
	ids, err := lk.LiveIDs(nums)
	if err != nil {
		return nil, err
	}
	if err := b.resolveKeys(ctx, lk, res, nums, ids); err != nil {
		return nil, err
	}
	cands := make([]pipeline.Candidate, len(res)) // one allocation for all
	out := make([]*pipeline.Candidate, 0, len(res))
	for i, r := range res {
		// A unit the index lacks (deleted, or lost to a crash) is dropped.
		if ids[i] != "" && r.Score > 0 {
			cands[i] = pipeline.StoredDense(ids[i], nums[i], float64(r.Score))
			out = append(out, &cands[i])
		}
	}
	sortDense(out)
	return out, nil
}

// resolveKeys looks up the hits keyNums could not resolve (ids[i] == "")
// by their keys' ids: the id in engine.db, its live number in the index
// (one read transaction each); it remembers the numbers found.
func (b denseBackend) resolveKeys(ctx context.Context, lk numLookup, res []ann.Result, nums []search.DocNum, ids []string) error {
	var miss []int
	for i, r := range res {
		if ids[i] == "" && r.Score > 0 {
			miss = append(miss, i)
		}
	}
	if len(miss) == 0 {
		return nil
	}
	var missIDs []string
	var maxKey uint64
	err := b.d.db.View(func(tx *bolt.Tx) error {
		keys := tx.Bucket(bucketDenseKeys)
		found := miss[:0]
		for _, i := range miss {
			if id := keys.Get(be64(res[i].ID)); id != nil {
				found, missIDs = append(found, i), append(missIDs, string(id))
			}
		}
		miss, maxKey = found, keys.Sequence()
		return nil
	})
	if err != nil || len(miss) == 0 {
		return err
	}
	found, err := lk.Nums(ctx, missIDs)
	if err != nil {
		return err
	}
	for j, i := range miss {
		if found[j] != 0 {
			nums[i], ids[i] = found[j], missIDs[j]
			b.d.keyNums.store(res[i].ID, found[j], maxKey)
		}
	}
	return nil
}

// numLookup is the embedded index's id → document number table
// (index.Index.Nums) and its in-memory check of remembered numbers
// (index.Index.LiveIDs).
type numLookup interface {
	Nums(ctx context.Context, ids []string) ([]search.DocNum, error)
	LiveIDs(nums []search.DocNum) ([]string, error)
}

// sortDense orders dense candidates best first, ties by id.
func sortDense(out []*pipeline.Candidate) {
	slices.SortStableFunc(out, func(a, c *pipeline.Candidate) int {
		if x := cmp.Compare(c.Dense, a.Dense); x != 0 {
			return x
		}
		return strings.Compare(a.ID, c.ID)
	})
}

func (b denseBackend) Vectors(ctx context.Context, ids []string) ([][]float32, error) {
	out := make([][]float32, len(ids))
	err := b.d.db.View(func(tx *bolt.Tx) error {
		keys := tx.Bucket(bucketDenseIDs)
		for i, id := range ids {
			if k := keys.Get([]byte(id)); len(k) == 8 {
				out[i], _ = b.g.ann.Vector(binary.BigEndian.Uint64(k))
			}
			if out[i] == nil {
				out[i] = make([]float32, b.g.info.dim)
			}
		}
		return nil
	})
	return out, err
}
