package derive

import (
	"context"

	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp/filter"
)

// remoteDense adapts a DenseBackend to pipeline.Dense for one request.
type remoteDense struct {
	b      search.DenseBackend
	filter *filter.Node
}

func (r remoteDense) Recall(ctx context.Context, query string, k, _ int, _ func(*search.Document) bool) ([]*pipeline.Candidate, error) {
	hits, err := r.b.DenseRecall(ctx, query, k, r.filter)
	if err != nil {
		return nil, err
	}
	cands := make([]pipeline.Candidate, len(hits)) // one allocation for all
	out := make([]*pipeline.Candidate, len(hits))
	for i, h := range hits {
		cands[i] = pipeline.Candidate{ID: h.ID, Doc: h.Doc, Dense: h.Score, HasDense: true, Score: h.Score}
		out[i] = &cands[i]
	}
	return out, nil
}

func (r remoteDense) Vectors(ctx context.Context, ids []string) ([][]float32, error) {
	return r.b.Vectors(ctx, ids)
}

// OpenRemote publishes the dense generation of a DenseBackend: its
// encoder, ready at once (the vectors live in the backend). It is nil when
// b stores no vectors.
func OpenRemote(b search.Backend, opts Options) *Dense {
	db, ok := b.(search.DenseBackend)
	if !ok || db.Provider() == nil {
		return nil
	}
	d := newDense(opts)
	d.remote = db
	g := newGeneration(0, db.Provider(), "", nil)
	d.gen.Store(g)
	d.keep(g)
	return d
}

// Recall is the pipeline's dense backend for one request under generation
// g, restricted by f (a remote backend applies it itself).
func (d *Dense) Recall(g *Generation, f *filter.Node) pipeline.Dense {
	if d.remote != nil {
		return remoteDense{b: d.remote, filter: f}
	}
	return denseBackend{d: d, g: g}
}
