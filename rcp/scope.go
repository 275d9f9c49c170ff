package rcp

import (
	"context"
	"encoding/json"

	"github.com/rcpgo/rcpgo/rcp/internal/jsonrpc"
)

// logRank orders the §17.1 levels.
var logRank = map[string]int{LogDebug: 0, LogInfo: 1, LogNotice: 2, LogWarning: 3, LogError: 4}

func scopeOf(ctx context.Context) *requestScope {
	s, _ := ctx.Value(scopeKey{}).(*requestScope)
	return s
}

// RequestMeta returns the _meta object of the request being served by ctx
// (nil outside a request or when the request carried none). Handlers must
// treat it as read-only.
func RequestMeta(ctx context.Context) Meta {
	if s := scopeOf(ctx); s != nil {
		return s.meta
	}
	return nil
}

// RequestID returns the JSON text of the id of the request being served by
// ctx, or nil outside a request.
func RequestID(ctx context.Context) json.RawMessage {
	if s := scopeOf(ctx); s != nil {
		return s.id
	}
	return nil
}

// ProgressAllowed reports whether ReportProgress would send anything for the
// request served by ctx: the request carried _meta.progressToken, the server
// advertised streaming, and the transport can deliver progress frames.
func ProgressAllowed(ctx context.Context) bool {
	s := scopeOf(ctx)
	return s != nil && s.token != nil && s.notify != nil
}

// ReportProgress emits (the name NotifyProgress is the method constant) notifications/progress for the request served by ctx
// (§9). It is a no-op unless ProgressAllowed(ctx); the request's token is
// echoed verbatim whatever p.ProgressToken holds. Frames are advisory: the
// final response still follows. It reports a write failure only.
func ReportProgress(ctx context.Context, p ProgressParams) error {
	s := scopeOf(ctx)
	if s == nil || s.token == nil || s.notify == nil || ctx.Err() != nil {
		return nil
	}
	p.ProgressToken = s.token
	if p.Progress != nil {
		v := min(max(*p.Progress, 0), 1)
		if v != v { // NaN
			p.Progress = nil
		} else {
			p.Progress = &v
		}
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	s.notify(jsonrpc.Notification(NotifyProgress, b))
	return nil
}

// Log emits notifications/log for the request served by ctx (§17.1) when the
// server advertised "log" and the client opted in (the log capability at
// initialize, or _meta.logLevel on the request), honouring the minimum level
// from the request's or the session's _meta.logLevel. Otherwise it is a
// no-op. data may be nil.
func Log(ctx context.Context, level, msg string, data map[string]any) {
	if !LogEnabled(ctx, level) {
		return
	}
	s := scopeOf(ctx)
	b, err := json.Marshal(LogParams{Level: level, Message: msg, Data: data})
	if err != nil {
		return
	}
	s.notify(jsonrpc.Notification(NotifyLog, b))
}

// LogEnabled reports whether Log(ctx, level, …) would send anything, so a
// caller can skip building a message nobody receives.
func LogEnabled(ctx context.Context, level string) bool {
	s := scopeOf(ctx)
	if s == nil || s.logLevel == "" || s.notify == nil {
		return false
	}
	r, ok := logRank[level]
	return ok && r >= logRank[s.logLevel]
}

// Session describes the session a request belongs to.
type Session struct {
	// ID is the HTTP session token ("" on stdio and stateless HTTP).
	ID string
	// ProtocolVersion is the negotiated version.
	ProtocolVersion int
	// Client and ClientCapabilities come from initialize (nil / zero on
	// stateless HTTP).
	Client             *PeerInfo
	ClientCapabilities Capabilities
	// Capabilities is the session's frozen server capability set.
	Capabilities Capabilities
}

// SessionInfo returns the session of the request served by ctx; ok is false
// outside a request.
func SessionInfo(ctx context.Context) (Session, bool) {
	s := scopeOf(ctx)
	if s == nil {
		return Session{}, false
	}
	sess := s.sess
	desc := s.desc
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return Session{ID: sess.id, ProtocolVersion: sess.negotiated, Client: sess.client,
		ClientCapabilities: sess.clientCaps, Capabilities: desc.Capabilities}, true
}
