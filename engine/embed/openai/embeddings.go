package openai

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"

	"github.com/rcpgo/rcpgo/engine/embed"
)

// EmbedderConfig configures an Embedder.
type EmbedderConfig struct {
	ClientConfig
	// Model is sent as "model" (required).
	Model string
	// Dimension is the vector length. Zero discovers it with one probe call
	// at construction. When Dimensions is set it must match.
	Dimension int
	// Dimensions, when positive, is sent as "dimensions" (OpenAI
	// text-embedding-3 Matryoshka truncation).
	Dimensions int
	// BatchLimit caps inputs per request (default 64); larger Embed calls
	// are split.
	BatchLimit int
	// EncodingFormat is sent as "encoding_format" when non-empty: "float"
	// or "base64" (little-endian float32, decoded here).
	EncodingFormat string
	// QueryPrefix and DocumentPrefix are prepended by kind for asymmetric
	// models (e.g. e5 "query: "/"passage: ", nomic "search_query: ").
	QueryPrefix, DocumentPrefix string
	// Normalize L2-normalises every vector client-side (default true via
	// NoNormalize=false); set NoNormalize to keep the server's vectors.
	NoNormalize bool
}

// Embedder is an embed.Provider backed by an OpenAI-compatible
// /embeddings endpoint.
type Embedder struct {
	cfg      EmbedderConfig
	identity string
}

var _ embed.Provider = (*Embedder)(nil)

// NewEmbedder validates cfg and, when cfg.Dimension is zero, discovers the
// dimension with one probe request.
func NewEmbedder(ctx context.Context, cfg EmbedderConfig) (*Embedder, error) {
	if err := cfg.ClientConfig.defaults(); err != nil {
		return nil, err
	}
	if cfg.Model == "" {
		return nil, errors.New("openai: Model is required")
	}
	if cfg.BatchLimit <= 0 {
		cfg.BatchLimit = 64
	}
	switch cfg.EncodingFormat {
	case "", "float", "base64":
	default:
		return nil, fmt.Errorf("openai: unsupported encoding_format %q", cfg.EncodingFormat)
	}
	if cfg.Dimensions > 0 && cfg.Dimension > 0 && cfg.Dimension != cfg.Dimensions {
		return nil, fmt.Errorf("openai: Dimension %d conflicts with Dimensions %d", cfg.Dimension, cfg.Dimensions)
	}
	if cfg.Dimension == 0 {
		cfg.Dimension = cfg.Dimensions
	}
	e := &Embedder{cfg: cfg}
	if e.cfg.Dimension == 0 {
		vs, err := e.request(ctx, []string{"dimension probe"})
		if err != nil {
			return nil, fmt.Errorf("openai: dimension probe: %w", err)
		}
		e.cfg.Dimension = len(vs[0])
		if e.cfg.Dimension == 0 {
			return nil, fmt.Errorf("%w: empty embedding", errDecode)
		}
	}
	e.identity = e.makeIdentity()
	return e, nil
}

func (e *Embedder) makeIdentity() string {
	host := e.cfg.BaseURL
	if u, err := url.Parse(e.cfg.BaseURL); err == nil && u.Host != "" {
		host = u.Host
	}
	id := fmt.Sprintf("openai:%s@%s:dim=%d", e.cfg.Model, host, e.cfg.Dimension)
	if e.cfg.QueryPrefix != "" || e.cfg.DocumentPrefix != "" {
		h := sha256.Sum256([]byte(e.cfg.QueryPrefix + "\x00" + e.cfg.DocumentPrefix))
		id += ":prefix=" + hex.EncodeToString(h[:4])
	}
	if e.cfg.NoNormalize {
		id += ":raw"
	}
	return id
}

// Identity names the model, host, dimension and prefixes.
func (e *Embedder) Identity() string { return e.identity }

// Dimension implements embed.Provider.
func (e *Embedder) Dimension() int { return e.cfg.Dimension }

// Normalized implements embed.Provider.
func (e *Embedder) Normalized() bool { return !e.cfg.NoNormalize }

// BatchLimit implements embed.Provider.
func (e *Embedder) BatchLimit() int { return e.cfg.BatchLimit }

// Embed embeds texts, splitting them into requests of at most BatchLimit.
func (e *Embedder) Embed(ctx context.Context, texts []string, kind embed.Kind) ([][]float32, error) {
	prefix := e.cfg.DocumentPrefix
	if kind == embed.KindQuery {
		prefix = e.cfg.QueryPrefix
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.cfg.BatchLimit {
		batch := texts[start:min(start+e.cfg.BatchLimit, len(texts))]
		inputs := batch
		if prefix != "" {
			inputs = make([]string, len(batch))
			for i, t := range batch {
				inputs[i] = prefix + t
			}
		}
		vs, err := e.request(ctx, inputs)
		if err != nil {
			return nil, err
		}
		for i, v := range vs {
			if len(v) != e.cfg.Dimension {
				return nil, fmt.Errorf("%w: input %d has dimension %d, want %d", errDecode, start+i, len(v), e.cfg.Dimension)
			}
			if !e.cfg.NoNormalize {
				embed.Normalize(v)
			}
		}
		out = append(out, vs...)
	}
	return out, nil
}

type embeddingsRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format,omitempty"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

type embeddingsResponse struct {
	Data []struct {
		Index     *int           `json:"index"`
		Embedding embeddingValue `json:"embedding"`
	} `json:"data"`
}

// embeddingValue accepts a JSON array of numbers or a base64 string of
// little-endian float32.
type embeddingValue []float32

func (v *embeddingValue) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := jsonUnmarshal(b, &s); err != nil {
			return err
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("base64 embedding: %w", err)
		}
		if len(raw)%4 != 0 {
			return fmt.Errorf("base64 embedding of %d bytes is not float32", len(raw))
		}
		out := make([]float32, len(raw)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		*v = out
		return nil
	}
	var xs []float64
	if err := jsonUnmarshal(b, &xs); err != nil {
		return err
	}
	out := make([]float32, len(xs))
	for i, x := range xs {
		out[i] = float32(x)
	}
	*v = out
	return nil
}

var jsonUnmarshal = json.Unmarshal

func (e *Embedder) request(ctx context.Context, inputs []string) ([][]float32, error) {
	var resp embeddingsResponse
	req := embeddingsRequest{Model: e.cfg.Model, Input: inputs, EncodingFormat: e.cfg.EncodingFormat, Dimensions: e.cfg.Dimensions}
	if err := e.cfg.postJSON(ctx, "/embeddings", req, &resp); err != nil {
		return nil, err
	}
	if len(resp.Data) != len(inputs) {
		return nil, fmt.Errorf("%w: %d embeddings for %d inputs", errDecode, len(resp.Data), len(inputs))
	}
	out := make([][]float32, len(inputs))
	seen := make([]bool, len(inputs))
	for pos, d := range resp.Data {
		i := pos
		if d.Index != nil {
			i = *d.Index
		}
		if i < 0 || i >= len(out) || seen[i] {
			return nil, fmt.Errorf("%w: bad or duplicate index %d", errDecode, i)
		}
		seen[i] = true
		if slices.ContainsFunc(d.Embedding, func(x float32) bool { return math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) }) {
			return nil, fmt.Errorf("%w: non-finite value in embedding %d", errDecode, i)
		}
		out[i] = d.Embedding
	}
	return out, nil
}
