package engine

import (
	"context"
	"sync"

	"github.com/rcpgo/rcpgo/engine/internal/derive"
	"github.com/rcpgo/rcpgo/rcp"
)

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

// withTree adds unit tree-node and the levels built so far to a
// description.
func (e *Engine) withTree(d rcp.Description) rcp.Description {
	if e.know == nil {
		return d
	}
	return e.know.WithTree(d)
}

// Readiness reports every derived structure's state (nil: none).
func (e *Engine) Readiness() rcp.Readiness {
	if e.ready == nil {
		return nil
	}
	return e.ready.Readiness()
}

// LiveMeta implements rcp.LiveMeta: the readiness of the derived
// structures in every initialize and info answer.
func (e *Engine) LiveMeta(context.Context) rcp.Meta {
	r := e.Readiness()
	if len(r) == 0 {
		return nil
	}
	return rcp.Meta{}.Set(rcp.MetaRCPGoReadiness, r)
}
