package engine

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/rcpgo/rcpgo/engine/internal/agentic"
	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/derive"
	"github.com/rcpgo/rcpgo/engine/internal/fault"
	"github.com/rcpgo/rcpgo/engine/internal/integrity"
	"github.com/rcpgo/rcpgo/engine/internal/models"
	"github.com/rcpgo/rcpgo/engine/internal/readiness"
	"github.com/rcpgo/rcpgo/engine/internal/retrieval"
	"github.com/rcpgo/rcpgo/engine/internal/writer"
	"github.com/rcpgo/rcpgo/engine/memory"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp"
)

// The engine's one error table. A layer reports a failure the client
// must hear about as its sentinel error, usually inside a fault.Error
// that says what in the request caused it and what to do (error.data);
// Call translates it here, once, into the RCP code, message and
// retryability the spec gives it. Request validation is not translated:
// it is answered where the request is read, with rcp.InvalidParams
// (-32602, the field) and rcp.OptionUnsupported (-32005, the option).
// Anything else is logged and answered -32603 without its internals.
var errorTable = []struct {
	err       error
	code      rcp.Code
	message   string
	retryable *bool
	field     string // when the occurrence names none
	detail    string // when the occurrence gives none
	log       bool   // the server's own failure: logged like any unknown one
	// retryAfterMs, when set, is error.data.retryAfterMs.
	retryAfterMs int64
}{
	{err: integrity.ErrDamaged, code: rcp.CodeBackendUnavailable, message: "storage damaged", retryable: &no},
	{err: integrity.ErrUnavailable, code: rcp.CodeBackendUnavailable, message: "storage unavailable", retryable: &no},
	{err: writer.ErrReadOnly, code: rcp.CodeCapabilityMissing, message: "the index is read-only"},
	{err: writer.ErrTooLarge, code: rcp.CodePayloadTooLarge, message: "too many documents"},
	{err: writer.ErrConflict, code: rcp.CodeConflict, message: "chunk id taken"},
	{err: catalog.ErrTooLarge, code: rcp.CodePayloadTooLarge, message: "too many ids"},
	{err: models.ErrTooLarge, code: rcp.CodePayloadTooLarge, message: "too many inputs"},
	{err: agentic.ErrModelFailed, code: rcp.CodeBackendUnavailable, message: "the chat model failed", retryable: &yes},
	{err: retrieval.ErrCursorExpired, code: rcp.CodeNotFound, message: "cursor expired"},
	{err: retrieval.ErrVersionGone, code: rcp.CodeBackendUnavailable, message: "indexVersion cannot be served", retryable: &no},
	{err: search.ErrTooManyTerms, code: rcp.CodeInvalidParams, field: "query",
		message: "invalid params: " + tooManyTerms, detail: tooManyTerms},
	{err: derive.ErrRebuilding, code: rcp.CodeBackendUnavailable, message: "the dense index is being rebuilt", retryable: &yes,
		retryAfterMs: 5000},
	{err: readiness.ErrBuilding, code: rcp.CodeBackendUnavailable, message: "not built yet", retryable: &yes, retryAfterMs: 1000},
	{err: readiness.ErrWaiting, code: rcp.CodeBackendUnavailable, message: "cannot be built yet", retryable: &no},
	{err: derive.ErrDamaged, code: rcp.CodeBackendUnavailable, message: "the dense index is damaged on disk and is being rebuilt", retryable: &no},
	{err: search.ErrUnavailable, code: rcp.CodeBackendUnavailable, message: "the backend is unavailable", retryable: &yes},
	{err: memory.ErrNotFound, code: rcp.CodeNotFound, message: "unknown memoryId"},
	{err: memory.ErrTooLarge, code: rcp.CodePayloadTooLarge, message: "memory too large"},
	{err: syscall.ENOSPC, code: rcp.CodeBackendUnavailable, message: "no space left on device", retryable: &yes, log: true,
		detail: "the file system of the data directory is full: nothing was stored; free space and retry"},
}

var yes, no = true, false

var tooManyTerms = fmt.Sprintf("the query has more than %d distinct terms", retrieval.MaxQueryTerms)

// rpcError is err as the client sees it (see errorTable).
func (e *Engine) rpcError(ctx context.Context, method string, err error) error {
	if _, ok := rcp.AsError(err); ok || ctx.Err() != nil {
		return err
	}
	var f *fault.Error
	errors.As(err, &f)
	for _, row := range errorTable {
		if !errors.Is(err, row.err) {
			continue
		}
		if row.log && f == nil {
			e.log.Error("engine: request failed", "method", method, "err", err)
		}
		re := &rcp.Error{Code: row.code, Message: row.message, Data: &rcp.ErrorData{Field: row.field, Retryable: row.retryable, Detail: row.detail}}
		if row.retryAfterMs > 0 {
			after := row.retryAfterMs
			re.Data.RetryAfterMs = &after
		}
		if f != nil {
			if f.Message != "" {
				re.Message = f.Message
			}
			if f.Field != "" {
				re.Data.Field = f.Field
			}
			re.Data.Option = f.Option
			if f.Detail != "" {
				re.Data.Detail = f.Detail
			}
			if f.RetryAfterMs > 0 {
				after := f.RetryAfterMs
				re.Data.RetryAfterMs = &after
			}
		}
		return re
	}
	e.log.Error("engine: request failed", "method", method, "err", err)
	return err
}
