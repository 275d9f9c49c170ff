package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/rcpgo/rcpgo/engine/chunk"
	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/feedback"
	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/internal/agentic"
	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/fetch"
	"github.com/rcpgo/rcpgo/engine/internal/knowledge"
	"github.com/rcpgo/rcpgo/engine/internal/retrieval"
	"github.com/rcpgo/rcpgo/engine/internal/writer"
	"github.com/rcpgo/rcpgo/engine/llm"
	"github.com/rcpgo/rcpgo/engine/memory"
	"github.com/rcpgo/rcpgo/engine/retain"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/session"
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
	// (engine/internal/catalog/infer.go); the filter capability is advertised once there is
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
	// to max(1, GOMAXPROCS − 1) (engine/internal/gate/admission.go).
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
	// in the background and serves graph and memory (engine/internal/knowledge/graph.go).
	Graph bool
	// DenseRetain bounds the superseded dense generations kept for the
	// sessions that negotiated them (engine/internal/derive/retain.go; defaults: 2
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

var fieldTypes = map[string]index.FieldType{
	filter.TypeKeyword: index.FieldKeyword,
	filter.TypeText:    index.FieldText,
	filter.TypeInt:     index.FieldInt,
	filter.TypeFloat:   index.FieldFloat,
	filter.TypeBool:    index.FieldBool,
	filter.TypeDate:    index.FieldDate,
}

// readOnlyReason is Config.ReadOnlyReason or its default.
func (c *Config) readOnlyReason() string {
	if c.ReadOnlyReason != "" {
		return c.ReadOnlyReason
	}
	return "the server was started read-only"
}

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
