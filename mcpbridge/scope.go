package mcpbridge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcpgo/rcpgo/internal/auth"
	"github.com/rcpgo/rcpgo/rcp"
)

// toolScopes is the token scope each tool needs over HTTP (the scope of
// the RCP method it calls); a tool not listed needs admin.
var toolScopes = map[string]auth.Scope{
	ToolSearch: auth.Read, ToolRerank: auth.Read, ToolEmbed: auth.Read, ToolGraph: auth.Read,
	ToolTransform: auth.Read, ToolMemoryRecall: auth.Read,
	ToolIndexAdd: auth.Write, ToolIndexDelete: auth.Write, ToolMemoryBuild: auth.Write, ToolFeedback: auth.Write,
}

// ToolScope is the scope a tool needs.
func ToolScope(tool string) auth.Scope {
	if s, ok := toolScopes[tool]; ok {
		return s
	}
	return auth.Admin
}

// checkScope refuses a request whose token (go-sdk TokenInfo, set by
// requireToken) lacks the scope it needs: a tool call its tool's scope,
// reading resources, prompts and completions read. Without a token (stdio,
// or HTTP without tokens) everything passes.
func checkScope(method string, req mcp.Request) error {
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	var need auth.Scope
	what := method
	switch method {
	case "tools/call":
		p, _ := req.GetParams().(*mcp.CallToolParamsRaw)
		if p == nil {
			return nil // the go-sdk answers the malformed call
		}
		need, what = ToolScope(p.Name), "tool "+p.Name
	case "resources/read", "resources/list", "resources/templates/list", "resources/subscribe",
		"prompts/get", "completion/complete":
		need = auth.Read
	default:
		return nil
	}
	if slices.Contains(extra.TokenInfo.Scopes, string(need)) {
		return nil
	}
	data, _ := json.Marshal(map[string]any{"scope": need, "rcpCode": int(rcp.CodeUnauthorized), "rcpError": rcp.CodeUnauthorized.String(),
		"detail": fmt.Sprintf("token %q does not hold the %s scope", extra.TokenInfo.UserID, need)})
	return &jsonrpc.Error{Code: int64(rcp.CodeUnauthorized), Message: fmt.Sprintf("%s needs the %s scope", what, need), Data: data}
}

// mcpCaller names the MCP client of req as the engine should count it:
// its token (HTTP with tokens), else its address (HTTP without tokens: the
// peerHeader the HTTP face sets), else "mcp" (stdio: the one client that
// spawned the process). Never its MCP session: a client opens as many
// sessions as it likes, and feedback quarantines need distinct callers
// (counted per session, one token or address with three sessions
// quarantined any unit). The engine sees the bridge as one caller; the
// bridge names the client in _meta (rcp.MetaRCPGoCaller) on feedback,
// which an engine honours from the bridge's in-process connection or a
// trusted relay.
func mcpCaller(req *mcp.CallToolRequest) string {
	if req == nil {
		return "mcp"
	}
	if extra := req.GetExtra(); extra != nil {
		if extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
			return "token:" + extra.TokenInfo.UserID
		}
		if addr := extra.Header.Get(peerHeader); addr != "" {
			return "addr:" + addr
		}
	}
	return "mcp"
}

// sessionScope is the namespace of the client-chosen sessionIds of req's
// client: its caller narrowed to its MCP session (as rcp.Caller.Scope),
// so two sessions of one client never share a trajectory either.
func sessionScope(req *mcp.CallToolRequest) string {
	name := mcpCaller(req)
	if req != nil && req.Session != nil && req.Session.ID() != "" {
		sum := sha256.Sum256([]byte(req.Session.ID())) // the session id is a credential: not stored as such
		name += "/mcp-session:" + hex.EncodeToString(sum[:6])
	}
	return name
}

// scopedSessionID derives the sessionId the bridge sends from the MCP
// caller's session scope and the client's id, so two MCP clients using
// the same id never share a trajectory on the engine ("" stays "").
func scopedSessionID(req *mcp.CallToolRequest, id string) string {
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(sessionScope(req) + "\x00" + id))
	return "mcp-" + hex.EncodeToString(sum[:16])
}

// peerHeader carries the HTTP client's address from the HTTP face to the
// tools (the go-sdk hands a tool the request's header, not its remote
// address). withPeer sets it on every request, replacing whatever the
// client sent under that name.
const peerHeader = "X-Rcpgo-Mcp-Peer"

func withPeer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		r.Header.Set(peerHeader, host)
		next.ServeHTTP(w, r)
	})
}
