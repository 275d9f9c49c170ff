package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/rcpgo/rcpgo/rcp"
)

// invalidArg is -32602 naming a prompt argument in error.data.field.
func invalidArg(name, format string, args ...any) error {
	return rcp.InvalidParams("arguments."+name, format, args...)
}

// wireError gives every error that leaves a handler a JSON-RPC code: the
// go-sdk sends code 0 for errors that are not *jsonrpc.Error. What the
// caller got wrong (RCP -32602, -32005, -32003, -32013, -32015) is -32602;
// everything else — engine timeouts, unavailable backends, internal
// errors — is -32603. error.data keeps the RCP code and symbol and the
// RCP data (field, option, retryable, detail), so nothing is lost.
func wireError(err error) error {
	if err == nil {
		return nil
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		if we.Code == 0 {
			return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error(), Data: we.Data}
		}
		if we != err {
			return &jsonrpc.Error{Code: we.Code, Message: err.Error(), Data: we.Data}
		}
		return err
	}
	var re *rcp.Error
	if !errors.As(err, &re) {
		code := int64(jsonrpc.CodeInternalError)
		if errors.Is(err, context.DeadlineExceeded) {
			return &jsonrpc.Error{Code: code, Message: err.Error(), Data: json.RawMessage(`{"retryable":true,"detail":"deadline exceeded"}`)}
		}
		return &jsonrpc.Error{Code: code, Message: err.Error()}
	}
	code := int64(jsonrpc.CodeInternalError)
	switch re.Code {
	case rcp.CodeInvalidParams, rcp.CodeOptionUnsupported, rcp.CodeCapabilityMissing, rcp.CodePayloadTooLarge, rcp.CodeNotFound:
		code = jsonrpc.CodeInvalidParams
	case rcp.CodeUnauthorized: // the engine refused the face's token (--connect)
		code = int64(rcp.CodeUnauthorized)
	}
	data := map[string]any{"rcpCode": int(re.Code), "rcpError": re.Code.String()}
	if d := re.Data; d != nil {
		if d.Field != "" {
			data["field"] = d.Field
		}
		if d.Option != "" {
			data["option"] = d.Option
		}
		if d.Detail != "" {
			data["detail"] = d.Detail
		}
		if sc, ok := d.Extra["scope"]; ok {
			data["scope"] = sc
		}
	}
	data["retryable"] = re.Retryable()
	raw, mErr := json.Marshal(data)
	if mErr != nil {
		return &jsonrpc.Error{Code: code, Message: err.Error()}
	}
	return &jsonrpc.Error{Code: code, Message: fmt.Sprint(err), Data: raw}
}
