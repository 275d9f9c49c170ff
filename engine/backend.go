package engine

import (
	"context"

	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/pipeline"
	"github.com/rcpgo/rcpgo/rcp/filter"
)

// Backend is the seam between the engine and where documents live: the
// write path (Add, Delete), sparse recall with a compiled filter (Search,
// WordMax, CompileFilter; pipeline.Sparse) and document fetches (Get,
// Load). The engine keeps everything else: the protocol, request planning,
// chunking, the pipeline stages after recall (fusion, rerank, MMR,
// packing, citations, the trust screen), sessions and feedback.
//
// The embedded index (*index.Index, opened in DIR/index) is the default
// backend; engine/weaviate serves the same seam on a Weaviate cluster
// (Config.Backend). A backend that also stores vectors implements
// DenseBackend.
type Backend interface {
	pipeline.Sparse
	// CompileFilter turns a validated filter tree into the backend's filter
	// (passed back to Search in index.Query.Filter).
	CompileFilter(n *filter.Node) (index.Filter, error)
	// Get returns the stored document (or chunk) id, nil when absent.
	Get(ctx context.Context, id string) (*index.Document, error)
	// Add writes docs (upserting by id) durably before it returns. A
	// Config.Backend also drops what the write replaces — a document's
	// former chunks, or its whole form when it is now chunked; the engine
	// does that itself for the embedded index.
	Add(ctx context.Context, docs []index.Document) ([]string, error)
	// Delete removes ids and returns how many existed.
	Delete(ctx context.Context, ids []string) (int, error)
	// Version names the current snapshot (RCP indexVersion).
	Version() string
	Stats() index.Stats
	Close() error
}

var _ Backend = (*index.Index)(nil)

// preparer is a Backend that can do an add's CPU work (analysis,
// screening, record encoding) ahead of the engine's write lock and commit
// the result under it; the embedded index does. Other backends' Add runs
// under the lock.
type preparer interface {
	Prepare(ctx context.Context, docs []index.Document) (*index.Batch, error)
	Commit(ctx context.Context, b *index.Batch) ([]string, error)
}

var _ preparer = (*index.Index)(nil)

// DenseBackend is a Backend that stores vectors itself: it embeds what it
// is given at Add with Provider and answers dense recall with the
// request's filter tree. With such a backend (Config.Backend) the
// engine's own dense machinery — the dense log, the deriver, HNSW
// generations — stays off, and Provider's identity is the one published
// generation.
type DenseBackend interface {
	Backend
	// Provider is the encoder (nil: sparse only).
	Provider() embed.Provider
	// DenseRecall returns up to k units most similar to query, best first
	// (ties by id), with strictly positive similarity and Doc set,
	// restricted by f (nil: no filter).
	DenseRecall(ctx context.Context, query string, k int, f *filter.Node) ([]*pipeline.Candidate, error)
	// Vectors returns the stored vectors of ids (zero vectors for unknown
	// ids).
	Vectors(ctx context.Context, ids []string) ([][]float32, error)
}

// remoteDense adapts a DenseBackend to pipeline.Dense for one request.
type remoteDense struct {
	b      DenseBackend
	filter *filter.Node
}

func (r remoteDense) Recall(ctx context.Context, query string, k, _ int, _ func(*index.Document) bool) ([]*pipeline.Candidate, error) {
	return r.b.DenseRecall(ctx, query, k, r.filter)
}

func (r remoteDense) Vectors(ctx context.Context, ids []string) ([][]float32, error) {
	return r.b.Vectors(ctx, ids)
}

// openRemoteDense publishes the dense generation of a DenseBackend: its
// encoder, ready at once (the vectors live in the backend).
func (e *Engine) openRemoteDense() {
	db, ok := e.cfg.Backend.(DenseBackend)
	if !ok || db.Provider() == nil {
		return
	}
	e.remote = db
	g := newGeneration(0, db.Provider(), "", nil)
	g.desc = e.describe(g)
	e.gen.Store(g)
	e.keep(g)
}

// denseDeps is the pipeline's dense backend for one request under
// generation g.
func (e *Engine) denseDeps(g *generation, f *filter.Node) pipeline.Dense {
	if e.remote != nil {
		return remoteDense{b: e.remote, filter: f}
	}
	return denseBackend{e: e, g: g}
}
