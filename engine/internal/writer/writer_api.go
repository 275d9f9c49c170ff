// Package writer is the engine's write path: index/add (documents
// decoded, chunked, analysed and screened ahead of any lock, then
// group-committed with the writes queued behind them), index/delete, the
// operator's preload and idempotency keys. A write is two bbolt commits —
// engine.db (the catalog, the dense log, the graph queue) and the index —
// that name its documents, so Open repairs either one missing after a
// crash (docs/architecture.md, "Durability").
package writer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/chunk"
	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/derive"
	"github.com/rcpgo/rcpgo/engine/internal/fault"
	"github.com/rcpgo/rcpgo/engine/internal/gate"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp"
)

// WireSource is the Source.Name of documents written with index/add.
const WireSource = "index/add"

// Errors the engine's error table translates.
var (
	// ErrReadOnly refuses a write to a read-only index.
	ErrReadOnly = errors.New("the index is read-only")
	// ErrTooLarge refuses a request with more documents than allowed.
	ErrTooLarge = errors.New("too many documents")
	// ErrConflict refuses a chunk id another document holds.
	ErrConflict = errors.New("chunk id taken")
)

// TooMany refuses n documents of method beyond limit (field names them).
func TooMany(field, method string, n, limit int) error {
	return &fault.Error{Err: ErrTooLarge, Message: fmt.Sprintf("at most %d documents per %s", limit, method),
		Field: field, Detail: fmt.Sprintf("%d documents > limit %d", n, limit)}
}

// Graph is the knowledge graph's queue of documents to (re)extract, which
// writes fill in their engine.db transaction.
type Graph interface {
	Enqueue(tx *bolt.Tx, docs ...string) error
	Notify()
}

// Options configure a Writer.
type Options struct {
	DB      *bolt.DB
	Index   search.Backend
	An      *analysis.Analyzer
	Catalog *catalog.Catalog
	Gate    *gate.Gate
	// Dense receives the dense ops of writes (DenseLog: the dense log is
	// kept); without DenseLog writes mark the log behind the index.
	Dense    *derive.Dense
	DenseLog bool
	// Graph, when set, queues written documents for the knowledge graph.
	Graph Graph
	Chunk chunk.Options
	// MaxAddDocs bounds the documents of one index/add.
	MaxAddDocs int
	// ReadOnly refuses writes, saying ReadOnlyReason.
	ReadOnly       bool
	ReadOnlyReason string
	// Remote: the backend is not the embedded index (it applies a
	// document's shape changes itself).
	Remote bool
	// Writable is checked before and after every write.
	Writable func() error
}

// Writer is the engine's write path. Safe for concurrent use.
type Writer struct {
	opts    Options
	db      *bolt.DB
	ix      search.Backend
	an      *analysis.Analyzer
	catalog *catalog.Catalog
	gate    *gate.Gate
	dense   *derive.Dense
	writes  *writeQueue
	// Hooks run at the points a crash test stops at (tests only).
	Hooks struct {
		// CatalogCommit runs at the end of an add's engine.db
		// transaction, before it commits; an error aborts it.
		CatalogCommit func() error
		// DeleteCommitted runs between a delete's index commit and its
		// catalog commit.
		DeleteCommitted func()
	}
}

// Buckets are the writer's buckets of engine.db.
var Buckets = [][]byte{bucketIdem}

var bucketIdem = []byte("idempotency")

// New is the write path over opts.
func New(opts Options) *Writer {
	return &Writer{opts: opts, db: opts.DB, ix: opts.Index, an: opts.An, catalog: opts.Catalog, gate: opts.Gate,
		dense: opts.Dense, writes: newWriteQueue()}
}

// Handle registers index/add and index/delete on r.
func (wr *Writer) Handle(r *rcp.Router) {
	if !wr.opts.ReadOnly {
		rcp.Handle(r, rcp.MethodIndexAdd, wr.indexAdd)
	} else {
		r.HandleFunc(rcp.MethodIndexAdd, func(context.Context, json.RawMessage) (any, error) {
			return nil, wr.readOnlyError()
		})
	}
	rcp.Handle(r, rcp.MethodIndexDelete, wr.indexDelete)
}

// Doc is a document the operator writes (a preload).
type Doc struct {
	ID, Title, Text string
	Meta            map[string]any
	Source          string // Source.Name (see the trust policy)
	URI             string
	Chunk           bool
}

// Write writes docs (planned outside the write queue, committed in it) and
// returns their ids and the chunks written.
func (wr *Writer) Write(ctx context.Context, docs []Doc) ([]string, int, error) {
	in := make([]addDoc, len(docs))
	for i, p := range docs {
		in[i] = addDoc{id: p.ID, title: p.Title, text: p.Text, meta: p.Meta, source: p.Source, uri: p.URI, chunk: p.Chunk}
	}
	return wr.write(ctx, in)
}

// Pending is the number of writes in the group commit queue.
func (wr *Writer) Pending() int {
	wr.writes.mu.Lock()
	defer wr.writes.mu.Unlock()
	return len(wr.writes.pending)
}

// DecodeDocument decodes documents[i] of a request as index/add does (its
// id, checked, and its text): memory/build takes the same documents.
func DecodeDocument(raw json.RawMessage, i int) (id, text string, err error) {
	d, err := decodeWireDoc(raw, i)
	return d.id, d.text, err
}

// readOnlyError refuses a write to a read-only index, saying why.
func (wr *Writer) readOnlyError() error {
	return &fault.Error{Err: ErrReadOnly, Message: "the index is read-only: " + wr.opts.ReadOnlyReason, Detail: wr.opts.ReadOnlyReason}
}

// writable is checked before and after every write: a write into a
// deleted data directory is not durable and must not be acknowledged.
func (wr *Writer) writable() error { return wr.opts.Writable() }

// graphEnqueue records top-level documents as changed, in the caller's
// catalog transaction (a no-op without the graph).
func (wr *Writer) graphEnqueue(tx *bolt.Tx, docs ...string) error {
	if wr.opts.Graph == nil || len(docs) == 0 {
		return nil
	}
	return wr.opts.Graph.Enqueue(tx, docs...)
}

func (wr *Writer) graphNotify() {
	if wr.opts.Graph != nil {
		wr.opts.Graph.Notify()
	}
}

// denseCommitted records the seq of the last committed dense op and wakes
// the deriver.
func (wr *Writer) denseCommitted(seq uint64) {
	if wr.opts.DenseLog {
		wr.dense.Committed(seq)
	}
}
