package rcp

import (
	"context"
	"encoding/json"
)

// Conformance levels of §14.
const (
	LevelL0 = "L0"
	LevelL1 = "L1"
	LevelL2 = "L2"
)

// Description is what a Handler tells the server about itself: identity,
// the maximum capability set (what is configured and really works) and the
// conformance level it claims in _meta.conformance.
type Description struct {
	Server       PeerInfo
	Capabilities Capabilities
	Conformance  string
	// Meta is merged into the _meta of initialize and info results.
	Meta Meta
}

// Handler is the one seam between the protocol and behaviour. The Server owns
// framing, lifecycle (§13), gating (§7, §12), batching (§11), cancellation
// (§7.14), deadlines (§13.1) and progress/log plumbing (§9, §17); a Handler
// owns meaning. The engine, the gateway and the MCP face all plug in here,
// and a Client can be wrapped as a Handler so remote engines look local.
type Handler interface {
	// Describe is called when a session starts (initialize, or the first
	// request on a stateless transport). The server freezes the result for
	// the session's lifetime (§13.2).
	Describe(ctx context.Context) Description
	// Call serves one request whose method is defined by RCP (or a vendor
	// method) and advertised in the session's capabilities. params is the
	// raw params object ({} when absent). The returned value is marshalled
	// as the JSON-RPC result; an error becomes the JSON-RPC error (see
	// AsError). ctx is cancelled by notifications/cancel, the deadline, or
	// transport death.
	Call(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// LiveMeta is an optional Handler extension for state that changes within
// a session (capabilities do not: §13.2): its entries are merged into the
// _meta of every initialize and info answer when it is written. rcpd
// reports the readiness of its derived structures this way
// ("x-rcpgo/readiness"). Keys should be vendor-prefixed (§4.4).
type LiveMeta interface {
	LiveMeta(ctx context.Context) Meta
}

// MethodFunc serves one method; see Handler.Call.
type MethodFunc func(ctx context.Context, params json.RawMessage) (any, error)

// Router is a Handler that dispatches to one MethodFunc per method. Core
// methods without a registered function answer -32003 (they cannot be
// advertised truthfully); unregistered vendor methods -32004.
type Router struct {
	describe func(context.Context) Description
	methods  map[string]MethodFunc
}

// NewRouter returns a Router whose Describe calls describe.
func NewRouter(describe func(context.Context) Description) *Router {
	return &Router{describe: describe, methods: map[string]MethodFunc{}}
}

// HandleFunc registers fn for method.
func (r *Router) HandleFunc(method string, fn MethodFunc) { r.methods[method] = fn }

// Handles reports whether a function is registered for method.
func (r *Router) Handles(method string) bool { _, ok := r.methods[method]; return ok }

// Describe implements Handler.
func (r *Router) Describe(ctx context.Context) Description { return r.describe(ctx) }

// Call implements Handler.
func (r *Router) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	fn, ok := r.methods[method]
	if !ok {
		if _, vendor := VendorOf(method); vendor {
			// the vendor space is advertised, this name in it is not
			return nil, NewError(CodeUnknownMethod, "method %q is not defined by this server", method)
		}
		return nil, NewError(CodeCapabilityMissing, "method %q is not served", method)
	}
	return fn(ctx, params)
}

// Handle registers a typed method: params are decoded into a fresh P with
// DecodeParams (which maps decoding problems to -32602 naming the field) and
// fn's result is returned as is.
func Handle[P, R any](r *Router, method string, fn func(ctx context.Context, p *P) (*R, error)) {
	r.HandleFunc(method, func(ctx context.Context, raw json.RawMessage) (any, error) {
		p := new(P)
		if err := DecodeParams(raw, p); err != nil {
			return nil, err
		}
		res, err := fn(ctx, p)
		if err != nil {
			return nil, err
		}
		return res, nil
	})
}
