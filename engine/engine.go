// Package engine is rcpd's retrieval engine: an rcp.Handler (Describe,
// Call) over a data directory, opened with Open. It is a facade: each
// concern is a collaborator of its own under engine/internal, holding its
// state behind a narrow interface, wired here at Open in the order the
// data flows —
//
//	integrity  the data directory's lock, watch, checks after Open, repair
//	catalog    the document catalog in engine.db, x-rcpgo get/list/values
//	derive     the dense log, the dense generations and their deriver
//	knowledge  the knowledge graph, the memories, the summary tree
//	agentic    the query transformer, sessions, feedback and quarantine
//	writer     index/add, index/delete, the preload, group commit
//	retrieval  retrieve: decode, a typed plan, the pipeline run, the result
//	models     embed, embed/multi, embed/sparse, rerank
//	gate       admission, the write lock, the query gate
//
// over the search core (engine/index, or a search.Backend such as
// engine/weaviate) and the pipeline's stages (engine/internal/pipeline).
// Failures the client must hear about are sentinel errors of their layer,
// translated into RCP codes in one place, the error table (errors.go).
//
// Layout of the data directory:
//
//	DIR/index/      the BM25 index (segments + bbolt store; package index)
//	DIR/engine.db   bbolt: idempotency-key results, the dense log (texts,
//	                keys, ops), the document catalog behind
//	                x-rcpgo/get|list|values, the graph queue, feedback
//	DIR/dense/gN/   the published dense generation: lsa.model (LSA only)
//	                and hnsw-<seq>.ann, the checkpointed HNSW index
//
// Capabilities are computed from the configuration and the published dense
// generation; each session freezes the set it negotiated (§13.2), and new
// sessions see dense/hybrid as soon as a generation is published, without
// a restart (engine/internal/derive). See docs/rcpd.md for the capability
// set under each configuration.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/internal/agentic"
	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/derive"
	"github.com/rcpgo/rcpgo/engine/internal/fault"
	"github.com/rcpgo/rcpgo/engine/internal/fetch"
	"github.com/rcpgo/rcpgo/engine/internal/gate"
	"github.com/rcpgo/rcpgo/engine/internal/graph"
	"github.com/rcpgo/rcpgo/engine/internal/integrity"
	"github.com/rcpgo/rcpgo/engine/internal/knowledge"
	"github.com/rcpgo/rcpgo/engine/internal/readiness"
	"github.com/rcpgo/rcpgo/engine/internal/retrieval"
	"github.com/rcpgo/rcpgo/engine/internal/writer"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp"
)

// Engine is the RCP engine. It implements rcp.Handler. Safe for concurrent use.
type Engine struct {
	cfg    Config
	log    *slog.Logger
	an     *analysis.Analyzer
	ix     search.Backend // the embedded index unless Config.Backend is set
	db     *bolt.DB
	router *rcp.Router
	fields map[string]string
	ops    []string

	// gate coordinates writes and reads (engine/internal/gate); writer is
	// the write path (engine/internal/writer).
	gate   *gate.Gate
	writer *writer.Writer

	// dense is the dense side (engine/internal/derive): nil with dense off
	// and a backend that stores no vectors.
	dense *derive.Dense
	// genDesc caches the description under the published generation.
	genDesc    atomic.Pointer[genDesc]
	descSparse rcp.Description // the description without a generation
	inference  inference       // inferred filter fields (no Fields declared)

	fetch *fetch.Fetcher // dereferences Content uris under cfg.URIPolicy

	// data is the hold on the data directory: its lock, its watch and the
	// checks after Open (engine/internal/integrity).
	data *integrity.Dir

	agentic *agentic.Agentic // transform, sessions and feedback (engine/internal/agentic)
	// retriever answers retrieve (engine/internal/retrieve).
	retriever *retrieval.Retriever
	// know is the knowledge graph, the memories and the summary tree
	// (engine/internal/knowledge); nil when the graph is off.
	know *knowledge.Knowledge

	// catalog is the document catalog (engine/internal/catalog).
	catalog *catalog.Catalog

	// ready observes the derived structures (engine/internal/readiness).
	ready *readiness.Board
}

// Open opens (creating when needed) the engine in cfg.Dir.
func Open(ctx context.Context, cfg Config) (*Engine, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	data, err := integrity.Take(cfg.Dir, cfg.Holder, cfg.SnapshotIfLocked, log)
	if err != nil {
		return nil, err
	}
	if data.Snapshot != "" {
		cfg.ReadOnlyReason = data.Snapshot
		cfg.Dir, cfg.ReadOnly, cfg.Preload = data.Path, true, nil
	}
	e := &Engine{cfg: cfg, log: log, an: analysis.Default(), fields: cfg.Fields, data: data,
		fetch: fetch.New(cfg.URIPolicy, log), ready: readiness.New(), gate: gate.New(cfg.QueryConcurrency, runtime.GOMAXPROCS(0))}
	if err := e.open(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close releases the engine's resources.
func (e *Engine) Close() error {
	var errs []error
	if e.data != nil {
		e.data.StopChecks()
	}
	if e.know != nil {
		errs = append(errs, e.know.Close())
	}
	if e.dense != nil {
		errs = append(errs, e.dense.Close())
	}
	if e.ix != nil {
		errs = append(errs, e.ix.Close())
	}
	if e.db != nil {
		if e.catalog != nil {
			// Every write has returned: the catalog matches the index.
			errs = append(errs, e.catalog.Close())
		}
		errs = append(errs, e.db.Close())
	}
	if e.data != nil {
		errs = append(errs, e.data.Close())
	}
	return errors.Join(errs...)
}

// Call implements rcp.Handler.
func (e *Engine) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if e.data.Checking() {
		if err := e.data.Damage(); err != nil {
			return nil, e.rpcError(ctx, method, &fault.Error{Err: integrity.ErrDamaged, Detail: err.Error()})
		}
		// Until the page walks have passed (engine/internal/integrity/checks.go), a damaged
		// page this request reads must fail it, not fault the process: with
		// this a fault on bbolt's memory map panics, and the server answers
		// a panic with -32603.
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	}
	res, err := e.router.Call(ctx, method, params)
	if err != nil {
		err = e.rpcError(ctx, method, err)
	}
	return res, err
}

// Handles reports whether the engine serves method (metrics label only
// these; a caller-chosen name must not become a label).
func (e *Engine) Handles(method string) bool { return e.router.Handles(method) }

// Stats reports index statistics (for metrics).
func (e *Engine) Stats() search.Stats { return e.ix.Stats() }

// Health reports whether the engine can serve and store: nil, or why not
// (the data directory is gone, or the checks after Open found damage).
func (e *Engine) Health() error { return e.data.Health() }

// Verified waits for the integrity checks that Open leaves to the
// background and returns the damage they found (nil: none), or ctx's error
// if it ends first. rcpd stops with that damage, as with a failed Open.
func (e *Engine) Verified(ctx context.Context) error { return e.data.Verified(ctx) }

// writable is checked before and after every write: a write into a
// deleted data directory is not durable and must not be acknowledged.
func (e *Engine) writable() error { return e.data.Writable() }

// Documents returns the number of stored top-level documents (what
// x-rcpgo/list lists); Stats().Docs counts retrieval units (unchunked
// documents and chunks).
func (e *Engine) Documents() (int, error) {
	if e.cfg.Backend != nil {
		// The catalog holds this replica's writes only; the backend's count
		// is of retrieval units (documents and chunks).
		return e.ix.Stats().Docs, nil
	}
	return e.catalog.Documents()
}

// reconciled keeps the dense log and the graph queue in step with the
// catalog's records re-derived after a crash (catalog.Hooks).
func (e *Engine) reconciled(tx *bolt.Tx, ids []string, units map[string]*search.Document) error {
	if e.cfg.Graph {
		if err := knowledge.Requeue(tx, ids); err != nil {
			return err
		}
	}
	if e.cfg.Dense == DenseNone {
		return nil
	}
	return derive.Reconcile(tx, ids, units)
}

// rebuilt drops the dense log's records of units the index does not hold
// when the catalog was rebuilt whole (catalog.Hooks).
func (e *Engine) rebuilt(tx *bolt.Tx, live map[string]bool) error {
	if e.cfg.Dense == DenseNone {
		return nil
	}
	pruned, err := derive.Prune(tx, live)
	if pruned > 0 {
		e.log.Info("engine: dropped dense records of units the index does not hold", "units", pruned)
	}
	return err
}

// sessionCaps returns the capabilities negotiated by the request's session,
// or the current ones outside a session (in-process calls).
func (e *Engine) sessionCaps(ctx context.Context) rcp.Capabilities {
	if s, ok := rcp.SessionInfo(ctx); ok {
		return s.Capabilities
	}
	return e.Describe(ctx).Capabilities
}

// SyncGraph waits until the graph reflects every acknowledged write and
// its communities are current (tests, benchmarks).
func (e *Engine) SyncGraph(ctx context.Context) error {
	if e.know == nil {
		return errors.New("engine: the graph is disabled")
	}
	return e.know.SyncGraph(ctx)
}

// SyncTree waits until every write is embedded and rebuilds the summary
// tree now (tests, benchmarks).
func (e *Engine) SyncTree(ctx context.Context) error {
	if e.know == nil {
		return errors.New("engine: the tree is off (it needs the graph and a dense encoder)")
	}
	return e.know.SyncTree(ctx)
}

// GraphStats is the knowledge graph's size: units, nodes and edges.
type GraphStats = graph.Stats

// GraphStats reports the graph's size (zero without the graph).
func (e *Engine) GraphStats() GraphStats {
	if e.know == nil {
		return graph.Stats{}
	}
	return e.know.GraphStats()
}
