package rcp

import (
	"encoding/json"
	"fmt"
	"slices"
)

// The x-rcpgo vendor extension (§6.2): three document methods served by
// rcpd's engine and used by the MCP face (package mcpbridge) to expose
// stored documents as resources. RCP itself has no "get document by id"
// method. An engine that serves them advertises
//
//	"x-rcpgo": { "methods": ["x-rcpgo/get", "x-rcpgo/list", "x-rcpgo/values"] }
//
// and, like every vendor method, each is gated on that key: a client calls
// a method only when it is listed (§14.4), and a server answers -32003 to a
// vendor method whose key it did not advertise. Each method is optional.
const (
	VendorRCPGo       = "x-rcpgo"
	MethodRCPGoGet    = "x-rcpgo/get"
	MethodRCPGoList   = "x-rcpgo/list"
	MethodRCPGoValues = "x-rcpgo/values"
	// MethodRCPGoQuarantineList and MethodRCPGoQuarantineLift let an
	// operator see and lift the quarantines client feedback put on units
	// (§15.3; rcpd serves them to tokens holding the admin scope).
	MethodRCPGoQuarantineList = "x-rcpgo/quarantine/list"
	MethodRCPGoQuarantineLift = "x-rcpgo/quarantine/lift"
)

// RCPGoCap is the value of the x-rcpgo capability: the vendor methods served.
type RCPGoCap struct {
	Methods []string `json:"methods"`
	// Options lists vendor request options served (rcpd: "prf", retrieve
	// _meta "x-rcpgo/prf": RM3 pseudo-relevance feedback).
	Options []string `json:"options,omitempty"`
	// ReadOnly, when the index is not writable, says why ("this is a
	// read-only snapshot of DIR, which rcpd serve (PID 4242) holds").
	ReadOnly string `json:"readOnly,omitempty"`
	// Limits are the server's request limits, so that a client can size
	// its batches instead of meeting -32013.
	Limits *RCPGoLimits `json:"limits,omitempty"`
}

// RCPGoLimits are request limits an rcpgo server advertises (0: not said).
type RCPGoLimits struct {
	// RequestBytes is the largest request (one stdio frame, one HTTP body)
	// the server reads.
	RequestBytes int64 `json:"requestBytes,omitempty"`
	// AddDocuments is the most documents one index/add may carry.
	AddDocuments int `json:"addDocuments,omitempty"`
}

// Has reports whether method is listed. A nil *RCPGoCap lists nothing.
func (v *RCPGoCap) Has(method string) bool { return v != nil && slices.Contains(v.Methods, method) }

// ReadRCPGoCap decodes the x-rcpgo capability from c.Extra. It returns nil
// (and no error) when c does not advertise it, and an error when the value
// is malformed.
func ReadRCPGoCap(c *Capabilities) (*RCPGoCap, error) {
	if c == nil {
		return nil, nil
	}
	raw, ok := c.Extra[VendorRCPGo]
	if !ok {
		return nil, nil
	}
	v := new(RCPGoCap)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("%s capability: %w", VendorRCPGo, err)
	}
	return v, nil
}

// SetRCPGoCap stores v as the x-rcpgo capability in c.Extra.
func SetRCPGoCap(c *Capabilities, v RCPGoCap) {
	if v.Methods == nil {
		v.Methods = []string{}
	}
	b, _ := json.Marshal(v) // a list of strings always marshals
	if c.Extra == nil {
		c.Extra = map[string]json.RawMessage{}
	}
	c.Extra[VendorRCPGo] = b
}

// GetDocumentsParams are the params of x-rcpgo/get: whole documents by id.
// IDs is required (it may be empty).
type GetDocumentsParams struct {
	IDs  []string `json:"ids"`
	Meta Meta     `json:"_meta,omitempty"`
}

// GetDocumentsResult lists the documents found, in request order (each id
// at most once); ids naming no stored document are listed in Missing, which
// is not an error. IndexVersion is the index version the documents were
// read at.
type GetDocumentsResult struct {
	Documents    []StoredDocument `json:"documents"`
	Missing      []string         `json:"missing,omitempty"`
	IndexVersion string           `json:"indexVersion,omitempty"`
}

// StoredDocument is one stored document as it was written: for a document
// indexed with server-side chunking, the whole original text, not a chunk.
// Trust follows §7.7 / §15.2.
type StoredDocument struct {
	ID    string         `json:"id"`
	Text  string         `json:"text"`
	Title string         `json:"title,omitempty"`
	URI   string         `json:"uri,omitempty"`
	Meta  map[string]any `json:"meta,omitempty"`
	Trust *Trust         `json:"trust,omitempty"`
}

// ListDocumentsParams are the params of x-rcpgo/list: document ids in a
// stable order (ascending bytes of the id), optionally only those starting
// with Prefix. Cursor is a NextCursor from a previous page of the same
// listing (same Prefix); Limit caps the page (the server applies a default
// and a maximum).
type ListDocumentsParams struct {
	Cursor string `json:"cursor,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Prefix string `json:"prefix,omitempty"`
	Meta   Meta   `json:"_meta,omitempty"`
}

// ListDocumentsResult is one page; an empty NextCursor ends the listing.
// Paging is stable under concurrent writes: an id that exists throughout
// the listing appears exactly once.
type ListDocumentsResult struct {
	Documents  []DocumentRef `json:"documents"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

// DocumentRef names a document in a listing.
type DocumentRef struct {
	ID     string `json:"id"`
	Title  string `json:"title,omitempty"`
	Size   int64  `json:"size,omitempty"`   // bytes of text
	Chunks int    `json:"chunks,omitempty"` // chunks the server split it into (0: not chunked)
}

// FieldValuesParams are the params of x-rcpgo/values: distinct values of
// an advertised filter field (filter.fields), optionally by prefix, for
// completions. Field is required.
type FieldValuesParams struct {
	Field  string `json:"field"`
	Prefix string `json:"prefix,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Meta   Meta   `json:"_meta,omitempty"`
}

// FieldValuesResult lists values (as strings) in a stable order; HasMore
// says values beyond Limit exist.
type FieldValuesResult struct {
	Values  []string `json:"values"`
	HasMore bool     `json:"hasMore,omitempty"`
}

// MetaRCPGoReadiness is the _meta key of initialize and info answers in
// which rcpd reports the readiness of its derived structures: the dense
// generation with its HNSW index ("dense"), the knowledge graph ("graph"),
// its communities ("communities"), the summary tree ("tree") and the
// global memory ("memory"), each built in the background from the index.
// The value is a Readiness; it is read when the answer is written (it is
// not part of the frozen capability set).
const MetaRCPGoReadiness = "x-rcpgo/readiness"

// States of a derived structure (DerivedState.State).
const (
	// StateWaiting: nothing can be built yet (Detail says why, e.g. "LSA
	// needs ≥ 20 documents; 1 indexed"); calls that need it are not served.
	StateWaiting = "waiting"
	// StateBuilding: the first build is in progress; calls that need it
	// wait for it within their deadline, else answer -32010 with
	// retryAfterMs.
	StateBuilding = "building"
	// StateReady: current with every acknowledged write.
	StateReady = "ready"
	// StateStale: served, but behind recent writes while it is updated;
	// answers built from it say so in usage.notes.
	StateStale = "stale"
)

// DerivedState is the readiness of one derived structure.
type DerivedState struct {
	State string `json:"state"`
	// Phase names the step of a build in progress ("fit", "embed", "load",
	// "backfill", "extract", "communities").
	Phase string `json:"phase,omitempty"`
	// Done and Total count the work of the build or update in progress in
	// Unit (0 when unknown).
	Done  int64  `json:"done,omitempty"`
	Total int64  `json:"total,omitempty"`
	Unit  string `json:"unit,omitempty"`
	// ETAMs estimates the time left of the build in progress (0: unknown).
	ETAMs  int64  `json:"etaMs,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Settled reports whether nothing is being built or updated: the state is
// ready or waiting.
func (s DerivedState) Settled() bool { return s.State == StateReady || s.State == StateWaiting }

// Readiness maps structure names to their states.
type Readiness map[string]DerivedState

// Settled reports whether every structure is settled.
func (r Readiness) Settled() bool {
	for _, s := range r {
		if !s.Settled() {
			return false
		}
	}
	return true
}

// ReadReadiness decodes the readiness an initialize or info answer
// carries; ok is false when it carries none.
func ReadReadiness(m Meta) (Readiness, bool) {
	var r Readiness
	if !m.Get(MetaRCPGoReadiness, &r) || r == nil {
		return nil, false
	}
	return r, true
}

// capabilityMissing is the -32003 answer to a method whose capability is
// not advertised. A write to an index advertised read-only says so, and
// why when the x-rcpgo capability tells.
func capabilityMissing(c *Capabilities, method, capKey string) *Error {
	if method != MethodIndexAdd || c.Index == nil {
		return NewError(CodeCapabilityMissing, "capability %q is not advertised", capKey)
	}
	e := NewError(CodeCapabilityMissing, "the index is read-only (capabilities.index.writable is false)")
	if v, _ := ReadRCPGoCap(c); v != nil && v.ReadOnly != "" {
		e.Message = "the index is read-only: " + v.ReadOnly
		e.Data = &ErrorData{Detail: v.ReadOnly}
	}
	return e
}

// MetaRCPGoCaller is the _meta key in which a relay (rcpd gateway) names
// its own caller (rcp.Caller.ID) on a feedback it forwards. An engine
// honours it only from relays it trusts (a stream peer, or a caller it was
// configured to trust), counting the report as that caller's behind the
// relay's.
const MetaRCPGoCaller = "x-rcpgo/caller"

// QuarantineListParams are the params of x-rcpgo/quarantine/list.
type QuarantineListParams struct {
	Meta Meta `json:"_meta,omitempty"`
}

// Quarantine is a unit quarantined on client feedback: the callers whose
// reports did it (as the server identifies callers: a token name, a
// client address) and when it ends (RFC 3339).
type Quarantine struct {
	ID        string   `json:"id"`
	Injection bool     `json:"injection,omitempty"`
	Reporters []string `json:"reporters"`
	Since     string   `json:"since"`
	Until     string   `json:"until"`
}

// QuarantineListResult answers x-rcpgo/quarantine/list, most recent first.
type QuarantineListResult struct {
	Units []Quarantine `json:"units"`
	Meta  Meta         `json:"_meta,omitempty"`
}

// QuarantineLiftParams name the units whose quarantine to lift.
type QuarantineLiftParams struct {
	IDs  []string `json:"ids"`
	Meta Meta     `json:"_meta,omitempty"`
}

// QuarantineLiftResult lists the units that were quarantined and no
// longer are.
type QuarantineLiftResult struct {
	Lifted []string `json:"lifted"`
	Meta   Meta     `json:"_meta,omitempty"`
}
