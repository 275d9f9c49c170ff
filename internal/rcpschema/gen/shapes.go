package main

import (
	"reflect"

	"github.com/rcpgo/rcpgo/rcp"
)

// The spec's value sets (§6, §7, §17). Where package rcp names them as
// constants the constants are used, so a value added there shows up here.
var (
	modes       = []any{rcp.ModeDense, rcp.ModeSparse, rcp.ModeHybrid}
	fusions     = []any{rcp.FusionRRF, rcp.FusionWeighted, rcp.FusionConvex}
	rerankers   = []any{rcp.RerankCrossEncoder, rcp.RerankColBERT, rcp.RerankLLM}
	modalities  = []any{rcp.ModalityText, rcp.ModalityImage, rcp.ModalityAudio, rcp.ModalityCode, rcp.ModalityMultimodal}
	units       = []any{rcp.UnitChunk, rcp.UnitPassage, rcp.UnitDocument, rcp.UnitNode, rcp.UnitTriplet, rcp.UnitPath, rcp.UnitSubgraph, rcp.UnitCommunity, rcp.UnitTreeNode, rcp.UnitPage}
	trustLevels = []any{rcp.TrustTrusted, rcp.TrustCommunity, rcp.TrustUntrusted}
	logLevels   = []any{rcp.LogDebug, rcp.LogInfo, rcp.LogNotice, rcp.LogWarning, rcp.LogError}
	encodings   = []any{rcp.EncodingJSON, rcp.EncodingF32Base64}
	contents    = []any{rcp.ContentText, rcp.ContentImage, rcp.ContentAudio, rcp.ContentBlob}
	transforms  = []any{"rewrite", "hyde", "multi-query", "decompose", "step-back"} // §7.8
	scopes      = []any{"global", "session"}                                        // §7.17
	scoreScales = []any{"cosine", "dot", "bm25", "probability", "unbounded"}        // §6.1
	similarity  = []any{"dot", "cosine"}                                            // §6.1 multiVector
	transports  = []any{"stdio", "http"}                                            // §7.13
)

func enum(values []any) map[string]any { return map[string]any{"enum": values} }

func enumArray(values []any) map[string]any {
	return map[string]any{"type": "array", "items": enum(values)}
}

func atLeast(n int) map[string]any { return map[string]any{"minimum": n} }

var unit = map[string]any{"minimum": 0, "maximum": 1}

// constraints adds keywords to a property ("Type.member") or to a whole
// type ("Type"): what the spec says of a value that its Go type cannot.
var constraints = map[string]map[string]any{
	"InitializeParams.protocolVersion": atLeast(1),
	"InitializeResult.protocolVersion": atLeast(1),

	"EmbedCap.dimension":         atLeast(1),
	"EmbedCap.batchLimit":        atLeast(1),
	"EmbedCap.modalities":        enumArray(modalities),
	"EmbedCap.encodings":         enumArray(encodings),
	"SparseEmbedCap.vocabulary":  atLeast(1),
	"MultiVectorCap.dimension":   atLeast(1),
	"MultiVectorCap.similarity":  enum(similarity),
	"MultiVectorCap.modalities":  enumArray(modalities),
	"MultiVectorCap.encodings":   enumArray(encodings),
	"RerankCap.methods":          enumArray(rerankers),
	"RerankCap.maxCandidates":    atLeast(1),
	"RetrieveCap.maxK":           atLeast(1),
	"RetrieveCap.modes":          enumArray(modes),
	"RetrieveCap.modalities":     enumArray(modalities),
	"RetrieveCap.fusion":         enumArray(fusions),
	"RetrieveCap.units":          enumArray(units),
	"RetrieveCap.levels":         atLeast(1),
	"RetrieveCap.scoreScale":     enum(scoreScales),
	"RetrieveCap.defaultMode":    enum(modes),
	"RetrieveCap.encodings":      enumArray(encodings),
	"TransformCap.methods":       enumArray(transforms),
	"SessionCap.ttlSeconds":      atLeast(0),
	"MemoryCap.scopes":           enumArray(scopes),
	"LogCap.levels":              enumArray(logLevels),
	"CatalogCap.engines":         atLeast(0),
	"EmbedParams.kind":           enum([]any{"query", "document"}),
	"EmbedParams.encoding":       enum(encodings),
	"EmbedResult.encoding":       enum(encodings),
	"EmbedResult.dimension":      atLeast(1),
	"MultiEmbedResult.encoding":  enum(encodings),
	"MultiEmbedResult.dimension": atLeast(1),
	"SparseEmbedParams.kind":     enum([]any{"query", "document"}),
	"RerankParams.method":        enum(rerankers),
	"RerankParams.topN":          atLeast(1),

	"RetrieveParams.k":           atLeast(1),
	"RetrieveParams.mode":        enum(modes),
	"RetrieveParams.modality":    enum(modalities),
	"RetrieveParams.candidateK":  atLeast(1),
	"RetrieveParams.unit":        enum(units),
	"RetrieveParams.level":       atLeast(0),
	"RetrieveParams.tokenBudget": atLeast(1),
	"RetrieveParams.encoding":    enum(encodings),
	"FusionOptions.method":       enum(fusions),
	"FusionOptions.alpha":        unit,
	"MMROptions.lambda":          unit,

	"Hit.confidence":            unit,
	"Hit.modality":              enum(modalities),
	"Hit.unit":                  enum(units),
	"Hit.level":                 atLeast(0),
	"Trust.level":               enum(trustLevels),
	"Trust.score":               unit,
	"Community.level":           atLeast(0),
	"TransformParams.n":         atLeast(1),
	"TransformParams.method":    enum(transforms),
	"GraphParams.k":             atLeast(1),
	"GraphParams.hops":          atLeast(0),
	"GraphParams.level":         atLeast(0),
	"FeedbackResult.accepted":   atLeast(0),
	"IndexAddResult.chunks":     atLeast(0),
	"IndexDeleteResult.deleted": atLeast(0),
	"MemoryBuildParams.scope":   enum(scopes),
	"MemoryBuildResult.tokens":  atLeast(0),
	"MemoryRecallParams.n":      atLeast(1),
	"Endpoint.transport":        enum(transports),
	"Content.type":              enum(contents),
	"ErrorData.retryAfterMs":    atLeast(0),
	"ProgressParams.progress":   unit,
	"LogParams.level":           enum(logLevels),

	// §4.8: a text block carries text; any other carries a mimeType and
	// exactly one of data and uri.
	"Content": {
		"not": map[string]any{"required": []any{"data", "uri"}},
		"allOf": []any{map[string]any{
			"if":   map[string]any{"properties": map[string]any{"type": map[string]any{"const": rcp.ContentText}}, "required": []any{"type"}},
			"then": map[string]any{"required": []any{"text"}},
			"else": map[string]any{"required": []any{"mimeType"}, "anyOf": []any{
				map[string]any{"required": []any{"data"}}, map[string]any{"required": []any{"uri"}}}},
		}},
	},
	// §7.3.1: f32-base64 vectors need their dimension to be decoded.
	"EmbedResult": {
		"if":   map[string]any{"properties": map[string]any{"encoding": map[string]any{"const": rcp.EncodingF32Base64}}, "required": []any{"encoding"}},
		"then": map[string]any{"required": []any{"dimension"}},
	},
	// §7.9: the graph result carries what its op returns.
	"GraphResult": {"anyOf": []any{
		map[string]any{"required": []any{"hits"}},
		map[string]any{"required": []any{"communities"}},
		map[string]any{"required": []any{"nodes"}},
	}},
}

// optional lists members whose Go field has no omitempty but which the spec
// lets a peer leave out (the Go zero value is what their absence means).
var optional = map[string]bool{
	"InitializeParams.capabilities": true, // §7.1: a client may advertise nothing
	"RecencyOptions.halfLifeDays":   true,
	"RecencyOptions.field":          true,
	"EmbedCap.identity":             true,
	"EmbedCap.dimension":            true,
	"SparseEmbedCap.identity":       true,
	"MultiVectorCap.identity":       true,
	"MultiVectorCap.dimension":      true,
	"RerankCap.methods":             true,
	"TransformCap.methods":          true,
	"GraphCap.ops":                  true,
	"IndexCap.writable":             true,
	"MemoryCap.scopes":              true,
	"FilterCap.fields":              true,
	"CatalogCap.engines":            true,
}

// vectorBatch is §7.3.1's dense vectors: number arrays, or one base64
// string per vector under f32-base64.
var vectorBatch = map[string]any{"type": "array", "items": map[string]any{"oneOf": []any{
	map[string]any{"type": "array", "items": map[string]any{"type": "number"}},
	map[string]any{"type": "string", "contentEncoding": "base64"},
}}}

// fieldShapes give the shape of members whose Go type is raw JSON.
var fieldShapes = map[string]map[string]any{
	"PingParams.nonce":             {"type": []any{"string", "number"}},
	"PingResult.nonce":             {"type": []any{"string", "number"}},
	"ProgressParams.progressToken": {"type": []any{"string", "integer"}},
	"CancelParams.id":              {"type": []any{"string", "number"}},
	"RetrieveParams.filter":        {"type": "object"},
	"EmbedResult.vectors":          vectorBatch,
	"Hit.vector":                   {"oneOf": []any{map[string]any{"type": "array", "items": map[string]any{"type": "number"}}, map[string]any{"type": "string", "contentEncoding": "base64"}}},
	"MultiEmbedResult.matrices":    {"type": "array", "items": vectorBatch},
	"FilterCap.fields": {"oneOf": []any{
		map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
	}},
}

// special returns the schema of the types whose MarshalJSON writes
// something other than their fields.
func special(g *gen, t reflect.Type) (map[string]any, bool) {
	switch t {
	case typeOf[rcp.ID]():
		g.defs["ID"] = map[string]any{"description": "An id: a JSON string or number, kept verbatim.", "type": []any{"string", "number"}}
		return ref("ID"), true
	case typeOf[rcp.Meta]():
		return map[string]any{"type": "object"}, true
	case typeOf[rcp.EmptyCap]():
		return map[string]any{"type": "object"}, true
	case typeOf[rcp.Code]():
		return ref("ErrorCode"), true
	case typeOf[rcp.Rewrite]():
		return map[string]any{"oneOf": []any{enum(transforms), map[string]any{"const": false}}}, true
	case typeOf[rcp.RerankOptions]():
		return map[string]any{"oneOf": []any{g.object(t), map[string]any{"const": false}}}, true
	case typeOf[rcp.Content]():
		if _, ok := g.defs["Content"]; !ok {
			g.defs["Content"] = g.object(t)
		}
		// A bare string is a text block (§4.8).
		return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, ref("Content")}}, true
	case typeOf[rcp.Query]():
		content := g.of(typeOf[rcp.Content]())
		g.defs["QueryInput"] = map[string]any{
			"description": "A query: a bare string, one content block, or an array of them (§4.8).",
			"oneOf":       []any{map[string]any{"type": "string"}, ref("Content"), map[string]any{"type": "array", "items": content}},
		}
		return ref("QueryInput"), true
	}
	return nil, false
}
