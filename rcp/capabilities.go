package rcp

import (
	"encoding/json"
	"slices"
)

// Capabilities is the §6 capability object. Presence means supported: a nil
// pointer is an absent capability, a non-nil one (even empty) is advertised.
// Keys this SDK does not know — including x-vendor keys — are kept in Extra
// and written back unchanged.
type Capabilities struct {
	Embed       *EmbedCap       `json:"embed,omitempty"`
	SparseEmbed *SparseEmbedCap `json:"sparseEmbed,omitempty"`
	MultiVector *MultiVectorCap `json:"multiVector,omitempty"`
	Rerank      *RerankCap      `json:"rerank,omitempty"`
	Retrieve    *RetrieveCap    `json:"retrieve,omitempty"`
	Transform   *TransformCap   `json:"transform,omitempty"`
	Graph       *GraphCap       `json:"graph,omitempty"`
	Index       *IndexCap       `json:"index,omitempty"`
	Session     *SessionCap     `json:"session,omitempty"`
	Feedback    *EmptyCap       `json:"feedback,omitempty"`
	Memory      *MemoryCap      `json:"memory,omitempty"`
	Filter      *FilterCap      `json:"filter,omitempty"`
	Streaming   *EmptyCap       `json:"streaming,omitempty"`
	Pagination  *EmptyCap       `json:"pagination,omitempty"`
	Citations   *EmptyCap       `json:"citations,omitempty"`
	Log         *LogCap         `json:"log,omitempty"`
	Catalog     *CatalogCap     `json:"catalog,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

// EmbedCap is capability "embed" (§6, §7.3.1).
type EmbedCap struct {
	Dimension  int      `json:"dimension"`
	Identity   string   `json:"identity"`
	BatchLimit int      `json:"batchLimit,omitempty"`
	Normalized *bool    `json:"normalized,omitempty"`
	Modalities []string `json:"modalities,omitempty"`
	Encodings  []string `json:"encodings,omitempty"`
}

// SparseEmbedCap is capability "sparseEmbed".
type SparseEmbedCap struct {
	Identity   string `json:"identity"`
	Vocabulary int    `json:"vocabulary,omitempty"`
}

// MultiVectorCap is capability "multiVector".
type MultiVectorCap struct {
	Dimension  int      `json:"dimension"`
	Identity   string   `json:"identity"`
	Similarity string   `json:"similarity,omitempty"`
	Modalities []string `json:"modalities,omitempty"`
	Encodings  []string `json:"encodings,omitempty"`
}

// RerankCap is capability "rerank".
type RerankCap struct {
	Methods       []string `json:"methods"`
	MaxCandidates int      `json:"maxCandidates,omitempty"`
	Models        []string `json:"models,omitempty"`
}

// RetrieveCap is capability "retrieve" (§6.1).
type RetrieveCap struct {
	MaxK          int      `json:"maxK,omitempty"`
	Modes         []string `json:"modes,omitempty"`
	Modalities    []string `json:"modalities,omitempty"`
	Fusion        []string `json:"fusion,omitempty"`
	MMR           bool     `json:"mmr,omitempty"`
	RerankBuiltin bool     `json:"rerankBuiltin,omitempty"`
	Deterministic bool     `json:"deterministic,omitempty"`
	Snapshots     bool     `json:"snapshots,omitempty"`
	Units         []string `json:"units,omitempty"`
	Levels        int      `json:"levels,omitempty"`
	TokenBudget   bool     `json:"tokenBudget,omitempty"`
	Confidence    bool     `json:"confidence,omitempty"`
	ScoreScale    string   `json:"scoreScale,omitempty"`
	ScoreFloor    *float64 `json:"scoreFloor,omitempty"`
	DefaultMode   string   `json:"defaultMode,omitempty"`
	Encodings     []string `json:"encodings,omitempty"` // for includeVectors (§7.3.1)
}

// TransformCap is capability "transform".
type TransformCap struct {
	Methods []string `json:"methods"`
}

// GraphCap is capability "graph".
type GraphCap struct {
	Ops []string `json:"ops"`
}

// IndexCap is capability "index".
type IndexCap struct {
	Writable   bool `json:"writable"`
	Chunking   bool `json:"chunking,omitempty"`
	Contextual bool `json:"contextual,omitempty"`
}

// SessionCap is capability "session".
type SessionCap struct {
	Dedup      bool `json:"dedup,omitempty"`
	TTLSeconds int  `json:"ttlSeconds,omitempty"`
}

// MemoryCap is capability "memory".
type MemoryCap struct {
	Scopes []string `json:"scopes"`
	Clues  bool     `json:"clues,omitempty"`
}

// FilterCap is capability "filter" (§8). Fields is either a list of names or
// an object mapping names to types; FieldTypes normalises both.
type FilterCap struct {
	Fields    json.RawMessage `json:"fields"`
	Operators []string        `json:"operators,omitempty"`
}

// FieldTypes returns the advertised fields as name → type ("" when the
// server advertised a plain list of names).
func (f *FilterCap) FieldTypes() map[string]string {
	if f == nil {
		return nil
	}
	var typed map[string]string
	if json.Unmarshal(f.Fields, &typed) == nil {
		return typed
	}
	var names []string
	if json.Unmarshal(f.Fields, &names) == nil {
		out := make(map[string]string, len(names))
		for _, n := range names {
			out[n] = ""
		}
		return out
	}
	return map[string]string{}
}

// TypedFields builds a FilterCap.Fields object from name → type.
func TypedFields(fields map[string]string) json.RawMessage {
	b, _ := json.Marshal(fields)
	return b
}

// LogCap is capability "log".
type LogCap struct {
	Levels []string `json:"levels,omitempty"`
}

// CatalogCap is capability "catalog".
type CatalogCap struct {
	Engines int `json:"engines"`
}

// EmptyCap is a capability whose presence is its whole meaning ({}).
// It also accepts `true` (some servers advertise "citations": true).
type EmptyCap struct{}

// UnmarshalJSON accepts an object or a boolean.
func (*EmptyCap) UnmarshalJSON([]byte) error { return nil }

// MarshalJSON writes {}.
func (EmptyCap) MarshalJSON() ([]byte, error) { return []byte("{}"), nil }

// MarshalJSON merges Extra.
func (c Capabilities) MarshalJSON() ([]byte, error) {
	type plain Capabilities
	return marshalWithExtra(plain(c), c.Extra)
}

// UnmarshalJSON keeps unknown keys in Extra. `false` or null for a known key
// decodes as absent.
func (c *Capabilities) UnmarshalJSON(b []byte) error {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for k, v := range all {
		if string(v) == "false" {
			delete(all, k)
		}
	}
	cleaned, _ := json.Marshal(all)
	type plain Capabilities
	var p plain
	extra, err := unmarshalWithExtra(cleaned, &p)
	if err != nil {
		return err
	}
	*c = Capabilities(p)
	c.Extra = extra
	return nil
}

// Has reports whether capability key is advertised (core or extension key).
func (c *Capabilities) Has(key string) bool {
	if c == nil {
		return false
	}
	switch key {
	case CapEmbed:
		return c.Embed != nil
	case CapSparseEmbed:
		return c.SparseEmbed != nil
	case CapMultiVector:
		return c.MultiVector != nil
	case CapRerank:
		return c.Rerank != nil
	case CapRetrieve:
		return c.Retrieve != nil
	case CapTransform:
		return c.Transform != nil
	case CapGraph:
		return c.Graph != nil
	case CapIndex:
		return c.Index != nil
	case CapSession:
		return c.Session != nil
	case CapFeedback:
		return c.Feedback != nil
	case CapMemory:
		return c.Memory != nil
	case CapFilter:
		return c.Filter != nil
	case CapStreaming:
		return c.Streaming != nil
	case CapPagination:
		return c.Pagination != nil
	case CapCitations:
		return c.Citations != nil
	case CapLog:
		return c.Log != nil
	case CapCatalog:
		return c.Catalog != nil
	}
	_, ok := c.Extra[key]
	return ok
}

// Allows reports whether a method may be called under these capabilities:
// ungated methods always, gated ones when their capability is present.
// index/add additionally needs index.writable.
func (c *Capabilities) Allows(method string) bool {
	capKey, defined := MethodCapability(method)
	if !defined {
		return false
	}
	if capKey == "" {
		return true
	}
	if !c.Has(capKey) {
		return false
	}
	if method == MethodIndexAdd {
		return c.Index.Writable
	}
	return true
}

// RetrieveModes returns the advertised retrieve modes; a retrieve capability
// without a modes list is treated as offering what defaultMode names, or no
// mode restriction at all when that is absent too.
func (c *Capabilities) RetrieveModes() []string {
	if c == nil || c.Retrieve == nil {
		return nil
	}
	if len(c.Retrieve.Modes) > 0 {
		return c.Retrieve.Modes
	}
	if c.Retrieve.DefaultMode != "" {
		return []string{c.Retrieve.DefaultMode}
	}
	return nil
}

// Contains is a small helper for "is v in the advertised list".
func Contains(list []string, v string) bool { return slices.Contains(list, v) }
