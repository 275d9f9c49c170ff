package search

import (
	"context"

	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/rcp/filter"
)

// Searcher is sparse recall. Search ranks documents for a query (a
// pipeline searches with SkipDocs; a backend may still return Hit.Doc,
// with its text: such candidates are never loaded again); Load reads the
// stored documents of the candidates a later stage looks at — metadata
// for the whole list only when it needs it, texts for the page alone.
type Searcher interface {
	Search(ctx context.Context, q Query) (*Result, error)
	Load(ctx context.Context, nums []DocNum, withText bool) ([]*Document, []Facts, error)
	// WordMax is the best score of the word alone at version (the top-1
	// score of a search for it).
	WordMax(ctx context.Context, version, word string) (float64, error)
}

// Backend is where documents live: the write path (Add, Delete), sparse
// recall with a compiled filter (Searcher, CompileFilter) and document
// fetches (Get, Load). The engine keeps everything else: the protocol,
// request planning, chunking, the pipeline stages after recall (fusion,
// rerank, MMR, packing, citations, the trust screen), sessions and
// feedback.
//
// The embedded index (engine/index, opened in DIR/index) is the default
// backend; engine/weaviate serves the same seam on a Weaviate cluster
// (engine.Config.Backend). A backend that also stores vectors implements
// DenseBackend.
type Backend interface {
	Searcher
	// CompileFilter turns a validated filter tree into the backend's filter
	// (passed back to Search in Query.Filter).
	CompileFilter(n *filter.Node) (Filter, error)
	// Get returns the stored document (or chunk) id, nil when absent.
	Get(ctx context.Context, id string) (*Document, error)
	// Add writes docs (upserting by id) durably before it returns. A
	// backend other than the embedded index also drops what the write
	// replaces — a document's former chunks, or its whole form when it is
	// now chunked; the engine does that itself for the embedded index.
	Add(ctx context.Context, docs []Document) ([]string, error)
	// Delete removes ids and returns how many existed.
	Delete(ctx context.Context, ids []string) (int, error)
	// Version names the current snapshot (RCP indexVersion).
	Version() string
	Stats() Stats
	Close() error
}

// DenseBackend is a Backend that stores vectors itself: it embeds what it
// is given at Add with Provider and answers dense recall with the
// request's filter tree. With such a backend the engine's own dense
// machinery — the dense log, the deriver, HNSW generations — stays off,
// and Provider's identity is the one published generation.
type DenseBackend interface {
	Backend
	// Provider is the encoder (nil: sparse only).
	Provider() embed.Provider
	// DenseRecall returns up to k units most similar to query, best first
	// (ties by id), with strictly positive similarity (Hit.Score) and
	// Hit.Doc set, restricted by f (nil: no filter).
	DenseRecall(ctx context.Context, query string, k int, f *filter.Node) ([]Hit, error)
	// Vectors returns the stored vectors of ids (zero vectors for unknown
	// ids).
	Vectors(ctx context.Context, ids []string) ([][]float32, error)
}

// Batch is an add a Preparer has validated and analysed ahead of the
// engine's write lock, for its Commit.
type Batch interface {
	// SetNames makes Commit record names with the batch, in the same
	// transaction: for a caller that commits state derived from these
	// documents elsewhere at the same time, and after a crash must know
	// which documents that state may lag on.
	SetNames(names []string)
}

// Preparer is a Backend that can do an add's CPU work (analysis,
// screening, record encoding) ahead of the engine's write lock and commit
// the result under it; the embedded index does. Other backends' Add runs
// under the lock.
type Preparer interface {
	Prepare(ctx context.Context, docs []Document) (Batch, error)
	Commit(ctx context.Context, b Batch) ([]string, error)
	// JoinBatches returns one batch holding bs in order (group commit:
	// the batches must not share ids).
	JoinBatches(bs ...Batch) Batch
	// Unchanged reports whether committing b would change nothing: every
	// document is stored exactly as given.
	Unchanged(b Batch) (bool, error)
}
