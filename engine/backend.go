package engine

import (
	"context"

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
	// Add writes docs (upserting by id) durably before it returns.
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
