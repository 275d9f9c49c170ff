// Package models serves the methods that are one model call each: embed
// (§7.3, the session's dense encoder), embed/multi (§7.5), embed/sparse
// (§7.4) and rerank (§7.6), with the models the engine is configured
// with.
package models

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/internal/fault"
	"github.com/rcpgo/rcpgo/engine/internal/fetch"
	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/vector"
)

// ErrTooLarge refuses a call beyond a model's batch limit.
var ErrTooLarge = errors.New("too many inputs")

// Models are the configured models; nil ones are not served.
type Models struct {
	// Dense returns the dense encoder the request's session negotiated
	// (embed's model).
	Dense    func(ctx context.Context) (embed.Provider, error)
	Multi    embed.MultiEmbedder
	Sparse   embed.SparseEmbedder
	Reranker embed.Scorer
	// RerankMethod names the reranker (rerank.methods); RerankMax caps
	// its passages per call (rerank.maxCandidates).
	RerankMethod string
	RerankMax    int
	// Fetch resolves uri content blocks.
	Fetch *fetch.Fetcher
}

// Handle registers the methods of the configured models on r.
func (m *Models) Handle(r *rcp.Router) {
	if m.Dense != nil {
		rcp.Handle(r, rcp.MethodEmbed, m.Embed)
	}
	if m.Reranker != nil {
		rcp.Handle(r, rcp.MethodRerank, m.Rerank)
	}
	if m.Multi != nil {
		rcp.Handle(r, rcp.MethodEmbedMulti, m.EmbedMulti)
	}
	if m.Sparse != nil {
		rcp.Handle(r, rcp.MethodEmbedSparse, m.EmbedSparse)
	}
}

// Embed serves embed (§7.3) with the session's dense encoder.
func (m *Models) Embed(ctx context.Context, p *rcp.EmbedParams) (*rcp.EmbedResult, error) {
	model, err := m.Dense(ctx)
	if err != nil {
		return nil, err
	}
	limit := maxEmbedInputs
	if lim := model.BatchLimit(); lim > 0 {
		limit = lim
	}
	texts, kind, err := m.embedInputs(ctx, p, limit)
	if err != nil {
		return nil, err
	}
	enc, err := embedEncoding(p.Encoding, p.Strict)
	if err != nil {
		return nil, err
	}
	vecs, err := model.Embed(ctx, texts, kind)
	if err != nil {
		return nil, fmt.Errorf("engine: embed: %w", err)
	}
	if err := noVector(vecs, model.Identity()); err != nil {
		return nil, err
	}
	res := &rcp.EmbedResult{}
	if err := vector.EncodeResult(res, vecs, enc); err != nil {
		return nil, fmt.Errorf("engine: embed: %w", err)
	}
	res.Dimension = model.Dimension()
	return res, nil
}

// noVector refuses an embedding with no dense vector (a text none of whose
// words the encoder knows).
func noVector(vecs [][]float32, identity string) error {
	for i, v := range vecs {
		if !slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) {
			return rcp.InvalidParams(fmt.Sprintf("inputs[%d]", i), "no word of this text is in the vocabulary of embed.identity %q, so it has no dense vector "+
				"(LSA learns its vocabulary from the corpus and is refitted when the corpus doubles)", identity)
		}
	}
	return nil
}

// maxEmbedInputs bounds embed/multi and embed/sparse calls.
const maxEmbedInputs = 256

func tooManyInputs(field string, n, limit int) error {
	return &fault.Error{Err: ErrTooLarge, Message: fmt.Sprintf("at most %d inputs per call", limit),
		Field: field, Detail: fmt.Sprintf("%d inputs > %d", n, limit)}
}

// embedInputs validates the inputs and kind of an embed or embed/multi call
// (§7.3, §7.5) and returns their texts: inputs (or legacy texts) required, at
// most limit of them, text blocks only (others -32005 naming the block type),
// uri blocks resolved under the fetch policy.
func (m *Models) embedInputs(ctx context.Context, p *rcp.EmbedParams, limit int) ([]string, embed.Kind, error) {
	inputs := p.AllInputs()
	if inputs == nil {
		return nil, "", rcp.InvalidParams("inputs", "inputs is required")
	}
	if len(inputs) > limit {
		return nil, "", tooManyInputs("inputs", len(inputs), limit)
	}
	for i, in := range inputs {
		if err := in.Validate(); err != nil {
			return nil, "", rcp.InvalidParams(fmt.Sprintf("inputs[%d]", i), "%v", err)
		}
		if !in.IsText() {
			return nil, "", rcp.OptionUnsupported(in.Type, "inputs[%d]: modality %q is not supported (text only)", i, in.Type)
		}
	}
	if err := m.Fetch.Resolve(ctx, inputs, "inputs"); err != nil {
		return nil, "", err
	}
	texts := make([]string, len(inputs))
	for i, in := range inputs {
		texts[i] = in.Text
	}
	kind, err := embed.ParseKind(p.Kind)
	if err != nil {
		return nil, "", rcp.InvalidParams("kind", "kind must be \"query\" or \"document\"")
	}
	return texts, kind, nil
}

// EmbedMulti serves embed/multi (§7.5) with the configured late-interaction
// model.
func (m *Models) EmbedMulti(ctx context.Context, p *rcp.EmbedParams) (*rcp.MultiEmbedResult, error) {
	texts, kind, err := m.embedInputs(ctx, p, maxEmbedInputs)
	if err != nil {
		return nil, err
	}
	enc, err := embedEncoding(p.Encoding, p.Strict)
	if err != nil {
		return nil, err
	}
	mats, err := m.Multi.EmbedMulti(ctx, texts, kind)
	if err != nil {
		return nil, fmt.Errorf("engine: embed/multi: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, mat := range mats {
		if i > 0 {
			buf.WriteByte(',')
		}
		x, err := vector.Encode(mat, enc)
		if err != nil {
			return nil, fmt.Errorf("engine: embed/multi: %w", err)
		}
		buf.Write(x.Vectors)
	}
	buf.WriteByte(']')
	res := &rcp.MultiEmbedResult{Matrices: buf.Bytes(), Dimension: m.Multi.MultiDimension()}
	if enc != rcp.EncodingJSON {
		res.Encoding = enc
	}
	return res, nil
}

// embedEncoding resolves the requested vector encoding (§7.3.1).
func embedEncoding(enc string, strict *bool) (string, error) {
	switch enc {
	case "", rcp.EncodingJSON:
		return rcp.EncodingJSON, nil
	case rcp.EncodingF32Base64:
		return enc, nil
	}
	if strict == nil || *strict {
		return "", rcp.OptionUnsupported(enc, "encoding %q is not advertised", enc)
	}
	return rcp.EncodingJSON, nil
}

// EmbedSparse serves embed/sparse (§7.4) with the configured
// learned-sparse model.
func (m *Models) EmbedSparse(ctx context.Context, p *rcp.SparseEmbedParams) (*rcp.SparseEmbedResult, error) {
	if p.Texts == nil {
		return nil, rcp.InvalidParams("texts", "texts is required")
	}
	if len(p.Texts) > maxEmbedInputs {
		return nil, tooManyInputs("texts", len(p.Texts), maxEmbedInputs)
	}
	kind, err := embed.ParseKind(p.Kind)
	if err != nil {
		return nil, rcp.InvalidParams("kind", "kind must be \"query\" or \"document\"")
	}
	res := &rcp.SparseEmbedResult{Sparse: make([]rcp.SparseVector, 0, len(p.Texts))}
	if len(p.Texts) == 0 {
		return res, nil
	}
	vs, err := m.Sparse.EmbedSparse(ctx, p.Texts, kind)
	if err != nil {
		return nil, fmt.Errorf("engine: embed/sparse: %w", err)
	}
	for _, v := range vs {
		sv := rcp.SparseVector{Indices: make([]int, len(v.Indices)), Values: make([]float64, len(v.Values))}
		for i, x := range v.Indices {
			sv.Indices[i] = int(x)
		}
		for i, x := range v.Values {
			sv.Values[i] = float64(x)
		}
		res.Sparse = append(res.Sparse, sv)
	}
	return res, nil
}
