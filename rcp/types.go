package rcp

import "encoding/json"

// ProtocolVersion is the highest RCP version this SDK speaks (RCP/1).
const ProtocolVersion = 1

// Meta is a _meta object (§4.4): free-form side-band data. Keys are kept raw
// so unknown ones pass through untouched.
type Meta map[string]json.RawMessage

// Get decodes key into v and reports whether the key was present (and not null).
func (m Meta) Get(key string, v any) bool {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// Set encodes v under key, allocating m when needed, and returns m.
func (m Meta) Set(key string, v any) Meta {
	b, err := json.Marshal(v)
	if err != nil {
		return m
	}
	if m == nil {
		m = Meta{}
	}
	m[key] = b
	return m
}

// Well-known _meta keys.
const (
	MetaProgressToken  = "progressToken"  // §9, string or integer
	MetaLogLevel       = "logLevel"       // §17.1
	MetaDeadlineMs     = "deadlineMs"     // §16.2, milliseconds remaining
	MetaFederation     = "federation"     // §16.2 {depth, path}
	MetaIdempotencyKey = "idempotencyKey" // §7.10
	MetaConformance    = "conformance"    // §14, "L0" | "L1" | "L2"
	MetaSession        = "session"        // §5.2 stateful HTTP session token
	MetaDegraded       = "degraded"       // §16.2
)

// PeerInfo names a client or server (§7.1).
type PeerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// InitializeParams are the params of initialize (§7.1).
type InitializeParams struct {
	ProtocolVersion int          `json:"protocolVersion"`
	Client          *PeerInfo    `json:"client,omitempty"`
	Capabilities    Capabilities `json:"capabilities"`
	Meta            Meta         `json:"_meta,omitempty"`
}

// InitializeResult is the result of initialize and of info (§7.1, §7.2).
type InitializeResult struct {
	ProtocolVersion int          `json:"protocolVersion"`
	Server          PeerInfo     `json:"server"`
	Capabilities    Capabilities `json:"capabilities"`
	Meta            Meta         `json:"_meta,omitempty"`
}

// PingParams / PingResult (§7.15). The nonce is echoed with its JSON type.
type PingParams struct {
	Nonce json.RawMessage `json:"nonce,omitempty"`
	Meta  Meta            `json:"_meta,omitempty"`
}
type PingResult struct {
	Nonce json.RawMessage `json:"nonce,omitempty"`
}

// Empty is the {} params/result of shutdown and catalog/list params.
type Empty struct {
	Meta Meta `json:"_meta,omitempty"`
}

// Vector encodings of §7.3.1.
const (
	EncodingJSON      = "json"
	EncodingF32Base64 = "f32-base64"
)

// EmbedParams (§7.3). Texts is the legacy synonym of Inputs.
type EmbedParams struct {
	Inputs   []Content `json:"inputs,omitempty"`
	Texts    []Content `json:"texts,omitempty"`
	Kind     string    `json:"kind,omitempty"` // "query" | "document"
	Encoding string    `json:"encoding,omitempty"`
	// Strict:false lets the server fall back from an unadvertised encoding
	// (§7.3.1 "under the usual strict rule").
	Strict *bool `json:"strict,omitempty"`
	Meta   Meta  `json:"_meta,omitempty"`
}

// AllInputs returns Inputs, or Texts when only the legacy field was sent.
func (p *EmbedParams) AllInputs() []Content {
	if p.Inputs != nil {
		return p.Inputs
	}
	return p.Texts
}

// EmbedResult (§7.3). Vectors holds JSON arrays or f32-base64 strings
// depending on Encoding; use the vector package to build and read it.
type EmbedResult struct {
	Vectors   json.RawMessage `json:"vectors"`
	Encoding  string          `json:"encoding,omitempty"`
	Dimension int             `json:"dimension,omitempty"`
	Meta      Meta            `json:"_meta,omitempty"`
}

// SparseEmbedParams / SparseVector / SparseEmbedResult (§7.4).
type SparseEmbedParams struct {
	Texts []string `json:"texts"`
	Kind  string   `json:"kind,omitempty"`
	Meta  Meta     `json:"_meta,omitempty"`
}
type SparseVector struct {
	Indices []int     `json:"indices"`
	Values  []float64 `json:"values"`
}
type SparseEmbedResult struct {
	Sparse []SparseVector `json:"sparse"`
	Meta   Meta           `json:"_meta,omitempty"`
}

// MultiEmbedResult (§7.5). Matrices holds per-input matrices (JSON arrays of
// arrays, or arrays of f32-base64 rows when Encoding says so).
type MultiEmbedResult struct {
	Matrices  json.RawMessage `json:"matrices"`
	Dimension int             `json:"dimension"`
	Encoding  string          `json:"encoding,omitempty"`
	Meta      Meta            `json:"_meta,omitempty"`
}

// Rerank methods (§7.6).
const (
	RerankCrossEncoder = "cross-encoder"
	RerankColBERT      = "colbert"
	RerankLLM          = "llm"
)

// RerankParams (§7.6). Documents is the legacy field some reference clients send.
type RerankParams struct {
	Query     Query     `json:"query"`
	Passages  []Content `json:"passages,omitempty"`
	Documents []Content `json:"documents,omitempty"`
	Method    string    `json:"method,omitempty"`
	Model     string    `json:"model,omitempty"`
	TopN      *int      `json:"topN,omitempty"`
	Meta      Meta      `json:"_meta,omitempty"`
}

// RerankScore is one legacy results[] entry.
type RerankScore struct {
	Index int     `json:"index"`
	Score float64 `json:"score"`
}

// RerankResult (§7.6). Results mirrors scores/order for legacy clients.
type RerankResult struct {
	Scores  []float64     `json:"scores"`
	Order   []int         `json:"order,omitempty"`
	Results []RerankScore `json:"results,omitempty"`
	Usage   *Usage        `json:"usage,omitempty"`
	Meta    Meta          `json:"_meta,omitempty"`
}

// Retrieval modes, fusion methods and units (§7.7).
const (
	ModeDense  = "dense"
	ModeSparse = "sparse"
	ModeHybrid = "hybrid"

	FusionRRF      = "rrf"
	FusionWeighted = "weighted"
	FusionConvex   = "convex"

	UnitChunk    = "chunk"
	UnitPassage  = "passage"
	UnitDocument = "document"
	// Graph and hierarchy units of §7.7.2.
	UnitNode      = "node"
	UnitTriplet   = "triplet"
	UnitPath      = "path"
	UnitSubgraph  = "subgraph"
	UnitCommunity = "community"
	UnitTreeNode  = "tree-node"
	UnitPage      = "page"
)

// FusionOptions is retrieve.fusion.
type FusionOptions struct {
	Method  string             `json:"method,omitempty"`
	Weights map[string]float64 `json:"weights,omitempty"`
	RRFK    *float64           `json:"rrfK,omitempty"`
	Alpha   *float64           `json:"alpha,omitempty"`
}

// RerankOptions is retrieve.rerank when it is an object. Disabled is the
// `false` form ("rerank": false).
type RerankOptions struct {
	Method   string `json:"method,omitempty"`
	Model    string `json:"model,omitempty"`
	TopN     *int   `json:"topN,omitempty"`
	Disabled bool   `json:"-"`
}

// MarshalJSON writes false for a disabled rerank.
func (r RerankOptions) MarshalJSON() ([]byte, error) {
	if r.Disabled {
		return []byte("false"), nil
	}
	type plain RerankOptions
	return json.Marshal(plain(r))
}

// UnmarshalJSON accepts false or an object.
func (r *RerankOptions) UnmarshalJSON(b []byte) error {
	if string(b) == "false" {
		*r = RerankOptions{Disabled: true}
		return nil
	}
	type plain RerankOptions
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = RerankOptions(p)
	return nil
}

// MMROptions is retrieve.mmr.
type MMROptions struct {
	Lambda *float64 `json:"lambda,omitempty"`
}

// RecencyOptions is retrieve.recency.
type RecencyOptions struct {
	Field        string  `json:"field"`
	HalfLifeDays float64 `json:"halfLifeDays"`
}

// Rewrite is retrieve.rewrite: a transform method name, or "" when false/absent.
type Rewrite string

// MarshalJSON writes false for the empty value.
func (r Rewrite) MarshalJSON() ([]byte, error) {
	if r == "" {
		return []byte("false"), nil
	}
	return json.Marshal(string(r))
}

// UnmarshalJSON accepts false or a string.
func (r *Rewrite) UnmarshalJSON(b []byte) error {
	if string(b) == "false" {
		*r = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*r = Rewrite(s)
	return nil
}

// RetrieveParams (§7.7). Pointers distinguish absent from zero; null decodes
// as absent (§4.6). Filter stays raw: validate it with the filter package
// against the advertised fields and operators.
type RetrieveParams struct {
	Query          Query           `json:"query"`
	K              int             `json:"k"`
	Mode           string          `json:"mode,omitempty"`
	Modality       string          `json:"modality,omitempty"`
	CandidateK     *int            `json:"candidateK,omitempty"`
	Fusion         *FusionOptions  `json:"fusion,omitempty"`
	Rerank         *RerankOptions  `json:"rerank,omitempty"`
	MMR            *MMROptions     `json:"mmr,omitempty"`
	Rewrite        *Rewrite        `json:"rewrite,omitempty"`
	Filter         json.RawMessage `json:"filter,omitempty"`
	MinScore       *float64        `json:"minScore,omitempty"`
	Recency        *RecencyOptions `json:"recency,omitempty"`
	Unit           string          `json:"unit,omitempty"`
	Level          *int            `json:"level,omitempty"`
	TokenBudget    *int            `json:"tokenBudget,omitempty"`
	SessionID      string          `json:"sessionId,omitempty"`
	IncludeText    *bool           `json:"includeText,omitempty"`
	IncludeVectors *bool           `json:"includeVectors,omitempty"`
	Encoding       string          `json:"encoding,omitempty"` // for hit.vector (§7.3.1)
	Seed           *int64          `json:"seed,omitempty"`
	IndexVersion   string          `json:"indexVersion,omitempty"`
	Strict         *bool           `json:"strict,omitempty"`
	Cursor         string          `json:"cursor,omitempty"`
	Meta           Meta            `json:"_meta,omitempty"`
}

// HasFilter reports whether a filter was sent; an explicit null is absent (§4.6).
func (p *RetrieveParams) HasFilter() bool { return len(p.Filter) > 0 && string(p.Filter) != "null" }

// IsStrict applies the §7.7 default: strict unless strict:false was sent.
func (p *RetrieveParams) IsStrict() bool { return p.Strict == nil || *p.Strict }

// Usage is the per-request telemetry object (§7.7, §17.2).
type Usage struct {
	Candidates *int     `json:"candidates,omitempty"`
	Reranked   *int     `json:"reranked,omitempty"`
	LatencyMs  *float64 `json:"latencyMs,omitempty"`
	Tokens     *int     `json:"tokens,omitempty"`
	Notes      []string `json:"notes,omitempty"`
}

// RetrieveResult (§7.7).
type RetrieveResult struct {
	Hits           []Hit  `json:"hits"`
	NextCursor     string `json:"nextCursor,omitempty"`
	IndexVersion   string `json:"indexVersion,omitempty"`
	Usage          *Usage `json:"usage,omitempty"`
	RewrittenQuery string `json:"rewrittenQuery,omitempty"`
	Meta           Meta   `json:"_meta,omitempty"`
}

// Citation, Provenance, Trust and ChunkRef are the optional Hit parts of §7.7.
type Citation struct {
	Source string `json:"source,omitempty"`
	URI    string `json:"uri,omitempty"`
	Title  string `json:"title,omitempty"`
	Start  *int   `json:"start,omitempty"`
	End    *int   `json:"end,omitempty"`
	Page   *int   `json:"page,omitempty"`
}
type Edge struct {
	Src    string   `json:"src"`
	Dst    string   `json:"dst"`
	Weight *float64 `json:"weight,omitempty"`
}
type Provenance struct {
	Path   []string `json:"path,omitempty"`
	Nodes  []string `json:"nodes,omitempty"`
	Edges  []Edge   `json:"edges,omitempty"`
	Leaves []string `json:"leaves,omitempty"`
}

// Trust levels of §7.7 / §15.2.
const (
	TrustTrusted   = "trusted"
	TrustCommunity = "community"
	TrustUntrusted = "untrusted"
)

type Trust struct {
	Level              string   `json:"level"`
	Score              *float64 `json:"score,omitempty"`
	InjectionSuspected *bool    `json:"injectionSuspected,omitempty"`
	Sanitized          *bool    `json:"sanitized,omitempty"`
}
type ChunkRef struct {
	DocID   string `json:"docId"`
	Index   int    `json:"index"`
	Context string `json:"context,omitempty"`
}

// Hit is one ranked result (§7.7). Vector is raw: a JSON array, or an
// f32-base64 string when the request asked for that encoding.
type Hit struct {
	ID         ID                 `json:"id"`
	Score      float64            `json:"score"`
	Confidence *float64           `json:"confidence,omitempty"`
	Text       *string            `json:"text,omitempty"`
	Content    []Content          `json:"content,omitempty"`
	Modality   string             `json:"modality,omitempty"`
	Unit       string             `json:"unit,omitempty"`
	Level      *int               `json:"level,omitempty"`
	Meta       map[string]any     `json:"meta,omitempty"`
	Vector     json.RawMessage    `json:"vector,omitempty"`
	Scores     map[string]float64 `json:"scores,omitempty"`
	Citation   *Citation          `json:"citation,omitempty"`
	Provenance *Provenance        `json:"provenance,omitempty"`
	Trust      *Trust             `json:"trust,omitempty"`
	Chunk      *ChunkRef          `json:"chunk,omitempty"`
}

// TextOf returns the hit's text or "".
func (h *Hit) TextOf() string {
	if h.Text == nil {
		return ""
	}
	return *h.Text
}

// TransformParams / TransformResult (§7.8).
type TransformParams struct {
	Query  string `json:"query"`
	Method string `json:"method"`
	N      *int   `json:"n,omitempty"`
	// Seed fixes the choice among equally good variants (an rcpgo
	// extension in the spirit of §7.7.1; servers that do not know it
	// ignore it).
	Seed *int64 `json:"seed,omitempty"`
	Meta Meta   `json:"_meta,omitempty"`
}
type TransformResult struct {
	Queries      []string `json:"queries"`
	Hypothetical string   `json:"hypothetical,omitempty"`
	Meta         Meta     `json:"_meta,omitempty"`
}

// GraphParams / GraphResult (§7.9).
type GraphParams struct {
	Op        string   `json:"op"`
	Query     string   `json:"query,omitempty"`
	K         *int     `json:"k,omitempty"`
	SeedIDs   []string `json:"seedIds,omitempty"`
	Hops      *int     `json:"hops,omitempty"`
	Level     *int     `json:"level,omitempty"`
	Cursor    string   `json:"cursor,omitempty"`
	SessionID string   `json:"sessionId,omitempty"`
	Meta      Meta     `json:"_meta,omitempty"`
}
type Community struct {
	ID      ID       `json:"id"`
	Summary string   `json:"summary,omitempty"`
	Score   *float64 `json:"score,omitempty"`
	Level   *int     `json:"level,omitempty"`
	// Provenance.Leaves are the units behind the summary (an rcpgo
	// extension, as on community hits of retrieve).
	Provenance *Provenance `json:"provenance,omitempty"`
}
type GraphNode struct {
	ID    ID       `json:"id"`
	Score *float64 `json:"score,omitempty"`
}
type GraphEdge struct {
	Src    ID       `json:"src"`
	Dst    ID       `json:"dst"`
	Weight *float64 `json:"weight,omitempty"`
}
type GraphResult struct {
	Hits        []Hit       `json:"hits,omitempty"`
	Followups   []string    `json:"followups,omitempty"`
	Summary     string      `json:"summary,omitempty"`
	Communities []Community `json:"communities,omitempty"`
	Nodes       []GraphNode `json:"nodes,omitempty"`
	Edges       []GraphEdge `json:"edges,omitempty"`
	NextCursor  string      `json:"nextCursor,omitempty"`
	Usage       *Usage      `json:"usage,omitempty"`
	Meta        Meta        `json:"_meta,omitempty"`
}

// Document is one index/add input (§7.10).
type Document struct {
	ID   string         `json:"id,omitempty"`
	Text string         `json:"text"`
	Meta map[string]any `json:"meta,omitempty"`
}

// IndexAddParams / IndexAddResult (§7.10).
type IndexAddParams struct {
	Documents  []Document `json:"documents"`
	Chunk      *bool      `json:"chunk,omitempty"`
	Contextual *bool      `json:"contextual,omitempty"`
	Meta       Meta       `json:"_meta,omitempty"`
}
type IndexAddResult struct {
	IDs          []string `json:"ids"`
	Chunks       *int     `json:"chunks,omitempty"`
	IndexVersion string   `json:"indexVersion,omitempty"`
	Meta         Meta     `json:"_meta,omitempty"`
}

// IndexDeleteParams / IndexDeleteResult (§7.11).
type IndexDeleteParams struct {
	IDs  []string `json:"ids"`
	Meta Meta     `json:"_meta,omitempty"`
}
type IndexDeleteResult struct {
	Deleted      int    `json:"deleted"`
	IndexVersion string `json:"indexVersion,omitempty"`
	Meta         Meta   `json:"_meta,omitempty"`
}

// Endpoint tells a client how to reach a federated engine directly (§7.13).
type Endpoint struct {
	Transport string   `json:"transport"`
	URL       string   `json:"url,omitempty"`
	Command   []string `json:"command,omitempty"`
}

// CatalogEngine / CatalogListResult (§7.13).
type CatalogEngine struct {
	ID           string       `json:"id"`
	Server       PeerInfo     `json:"server"`
	Capabilities Capabilities `json:"capabilities"`
	Endpoint     *Endpoint    `json:"endpoint,omitempty"`
	Meta         Meta         `json:"_meta,omitempty"`
}
type CatalogListResult struct {
	Engines []CatalogEngine `json:"engines"`
	Meta    Meta            `json:"_meta,omitempty"`
}

// FeedbackSignal / FeedbackParams / FeedbackResult (§7.16).
type FeedbackSignal struct {
	HitID              ID       `json:"hitId"`
	Used               *bool    `json:"used,omitempty"`
	Cited              *bool    `json:"cited,omitempty"`
	Helpful            *bool    `json:"helpful,omitempty"`
	Reward             *float64 `json:"reward,omitempty"`
	PoisonSuspected    *bool    `json:"poisonSuspected,omitempty"`
	InjectionSuspected *bool    `json:"injectionSuspected,omitempty"`
}
type FeedbackParams struct {
	SessionID string           `json:"sessionId,omitempty"`
	Query     string           `json:"query,omitempty"`
	Signals   []FeedbackSignal `json:"signals"`
	Meta      Meta             `json:"_meta,omitempty"`
}
type FeedbackResult struct {
	Accepted int  `json:"accepted"`
	Meta     Meta `json:"_meta,omitempty"`
}

// Memory methods (§7.17).
type MemoryBuildParams struct {
	Documents []Document `json:"documents,omitempty"`
	MemoryID  string     `json:"memoryId,omitempty"`
	Scope     string     `json:"scope,omitempty"`
	Meta      Meta       `json:"_meta,omitempty"`
}
type MemoryBuildResult struct {
	MemoryID string `json:"memoryId"`
	Tokens   *int   `json:"tokens,omitempty"`
	Meta     Meta   `json:"_meta,omitempty"`
}
type MemoryRecallParams struct {
	Query     string `json:"query"`
	MemoryID  string `json:"memoryId,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	N         *int   `json:"n,omitempty"`
	Meta      Meta   `json:"_meta,omitempty"`
}
type Clue struct {
	Query   string   `json:"query,omitempty"`
	SeedIDs []string `json:"seedIds,omitempty"`
	Weight  *float64 `json:"weight,omitempty"`
}
type MemoryRecallResult struct {
	Clues []Clue `json:"clues"`
	Hits  []Hit  `json:"hits,omitempty"`
	Meta  Meta   `json:"_meta,omitempty"`
}

// ProgressParams are the params of notifications/progress (§9). Token is
// echoed verbatim (string or integer).
type ProgressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      *float64        `json:"progress,omitempty"`
	Stage         string          `json:"stage,omitempty"`
	Message       string          `json:"message,omitempty"`
	Partial       *Partial        `json:"partial,omitempty"`
}

// Partial carries incremental hits in a progress frame.
type Partial struct {
	Hits []Hit `json:"hits,omitempty"`
}

// CancelParams are the params of notifications/cancel (§7.14).
type CancelParams struct {
	ID     json.RawMessage `json:"id"`
	Reason string          `json:"reason,omitempty"`
}

// Log levels of §17.1, least to most severe.
const (
	LogDebug   = "debug"
	LogInfo    = "info"
	LogNotice  = "notice"
	LogWarning = "warning"
	LogError   = "error"
)

// LogParams are the params of notifications/log (§17.1).
type LogParams struct {
	Level   string         `json:"level"`
	Message string         `json:"message"`
	Logger  string         `json:"logger,omitempty"`
	Data    map[string]any `json:"data,omitempty"`
	Meta    Meta           `json:"_meta,omitempty"`
}
