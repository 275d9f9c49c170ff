package mcpbridge

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/rcpgo/rcpgo/rcp"
)

// RCP has no "get document by id" method, yet MCP resources need one. The
// bridge uses three vendor methods under the x-rcpgo extension key (§6.2):
// an engine that serves them advertises
//
//	"x-rcpgo": { "methods": ["x-rcpgo/get", "x-rcpgo/list", "x-rcpgo/values"] }
//
// and the client's usual gating (§14.4) applies: a method is called only
// when it is listed. Each method is optional; the bridge derives document
// resources from get, paginated resources/list and id completion from list,
// and filter-value completion from values.
const (
	VendorKey    = "x-rcpgo"
	MethodGet    = "x-rcpgo/get"
	MethodList   = "x-rcpgo/list"
	MethodValues = "x-rcpgo/values"
)

// VendorCapability is the value of the x-rcpgo capability.
type VendorCapability struct {
	Methods []string `json:"methods"`
}

// GetParams are the params of x-rcpgo/get: whole documents by id.
type GetParams struct {
	IDs  []string `json:"ids"`
	Meta rcp.Meta `json:"_meta,omitempty"`
}

// GetResult lists the documents found, in request order; unknown ids are
// listed in Missing (not an error).
type GetResult struct {
	Documents    []StoredDocument `json:"documents"`
	Missing      []string         `json:"missing,omitempty"`
	IndexVersion string           `json:"indexVersion,omitempty"`
}

// StoredDocument is one stored document. Trust follows §7.7 / §15.2.
type StoredDocument struct {
	ID    string         `json:"id"`
	Text  string         `json:"text"`
	Title string         `json:"title,omitempty"`
	URI   string         `json:"uri,omitempty"`
	Meta  map[string]any `json:"meta,omitempty"`
	Trust *rcp.Trust     `json:"trust,omitempty"`
}

// ListParams are the params of x-rcpgo/list: document ids in a stable
// order, optionally only those starting with Prefix.
type ListParams struct {
	Cursor string   `json:"cursor,omitempty"`
	Limit  int      `json:"limit,omitempty"`
	Prefix string   `json:"prefix,omitempty"`
	Meta   rcp.Meta `json:"_meta,omitempty"`
}

// ListResult is one page; an empty NextCursor ends the listing.
type ListResult struct {
	Documents  []DocumentRef `json:"documents"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

// DocumentRef names a document in a listing.
type DocumentRef struct {
	ID    string `json:"id"`
	Title string `json:"title,omitempty"`
	Size  int64  `json:"size,omitempty"` // bytes of text
}

// ValuesParams are the params of x-rcpgo/values: distinct values of an
// advertised filter field, optionally by prefix.
type ValuesParams struct {
	Field  string   `json:"field"`
	Prefix string   `json:"prefix,omitempty"`
	Limit  int      `json:"limit,omitempty"`
	Meta   rcp.Meta `json:"_meta,omitempty"`
}

// ValuesResult lists values (as strings) in a stable order.
type ValuesResult struct {
	Values  []string `json:"values"`
	HasMore bool     `json:"hasMore,omitempty"`
}

type vendorCap struct{ methods []string }

func (v vendorCap) has(method string) bool { return slices.Contains(v.methods, method) }

func parseVendorCap(c *rcp.Capabilities) (vendorCap, error) {
	raw, ok := c.Extra[VendorKey]
	if !ok {
		return vendorCap{}, nil
	}
	var vc VendorCapability
	if err := json.Unmarshal(raw, &vc); err != nil {
		return vendorCap{}, fmt.Errorf("x-rcpgo: %w", err)
	}
	return vendorCap{methods: vc.Methods}, nil
}
