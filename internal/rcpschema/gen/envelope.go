package main

import (
	"slices"

	"github.com/rcpgo/rcpgo/rcp"
)

// envelopes adds the JSON-RPC frames (§4) around the method types: the
// request, notification, success and error frames, Message (any one of
// them), ResultFor (a result checked against its method's type) and the
// three notifications of §4.5.
func (g *gen) envelopes() {
	var names []any
	for _, m := range methods {
		names = append(names, m.name)
	}
	g.defs["MethodName"] = map[string]any{"anyOf": []any{
		enum(names),
		map[string]any{"type": "string", "pattern": "^x-[a-z0-9-]+/"}, // vendor methods (§6.2)
	}}
	g.defs["RequestId"] = map[string]any{"type": []any{"string", "number"}}
	var codes []any
	for _, c := range []rcp.Code{rcp.CodeParseError, rcp.CodeInvalidRequest, rcp.CodeMethodNotFound, rcp.CodeInvalidParams,
		rcp.CodeInternalError, rcp.CodeNotInitialized, rcp.CodeVersionMismatch, rcp.CodeCapabilityMissing, rcp.CodeUnknownMethod,
		rcp.CodeOptionUnsupported, rcp.CodeCancelled, rcp.CodeBackendUnavailable, rcp.CodeRateLimited, rcp.CodeUnauthorized,
		rcp.CodePayloadTooLarge, rcp.CodeTimeout, rcp.CodeNotFound, rcp.CodeConflict} {
		codes = append(codes, int(c))
	}
	slices.SortFunc(codes, func(a, b any) int { return a.(int) - b.(int) })
	// §12: a receiver treats an unknown code as a generic failure, so any
	// integer is a well-formed code; the enumeration documents the known ones.
	g.defs["ErrorCode"] = map[string]any{"type": "integer", "anyOf": []any{enum(codes), map[string]any{"type": "integer"}}}

	jsonrpc := map[string]any{"const": "2.0"}
	var requestIf, resultIf []any
	for _, m := range methods {
		isMethod := map[string]any{"properties": map[string]any{"method": map[string]any{"const": m.name}}, "required": []any{"method"}}
		if m.params != nil {
			then := map[string]any{"properties": map[string]any{"params": g.of(m.params)}}
			if m.paramsRequired {
				then["required"] = []any{"params"}
			}
			requestIf = append(requestIf, map[string]any{"if": isMethod, "then": then})
		}
		if m.result != nil {
			resultIf = append(resultIf, map[string]any{"if": isMethod,
				"then": map[string]any{"properties": map[string]any{"result": g.of(m.result)}}})
		}
	}
	object := map[string]any{"type": "object"}
	g.defs["JsonRpcRequest"] = map[string]any{
		"type":       "object",
		"required":   []any{"jsonrpc", "id", "method"},
		"properties": map[string]any{"jsonrpc": jsonrpc, "id": ref("RequestId"), "method": ref("MethodName"), "params": object},
		"allOf":      requestIf,
	}
	g.defs["JsonRpcNotification"] = map[string]any{
		"type":       "object",
		"required":   []any{"jsonrpc", "method"},
		"not":        map[string]any{"required": []any{"id"}},
		"properties": map[string]any{"jsonrpc": jsonrpc, "method": map[string]any{"type": "string"}, "params": object},
		"allOf": []any{
			notification(rcp.NotifyProgress, "ProgressNotification"),
			notification(rcp.NotifyCancel, "CancelNotification"),
			notification(rcp.NotifyLog, "LogNotification"),
		},
	}
	for def, n := range map[string]struct {
		method string
		params map[string]any
	}{
		"ProgressNotification": {rcp.NotifyProgress, g.of(typeOf[rcp.ProgressParams]())},
		"CancelNotification":   {rcp.NotifyCancel, g.of(typeOf[rcp.CancelParams]())},
		"LogNotification":      {rcp.NotifyLog, g.of(typeOf[rcp.LogParams]())},
	} {
		g.defs[def] = map[string]any{
			"type":       "object",
			"required":   []any{"jsonrpc", "method", "params"},
			"properties": map[string]any{"jsonrpc": jsonrpc, "method": map[string]any{"const": n.method}, "params": n.params},
		}
	}
	g.defs["JsonRpcSuccess"] = map[string]any{
		"type":       "object",
		"required":   []any{"jsonrpc", "id", "result"},
		"not":        map[string]any{"required": []any{"error"}},
		"properties": map[string]any{"jsonrpc": jsonrpc, "id": ref("RequestId"), "result": object},
	}
	g.defs["JsonRpcError"] = map[string]any{
		"type":     "object",
		"required": []any{"jsonrpc", "id", "error"},
		"not":      map[string]any{"required": []any{"result"}},
		"properties": map[string]any{"jsonrpc": jsonrpc,
			// null only when the request could not be parsed far enough to read its id (§4.3)
			"id": map[string]any{"type": []any{"string", "number", "null"}},
			"error": map[string]any{"type": "object", "required": []any{"code", "message"}, "properties": map[string]any{
				"code": ref("ErrorCode"), "message": map[string]any{"type": "string"}, "data": g.of(typeOf[rcp.ErrorData]()),
			}},
		},
	}
	g.defs["Message"] = map[string]any{"oneOf": []any{ref("JsonRpcRequest"), ref("JsonRpcNotification"), ref("JsonRpcSuccess"), ref("JsonRpcError")}}
	g.defs["ResultFor"] = map[string]any{
		"description": "A result checked against its method: validate {method, result} once the response is paired with its request.",
		"type":        "object",
		"required":    []any{"method", "result"},
		"properties":  map[string]any{"method": ref("MethodName"), "result": object},
		"allOf":       resultIf,
	}
}

func notification(method, def string) map[string]any {
	return map[string]any{
		"if":   map[string]any{"properties": map[string]any{"method": map[string]any{"const": method}}, "required": []any{"method"}},
		"then": ref(def),
	}
}
