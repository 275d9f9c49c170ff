package engine

// Opening an engine: its collaborators in the order the data flows —
// engine.db and the catalog, then the index; the dense side, the knowledge
// graph and the agentic state; the write path and the preload; the dense
// side's start; then the methods and the checks after Open.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/internal/agentic"
	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/derive"
	"github.com/rcpgo/rcpgo/engine/internal/integrity"
	"github.com/rcpgo/rcpgo/engine/internal/knowledge"
	"github.com/rcpgo/rcpgo/engine/internal/models"
	"github.com/rcpgo/rcpgo/engine/internal/retrieval"
	"github.com/rcpgo/rcpgo/engine/internal/store"
	"github.com/rcpgo/rcpgo/engine/internal/writer"
	"github.com/rcpgo/rcpgo/engine/trust"
	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/filter"
)

// openStores opens engine.db (checking the document catalog, and
// rebuilding it from the index's record store when needed) and then the
// index; migrated reports that engine.db's dense log was upgraded.
func (e *Engine) openStores(ctx context.Context, dbPath string) (migrated bool, err error) {
	cfg := &e.cfg
	iopts := cfg.IndexOpts
	iopts.Analyzer = e.an
	iopts.Logger = e.log
	iopts.VerifyAfterOpen = true // e.verify waits for these checks
	iopts.Fields = map[string]index.FieldType{}
	for name, typ := range cfg.Fields {
		iopts.Fields[name] = fieldTypes[typ]
	}
	// engine.db opens first: the document catalog is checked (and rebuilt
	// from the index's record store when needed) before the index opens.
	// A damaged engine.db is refused with its name (store.CheckFile checks
	// it before bbolt maps it; a panic or fault while reading it becomes an
	// error): `rcpd repair` moves it aside. Its page walk runs after Open
	// (e.verify).
	if e.db, err = store.OpenBoltUnverified(dbPath, 0o600, &bolt.Options{Timeout: 2 * time.Second}, func(db *bolt.DB) error {
		var err error
		migrated, err = e.initEngineDB(db)
		return err
	}); err != nil {
		return false, fmt.Errorf("engine: %w%s", err, integrity.RepairHint(err))
	}
	if err := store.Protect(dbPath, func() (err error) {
		e.catalog, err = catalog.Open(ctx, catalog.Options{DB: e.db, Dir: cfg.Dir, Fields: e.fields, Log: e.log, Gate: e.gate,
			Trust: trust.Policy{Sources: cfg.TrustedSources}, Screen: !cfg.NoScreen, WireSource: WireSource},
			catalog.Hooks{Reconciled: e.reconciled, Rebuilt: e.rebuilt})
		return err
	}); err != nil {
		return false, fmt.Errorf("engine: %w%s", err, integrity.RepairHint(err))
	}
	if cfg.Backend != nil {
		e.ix = cfg.Backend
	} else {
		ix, err := index.Open(ctx, filepath.Join(cfg.Dir, "index"), iopts)
		if err != nil {
			return false, fmt.Errorf("engine: %w%s", err, integrity.RepairHint(err))
		}
		e.ix = ix
	}
	e.catalog.UseIndex(e.ix)
	return migrated, nil
}

// handle registers the engine's methods on its router: those every engine
// serves, and those its configuration provides.
func (e *Engine) handle() {
	cfg := &e.cfg
	e.retriever = retrieval.New(retrieval.Options{Index: e.ix, Dense: e.dense, Know: e.know, Agentic: e.agentic, Gate: e.gate,
		Fetch: e.fetch, Caps: e.sessionCaps, Operators: e.ops, MaxK: cfg.MaxK, MaxCandidates: cfg.MaxCandidates,
		Fusion: cfg.Fusion, Reranker: cfg.Reranker, RerankMethod: cfg.RerankMethod, RerankMax: cfg.RerankMaxCandidates,
		TrustedSources: cfg.TrustedSources, Screen: !cfg.NoScreen, WireSource: WireSource, Remote: cfg.Backend != nil,
		RemoteEncoder: cfg.DenseProvider != nil && cfg.Dense != DenseONNX})
	e.retriever.Handle(e.router)
	e.writer.Handle(e.router)
	m := &models.Models{Multi: cfg.MultiEncoder, Sparse: cfg.SparseEncoder, Reranker: cfg.Reranker,
		RerankMethod: cfg.RerankMethod, RerankMax: cfg.RerankMaxCandidates, Fetch: e.fetch}
	if e.dense != nil {
		m.Dense = func(ctx context.Context) (embed.Provider, error) {
			g, err := e.dense.For(ctx, e.sessionCaps(ctx))
			if err != nil {
				return nil, err
			}
			return g.Model(), nil
		}
	}
	m.Handle(e.router)
	if cfg.Backend == nil { // the catalog describes the embedded index only
		e.catalog.Handle(e.router)
	}
}

// engineBuckets are the top-level buckets of engine.db.
var engineBuckets = slices.Concat(writer.Buckets, derive.Buckets, catalog.Buckets)

// initEngineDB creates engine.db's buckets and upgrades its dense log when
// needed, and reads the last dense op's seq. A current file is only read:
// a commit would fsync (and rewrite bbolt's freelist) at every start.
func (e *Engine) initEngineDB(db *bolt.DB) (migrated bool, err error) {
	current := false
	if err := db.View(func(tx *bolt.Tx) error {
		current = engineDBCurrent(tx)
		return nil
	}); err != nil || current {
		return false, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range engineBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		var err error
		migrated, err = derive.Migrate(tx)
		return err
	})
	return migrated, err
}

// engineDBCurrent reports whether engine.db has every bucket and the
// current dense log layout (nothing for initEngineDB to write).
func engineDBCurrent(tx *bolt.Tx) bool {
	for _, b := range engineBuckets {
		if tx.Bucket(b) == nil {
			return false
		}
	}
	return derive.Current(tx)
}

// newDense makes the dense side: the engine's own (dense on), or the
// backend's when it stores the vectors.
func (e *Engine) newDense() error {
	cfg := &e.cfg
	opts := derive.Options{Dir: cfg.Dir, Dense: cfg.Dense, Provider: cfg.DenseProvider, MinFitDocs: cfg.MinFitDocs,
		LSADimension: cfg.LSADimension, LSAFitSample: cfg.LSAFitSample, ReadOnly: cfg.ReadOnly, Retain: cfg.DenseRetain,
		DB: e.db, Index: e.ix, An: e.an, Log: e.log, Gate: e.gate, Catalog: e.catalog, Board: e.ready, Writable: e.writable,
		CheckpointEvery: cfg.checkpointEvery, RefitQuiet: cfg.refitQuiet, BackfillBatch: cfg.backfillBatch, HoldLoad: cfg.holdDenseLoad, BackfillHook: cfg.backfillHook}
	if cfg.Dense == DenseNone {
		e.dense = derive.OpenRemote(cfg.Backend, opts)
		return nil
	}
	var err error
	e.dense, err = derive.New(opts)
	return err
}

// preload indexes the configured documents idempotently.
func (e *Engine) preload(ctx context.Context) error {
	if len(e.cfg.Preload) == 0 {
		return nil
	}
	if _, _, err := e.writer.Write(ctx, e.cfg.Preload); err != nil {
		return fmt.Errorf("engine: preload: %w", err)
	}
	return nil
}

// open opens the stores and the collaborators, writes the preload and
// starts serving.
func (e *Engine) open(ctx context.Context) error {
	cfg := &e.cfg
	dbPath := filepath.Join(cfg.Dir, "engine.db")
	migrated, err := e.openStores(ctx, dbPath)
	if err != nil {
		return err
	}
	// engine.db's page walk runs after Open (the checks): until then a read
	// that meets a damaged page panics or faults in bbolt, so every step
	// of Open that reads it runs under store.Protect and refuses to open.
	protect := func(f func() error) error {
		if err := store.Protect(dbPath, f); err != nil {
			return fmt.Errorf("%w%s", err, integrity.RepairHint(err))
		}
		return nil
	}
	if err := e.openCollaborators(protect); err != nil {
		return err
	}
	var before uint64
	if e.dense != nil {
		before = e.dense.Seq()
	}
	if err := protect(func() error { return e.preload(ctx) }); err != nil {
		return err
	}
	if cfg.Dense != DenseNone {
		if migrated {
			e.log.Info("engine: dense log upgraded; the dense index is rebuilt in the background")
		}
		// The preload is the operator's corpus given at startup (the demo):
		// Open returns once it is embedded. Anything else (replaying writes
		// after the last checkpoint, fits, rebuilds) runs in the background.
		if err := protect(func() error { return e.dense.Start(ctx, e.dense.Seq() != before) }); err != nil {
			return err
		}
	}
	return e.serve()
}

// openCollaborators opens the dense side, the knowledge graph, the agentic
// state and the write path over the opened stores.
func (e *Engine) openCollaborators(protect func(func() error) error) error {
	cfg := &e.cfg
	if err := e.newDense(); err != nil {
		return err
	}
	if err := protect(func() (err error) {
		e.know, err = knowledge.Open(knowledge.Options{Dir: cfg.Dir, ReadOnly: cfg.ReadOnly, Graph: cfg.Graph, DB: e.db, Index: e.ix,
			An: e.an, Log: e.log, Catalog: e.catalog, Gate: e.gate, Dense: e.dense, DenseLog: cfg.Dense != DenseNone, Board: e.ready,
			Chat: cfg.Chat, Memory: cfg.Memory, MaxK: cfg.MaxK, MaxAddDocs: cfg.maxAddDocs, TrustedSources: cfg.TrustedSources,
			Screen: !cfg.NoScreen, WireSource: WireSource, Preloaded: len(cfg.Preload) > 0, Call: e.Call})
		return err
	}); err != nil {
		return err
	}
	e.ops = make([]string, len(filter.AllOperators))
	for i, op := range filter.AllOperators {
		e.ops[i] = string(op)
	}
	if err := protect(func() (err error) {
		e.agentic, err = agentic.Open(agentic.Options{DB: e.db, Index: e.ix, An: e.an, Catalog: e.catalog, Log: e.log,
			Chat: cfg.Chat, WordNetDir: cfg.WordNetDir, Session: cfg.Session, Feedback: cfg.Feedback})
		return err
	}); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	e.descSparse = e.describe(nil)
	wo := writer.Options{DB: e.db, Index: e.ix, An: e.an, Catalog: e.catalog, Gate: e.gate, Dense: e.dense,
		DenseLog: cfg.Dense != DenseNone, Chunk: cfg.Chunk, MaxAddDocs: cfg.maxAddDocs,
		ReadOnly: cfg.ReadOnly, ReadOnlyReason: cfg.readOnlyReason(), Remote: cfg.Backend != nil, Writable: e.writable}
	if e.know != nil {
		wo.Graph = e.know
	}
	e.writer = writer.New(wo)
	return nil
}

// serve registers the methods, starts the knowledge graph's upkeep and the
// checks after Open.
func (e *Engine) serve() error {
	e.router = rcp.NewRouter(e.Describe)
	e.agentic.Handle(e.router)
	e.handle()
	if e.know != nil {
		if err := e.know.Start(e.router); err != nil {
			return err
		}
	}
	e.data.StartChecks(e.log, func(ctx context.Context) error { return store.VerifyPages(ctx, e.db) },
		func(ctx context.Context) error {
			if ix, ok := e.ix.(*index.Index); ok {
				return ix.WaitVerified(ctx)
			}
			return nil
		})
	return nil
}
