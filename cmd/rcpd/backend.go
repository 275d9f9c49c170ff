package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/embed/lsa"
	"github.com/rcpgo/rcpgo/engine/weaviate"
)

// Backends of rcpd serve --backend.
const (
	backendEmbedded = "embedded"
	backendWeaviate = "weaviate"
)

// backendFlags select where documents live (engine.Config.Backend).
type backendFlags struct {
	backend, url, grpc, keyEnv, class, tenant string
	replicas, writeCL, readCL, lsaModel       string
}

// weaviateConfig is the "weaviate" object of the configuration file.
type weaviateConfig struct {
	URL              string `json:"url"`
	GRPC             string `json:"grpc"`
	APIKeyEnv        string `json:"apiKeyEnv"`
	Class            string `json:"class"`
	Tenant           string `json:"tenant"`
	Replicas         int    `json:"replicas"`
	WriteConsistency string `json:"writeConsistency"`
	ReadConsistency  string `json:"readConsistency"`
	LSAModel         string `json:"lsaModel"` // a fitted LSA model file (--dense lsa)
	// RecentWindowSeconds and RecentMax: the documents written within the
	// window (default 75 s; -1: off) are ranked exactly by BM25 while
	// Weaviate may not have flushed them, up to RecentMax (default 5000)
	// of them (engine/weaviate/recent.go).
	RecentWindowSeconds int `json:"recentWindowSeconds"`
	RecentMax           int `json:"recentMax"`
}

func (b *backendFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.backend, "backend", "", "where documents live: embedded (DIR/index) or weaviate (env RCPD_BACKEND; default embedded)")
	fs.StringVar(&b.url, "weaviate-url", "", "--backend weaviate: REST endpoint (env RCPD_WEAVIATE_URL; default http://127.0.0.1:8080)")
	fs.StringVar(&b.grpc, "weaviate-grpc", "", "--backend weaviate: gRPC host:port (env RCPD_WEAVIATE_GRPC; default the URL's host, port 50051)")
	fs.StringVar(&b.keyEnv, "weaviate-api-key-env", "", "--backend weaviate: environment variable holding the API key (env RCPD_WEAVIATE_API_KEY_ENV; default WEAVIATE_API_KEY; unset: anonymous)")
	fs.StringVar(&b.class, "weaviate-class", "", "--backend weaviate: collection, created when missing (env RCPD_WEAVIATE_CLASS; default "+weaviate.DefaultClass+")")
	fs.StringVar(&b.tenant, "tenant", "", "--backend weaviate: serve this tenant of a multi-tenant collection (env RCPD_TENANT)")
	fs.StringVar(&b.replicas, "weaviate-replicas", "", "--backend weaviate: replication factor of a collection rcpd creates (env RCPD_WEAVIATE_REPLICAS; default 1)")
	fs.StringVar(&b.writeCL, "weaviate-write-consistency", "", "--backend weaviate: ONE, QUORUM or ALL replicas acknowledge a write (env RCPD_WEAVIATE_WRITE_CONSISTENCY; default QUORUM)")
	fs.StringVar(&b.readCL, "weaviate-read-consistency", "", "--backend weaviate: ONE, QUORUM or ALL replicas answer a read (env RCPD_WEAVIATE_READ_CONSISTENCY; default ONE: reads survive a lost replica)")
	fs.StringVar(&b.lsaModel, "lsa-model", "", "--backend weaviate --dense lsa: fitted LSA model file, e.g. DIR/dense/g000001/lsa.model of an embedded rcpd (env RCPD_LSA_MODEL)")
}

// configureBackend sets cfg.Backend for --backend weaviate; the dense
// encoder configured for the engine (or an LSA model file) moves to the
// backend, which embeds at write time. explicitDense is the --dense the
// user gave ("" when defaulted).
func configureBackend(ctx context.Context, f serveFlags, fc *fileConfig, cfg *engine.Config, explicitDense string, log *slog.Logger) error {
	bf := f.backendFlags
	switch kind := pick(bf.backend, os.Getenv("RCPD_BACKEND"), fc.Backend, backendEmbedded); kind {
	case backendEmbedded:
		return nil
	case backendWeaviate:
	default:
		return fmt.Errorf("--backend: want embedded or weaviate, got %q", kind)
	}
	wc := fc.Weaviate
	wcfg := weaviate.Config{
		URL:              pick(bf.url, os.Getenv("RCPD_WEAVIATE_URL"), wc.URL, "http://127.0.0.1:8080"),
		GRPCAddr:         pick(bf.grpc, os.Getenv("RCPD_WEAVIATE_GRPC"), wc.GRPC),
		Class:            pick(bf.class, os.Getenv("RCPD_WEAVIATE_CLASS"), wc.Class),
		Tenant:           pick(bf.tenant, os.Getenv("RCPD_TENANT"), wc.Tenant),
		WriteConsistency: pick(bf.writeCL, os.Getenv("RCPD_WEAVIATE_WRITE_CONSISTENCY"), wc.WriteConsistency, "QUORUM"),
		ReadConsistency:  pick(bf.readCL, os.Getenv("RCPD_WEAVIATE_READ_CONSISTENCY"), wc.ReadConsistency, "ONE"),
		Replicas:         wc.Replicas,
		Fields:           cfg.Fields,
		Logger:           log,
		RecentWindow:     time.Duration(wc.RecentWindowSeconds) * time.Second,
		RecentMax:        wc.RecentMax,
	}
	if s := pick(bf.replicas, os.Getenv("RCPD_WEAVIATE_REPLICAS")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fmt.Errorf("--weaviate-replicas: want a positive integer, got %q", s)
		}
		wcfg.Replicas = n
	}
	wcfg.APIKey = os.Getenv(pick(bf.keyEnv, os.Getenv("RCPD_WEAVIATE_API_KEY_ENV"), wc.APIKeyEnv, "WEAVIATE_API_KEY"))
	dense, err := backendEncoder(cfg, explicitDense, pick(bf.lsaModel, os.Getenv("RCPD_LSA_MODEL"), wc.LSAModel))
	if err != nil {
		return err
	}
	wcfg.Dense = dense
	if cfg.Graph {
		if f.graph || fc.Graph || os.Getenv("RCPD_GRAPH") == "1" {
			return errors.New("--graph needs the embedded backend")
		}
		cfg.Graph = false // --demo's default
	}
	b, err := weaviate.Open(wcfg)
	if err != nil {
		return err
	}
	cfg.Backend, cfg.Dense, cfg.DenseProvider = b, engine.DenseNone, nil
	// Serve at once either way; a first connection within seconds keeps
	// the first requests (and a --demo preload) from failing.
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := b.WaitConnected(wctx); err != nil {
		if len(cfg.Preload) > 0 {
			b.Close()
			return fmt.Errorf("--backend weaviate: %w", err)
		}
		log.Warn("rcpd: Weaviate not reachable yet; retrieve and index answer -32010 until it is", "url", wcfg.URL, "err", err)
	}
	ident := "none"
	if dense != nil {
		ident = dense.Identity()
	}
	log.Info("rcpd: backend weaviate", "url", wcfg.URL, "class", wcfg.Class, "tenant", wcfg.Tenant, "dense", ident)
	return nil
}

// backendEncoder is the encoder the Weaviate backend embeds with: the
// configured external provider, or an LSA model read from a file (the
// LSA model of an embedded rcpd is fitted on its own corpus; replicas
// sharing a cluster must share one model, so it is given, not fitted).
func backendEncoder(cfg *engine.Config, explicitDense, lsaModel string) (embed.Provider, error) {
	switch {
	case cfg.DenseProvider != nil:
		return cfg.DenseProvider, nil
	case cfg.Dense == engine.DenseLSA && lsaModel != "":
		m, err := lsa.Load(lsaModel, analysis.Default().Terms)
		if err != nil {
			return nil, fmt.Errorf("--lsa-model: %w", err)
		}
		return m, nil
	case cfg.Dense == engine.DenseLSA && explicitDense != "":
		return nil, errors.New("--backend weaviate --dense lsa needs --lsa-model (a model fitted by an embedded rcpd)")
	case lsaModel != "":
		return nil, fmt.Errorf("--lsa-model is set but --dense is %q", cfg.Dense)
	}
	return nil, nil // sparse only
}
