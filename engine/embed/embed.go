// Package embed defines the engine's embedding providers: dense encoders
// (RCP `embed`, §7.3), learned-sparse encoders (`embed/sparse`, §7.4),
// late-interaction multi-vector encoders (`embed/multi`, §7.5) and passage
// scorers used by `rerank` (§7.6).
//
// Implementations live in sub-packages:
//
//   - engine/embed/lsa: an offline dense encoder fitted on the engine's own
//     corpus (latent semantic analysis via randomized truncated SVD);
//   - engine/embed/openai: OpenAI-compatible HTTP `/v1/embeddings` providers
//     and a chat client used for LLM reranking;
//   - engine/embed/ortembed: local ONNX models through ONNX Runtime (dense
//     bi-encoders, cross-encoders, ColBERT-style multi-vector and SPLADE-style
//     sparse models), with engine/embed/internal/tokenizer reading tokenizer.json.
//
// Every provider names itself with an Identity string. Vectors produced under
// one identity must never be compared with vectors produced under another:
// the engine stores the identity beside the vectors and re-embeds when it
// changes.
package embed

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Kind says whether texts are queries or documents, so asymmetric encoders
// (e5/BGE-style prefixes) can treat them differently (RCP §7.3 `kind`).
type Kind string

const (
	// KindDocument marks passages being indexed. It is the default.
	KindDocument Kind = "document"
	// KindQuery marks search queries.
	KindQuery Kind = "query"
)

// ParseKind maps the RCP wire value ("query", "document", or empty for the
// default) to a Kind.
func ParseKind(s string) (Kind, error) {
	switch s {
	case "", "document":
		return KindDocument, nil
	case "query":
		return KindQuery, nil
	}
	return "", fmt.Errorf("embed: unknown kind %q", s)
}

// Provider is a dense text encoder.
type Provider interface {
	// Embed returns one vector of length Dimension() per text, in order.
	// Callers should pass at most BatchLimit() texts; providers split larger
	// inputs themselves where they can.
	Embed(ctx context.Context, texts []string, kind Kind) ([][]float32, error)
	// Dimension is the length of every vector Embed returns.
	Dimension() int
	// Identity names the model, its dimension and anything else that changes
	// the vector space; vectors with different identities are incomparable.
	Identity() string
	// Normalized reports whether every non-zero vector has unit L2 norm.
	Normalized() bool
	// BatchLimit is the largest number of texts one Embed call should carry
	// (RCP `embed.batchLimit`), or 0 for no limit.
	BatchLimit() int
}

// Scorer scores passages against a query (a cross-encoder or an LLM judge);
// it backs `rerank` methods "cross-encoder" and "llm". scores[i] belongs to
// passages[i]; higher is more relevant.
type Scorer interface {
	Score(ctx context.Context, query string, passages []string) ([]float32, error)
	Identity() string
}

// Similarity is the comparison used between vectors.
type Similarity string

const (
	SimilarityDot    Similarity = "dot"
	SimilarityCosine Similarity = "cosine"
)

// MultiEmbedder produces per-token (or per-patch) matrices for late
// interaction (ColBERT), RCP `embed/multi`. Each matrix has one row per
// token, each row of length MultiDimension().
type MultiEmbedder interface {
	EmbedMulti(ctx context.Context, texts []string, kind Kind) ([][][]float32, error)
	MultiDimension() int
	Similarity() Similarity
	Identity() string
}

// SparseVector is a term→weight map over a model vocabulary, with Indices
// strictly increasing.
type SparseVector struct {
	Indices []uint32
	Values  []float32
}

// SparseEmbedder produces learned-sparse vectors (SPLADE), RCP `embed/sparse`.
type SparseEmbedder interface {
	EmbedSparse(ctx context.Context, texts []string, kind Kind) ([]SparseVector, error)
	// Vocabulary is the number of distinct indices (the model vocabulary).
	Vocabulary() int
	Identity() string
}

// ErrIdentityMismatch is returned when vectors of one identity meet a
// provider or index of another.
var ErrIdentityMismatch = errors.New("embed: embedding identity mismatch")

// CheckIdentity returns an error wrapping ErrIdentityMismatch unless the
// stored identity equals the provider's.
func CheckIdentity(stored string, p interface{ Identity() string }) error {
	if got := p.Identity(); got != stored {
		return fmt.Errorf("%w: stored vectors are %q, provider is %q", ErrIdentityMismatch, stored, got)
	}
	return nil
}

// EmbedAll embeds texts in batches of at most p.BatchLimit(), preserving
// order.
func EmbedAll(ctx context.Context, p Provider, texts []string, kind Kind) ([][]float32, error) {
	limit := p.BatchLimit()
	if limit <= 0 || len(texts) <= limit {
		return p.Embed(ctx, texts, kind)
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += limit {
		end := min(start+limit, len(texts))
		vs, err := p.Embed(ctx, texts[start:end], kind)
		if err != nil {
			return nil, fmt.Errorf("embed: batch %d-%d: %w", start, end, err)
		}
		out = append(out, vs...)
	}
	return out, nil
}

// Normalize scales v to unit L2 norm in place and returns it; a zero vector
// is left as is.
func Normalize(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// Dot returns the inner product of a and b (which must have equal length).
func Dot(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	n := len(a)
	b = b[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// Cosine returns the cosine similarity of a and b, or 0 when either is zero.
func Cosine(a, b []float32) float32 {
	var ab, aa, bb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		ab += x * y
		aa += x * x
		bb += y * y
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return float32(ab / math.Sqrt(aa*bb))
}

// ErrVectorLength is returned by DecodeF32Base64 for a blob whose length is
// not dimension × 4 bytes (RCP §7.3.1: the receiver rejects it with -32602).
var ErrVectorLength = errors.New("embed: encoded vector has the wrong length")

// EncodeF32Base64 encodes v in RCP's "f32-base64" encoding (§7.3.1):
// little-endian IEEE-754 binary32, concatenated, standard base64 with
// padding.
func EncodeF32Base64(v []float32) string {
	buf := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(buf)
}

// DecodeF32Base64 decodes an "f32-base64" blob that must hold exactly
// dimension float32 values.
func DecodeF32Base64(s string, dimension int) ([]float32, error) {
	if dimension < 0 || base64.StdEncoding.DecodedLen(len(s)) > 4*dimension+3 {
		return nil, fmt.Errorf("%w: %d base64 characters for dimension %d", ErrVectorLength, len(s), dimension)
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("embed: f32-base64: %w", err)
	}
	if len(raw) != 4*dimension {
		return nil, fmt.Errorf("%w: %d bytes, want %d", ErrVectorLength, len(raw), 4*dimension)
	}
	out := make([]float32, dimension)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out, nil
}
