package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"

	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/console"
	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/engine/chunk"
	"github.com/rcpgo/rcpgo/internal/auth"
	"github.com/rcpgo/rcpgo/internal/buildinfo"
	"github.com/rcpgo/rcpgo/internal/datadir"
	"github.com/rcpgo/rcpgo/internal/demo"
	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/filter"
)

// fileConfig is the JSON configuration file (--config). Every key is
// optional; flags and environment variables override it.
type fileConfig struct {
	Data           string            `json:"data"`
	HTTP           string            `json:"http"`
	Name           string            `json:"name"`
	ReadOnly       bool              `json:"readOnly"`
	MaxK           int               `json:"maxK"`
	MaxCandidates  int               `json:"maxCandidates"`
	Fields         map[string]string `json:"fields"`
	Dense          string            `json:"dense"`
	MinFitDocs     int               `json:"minFitDocs"`
	LSADimension   int               `json:"lsaDimension"`
	LSAFitSample   int               `json:"lsaFitSample"`
	Chunk          chunk.Options     `json:"chunk"`
	TrustedSources map[string]string `json:"trustedSources"`
	NoScreen       bool              `json:"noScreen"`
	QueryConc      int               `json:"queryConcurrency"`
	HTTPSessions   string            `json:"httpSessions"`
	BearerTokens   []string          `json:"bearerTokens"`
	TokenFile      string            `json:"tokenFile"`
	RequestTimeout string            `json:"requestTimeout"`
	LogLevel       string            `json:"logLevel"`
	Rerank         rerankConfig      `json:"rerank"`
	Embed          embedConfig       `json:"embed"`
	LLM            llmConfig         `json:"llm"`
	Multi          onnxModelConfig   `json:"multi"`
	Sparse         onnxModelConfig   `json:"sparse"`
	OnnxLibrary    string            `json:"onnxLibrary"`
	Fusion         fusionConfig      `json:"fusion"`
	FetchURIs      uriConfig         `json:"fetchURIs"`
	NoUI           bool              `json:"noUI"`
	Graph          bool              `json:"graph"`
	UIDatasets     string            `json:"uiDatasets"`
	WordNet        string            `json:"wordnet"` // WordNet data directory, or "none"
	Session        sessionConfig     `json:"session"`
	DenseRetain    retainConfig      `json:"denseRetain"`
	Feedback       feedbackConfig    `json:"feedback"`
	Memory         memoryConfig      `json:"memory"`
	AllowHosts     []string          `json:"allowHosts"`
	AllowOrigins   []string          `json:"allowOrigins"`
	MetricsAddr    string            `json:"metricsAddr"`
	// MaxRequestBytes caps one request (a stdio frame, an HTTP body);
	// advertised to clients, which size their index/add batches by it.
	MaxRequestBytes int            `json:"maxRequestBytes"`
	Backend         string         `json:"backend"` // embedded or weaviate
	Weaviate        weaviateConfig `json:"weaviate"`
}

// uriConfig is the Content uri fetch policy (engine.URIPolicy).
type uriConfig struct {
	Disabled     bool     `json:"disabled"`
	Schemes      []string `json:"schemes"`
	Hosts        []string `json:"hosts"`
	AllowPrivate bool     `json:"allowPrivate"`
	MaxBytes     int64    `json:"maxBytes"`
	Timeout      string   `json:"timeout"`
}

// fusionConfig overrides the measured hybrid fusion defaults.
type fusionConfig struct {
	Method       string  `json:"method"`
	RRFK         float64 `json:"rrfK"`
	Alpha        float64 `json:"alpha"`
	SparseWeight float64 `json:"sparseWeight"`
	DenseWeight  float64 `json:"denseWeight"`
}

// rerankConfig configures the reranker (config key "rerank").
type rerankConfig struct {
	Provider      string `json:"provider"`  // onnx-cross-encoder, onnx-colbert, llm or none
	Model         string `json:"model"`     // .onnx file
	Tokenizer     string `json:"tokenizer"` // tokenizer.json
	Library       string `json:"library"`   // legacy spelling of onnxLibrary
	Method        string `json:"method"`    // legacy: cross-encoder (default) or colbert, with model
	Name          string `json:"name"`
	MaxLength     int    `json:"maxLength"`
	MaxCandidates int    `json:"maxCandidates"`
}

// demoFields is the schema of internal/demo's corpus.
var demoFields = map[string]string{"topic": "keyword", "year": "int", "lang": "keyword"}

type serveFlags struct {
	data, httpAddr, config, logLevel, sessions, dense, token string
	tokenFile                                                string
	onLocked, rerankModel, rerankTokenizer                   string
	maxRequest                                               string
	stdio, demo, readOnly, graph                             bool
	fields                                                   fieldFlags

	embedURL, embedModel, embedKeyEnv, embedDimension        string
	embedQueryPrefix, embedDocPrefix                         string
	embedOnnx, embedTokenizer, embedPooling                  string
	rerank, llmURL, llmModel, llmKeyEnv                      string
	multiModel, multiTokenizer, sparseModel, sparseTokenizer string
	onnxLibrary                                              string
	noUI                                                     bool
	uiDatasets                                               string
	metricsAddr                                              string
	allowHosts, allowOrigins                                 stringList
	backendFlags
}

// fieldTypeNames are the filter field types the engine indexes.
var fieldTypeNames = []string{filter.TypeKeyword, filter.TypeText, filter.TypeInt, filter.TypeFloat, filter.TypeBool, filter.TypeDate}

// fieldFlags is the repeatable --field NAME=TYPE.
type fieldFlags []struct{ name, typ string }

func (f *fieldFlags) String() string { return fmt.Sprint(*f) }

func (f *fieldFlags) Set(v string) error {
	name, typ, ok := strings.Cut(v, "=")
	name, typ = strings.TrimSpace(name), strings.TrimSpace(typ)
	if !ok || name == "" || !slices.Contains(fieldTypeNames, typ) {
		return fmt.Errorf("want NAME=TYPE with TYPE one of %s", strings.Join(fieldTypeNames, ", "))
	}
	*f = append(*f, struct{ name, typ string }{name, typ})
	return nil
}

// defaultDataDir is the data directory when none is named (RCPD_DATA is
// picked before it, in its place among flag, environment and config).
func defaultDataDir() string { return datadir.Default() }

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rcpd serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f serveFlags
	fs.StringVar(&f.data, "data", "", "data directory (env RCPD_DATA; default $XDG_DATA_HOME/rcpd or ~/.local/share/rcpd)")
	fs.StringVar(&f.httpAddr, "http", "", "serve HTTP on this address, e.g. 127.0.0.1:7700 (env RCPD_HTTP; default 127.0.0.1:7700 unless --stdio)")
	fs.BoolVar(&f.stdio, "stdio", false, "serve one session over stdin/stdout (NDJSON)")
	fs.StringVar(&f.config, "config", "", "JSON configuration file (env RCPD_CONFIG)")
	fs.BoolVar(&f.demo, "demo", false, "load the built-in demo corpus (idempotent) into its own data directory ($XDG_DATA_HOME/rcpd-demo) unless --data is given")
	fs.Var(&f.fields, "field", "declare a filterable metadata field NAME=TYPE (keyword, text, int, float, bool, date); repeatable, added to the config file's fields")
	fs.BoolVar(&f.readOnly, "read-only", false, "refuse index/add and index/delete; when another process holds the data directory, serve a read-only snapshot copy of it")
	fs.BoolVar(&f.graph, "graph", false, "build the knowledge graph and the summary tree in the background and serve graph, memory/build|recall and the graph and tree-node units (env RCPD_GRAPH=1; on with --demo)")
	fs.StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error (env RCPD_LOG_LEVEL; default info)")
	fs.StringVar(&f.sessions, "http-sessions", "", "HTTP session mode: single, stateful or stateless (env RCPD_HTTP_SESSIONS; default stateful: a session per client that initializes, stateless for clients that send no RCP-Session; single: one shared session, what the reference harness check.py expects)")
	fs.StringVar(&f.dense, "dense", "", "dense encoder: lsa, openai, onnx or none (env RCPD_DENSE; default lsa)")
	fs.StringVar(&f.embedURL, "embed-url", "", "--dense openai: API root of an OpenAI-compatible /embeddings endpoint, e.g. http://localhost:11434/v1 (env RCPD_EMBED_URL)")
	fs.StringVar(&f.embedModel, "embed-model", "", "--dense openai: model name (env RCPD_EMBED_MODEL)")
	fs.StringVar(&f.embedKeyEnv, "embed-api-key-env", "", "--dense openai: environment variable holding the API key (env RCPD_EMBED_API_KEY_ENV; default OPENAI_API_KEY)")
	fs.StringVar(&f.embedDimension, "embed-dimension", "", "--dense openai: vector dimension (env RCPD_EMBED_DIMENSION; default: probed at start)")
	fs.StringVar(&f.embedQueryPrefix, "embed-query-prefix", "", "prefix prepended to queries before embedding, e.g. 'query: ' (env RCPD_EMBED_QUERY_PREFIX)")
	fs.StringVar(&f.embedDocPrefix, "embed-document-prefix", "", "prefix prepended to documents before embedding, e.g. 'passage: ' (env RCPD_EMBED_DOCUMENT_PREFIX)")
	fs.StringVar(&f.embedOnnx, "embed-model-onnx", "", "--dense onnx: bi-encoder .onnx file (env RCPD_EMBED_MODEL_ONNX)")
	fs.StringVar(&f.embedTokenizer, "embed-tokenizer", "", "--dense onnx: tokenizer.json (env RCPD_EMBED_TOKENIZER)")
	fs.StringVar(&f.embedPooling, "embed-pooling", "", "--dense onnx: mean, cls or none (env RCPD_EMBED_POOLING; default mean)")
	fs.StringVar(&f.rerank, "rerank", "", "reranker: onnx-cross-encoder, onnx-colbert, llm or none (env RCPD_RERANK; default none, or onnx-cross-encoder when --rerank-model is given)")
	fs.StringVar(&f.llmURL, "llm-url", "", "API root of an OpenAI-compatible /chat/completions endpoint, for --rerank llm and query/transform (hyde and model versions of every method) (env RCPD_LLM_URL)")
	fs.StringVar(&f.llmModel, "llm-model", "", "chat model of --llm-url (env RCPD_LLM_MODEL)")
	fs.StringVar(&f.llmKeyEnv, "llm-api-key-env", "", "--rerank llm: environment variable holding the API key (env RCPD_LLM_API_KEY_ENV; default OPENAI_API_KEY)")
	fs.StringVar(&f.multiModel, "multi-model", "", "ONNX late-interaction (ColBERT) model served by embed/multi (env RCPD_MULTI_MODEL)")
	fs.StringVar(&f.multiTokenizer, "multi-tokenizer", "", "tokenizer.json of --multi-model (env RCPD_MULTI_TOKENIZER)")
	fs.StringVar(&f.sparseModel, "sparse-model", "", "ONNX SPLADE model served by embed/sparse (env RCPD_SPARSE_MODEL)")
	fs.StringVar(&f.sparseTokenizer, "sparse-tokenizer", "", "tokenizer.json of --sparse-model (env RCPD_SPARSE_TOKENIZER)")
	fs.StringVar(&f.onnxLibrary, "onnx-library", "", "libonnxruntime.so for ONNX models (default $RCPGO_ONNXRUNTIME_LIB; see scripts/fetch-onnxruntime.sh)")
	fs.StringVar(&f.onLocked, "on-locked", "", "when another process holds the data directory: fail (say who holds it and what to do instead) or snapshot (serve a read-only copy, as --read-only does) (env RCPD_ON_LOCKED; default fail, snapshot with --demo)")
	fs.StringVar(&f.maxRequest, "max-request-bytes", "", "largest request accepted, in bytes (a stdio frame or an HTTP body; env RCPD_MAX_REQUEST_BYTES; default 16777216): rcp index add sizes its batches by it, and a file larger than it is skipped by name")
	fs.StringVar(&f.rerankModel, "rerank-model", "", "--rerank onnx-*: ONNX cross-encoder or ColBERT model (env RCPD_RERANK_MODEL; needs --rerank-tokenizer and ONNX Runtime)")
	fs.StringVar(&f.rerankTokenizer, "rerank-tokenizer", "", "tokenizer.json of the rerank model (env RCPD_RERANK_TOKENIZER)")
	fs.StringVar(&f.token, "token", "", "require this bearer token on HTTP, with every scope (env RCPD_TOKEN); /metrics needs it too and /healthz shows counts only with it")
	fs.StringVar(&f.tokenFile, "token-file", "", "require one of the tokens of this `FILE` on HTTP, each with its scopes read, write, admin (env RCPD_TOKEN_FILE; format: docs/hostile-input.md, rcpd token new)")
	fs.Var(&f.allowHosts, "allow-host", "also accept this `NAME` in the HTTP Host header (repeatable; IP literals and localhost always pass; * accepts any): DNS-rebinding protection")
	fs.Var(&f.allowOrigins, "allow-origin", "accept cross-site browser requests from this `ORIGIN` (scheme://host[:port], repeatable; * accepts any): CSRF protection")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve /metrics and /healthz without auth on this separate `ADDR` (and not on --http)")
	fs.BoolVar(&f.noUI, "no-ui", false, "do not serve the web console at / on the HTTP listener (env RCPD_NO_UI=1)")
	fs.StringVar(&f.uiDatasets, "ui-datasets", "", "directory of BEIR datasets the console's Evaluate tab may run (env RCPD_UI_DATASETS; default: running evaluations is off)")
	f.backendFlags.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rcpd serve: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := serve(ctx, f, stdin, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "rcpd serve:", err)
		return 1
	}
	return 0
}

// pick returns the first non-empty value.
func pick(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func serve(ctx context.Context, f serveFlags, stdin io.Reader, stdout, stderr io.Writer) error {
	fc, err := readFileConfig(f.config)
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(pick(f.logLevel, os.Getenv("RCPD_LOG_LEVEL"), fc.LogLevel, "info"))); err != nil {
		return fmt.Errorf("log level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg, err := engineConfig(f, &fc, log)
	if err != nil {
		return err
	}
	ln, err := claimDataAndAddress(&cfg, f, &fc)
	if err != nil {
		return err
	}
	if ln != nil {
		defer ln.Close()
	}
	if err := applyAgentic(&cfg, &fc); err != nil {
		return err
	}
	if err := applyRetain(&cfg, fc.DenseRetain); err != nil {
		return err
	}
	if err := applyPolicies(&cfg, &fc); err != nil {
		return err
	}
	prov, err := configureProviders(ctx, f, &fc, &cfg, log)
	if err != nil {
		return err
	}
	defer prov.Close()
	if err := configureBackend(ctx, f, &fc, &cfg, pick(f.dense, os.Getenv("RCPD_DENSE"), fc.Dense), log); err != nil {
		return err
	}
	timeout := rcp.DefaultRequestTimeout
	if s := pick(os.Getenv("RCPD_REQUEST_TIMEOUT"), fc.RequestTimeout); s != "" {
		if timeout, err = time.ParseDuration(s); err != nil {
			return fmt.Errorf("request timeout: %w", err)
		}
	}
	// rcpd listens while the engine opens: ping is answered at once, the
	// rest waits for the engine (openingEngine).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	eng := openEngine(ctx, cfg, log)
	defer eng.close()
	errc := make(chan error, 4)
	go eng.failed(errc)
	m := newMetrics(eng)
	tokens, err := auth.Configure(pick(f.tokenFile, os.Getenv("RCPD_TOKEN_FILE"), fc.TokenFile),
		append(slices.Clone(fc.BearerTokens), pick(f.token, os.Getenv("RCPD_TOKEN")))...)
	if err != nil {
		return err
	}
	srv := rcp.NewServer(m.wrap(tokens.Guard(eng)), &rcp.ServerOptions{Logger: log, RequestTimeout: timeout, MaxFrameBytes: int(cfg.MaxRequestBytes)})

	if ln != nil {
		face, err := serveHTTP(f, &fc, ln, srv, tokens, timeout, eng, m, log, errc)
		if err != nil {
			return err
		}
		defer face.close()
	}
	if f.stdio {
		go func() {
			errc <- srv.ServeStdio(ctx, stdin, stdout)
		}()
	}
	if f.stdio {
		// stdio alone: the session's end (EOF, shutdown) ends the process.
		select {
		case err := <-errc:
			if err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
		case <-ctx.Done():
		}
		if ln == nil {
			return eng.openErr()
		}
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		log.Info("rcpd: shutting down")
		return nil
	}
}

// readFileConfig reads the config file named by --config or
// $RCPD_CONFIG (none: the zero config); unknown keys are refused.
func readFileConfig(flagPath string) (fileConfig, error) {
	var fc fileConfig
	path := pick(flagPath, os.Getenv("RCPD_CONFIG"))
	if path == "" {
		return fc, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fc, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fc); err != nil {
		return fc, fmt.Errorf("config %s: %w", path, err)
	}
	if fc.QueryConc < 0 {
		return fc, fmt.Errorf("config %s: queryConcurrency %d: must be 0 (the default, 2 × GOMAXPROCS) or more", path, fc.QueryConc)
	}
	return fc, nil
}

// engineConfig is the engine's configuration from the flags, the
// environment and the config file, in that order of precedence; --demo
// adds its corpus, fields and trusted source.
func engineConfig(f serveFlags, fc *fileConfig, log *slog.Logger) (engine.Config, error) {
	cfg := engine.Config{
		Dir:      pick(f.data, os.Getenv("RCPD_DATA"), fc.Data, defaultDataDir()),
		Name:     pick(fc.Name, "rcpd"),
		Version:  buildinfo.Version(),
		ReadOnly: f.readOnly || fc.ReadOnly || os.Getenv("RCPD_READ_ONLY") == "1",
		MaxK:     fc.MaxK, MaxCandidates: fc.MaxCandidates,
		Fields:     map[string]string{},
		Dense:      pick(f.dense, os.Getenv("RCPD_DENSE"), fc.Dense, engine.DenseLSA),
		MinFitDocs: fc.MinFitDocs, LSADimension: fc.LSADimension, LSAFitSample: fc.LSAFitSample,
		Chunk:            fc.Chunk,
		TrustedSources:   map[string]string{},
		NoScreen:         fc.NoScreen,
		QueryConcurrency: fc.QueryConc,
		Graph:            f.graph || f.demo || fc.Graph || os.Getenv("RCPD_GRAPH") == "1",
		Logger:           log,
	}
	if cfg.ReadOnly {
		cfg.ReadOnlyReason = "the server was started read-only (--read-only)"
	}
	for k, v := range fc.TrustedSources {
		cfg.TrustedSources[k] = v
	}
	if f.demo {
		// The demo stays out of the user's own index: its own directory
		// unless one was named.
		if pick(f.data, os.Getenv("RCPD_DATA"), fc.Data) == "" {
			cfg.Dir = defaultDataDir() + "-demo"
		}
		for k, v := range demoFields {
			cfg.Fields[k] = v
		}
		if _, ok := cfg.TrustedSources["demo"]; !ok {
			cfg.TrustedSources["demo"] = "trusted" // written by the project, shipped in the binary
		}
		docs, err := demoCorpus()
		if err != nil {
			return cfg, err
		}
		cfg.Preload = docs
	}
	for k, v := range fc.Fields {
		cfg.Fields[k] = v
	}
	for _, fl := range f.fields {
		cfg.Fields[fl.name] = fl.typ
	}
	return cfg, nil
}

// applyPolicies sets the fusion defaults and the content-uri fetch policy
// of the config file.
func applyPolicies(cfg *engine.Config, fc *fileConfig) error {
	cfg.Fusion = engine.FusionDefaults{Method: fc.Fusion.Method, RRFK: fc.Fusion.RRFK, Alpha: fc.Fusion.Alpha,
		SparseWeight: fc.Fusion.SparseWeight, DenseWeight: fc.Fusion.DenseWeight}
	cfg.URIPolicy = engine.URIPolicy{Disabled: fc.FetchURIs.Disabled, Schemes: fc.FetchURIs.Schemes, Hosts: fc.FetchURIs.Hosts,
		AllowPrivate: fc.FetchURIs.AllowPrivate, MaxBytes: fc.FetchURIs.MaxBytes}
	if s := fc.FetchURIs.Timeout; s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("fetchURIs.timeout: %w", err)
		}
		cfg.URIPolicy.Timeout = d
	}
	return nil
}

// serveHTTP starts the HTTP face on ln: the RCP endpoint with its session
// mode, host and origin checks, the web console unless it is turned off,
// and the metrics.
func serveHTTP(f serveFlags, fc *fileConfig, ln net.Listener, srv *rcp.Server, tokens *auth.Set, timeout time.Duration,
	eng engineState, m *metrics, log *slog.Logger, errc chan<- error) (*httpFace, error) {
	mode, err := sessionMode(pick(f.sessions, os.Getenv("RCPD_HTTP_SESSIONS"), fc.HTTPSessions, "stateful"))
	if err != nil {
		return nil, err
	}
	opts := &rcp.HTTPOptions{Sessions: mode, Authenticate: tokens.Authenticate,
		AllowedHosts: append(fc.AllowHosts, f.allowHosts...), TrustedOrigins: append(fc.AllowOrigins, f.allowOrigins...)}
	uiOff := f.noUI || fc.NoUI || os.Getenv("RCPD_NO_UI") == "1"
	var mount func(*http.ServeMux)
	if !uiOff {
		mount = func(mux *http.ServeMux) {
			mux.Handle("/", console.New(console.Options{
				Server: srv, Tokens: tokens, Version: buildinfo.Version(), Logger: log, Extract: isolatedExtract(),
				Datasets:     pick(f.uiDatasets, os.Getenv("RCPD_UI_DATASETS"), fc.UIDatasets),
				AllowedHosts: opts.AllowedHosts, // the RCP endpoint's DNS-rebinding list
			}))
		}
	}
	for _, o := range opts.TrustedOrigins {
		if o != "*" {
			if err := http.NewCrossOriginProtection().AddTrustedOrigin(o); err != nil {
				return nil, fmt.Errorf("--allow-origin %q: %w", o, err)
			}
		}
	}
	face, _, err := startHTTP(httpFaceConfig{ln: ln, metricsAddr: pick(f.metricsAddr, fc.MetricsAddr), opts: opts, tokens: tokens, requestTimeout: timeout, mount: mount},
		srv, eng, m, log, errc)
	if err != nil {
		return nil, err
	}
	log.Info("rcpd: web console", "console", consoleURL(face.addrs[0], uiOff))
	return face, nil
}

// consoleURL is the console's address for the start-up log ("off" with --no-ui).
func consoleURL(addr string, off bool) string {
	if off {
		return "off"
	}
	return "http://" + addr + "/"
}

func sessionMode(s string) (rcp.SessionMode, error) {
	switch strings.ToLower(s) {
	case "single":
		return rcp.SessionSingle, nil
	case "stateful":
		return rcp.SessionStateful, nil
	case "stateless":
		return rcp.SessionStateless, nil
	}
	return 0, fmt.Errorf("unknown HTTP session mode %q (single, stateful, stateless)", s)
}

// demoCorpus is internal/demo's corpus as preloaded documents.
func demoCorpus() ([]engine.Preload, error) {
	docs, err := demo.Docs()
	if err != nil {
		return nil, err
	}
	out := make([]engine.Preload, len(docs))
	for i, d := range docs {
		out[i] = engine.Preload{ID: d.ID, Title: d.Title, Text: d.Text, Meta: d.Metadata,
			Source: "demo", URI: "rcpd-demo://" + d.ID}
	}
	return out, nil
}
