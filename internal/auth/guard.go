package auth

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/rcpgo/rcpgo/rcp"
)

// methodScopes is the scope each RCP method needs. A method not listed
// (a vendor method added later) needs admin: new surface is closed until
// someone decides who may use it.
var methodScopes = map[string]Scope{
	rcp.MethodInitialize: none, rcp.MethodInfo: none, rcp.MethodPing: none, rcp.MethodShutdown: none,
	rcp.MethodRetrieve: Read, rcp.MethodRerank: Read, rcp.MethodEmbed: Read, rcp.MethodEmbedSparse: Read,
	rcp.MethodEmbedMulti: Read, rcp.MethodTransform: Read, rcp.MethodGraph: Read, rcp.MethodCatalogList: Read,
	rcp.MethodMemoryRecall: Read,
	rcp.MethodRCPGoGet:     Read, rcp.MethodRCPGoList: Read, rcp.MethodRCPGoValues: Read,
	rcp.MethodIndexAdd: Write, rcp.MethodIndexDelete: Write, rcp.MethodFeedback: Write, rcp.MethodMemoryBuild: Write,
	rcp.MethodRCPGoQuarantineList: Admin, rcp.MethodRCPGoQuarantineLift: Admin,
}

// MethodScope is the scope an RCP method needs ("" for the handshake
// methods every token may call).
func MethodScope(method string) Scope {
	if s, ok := methodScopes[method]; ok {
		return s
	}
	return Admin
}

// Guard wraps h so that an HTTP caller whose token lacks the scope a
// method needs is answered -32012 with error.data.scope naming it (and
// detail saying which token). Stream callers (stdio: authorised by whoever
// spawned the process, §15.6) and every caller of a face without tokens
// pass. The check comes after authentication (401 for no valid token,
// before initialize) and after capability gating: an authenticated caller
// may learn what the server offers.
func (s *Set) Guard(h rcp.Handler) rcp.Handler {
	if !s.Enabled() {
		return h
	}
	return guarded{h: h, s: s}
}

type guarded struct {
	h rcp.Handler
	s *Set
}

func (g guarded) Describe(ctx context.Context) rcp.Description { return g.h.Describe(ctx) }

func (g guarded) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if err := g.s.Check(ctx, MethodScope(method), method); err != nil {
		return nil, err
	}
	return g.h.Call(ctx, method, params)
}

// Check returns nil when the caller of the RCP request served by ctx holds
// scope, else the -32012 answer; what names the refused action.
func (s *Set) Check(ctx context.Context, scope Scope, what string) error {
	c := rcp.CallerOf(ctx)
	if !s.Enabled() || c.Transport != rcp.TransportHTTP {
		return nil
	}
	t, ok := s.ByName(c.Principal)
	if ok && t.Has(scope) {
		return nil
	}
	return Refusal(c.Principal, scope, what)
}

// Refusal is the -32012 answer to principal, whose token lacks scope for
// what (a method or tool).
func Refusal(principal string, scope Scope, what string) *rcp.Error {
	b, _ := json.Marshal(string(scope))
	return &rcp.Error{Code: rcp.CodeUnauthorized, Message: fmt.Sprintf("%s needs the %s scope", what, scope),
		Data: &rcp.ErrorData{Detail: fmt.Sprintf("token %q does not hold the %s scope", principal, scope),
			Extra: map[string]json.RawMessage{"scope": b}}}
}
