package mcpbridge

import (
	"encoding/json"
	"fmt"
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
