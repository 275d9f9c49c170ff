package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/engine/embed/openai"
	"github.com/rcpgo/rcpgo/engine/llm"
	"github.com/rcpgo/rcpgo/rcp"
)

// embedConfig configures an external dense encoder (config key "embed").
type embedConfig struct {
	// openai
	URL            string `json:"url"`       // API root, e.g. http://localhost:11434/v1
	Model          string `json:"model"`     // model name sent as "model"
	APIKeyEnv      string `json:"apiKeyEnv"` // env var holding the key (default OPENAI_API_KEY)
	Dimension      int    `json:"dimension"` // 0: probed with one request at start
	QueryPrefix    string `json:"queryPrefix"`
	DocumentPrefix string `json:"documentPrefix"`
	BatchLimit     int    `json:"batchLimit"`
	// onnx
	OnnxModel string `json:"onnxModel"` // .onnx bi-encoder
	Tokenizer string `json:"tokenizer"` // its tokenizer.json
	Pooling   string `json:"pooling"`   // mean (default), cls, none
	MaxLength int    `json:"maxLength"`
	Name      string `json:"name"`
}

// onnxModelConfig configures an auxiliary ONNX model (config keys "multi"
// and "sparse").
type onnxModelConfig struct {
	Model     string `json:"model"`
	Tokenizer string `json:"tokenizer"`
	MaxLength int    `json:"maxLength"`
	Name      string `json:"name"`
}

// llmConfig configures the LLM judge of rerank method "llm".
type llmConfig struct {
	URL       string `json:"url"`
	Model     string `json:"model"`
	APIKeyEnv string `json:"apiKeyEnv"`
}

// Rerank providers (--rerank).
const (
	rerankONNXCross  = "onnx-cross-encoder"
	rerankONNXColBER = "onnx-colbert"
	rerankLLM        = "llm"
	rerankNone       = "none"
)

// providers holds what the provider flags resolved to; close releases the
// ONNX sessions.
type providers struct {
	closers []io.Closer
}

func (p *providers) Close() error {
	var errs []error
	for _, c := range p.closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// configureProviders fills cfg's dense encoder, multi-vector and sparse
// models and reranker from flags > env > config file.
func configureProviders(ctx context.Context, f serveFlags, fc *fileConfig, cfg *engine.Config, log *slog.Logger) (*providers, error) {
	p := &providers{}
	ok := false
	defer func() {
		if !ok {
			p.Close()
		}
	}()
	lib := pick(f.onnxLibrary, fc.OnnxLibrary, fc.Rerank.Library) // empty: $RCPGO_ONNXRUNTIME_LIB
	if err := p.dense(ctx, f, fc, cfg, lib, log); err != nil {
		return nil, err
	}
	if err := p.rerank(f, fc, cfg, lib, log); err != nil {
		return nil, err
	}
	if err := p.encoders(f, fc, cfg, lib); err != nil {
		return nil, err
	}
	ok = true
	return p, nil
}

// dense configures the dense encoder --dense names (openai or onnx; the
// built-in lsa needs none).
func (p *providers) dense(ctx context.Context, f serveFlags, fc *fileConfig, cfg *engine.Config, lib string, log *slog.Logger) error {
	ec := fc.Embed
	ec.URL = pick(f.embedURL, os.Getenv("RCPD_EMBED_URL"), ec.URL)
	ec.Model = pick(f.embedModel, os.Getenv("RCPD_EMBED_MODEL"), ec.Model)
	ec.APIKeyEnv = pick(f.embedKeyEnv, os.Getenv("RCPD_EMBED_API_KEY_ENV"), ec.APIKeyEnv)
	ec.QueryPrefix = pick(f.embedQueryPrefix, os.Getenv("RCPD_EMBED_QUERY_PREFIX"), ec.QueryPrefix)
	ec.DocumentPrefix = pick(f.embedDocPrefix, os.Getenv("RCPD_EMBED_DOCUMENT_PREFIX"), ec.DocumentPrefix)
	ec.OnnxModel = pick(f.embedOnnx, os.Getenv("RCPD_EMBED_MODEL_ONNX"), ec.OnnxModel)
	ec.Tokenizer = pick(f.embedTokenizer, os.Getenv("RCPD_EMBED_TOKENIZER"), ec.Tokenizer)
	ec.Pooling = pick(f.embedPooling, os.Getenv("RCPD_EMBED_POOLING"), ec.Pooling)
	if s := pick(f.embedDimension, os.Getenv("RCPD_EMBED_DIMENSION")); s != "" {
		d, err := strconv.Atoi(s)
		if err != nil || d <= 0 {
			return fmt.Errorf("--embed-dimension: want a positive integer, got %q", s)
		}
		ec.Dimension = d
	}
	switch cfg.Dense {
	case engine.DenseOpenAI:
		if ec.URL == "" || ec.Model == "" {
			return errors.New("--dense openai needs --embed-url and --embed-model")
		}
		emb, err := openai.NewEmbedder(ctx, openai.EmbedderConfig{
			ClientConfig: openai.ClientConfig{BaseURL: ec.URL, APIKeyEnv: ec.APIKeyEnv, Logger: log},
			Model:        ec.Model, Dimension: ec.Dimension, BatchLimit: ec.BatchLimit,
			QueryPrefix: ec.QueryPrefix, DocumentPrefix: ec.DocumentPrefix})
		if err != nil {
			return fmt.Errorf("dense openai: %w", err)
		}
		cfg.DenseProvider = emb
	case engine.DenseONNX:
		if ec.OnnxModel == "" || ec.Tokenizer == "" {
			return errors.New("--dense onnx needs --embed-model-onnx and --embed-tokenizer")
		}
		enc, closer, err := openONNXDense(ctx, ec, lib)
		if err != nil {
			return err
		}
		p.closers = append(p.closers, closer)
		cfg.DenseProvider = enc
	default:
		if ec.URL != "" || ec.OnnxModel != "" {
			return fmt.Errorf("embedding provider options are set but --dense is %q (want openai or onnx)", cfg.Dense)
		}
	}
	if cfg.DenseProvider != nil {
		log.Info("rcpd: dense encoder", "provider", cfg.Dense, "identity", cfg.DenseProvider.Identity())
	}
	return nil
}

// rerank configures the chat model (query/transform and rerank method
// llm) and the reranker --rerank names.
func (p *providers) rerank(f serveFlags, fc *fileConfig, cfg *engine.Config, lib string, log *slog.Logger) error {
	rc := fc.Rerank
	rc.Model = pick(f.rerankModel, os.Getenv("RCPD_RERANK_MODEL"), rc.Model)
	rc.Tokenizer = pick(f.rerankTokenizer, os.Getenv("RCPD_RERANK_TOKENIZER"), rc.Tokenizer)
	rc.Library = lib
	kind := pick(f.rerank, os.Getenv("RCPD_RERANK"), rc.Provider)
	if kind == "" {
		switch {
		case rc.Model != "" && rc.Method == rcp.RerankColBERT:
			kind = rerankONNXColBER
		case rc.Model != "":
			kind = rerankONNXCross // legacy: --rerank-model alone
		default:
			kind = rerankNone
		}
	}
	lc := fc.LLM
	lc.URL = pick(f.llmURL, os.Getenv("RCPD_LLM_URL"), lc.URL)
	lc.Model = pick(f.llmModel, os.Getenv("RCPD_LLM_MODEL"), lc.Model)
	lc.APIKeyEnv = pick(f.llmKeyEnv, os.Getenv("RCPD_LLM_API_KEY_ENV"), lc.APIKeyEnv)
	// One chat client serves rerank method "llm" and query/transform
	// (hyde and the model version of every method).
	var chat *openai.ChatClient
	if lc.URL != "" && lc.Model != "" {
		var err error
		chat, err = openai.NewChatClient(openai.ChatConfig{
			ClientConfig: openai.ClientConfig{BaseURL: lc.URL, APIKeyEnv: lc.APIKeyEnv, Logger: log}, Model: lc.Model})
		if err != nil {
			return fmt.Errorf("--llm-url: %w", err)
		}
		cfg.Chat = chat
		log.Info("rcpd: chat model serves query/transform", "model", lc.Model)
	}
	switch kind {
	case rerankNone:
		if rc.Model != "" {
			return errors.New("--rerank-model is set but --rerank is none")
		}
	case rerankONNXCross, rerankONNXColBER:
		if rc.Model == "" || rc.Tokenizer == "" {
			return fmt.Errorf("--rerank %s needs --rerank-model and --rerank-tokenizer", kind)
		}
		rc.Method = rcp.RerankCrossEncoder
		if kind == rerankONNXColBER {
			rc.Method = rcp.RerankColBERT
		}
		scorer, closer, err := openReranker(rc)
		if err != nil {
			return err
		}
		p.closers = append(p.closers, closer)
		cfg.Reranker, cfg.RerankMethod, cfg.RerankMaxCandidates = scorer, rc.Method, rc.MaxCandidates
		if kind == rerankONNXColBER {
			if m, ok := scorer.(multiEmbedder); ok {
				cfg.MultiEncoder = m // the ColBERT model also serves embed/multi
			}
		}
	case rerankLLM:
		if chat == nil {
			return errors.New("--rerank llm needs --llm-url and --llm-model")
		}
		cfg.Reranker, cfg.RerankMethod, cfg.RerankMaxCandidates = llm.NewReranker(chat), rcp.RerankLLM, rc.MaxCandidates
	default:
		return fmt.Errorf("--rerank: want onnx-cross-encoder, onnx-colbert, llm or none, got %q", kind)
	}
	if cfg.Reranker != nil {
		log.Info("rcpd: reranker", "method", cfg.RerankMethod, "identity", cfg.Reranker.Identity())
	}
	return nil
}

// encoders configures the multi-vector (embed/multi) and learned-sparse
// (embed/sparse) models.
func (p *providers) encoders(f serveFlags, fc *fileConfig, cfg *engine.Config, lib string) error {
	mc := fc.Multi
	mc.Model = pick(f.multiModel, os.Getenv("RCPD_MULTI_MODEL"), mc.Model)
	mc.Tokenizer = pick(f.multiTokenizer, os.Getenv("RCPD_MULTI_TOKENIZER"), mc.Tokenizer)
	if mc.Model != "" {
		if mc.Tokenizer == "" {
			return errors.New("--multi-model needs --multi-tokenizer")
		}
		m, closer, err := openONNXMulti(mc, lib)
		if err != nil {
			return err
		}
		p.closers = append(p.closers, closer)
		cfg.MultiEncoder = m
	}
	sc := fc.Sparse
	sc.Model = pick(f.sparseModel, os.Getenv("RCPD_SPARSE_MODEL"), sc.Model)
	sc.Tokenizer = pick(f.sparseTokenizer, os.Getenv("RCPD_SPARSE_TOKENIZER"), sc.Tokenizer)
	if sc.Model != "" {
		if sc.Tokenizer == "" {
			return errors.New("--sparse-model needs --sparse-tokenizer")
		}
		s, closer, err := openONNXSparse(sc, lib)
		if err != nil {
			return err
		}
		p.closers = append(p.closers, closer)
		cfg.SparseEncoder = s
	}
	return nil
}
