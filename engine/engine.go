// Package engine is rcpd's retrieval engine: an rcp.Handler joining the RCP
// SDK to the search core (engine/index), the offline dense encoder
// (engine/embed/lsa + engine/ann), server-side chunking (engine/chunk), the
// injection screen (engine/trust) and the retrieve pipeline
// (engine/internal/pipeline).
//
// Layout of the data directory:
//
//	DIR/index/      the BM25 index (segments + bbolt store; package index)
//	DIR/engine.db   bbolt: idempotency-key results, the dense log (texts,
//	                keys, ops) and the document catalog behind
//	                x-rcpgo/get|list|values
//	DIR/dense/gN/   the published dense generation: lsa.model (LSA only)
//	                and hnsw-<seq>.ann, the checkpointed HNSW index
//
// Capabilities are computed from the configuration and the published dense
// generation; each session freezes the set it negotiated (§13.2), and new
// sessions see dense/hybrid as soon as a generation is published, without
// a restart (engine_derive.go). See docs/rcpd.md for the capability set
// under each configuration.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/chunk"
	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/feedback"
	"github.com/rcpgo/rcpgo/engine/graph"
	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/internal/agentic"
	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/derive"
	"github.com/rcpgo/rcpgo/engine/internal/fault"
	"github.com/rcpgo/rcpgo/engine/internal/fetch"
	"github.com/rcpgo/rcpgo/engine/internal/gate"
	"github.com/rcpgo/rcpgo/engine/internal/integrity"
	"github.com/rcpgo/rcpgo/engine/internal/knowledge"
	"github.com/rcpgo/rcpgo/engine/internal/models"
	"github.com/rcpgo/rcpgo/engine/internal/retrieval"
	"github.com/rcpgo/rcpgo/engine/internal/writer"
	"github.com/rcpgo/rcpgo/engine/llm"
	"github.com/rcpgo/rcpgo/engine/memory"
	"github.com/rcpgo/rcpgo/engine/readiness"
	"github.com/rcpgo/rcpgo/engine/retain"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/session"
	"github.com/rcpgo/rcpgo/engine/store"
	"github.com/rcpgo/rcpgo/engine/trust"
	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/filter"
)

// Defaults of Config.
const (
	DefaultMaxK          = 200
	DefaultMaxCandidates = 1000
	DefaultCandidateK    = retrieval.DefaultCandidateK
	DefaultMinFitDocs    = 20
	DefaultLSAFitSample  = 50000
	DefaultMaxAddDocs    = 10000
	// MaxQueryBytes caps the text of a retrieve query (-32602 beyond).
	MaxQueryBytes = retrieval.MaxQueryBytes
	// MaxQueryTerms caps the distinct analysed terms of a query (-32602
	// beyond).
	MaxQueryTerms = retrieval.MaxQueryTerms
)

// Limits of the x-rcpgo document methods (engine/internal/catalog).
const (
	DefaultListLimit = catalog.DefaultListLimit // x-rcpgo/list and x-rcpgo/values page size
	MaxListLimit     = catalog.MaxListLimit     // largest page served
	MaxGetIDs        = catalog.MaxGetIDs        // ids per x-rcpgo/get
)

// Dense providers (Config.Dense).
const (
	// DenseLSA is the offline LSA encoder fitted on the corpus at Open.
	DenseLSA = "lsa"
	// DenseNone disables dense retrieval and embed.
	DenseNone = "none"
	// DenseOpenAI is an OpenAI-compatible /v1/embeddings endpoint
	// (Config.DenseProvider).
	DenseOpenAI = "openai"
	// DenseONNX is a local ONNX bi-encoder (Config.DenseProvider).
	DenseONNX = "onnx"
)

// MetaPRF is the retrieve _meta key that asks rcpd for RM3-style
// pseudo-relevance feedback ({"x-rcpgo/prf": true}); advertised as option
// OptionPRF of the x-rcpgo capability.
const (
	MetaPRF   = agentic.MetaPRF
	OptionPRF = agentic.OptionPRF
)

// WordNetNone disables WordNet (Config.WordNetDir).
const WordNetNone = agentic.WordNetNone

// GlobalMemoryID names the memory over the live index (memory/build
// without documents; memory/recall without memoryId).
const GlobalMemoryID = knowledge.GlobalMemoryID

// MetaCitations is the hit _meta key listing every unit a graph or tree
// hit rests on, with its citation.
const MetaCitations = knowledge.MetaCitations

// WireSource is the Source.Name of documents written with index/add.
const WireSource = writer.WireSource

// Config configures an Engine. The zero value (plus Dir) is usable.
type Config struct {
	// Dir is the data directory (required).
	Dir string
	// Name and Version identify the server in initialize/info.
	Name, Version string
	// ReadOnly disables index/add and index/delete (index.writable false).
	ReadOnly bool
	// ReadOnlyReason says why, to clients: in the x-rcpgo capability's
	// readOnly and in the refusal of a write (default "the server was
	// started read-only"; a snapshot copy says whose directory it copied).
	ReadOnlyReason string
	// Holder describes this process in the data directory's LOCK file (its
	// PID is filled in), so that a process finding the directory held can
	// name the holder and the way to reach it.
	Holder Holder
	// MaxRequestBytes is the largest request the server's transports
	// accept (rcp.ServerOptions.MaxFrameBytes), advertised in the x-rcpgo
	// capability's limits so a client can size its index/add batches (0:
	// not advertised).
	MaxRequestBytes int64
	// MaxK is advertised as retrieve.maxK (default 200).
	MaxK int
	// MaxCandidates caps candidateK (default 1000).
	MaxCandidates int
	// Fields declares the filterable metadata fields, name → §8 type
	// (keyword, text, int, float, bool, date). With none declared, the
	// fields are inferred from the stored documents' metadata
	// (engine_infer.go); the filter capability is advertised once there is
	// at least one field.
	Fields map[string]string
	// Dense selects the dense provider: "lsa" (default), "none", or an
	// external encoder, "openai" or "onnx", given in DenseProvider. Vectors
	// of an external encoder are stored in engine.db with its identity; a
	// changed identity drops them and re-embeds the corpus at Open.
	Dense         string
	DenseProvider embed.Provider
	// MultiEncoder, when set, backs embed/multi (capability multiVector):
	// a late-interaction (ColBERT) model.
	MultiEncoder embed.MultiEmbedder
	// SparseEncoder, when set, backs embed/sparse (capability
	// sparseEmbed): a learned-sparse (SPLADE) model.
	SparseEncoder embed.SparseEmbedder
	// URIPolicy restricts which Content uris are fetched (§15.5).
	URIPolicy URIPolicy
	// Fusion holds the server defaults of hybrid fusion for requests that
	// leave them unset (see DefaultFusion).
	Fusion FusionDefaults
	// MinFitDocs is the corpus size (indexed units) from which the LSA
	// encoder is fitted at Open (default 20).
	MinFitDocs int
	// LSADimension caps the LSA dimension (default 256; smaller corpora
	// get fewer dimensions).
	LSADimension int
	// LSAFitSample bounds the documents the LSA basis is fitted on
	// (default DefaultLSAFitSample): a larger corpus is fitted on a
	// deterministic uniform sample of about this many units, and every
	// unit is still projected. It bounds the fit's time and memory at any
	// corpus size (docs/rcpd.md, "Dense lifecycle").
	LSAFitSample int
	// Chunk configures server-side chunking.
	Chunk chunk.Options
	// TrustedSources maps Source.Name of operator-ingested documents to a
	// trust level ("trusted", "community"); wire documents are never trusted.
	TrustedSources map[string]string
	// NoScreen disables the injection screen.
	NoScreen bool
	// QueryConcurrency bounds the retrieves that run their pipeline at
	// once (default 2 × GOMAXPROCS); the others wait their turn (or their
	// deadline). Many more in flight than cores only share the CPU between
	// them, and writes, which are not bounded, would wait behind them all.
	// While writes come in, retrieves that wait on no other process (no
	// remote backend, embedder, reranker or agentic model) are also held
	// to max(1, GOMAXPROCS − 1) (engine_admission.go).
	QueryConcurrency int
	// Preload documents are indexed (idempotently, by id) at Open, before
	// the dense encoder is fitted; SourceName labels them for trust.
	Preload []Preload
	// Reranker, when set, backs the rerank method (§7.6) and the retrieve
	// rerank stage; it must be a real model (cross-encoder, ColBERT MaxSim
	// or LLM judge). RerankMethod names it ("cross-encoder" by default) and
	// RerankMaxCandidates caps passages per call (default 100).
	Reranker            embed.Scorer
	RerankMethod        string
	RerankMaxCandidates int
	// SnapshotIfLocked makes Open serve a read-only private copy of Dir
	// when another process holds it (instead of failing with ErrLocked):
	// the copy is taken at Open, never sees later writes, is served with
	// index.writable false and is removed at Close. Meant for stdio
	// deployments where every client spawns its own rcpd over one
	// directory; run one rcpd over HTTP to share a writable index.
	SnapshotIfLocked bool
	// Chat, when set, is an OpenAI-compatible chat model: query/transform
	// adds hyde and runs every method on it (the offline method serves
	// when the model fails).
	Chat llm.Chat
	// WordNetDir holds WordNet's data.* files, used for synonyms in query
	// rewriting ("" uses transform.DefaultWordNetDir when installed;
	// "none" disables WordNet).
	WordNetDir string
	// Session bounds the trajectory state behind sessionId (§7.7.3).
	Session session.Options
	// Feedback configures quarantine and the ranking prior (§7.16).
	Feedback feedback.Options
	// Backend, when set, replaces the embedded index (DIR/index): documents,
	// sparse recall and filters live there (engine/weaviate), and a
	// DenseBackend stores the vectors too. Dense must then be "" or "none"
	// and Graph false; the engine closes Backend at Close.
	Backend search.Backend
	// Graph builds the knowledge graph (entities, triples, communities)
	// in the background and serves graph and memory (engine_graph.go).
	Graph bool
	// DenseRetain bounds the superseded dense generations kept for the
	// sessions that negotiated them (engine_retain.go; defaults: 2
	// generations, 1 GiB, 10 minutes after their last use).
	DenseRetain retain.Options
	// Memory bounds the inline-document memories of memory/build.
	Memory     memory.Options
	Logger     *slog.Logger
	IndexOpts  index.Options // Dir-independent index options (Fields is set from Fields)
	maxAddDocs int
	// checkpointEvery is the minimum spacing of dense checkpoints (tests
	// lower it).
	checkpointEvery time.Duration
	// refitQuiet is how long writes must pause before an LSA refit starts
	// (default refitQuiet; tests change it).
	refitQuiet time.Duration
	// backfillBatch bounds the units of one dense log backfill batch
	// (default backfillBatch; tests lower it).
	backfillBatch int
	// holdDenseLoad, when set, holds the background load of the published
	// dense generation until it is closed (tests: requests during loading).
	holdDenseLoad chan struct{}
	// backfillHook, when set, runs in each dense log backfill batch (tests:
	// derive.Options.BackfillHook).
	backfillHook func() error
}

// URIPolicy says which Content uris the engine dereferences (§4.8,
// §15.5): schemes, hosts, private addresses, sizes, time, concurrency.
type URIPolicy = fetch.Policy

// FusionDefaults are the server-side defaults of hybrid fusion, used for
// every option a request leaves unset (docs/rcpd.md lists the measured
// defaults and the quality table they come from).
type FusionDefaults = retrieval.FusionDefaults

// Fusion defaults (see retrieval.DefaultAlpha for how it was measured).
const (
	DefaultFusion = retrieval.DefaultFusion
	DefaultRRFK   = retrieval.DefaultRRFK
	DefaultAlpha  = retrieval.DefaultAlpha
)

// Preload is an operator-ingested document (Source names it for
// TrustedSources).
type Preload = writer.Doc

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

	// ready observes the derived structures (engine_readiness.go).
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
		fetch: fetch.New(cfg.URIPolicy, log)}
	e.ready = readiness.New()
	e.gate = gate.New(cfg.QueryConcurrency, runtime.GOMAXPROCS(0))
	dbPath := filepath.Join(cfg.Dir, "engine.db")
	migrated, err := e.openStores(ctx, dbPath)
	if err != nil {
		e.Close()
		return nil, err
	}
	// engine.db's page walk runs after Open (e.verify): until then a read
	// that meets a damaged page panics or faults in bbolt, so every step
	// of Open that reads it runs under store.Protect and refuses to open.
	protect := func(f func() error) error {
		if err := store.Protect(dbPath, f); err != nil {
			return fmt.Errorf("%w%s", err, integrity.RepairHint(err))
		}
		return nil
	}
	if err := e.newDense(); err != nil {
		e.Close()
		return nil, err
	}
	if err := protect(func() (err error) {
		e.know, err = knowledge.Open(knowledge.Options{Dir: cfg.Dir, ReadOnly: cfg.ReadOnly, Graph: cfg.Graph, DB: e.db, Index: e.ix,
			An: e.an, Log: e.log, Catalog: e.catalog, Gate: e.gate, Dense: e.dense, DenseLog: cfg.Dense != DenseNone, Board: e.ready,
			Chat: cfg.Chat, Memory: cfg.Memory, MaxK: cfg.MaxK, MaxAddDocs: cfg.maxAddDocs, TrustedSources: cfg.TrustedSources,
			Screen: !cfg.NoScreen, WireSource: WireSource, Preloaded: len(cfg.Preload) > 0, Call: e.Call})
		return err
	}); err != nil {
		e.Close()
		return nil, err
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
		e.Close()
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.descSparse = e.describe(nil)
	wo := writer.Options{DB: e.db, Index: e.ix, An: e.an, Catalog: e.catalog, Gate: e.gate, Dense: e.dense,
		DenseLog: cfg.Dense != DenseNone, Chunk: cfg.Chunk, MaxAddDocs: cfg.maxAddDocs,
		ReadOnly: cfg.ReadOnly, ReadOnlyReason: cfg.readOnlyReason(), Remote: cfg.Backend != nil, Writable: e.writable}
	if e.know != nil {
		wo.Graph = e.know
	}
	e.writer = writer.New(wo)
	var before uint64
	if e.dense != nil {
		before = e.dense.Seq()
	}
	if err := protect(func() error { return e.preload(ctx) }); err != nil {
		e.Close()
		return nil, err
	}
	if cfg.Dense != DenseNone {
		if migrated {
			log.Info("engine: dense log upgraded; the dense index is rebuilt in the background")
		}
		// The preload is the operator's corpus given at startup (the demo):
		// Open returns once it is embedded. Anything else (replaying writes
		// after the last checkpoint, fits, rebuilds) runs in the background.
		if err := protect(func() error { return e.dense.Start(ctx, e.dense.Seq() != before) }); err != nil {
			e.Close()
			return nil, err
		}
	}
	e.router = rcp.NewRouter(e.Describe)
	e.agentic.Handle(e.router)
	e.handle()
	if e.know != nil {
		if err := e.know.Start(e.router); err != nil {
			e.Close()
			return nil, err
		}
	}
	e.data.StartChecks(log, func(ctx context.Context) error { return store.VerifyPages(ctx, e.db) },
		func(ctx context.Context) error {
			if ix, ok := e.ix.(*index.Index); ok {
				return ix.WaitVerified(ctx)
			}
			return nil
		})
	return e, nil
}

// withDefaults checks cfg and fills in what it leaves to the engine.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Dir == "" {
		return cfg, errors.New("engine: Config.Dir is required")
	}
	if cfg.MaxK <= 0 {
		cfg.MaxK = DefaultMaxK
	}
	if cfg.MaxCandidates <= 0 {
		cfg.MaxCandidates = DefaultMaxCandidates
	}
	if cfg.MaxCandidates < cfg.MaxK {
		cfg.MaxCandidates = cfg.MaxK
	}
	if cfg.MinFitDocs <= 0 {
		cfg.MinFitDocs = DefaultMinFitDocs
	}
	if cfg.LSAFitSample <= 0 {
		cfg.LSAFitSample = DefaultLSAFitSample
	}
	if cfg.Backend != nil {
		switch {
		case cfg.Dense != "" && cfg.Dense != DenseNone || cfg.DenseProvider != nil:
			return cfg, errors.New("engine: with Config.Backend the backend embeds (give it the encoder); Dense must be none")
		case cfg.Graph:
			return cfg, errors.New("engine: the knowledge graph needs the embedded index (Config.Backend is set)")
		}
		cfg.Dense = DenseNone
	}
	if cfg.Dense == "" {
		cfg.Dense = DenseLSA
	}
	switch cfg.Dense {
	case DenseLSA, DenseNone:
		if cfg.DenseProvider != nil {
			return cfg, fmt.Errorf("engine: Config.DenseProvider is set but Dense is %q (want openai or onnx)", cfg.Dense)
		}
	case DenseOpenAI, DenseONNX:
		if cfg.DenseProvider == nil {
			return cfg, fmt.Errorf("engine: dense provider %q needs Config.DenseProvider", cfg.Dense)
		}
		if cfg.DenseProvider.Dimension() <= 0 {
			return cfg, fmt.Errorf("engine: dense provider %s has no dimension", cfg.DenseProvider.Identity())
		}
	default:
		return cfg, fmt.Errorf("engine: unknown dense provider %q (want lsa, openai, onnx or none)", cfg.Dense)
	}
	cfg.Fusion = cfg.Fusion.WithDefaults()
	cfg.URIPolicy = cfg.URIPolicy.WithDefaults()
	if cfg.Name == "" {
		cfg.Name = "rcpd"
	}
	if cfg.Reranker != nil {
		if cfg.RerankMethod == "" {
			cfg.RerankMethod = rcp.RerankCrossEncoder
		}
		switch cfg.RerankMethod {
		case rcp.RerankCrossEncoder, rcp.RerankColBERT, rcp.RerankLLM:
		default:
			return cfg, fmt.Errorf("engine: unknown rerank method %q", cfg.RerankMethod)
		}
		if cfg.RerankMaxCandidates <= 0 {
			cfg.RerankMaxCandidates = 100
		}
	}
	cfg.maxAddDocs = DefaultMaxAddDocs
	for name, typ := range cfg.Fields {
		if _, ok := fieldTypes[typ]; !ok {
			return cfg, fmt.Errorf("engine: field %q has unknown type %q", name, typ)
		}
	}
	return cfg, nil
}

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

var fieldTypes = map[string]index.FieldType{
	filter.TypeKeyword: index.FieldKeyword,
	filter.TypeText:    index.FieldText,
	filter.TypeInt:     index.FieldInt,
	filter.TypeFloat:   index.FieldFloat,
	filter.TypeBool:    index.FieldBool,
	filter.TypeDate:    index.FieldDate,
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

// Describe implements rcp.Handler: the description under the published
// dense generation, with the declared filter fields or else those inferred
// so far; the server freezes it per session.
func (e *Engine) Describe(ctx context.Context) rcp.Description {
	g := e.published()
	if e.dense != nil {
		e.dense.Touch() // a session negotiates the published generation
	}
	if len(e.fields) == 0 {
		return e.withTree(e.inferredDescription(g))
	}
	return e.withTree(e.descFor(g))
}

// Call implements rcp.Handler.
func (e *Engine) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if e.data.Checking() {
		if err := e.data.Damage(); err != nil {
			return nil, e.rpcError(ctx, method, &fault.Error{Err: integrity.ErrDamaged, Detail: err.Error()})
		}
		// Until the page walks have passed (engine_verify.go), a damaged
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

// DenseIdentity is the identity of the published dense generation ("" when
// none).
func (e *Engine) DenseIdentity() string {
	if g := e.published(); g != nil {
		return g.Identity()
	}
	return ""
}

// DenseBuild describes a dense generation being built in the background.
type DenseBuild = derive.DenseBuild

// DenseBuild returns the dense build in progress; ok is false when none
// is (dense retrieval off, or the published generation is current).
func (e *Engine) DenseBuild() (b DenseBuild, ok bool) {
	if e.dense == nil {
		return DenseBuild{}, false
	}
	return e.dense.Build()
}

// published is the published dense generation (nil: none, or dense off).
func (e *Engine) published() *derive.Generation {
	if e.dense == nil {
		return nil
	}
	return e.dense.Published()
}

// genDesc is the description under one generation, computed once.
type genDesc struct {
	g    *derive.Generation
	desc rcp.Description
}

// descFor is the description under generation g (nil: none), with the
// declared filter fields.
func (e *Engine) descFor(g *derive.Generation) rcp.Description {
	if g == nil {
		return e.descSparse
	}
	if c := e.genDesc.Load(); c != nil && c.g == g {
		return c.desc
	}
	d := e.describe(g)
	e.genDesc.Store(&genDesc{g: g, desc: d})
	return d
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

// describe computes the description under generation g (nil: none).
func (e *Engine) describe(g *derive.Generation) rcp.Description { return e.describeWith(g, e.fields) }

// describeWith is describe advertising the filter fields fields (declared
// or inferred).
func (e *Engine) describeWith(g *derive.Generation, fields map[string]string) rcp.Description {
	floor := 0.0
	ret := &rcp.RetrieveCap{
		MaxK: e.cfg.MaxK, Modes: []string{rcp.ModeSparse},
		Units:       []string{rcp.UnitChunk, rcp.UnitPassage, rcp.UnitDocument, rcp.UnitPage},
		TokenBudget: true, Confidence: true, ScoreScale: "bm25", ScoreFloor: &floor,
		Deterministic: true, Snapshots: e.cfg.Backend == nil, DefaultMode: rcp.ModeSparse,
		Modalities: []string{rcp.ModalityText},
	}
	caps := rcp.Capabilities{
		Retrieve:   ret,
		Streaming:  &rcp.EmptyCap{},
		Pagination: &rcp.EmptyCap{},
		Citations:  &rcp.EmptyCap{},
		Log:        &rcp.LogCap{Levels: []string{rcp.LogDebug, rcp.LogInfo, rcp.LogNotice, rcp.LogWarning, rcp.LogError}},
		Index:      &rcp.IndexCap{Writable: !e.cfg.ReadOnly, Chunking: true, Contextual: true},
	}
	if len(fields) > 0 {
		caps.Filter = &rcp.FilterCap{Fields: rcp.TypedFields(fields), Operators: e.ops}
	}
	var vendor rcp.RCPGoCap
	if e.cfg.Backend == nil {
		vendor.Methods = []string{rcp.MethodRCPGoGet, rcp.MethodRCPGoList}
		if len(e.fields) > 0 {
			vendor.Methods = append(vendor.Methods, rcp.MethodRCPGoValues)
		}
	}
	e.agentic.Describe(&caps, &vendor)
	if e.know != nil {
		e.know.Describe(&caps)
	}
	e.describeLimits(&vendor)
	rcp.SetRCPGoCap(&caps, vendor)
	level := rcp.LevelL0
	if g != nil {
		ret.Modes = []string{rcp.ModeDense, rcp.ModeSparse, rcp.ModeHybrid}
		ret.Fusion = []string{rcp.FusionRRF, rcp.FusionWeighted, rcp.FusionConvex}
		ret.MMR = true
		ret.ScoreScale = "" // bm25, cosine or fused depending on mode (docs/rcpd.md)
		// hit.vector travels as a JSON array only: the normative schema
		// types Hit.vector as an array of numbers, so f32-base64 is
		// advertised for embed but not for includeVectors.
		ret.Encodings = []string{rcp.EncodingJSON}
		dim, batchLimit, norm := g.Encoder()
		caps.Embed = &rcp.EmbedCap{Dimension: dim, Identity: g.Identity(),
			BatchLimit: batchLimit, Normalized: &norm,
			Modalities: []string{rcp.ModalityText}, Encodings: []string{rcp.EncodingJSON, rcp.EncodingF32Base64}}
		if caps.Filter != nil {
			level = rcp.LevelL2 // L1 profile + streaming, pagination, log, snapshots
		}
	}
	if m := e.cfg.MultiEncoder; m != nil {
		caps.MultiVector = &rcp.MultiVectorCap{Dimension: m.MultiDimension(), Identity: m.Identity(),
			Similarity: string(m.Similarity()), Modalities: []string{rcp.ModalityText},
			Encodings: []string{rcp.EncodingJSON, rcp.EncodingF32Base64}}
	}
	if s := e.cfg.SparseEncoder; s != nil {
		caps.SparseEmbed = &rcp.SparseEmbedCap{Identity: s.Identity(), Vocabulary: s.Vocabulary()}
	}
	if e.cfg.Reranker != nil {
		caps.Rerank = &rcp.RerankCap{Methods: []string{e.cfg.RerankMethod}, MaxCandidates: e.cfg.RerankMaxCandidates,
			Models: []string{e.cfg.Reranker.Identity()}}
		ret.RerankBuiltin = true
		// Reranker scores (e.g. cross-encoder logits) have no principled
		// lower bound and another scale: neither is advertised.
		ret.ScoreFloor, ret.ScoreScale = nil, ""
	}
	return rcp.Description{
		Server:       rcp.PeerInfo{Name: e.cfg.Name, Version: e.cfg.Version},
		Capabilities: caps,
		Conformance:  level,
	}
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

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

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

// readOnlyReason is Config.ReadOnlyReason or its default.
func (c *Config) readOnlyReason() string {
	if c.ReadOnlyReason != "" {
		return c.ReadOnlyReason
	}
	return "the server was started read-only"
}

// describeLimits adds to the x-rcpgo capability why the index is
// read-only, and the request limits a client sizes its batches by.
func (e *Engine) describeLimits(v *rcp.RCPGoCap) {
	if e.cfg.ReadOnly {
		v.ReadOnly = e.cfg.readOnlyReason()
	}
	v.Limits = &rcp.RCPGoLimits{RequestBytes: e.cfg.MaxRequestBytes, AddDocuments: e.cfg.maxAddDocs}
}

// inference caches the description built on the inferred filter fields.
type inference struct {
	mu   sync.Mutex
	gen  *derive.Generation // the description below was built for
	desc *rcp.Description
}

// inferredDescription is Describe when no field is declared: the
// description under g advertising the fields inferred so far.
func (e *Engine) inferredDescription(g *derive.Generation) rcp.Description {
	inf := &e.inference
	inf.mu.Lock()
	defer inf.mu.Unlock()
	fields, changed, err := e.catalog.Inferred()
	if err != nil {
		e.log.Warn("engine: reading the inferred filter fields", "err", err) // keep the last set
	}
	if changed {
		inf.desc = nil
	}
	if inf.desc == nil || inf.gen != g {
		d := e.describeWith(g, fields)
		inf.desc, inf.gen = &d, g
	}
	return *inf.desc
}

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

// withTree adds unit tree-node and the levels built so far to a
// description.
func (e *Engine) withTree(d rcp.Description) rcp.Description {
	if e.know == nil {
		return d
	}
	return e.know.WithTree(d)
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

// GraphStats reports the graph's size (zero without the graph).
func (e *Engine) GraphStats() graph.Stats {
	if e.know == nil {
		return graph.Stats{}
	}
	return e.know.GraphStats()
}
