// Package rcp is a Go SDK for the Retrieval Context Protocol (RCP/1):
// JSON-RPC 2.0 between retrieval clients and retrieval engines.
//
// # Wire types
//
// Every params and result shape of spec §7 has a type (RetrieveParams, Hit,
// EmbedResult, …); Capabilities is typed per key and round-trips unknown and
// x-vendor keys losslessly; Error carries the §12 code and error.data.
// DecodeParams applies the §4.6 data rules (53-bit integers, strict
// booleans, null as absent) and maps problems to -32602 naming the field.
//
// # Serving
//
// A Handler (Describe + Call; Router and Handle build one from functions)
// is served by a Server, which owns framing, the §13 lifecycle, gating
// (-32001/-32003/-32004), batching (§11), concurrency (§4.7), cancellation
// (§7.14), deadlines (§13.1) and shutdown:
//
//	srv := rcp.NewServer(handler, nil)
//	srv.ServeStdio(ctx, os.Stdin, os.Stdout)          // §5.1 NDJSON
//	srv.ListenAndServeHTTP(ctx, "127.0.0.1:8080", nil) // §5.2 HTTP + SSE
//	http.Handle("/rcp/", srv.HTTPHandler(opts))        // or mount it yourself
//
// Handlers see their request through the context: RequestMeta, RequestID,
// SessionInfo, ReportProgress (§9; a no-op unless the request carried
// _meta.progressToken and streaming is advertised) and Log (§17.1; a no-op
// unless the client opted in). Returning an *Error (or wrapping one) picks
// the code the peer sees; any other error becomes -32603 without its text.
//
// # Calling
//
// ConnectStdio (spawn a server), ConnectHTTP and ConnectInProcess return a
// Client that has completed the handshake. Its typed methods gate on the
// session's capabilities before any I/O (-32003, -32005 unless strict:false)
// and pre-clamp to advertised bounds; calls are pipelined and correlated by
// id; cancelling a call's context sends notifications/cancel; WithProgress
// routes a call's progress frames; RetryPolicy enables §12.2 retries.
// NewProxy wraps a Client as a Handler so a remote engine can be served or
// federated as if it were local.
package rcp
