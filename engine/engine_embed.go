package engine

import (
	"bytes"
	"context"
	"fmt"

	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/vector"
)

// FusionDefaults are the server-side defaults of hybrid fusion, used for
// every option a request leaves unset (docs/rcpd.md lists the measured
// defaults and the quality table they come from).
type FusionDefaults struct {
	// Method is the fusion method when the request names none: convex
	// (default: both lists have floor 0), rrf or weighted.
	Method string
	// RRFK is the RRF constant (default 60).
	RRFK float64
	// Alpha is the convex weight of the dense list when the request sends
	// none (default DefaultAlpha, measured; §16.3's conventional 0.5 is
	// one "alpha": 0.5 away).
	Alpha float64
	// SparseWeight and DenseWeight weight the lists in rrf and weighted
	// fusion (default 1 each).
	SparseWeight, DenseWeight float64
}

// Fusion defaults. DefaultAlpha was measured (docs/rcpd.md, "Retrieval
// quality"): over α ∈ {0.2 … 0.7} it maximises the mean nDCG@10 of SciFact
// and Cranfield with the LSA encoder, and it is the only value that beats
// sparse on both; RRF (any rrfK, weights) loses to sparse on SciFact.
const (
	DefaultFusion = rcp.FusionConvex
	DefaultRRFK   = 60
	DefaultAlpha  = 0.2
)

func (f FusionDefaults) withDefaults() FusionDefaults {
	if f.Method == "" {
		f.Method = DefaultFusion
	}
	if f.RRFK <= 0 {
		f.RRFK = DefaultRRFK
	}
	if f.Alpha <= 0 || f.Alpha > 1 {
		f.Alpha = DefaultAlpha
	}
	if f.SparseWeight <= 0 {
		f.SparseWeight = 1
	}
	if f.DenseWeight <= 0 {
		f.DenseWeight = 1
	}
	return f
}

// maxEmbedInputs bounds embed/multi and embed/sparse calls.
const maxEmbedInputs = 256

func tooManyInputs(field string, n, limit int) error {
	return &rcp.Error{Code: rcp.CodePayloadTooLarge, Message: fmt.Sprintf("at most %d inputs per call", limit),
		Data: &rcp.ErrorData{Field: field, Detail: fmt.Sprintf("%d inputs > %d", n, limit)}}
}

// embedInputs validates the inputs and kind of an embed or embed/multi call
// (§7.3, §7.5) and returns their texts: inputs (or legacy texts) required, at
// most limit of them, text blocks only (others -32005 naming the block type),
// uri blocks resolved under the fetch policy.
func (e *Engine) embedInputs(ctx context.Context, p *rcp.EmbedParams, limit int) ([]string, embed.Kind, error) {
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
	if err := e.fetch.Resolve(ctx, inputs, "inputs"); err != nil {
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

// embedMulti serves §7.5 with the configured late-interaction model.
func (e *Engine) embedMulti(ctx context.Context, p *rcp.EmbedParams) (*rcp.MultiEmbedResult, error) {
	texts, kind, err := e.embedInputs(ctx, p, maxEmbedInputs)
	if err != nil {
		return nil, err
	}
	enc, err := embedEncoding(p.Encoding, p.Strict)
	if err != nil {
		return nil, err
	}
	mats, err := e.cfg.MultiEncoder.EmbedMulti(ctx, texts, kind)
	if err != nil {
		return nil, fmt.Errorf("engine: embed/multi: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, m := range mats {
		if i > 0 {
			buf.WriteByte(',')
		}
		x, err := vector.Encode(m, enc)
		if err != nil {
			return nil, fmt.Errorf("engine: embed/multi: %w", err)
		}
		buf.Write(x.Vectors)
	}
	buf.WriteByte(']')
	res := &rcp.MultiEmbedResult{Matrices: buf.Bytes(), Dimension: e.cfg.MultiEncoder.MultiDimension()}
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

// embedSparse serves §7.4 with the configured learned-sparse model.
func (e *Engine) embedSparse(ctx context.Context, p *rcp.SparseEmbedParams) (*rcp.SparseEmbedResult, error) {
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
	vs, err := e.cfg.SparseEncoder.EmbedSparse(ctx, p.Texts, kind)
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
