package rcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Code is a JSON-RPC / RCP error code (spec §12).
type Code int

// Error codes of spec §12. The -32000..-32099 block is reserved for RCP.
const (
	CodeParseError         Code = -32700
	CodeInvalidRequest     Code = -32600
	CodeMethodNotFound     Code = -32601 // reserved; RCP prefers CodeUnknownMethod
	CodeInvalidParams      Code = -32602
	CodeInternalError      Code = -32603
	CodeNotInitialized     Code = -32001
	CodeVersionMismatch    Code = -32002
	CodeCapabilityMissing  Code = -32003
	CodeUnknownMethod      Code = -32004
	CodeOptionUnsupported  Code = -32005
	CodeCancelled          Code = -32006
	CodeBackendUnavailable Code = -32010
	CodeRateLimited        Code = -32011
	CodeUnauthorized       Code = -32012
	CodePayloadTooLarge    Code = -32013
	CodeTimeout            Code = -32014
	CodeNotFound           Code = -32015
	CodeConflict           Code = -32016
)

var codeSymbols = map[Code]string{
	CodeParseError: "ParseError", CodeInvalidRequest: "InvalidRequest", CodeMethodNotFound: "MethodNotFound",
	CodeInvalidParams: "InvalidParams", CodeInternalError: "InternalError", CodeNotInitialized: "NotInitialized",
	CodeVersionMismatch: "VersionMismatch", CodeCapabilityMissing: "CapabilityMissing", CodeUnknownMethod: "UnknownMethod",
	CodeOptionUnsupported: "OptionUnsupported", CodeCancelled: "Cancelled", CodeBackendUnavailable: "BackendUnavailable",
	CodeRateLimited: "RateLimited", CodeUnauthorized: "Unauthorized", CodePayloadTooLarge: "PayloadTooLarge",
	CodeTimeout: "Timeout", CodeNotFound: "NotFound", CodeConflict: "Conflict",
}

// String returns the spec's symbol for c ("InvalidParams"), or "Code(n)" for an
// unrecognised code.
func (c Code) String() string {
	if s, ok := codeSymbols[c]; ok {
		return s
	}
	return fmt.Sprintf("Code(%d)", int(c))
}

// Retryable reports the §12.2 default: true for -32010, -32011 and -32014.
// An explicit error.data.retryable overrides it (see Error.Retryable).
func (c Code) Retryable() bool {
	return c == CodeBackendUnavailable || c == CodeRateLimited || c == CodeTimeout
}

// ErrorData is the conventional error.data object of §12.1. Unknown keys are
// kept in Extra so a proxy forwards them unchanged.
type ErrorData struct {
	Field        string `json:"field,omitempty"`
	Option       string `json:"option,omitempty"`
	Retryable    *bool  `json:"retryable,omitempty"`
	RetryAfterMs *int64 `json:"retryAfterMs,omitempty"`
	Detail       string `json:"detail,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON merges Extra into the object.
func (d ErrorData) MarshalJSON() ([]byte, error) {
	type plain ErrorData
	return marshalWithExtra(plain(d), d.Extra)
}

// UnmarshalJSON keeps unknown keys in Extra.
func (d *ErrorData) UnmarshalJSON(b []byte) error {
	type plain ErrorData
	var p plain
	extra, err := unmarshalWithExtra(b, &p)
	if err != nil {
		return err
	}
	*d = ErrorData(p)
	d.Extra = extra
	return nil
}

// Error is an RCP error: the JSON-RPC error object. Handlers return it (or
// wrap it with %w) to choose the code the peer sees; any other error becomes
// -32603 with no internal detail leaked.
type Error struct {
	Code    Code       `json:"code"`
	Message string     `json:"message"`
	Data    *ErrorData `json:"data,omitempty"`
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("rcp: %s (%d): %s", e.Code, int(e.Code), e.Message)
	if e.Data != nil {
		if e.Data.Field != "" {
			msg += " [field " + e.Data.Field + "]"
		}
		if e.Data.Option != "" {
			msg += " [option " + e.Data.Option + "]"
		}
		if e.Data.Detail != "" && !strings.Contains(e.Message, e.Data.Detail) {
			msg += ": " + e.Data.Detail
		}
	}
	return msg
}

// Retryable applies error.data.retryable when present, else the code default.
func (e *Error) Retryable() bool {
	if e.Data != nil && e.Data.Retryable != nil {
		return *e.Data.Retryable
	}
	return e.Code.Retryable()
}

// NewError returns an Error with the given code and a formatted message.
func NewError(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidParams is -32602 naming the offending params path in error.data.field.
func InvalidParams(field, format string, args ...any) *Error {
	detail := fmt.Sprintf(format, args...)
	return &Error{Code: CodeInvalidParams, Message: "invalid params: " + detail,
		Data: &ErrorData{Field: field, Detail: detail}}
}

// OptionUnsupported is -32005 naming the unadvertised option value in error.data.option.
func OptionUnsupported(option, format string, args ...any) *Error {
	detail := fmt.Sprintf(format, args...)
	return &Error{Code: CodeOptionUnsupported, Message: "option unsupported: " + detail,
		Data: &ErrorData{Option: option, Detail: detail}}
}

// DataReinitialize is the error.data key of the capabilities-changed
// error (see CapabilitiesChanged).
const DataReinitialize = "x-rcpgo/reinitialize"

// CapabilitiesChanged is the error a server answers when it can no longer
// serve a capability the session negotiated (§13.2: the set is frozen for
// the session, so the server fails the call instead of narrowing it) but a
// new session would be offered a working one — e.g. rcpd's dense index of
// the session's embed.identity was replaced by a refit and is no longer
// retained. It is -32010 with error.data.retryable true and
// "x-rcpgo/reinitialize": true; detail says what changed. A Client opens a
// new session and retries once (ClientOptions.NoReinitialize).
func CapabilitiesChanged(format string, args ...any) *Error {
	detail := fmt.Sprintf(format, args...)
	yes := true
	return &Error{Code: CodeBackendUnavailable, Message: "the capabilities this session negotiated changed; re-initialize",
		Data: &ErrorData{Retryable: &yes, Detail: detail + " (open a new session: initialize on a new connection or HTTP session, then retry)",
			Extra: map[string]json.RawMessage{DataReinitialize: json.RawMessage("true")}}}
}

// CapabilitiesChanged reports whether e is the capabilities-changed error
// (see the function CapabilitiesChanged).
func (e *Error) CapabilitiesChanged() bool {
	if e == nil || e.Code != CodeBackendUnavailable || e.Data == nil {
		return false
	}
	return string(e.Data.Extra[DataReinitialize]) == "true"
}

// AsError extracts an *Error from err's chain. Errors that carry no RCP code
// are reported as -32603 without their text (it may hold internals); ok is
// false in that case so callers can log the original.
func AsError(err error) (e *Error, ok bool) {
	if err == nil {
		return nil, true
	}
	if errors.As(err, &e) {
		return e, true
	}
	return &Error{Code: CodeInternalError, Message: "internal error"}, false
}

// CodeOf returns the RCP code carried by err, or CodeInternalError.
func CodeOf(err error) Code {
	e, _ := AsError(err)
	if e == nil {
		return 0
	}
	return e.Code
}
