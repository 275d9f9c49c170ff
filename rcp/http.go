package rcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rcpgo/rcpgo/rcp/internal/jsonrpc"
)

// SessionMode selects how the HTTP transport keeps §13 session state.
type SessionMode int

const (
	// SessionStateless treats every request as implicitly initialized at the
	// advertised capabilities; initialize and info answer idempotently and
	// unadvertised methods are still -32003 (§5.2).
	SessionStateless SessionMode = iota
	// SessionStateful issues a token in initialize.result._meta.session;
	// requests carrying it in the RCP-Session header belong to that session
	// (its own lifecycle, log opt-in and capability set). Requests without a
	// token, other than initialize, are served statelessly; an unknown or
	// expired token is -32001.
	SessionStateful
	// SessionSingle keeps one implicit session shared by every caller, like
	// one stdio connection (what the reference servers and the conformance
	// harness expect). Meant for a local, single-client server; shutdown
	// resets it.
	SessionSingle
)

// ParseSessionMode reads a session mode as written in flags and config:
// "stateless", "stateful" or "single" (case-insensitive).
func ParseSessionMode(s string) (SessionMode, error) {
	switch strings.ToLower(s) {
	case "stateless":
		return SessionStateless, nil
	case "stateful":
		return SessionStateful, nil
	case "single":
		return SessionSingle, nil
	}
	return 0, fmt.Errorf("rcp: unknown HTTP session mode %q (want stateful, stateless or single)", s)
}

// HeaderSession carries the stateful HTTP session token.
const HeaderSession = "RCP-Session"

// HTTPOptions configure the HTTP transport. The zero value (or nil) is usable.
type HTTPOptions struct {
	// Base is the path prefix; requests are POST <Base>/<method> or, for
	// batches, POST <Base>. Default "/rcp".
	Base string
	// Sessions selects the session mode (default SessionStateless).
	Sessions SessionMode
	// SessionIdleTimeout evicts idle stateful sessions (default 30 min).
	SessionIdleTimeout time.Duration
	// MaxSessions caps live stateful sessions (default 10000) and
	// MaxSessionsPerClient those of one client IP (default 256). A new
	// session beyond either cap evicts the least recently used idle session
	// (of that client, for the per-client cap); when every candidate is
	// serving a request, initialize is shed with -32011 and a retryAfterMs
	// saying when one must be done (its request deadline).
	MaxSessions          int
	MaxSessionsPerClient int
	// MaxBodyBytes caps a request body (-32013, HTTP 413). Default: the
	// server's MaxFrameBytes.
	MaxBodyBytes int64
	// BearerTokens, when non-empty, require "Authorization: Bearer <token>"
	// with one of them before anything else (§5.2, §15.6): 401 and -32012.
	// Credentials are never read from params.
	BearerTokens []string
	// Authenticate, when set, identifies the credentials of a request
	// (after BearerTokens): the principal it names (Caller.Principal in
	// the handler's context), or false to refuse it (401 and -32012).
	Authenticate func(*http.Request) (principal string, ok bool)
	// Authorize, when set, is consulted (after Authenticate) and rejects a
	// caller by returning false.
	Authorize func(*http.Request) bool
	// RateLimit, when set, sheds load per client (429 + Retry-After, -32011).
	RateLimit *RateLimit
	// CORSOrigin is sent as Access-Control-Allow-Origin ("" disables CORS
	// headers; "*" allows any origin). OPTIONS preflight is always answered.
	// A CORSOrigin other than "*" is also a trusted origin.
	CORSOrigin string
	// AllowedHosts are host names accepted in the Host header besides IP
	// literals and localhost (DNS-rebinding protection); "*" accepts any.
	// A server reached under a DNS name must list it.
	AllowedHosts []string
	// TrustedOrigins are browser origins (scheme://host[:port]) whose
	// cross-site requests are accepted; "*" accepts any. Other cross-site
	// browser requests are refused with 403 (CSRF protection).
	TrustedOrigins []string
	// Limits bound the connections of ListenAndServeHTTP and ServeListener
	// (a server built by the caller applies them with NewHTTPServer).
	Limits HTTPLimits
}

// RateLimit is a per-client token bucket.
type RateLimit struct {
	// RequestsPerSecond is the sustained rate; Burst the bucket size
	// (default: max(1, RequestsPerSecond)).
	RequestsPerSecond float64
	Burst             int
	// Key identifies the client (default: the remote IP).
	Key func(*http.Request) string
}

// HTTPHandler serves RCP over HTTP (§5.2) with SSE streaming. Create it with
// Server.HTTPHandler; Close it to end its sessions.
type HTTPHandler struct {
	srv  *Server
	opts HTTPOptions
	ctx  context.Context
	stop context.CancelCauseFunc

	mu        sync.Mutex
	sessions  map[string]*session
	single    *session
	stateless *session
	lastSweep time.Time

	limiter *limiter
	guard   *requestGuard
}

// HTTPHandler returns an http.Handler serving s over HTTP. opts may be nil.
func (s *Server) HTTPHandler(opts *HTTPOptions) *HTTPHandler {
	h := &HTTPHandler{srv: s, sessions: map[string]*session{}}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.Base == "" {
		h.opts.Base = "/rcp"
	}
	h.opts.Base = "/" + strings.Trim(h.opts.Base, "/")
	if h.opts.SessionIdleTimeout <= 0 {
		h.opts.SessionIdleTimeout = 30 * time.Minute
	}
	if h.opts.MaxSessions <= 0 {
		h.opts.MaxSessions = 10000
	}
	if h.opts.MaxSessionsPerClient <= 0 {
		h.opts.MaxSessionsPerClient = 256
	}
	if h.opts.MaxBodyBytes <= 0 {
		h.opts.MaxBodyBytes = int64(s.opts.MaxFrameBytes)
	}
	if h.opts.RateLimit != nil {
		h.limiter = newLimiter(*h.opts.RateLimit)
	}
	g, err := newRequestGuard(&h.opts)
	if err != nil {
		// An origin that does not parse can never match a request: refuse
		// every cross-site request rather than none.
		s.log.Warn("rcp: ignoring the trusted origins", "err", err)
		o := h.opts
		o.TrustedOrigins, o.CORSOrigin = nil, ""
		g, _ = newRequestGuard(&o)
	}
	h.guard = g
	h.ctx, h.stop = context.WithCancelCause(context.Background())
	return h
}

// Close ends every session, cancelling their in-flight requests, and waits
// for the handlers to return.
func (h *HTTPHandler) Close() error {
	h.stop(errTransportClosed)
	h.mu.Lock()
	all := make([]*session, 0, len(h.sessions)+2)
	for _, s := range h.sessions {
		all = append(all, s)
	}
	if h.single != nil {
		all = append(all, h.single)
	}
	if h.stateless != nil {
		all = append(all, h.stateless)
	}
	h.sessions = map[string]*session{}
	h.mu.Unlock()
	for _, s := range all {
		s.closeSession()
		s.wait()
	}
	return nil
}

func (h *HTTPHandler) setCORS(w http.ResponseWriter) {
	if h.opts.CORSOrigin == "" {
		return
	}
	hd := w.Header()
	hd.Set("Access-Control-Allow-Origin", h.opts.CORSOrigin)
	if h.opts.CORSOrigin != "*" {
		hd.Add("Vary", "Origin")
	}
	hd.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	hd.Set("Access-Control-Allow-Headers", "Content-Type, Accept, Authorization, "+HeaderSession)
	hd.Set("Access-Control-Expose-Headers", HeaderSession+", Retry-After")
	hd.Set("Access-Control-Max-Age", "600")
}

// writeJSON writes a JSON body with status.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// ServeHTTP implements http.Handler.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.setCORS(w)
	pathMethod, ok := h.route(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method == http.MethodOptions {
		w.Header().Set("Allow", "POST, OPTIONS")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST, OPTIONS")
		http.Error(w, "RCP over HTTP uses POST", http.StatusMethodNotAllowed)
		return
	}
	if h.ctx.Err() != nil {
		// shutting down: no JSON-RPC layer left to answer (§5.2: 503)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "RCP server is shutting down", http.StatusServiceUnavailable)
		return
	}
	if status, reason := h.guard.check(r); status != 0 {
		writeJSON(w, status, errorFrame(nil, NewError(CodeInvalidRequest, "%s", reason)))
		return
	}
	// §5.2/§15.6: auth first — before initialize, before capability gating,
	// with one uniform answer.
	principal, ok := h.authorized(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="rcp"`)
		writeJSON(w, http.StatusUnauthorized, errorFrame(nil, NewError(CodeUnauthorized, "unauthorized")))
		return
	}
	if h.limiter != nil {
		if wait, ok := h.limiter.allow(r); !ok {
			ms := max(wait.Milliseconds(), 1)
			w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(wait.Seconds())), 10))
			writeJSON(w, http.StatusTooManyRequests, errorFrame(nil, &Error{Code: CodeRateLimited, Message: "rate limited",
				Data: &ErrorData{Retryable: ptr(true), RetryAfterMs: ptr(ms)}}))
			return
		}
	}
	body, err := readBody(r, h.opts.MaxBodyBytes)
	if errors.Is(err, ErrBodyBudget) {
		refuseBusy(w, r)
		return
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorFrame(nil, NewError(CodeParseError, "cannot read the request body")))
		return
	}
	if int64(len(body)) > h.opts.MaxBodyBytes {
		writeJSON(w, http.StatusRequestEntityTooLarge, errorFrame(nil, NewError(CodePayloadTooLarge, "request body exceeds %d bytes", h.opts.MaxBodyBytes)))
		return
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' && pathMethod != "" {
		writeJSON(w, http.StatusBadRequest, errorFrame(nil, NewError(CodeInvalidRequest, "batches are posted to %s, not to a method path", h.opts.Base)))
		return
	}
	if len(trimmed) == 0 {
		writeJSON(w, http.StatusBadRequest, errorFrame(nil, NewError(CodeParseError, "empty request body")))
		return
	}

	sess, serr := h.sessionFor(r, trimmed)
	if serr != nil {
		writeJSON(w, http.StatusOK, serr)
		return
	}

	wantSSE := strings.Contains(r.Header.Get("Accept"), "text/event-stream") &&
		trimmed[0] == '{' && sess.description().Capabilities.Streaming != nil
	if wantSSE {
		h.serveSSE(w, r, sess, trimmed, pathMethod, callerFor(r, principal))
		return
	}

	fo := frameOpts{compactOK: true, reqCtx: r.Context(), method: pathMethod, caller: callerFor(r, principal)}
	out := <-h.handleWithSession(sess, trimmed, fo)
	if out != nil && isCompact(trimmed) {
		// §5.3: a compact {method, params} request gets a compact answer,
		// {result} or {error} (it carried no id to echo).
		out = append([]byte("{"), bytes.TrimPrefix(out, []byte(`{"jsonrpc":"2.0","id":null,`))...)
		writeJSON(w, http.StatusOK, out)
		return
	}
	if out == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, statusFor(out), out)
}

// handleWithSession runs one frame and returns the channel its one answer
// (nil: nothing to write) arrives on.
func (h *HTTPHandler) handleWithSession(sess *session, body []byte, fo frameOpts) <-chan []byte {
	result := make(chan []byte, 1)
	if stop := sess.handleFrame(body, func(b []byte) error { result <- b; return nil }, fo); stop {
		h.endSession(sess)
	}
	if sess.kind == sessionHTTP && sess.id != "" {
		sess.mu.Lock()
		failed := sess.state == stateNew
		sess.mu.Unlock()
		if failed { // a failed initialize keeps no session (§13)
			h.endSession(sess)
		}
	}
	return result
}

// statusFor maps an answer to its HTTP status (§5.2): 200 for JSON-RPC
// responses, 400 when the body was not JSON or not a JSON-RPC request (a
// single error answer with id null).
func statusFor(out []byte) int {
	if bytes.HasPrefix(out, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700`)) ||
		bytes.HasPrefix(out, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600`)) {
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// serveSSE answers one request as an event stream: progress (and log)
// frames, then exactly one final frame (§5.2). The handler never blocks on
// the client: frames go through a bounded queue (sseQueue, overflow
// dropped) to a writer that gives each frame SSEWriteTimeout; a client that
// stops reading loses the stream and its request is cancelled.
func (h *HTTPHandler) serveSSE(w http.ResponseWriter, r *http.Request, sess *session, body []byte, pathMethod string, caller Caller) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sw := &sseWriter{w: w, rc: http.NewResponseController(w), cancel: cancel}
	frames := make(chan []byte, sseQueue)
	var mu sync.Mutex
	closed := false
	notify := func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		select {
		case frames <- b:
		default: // the client reads slower than progress arrives: drop
		}
	}
	written := make(chan struct{})
	go func() {
		defer close(written)
		for b := range frames {
			sw.event(b)
		}
	}()
	fo := frameOpts{compactOK: true, reqCtx: ctx, method: pathMethod, notify: notify, caller: caller}
	out := <-h.handleWithSession(sess, body, fo)
	mu.Lock()
	closed = true
	close(frames)
	mu.Unlock()
	<-written
	if out == nil {
		if !sw.started {
			w.WriteHeader(http.StatusNoContent)
		}
		return
	}
	if !sw.started && statusFor(out) != http.StatusOK {
		writeJSON(w, statusFor(out), out)
		return
	}
	sw.event(out)
}

// sseWriter writes SSE frames with a write deadline per frame.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	cancel  context.CancelFunc
	started bool
	failed  bool
}

func (s *sseWriter) event(b []byte) {
	if s.failed {
		return
	}
	if !s.started {
		s.started = true
		hd := s.w.Header()
		hd.Set("Content-Type", "text/event-stream")
		hd.Set("Cache-Control", "no-cache")
		hd.Set("X-Accel-Buffering", "no")
		s.w.WriteHeader(http.StatusOK)
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(SSEWriteTimeout))
	frame := make([]byte, 0, len(b)+8)
	frame = append(append(append(frame, "data: "...), b...), "\n\n"...)
	_, err := s.w.Write(frame)
	if err == nil {
		err = s.rc.Flush()
	}
	if err != nil {
		s.failed = true
		s.cancel() // nobody is listening: stop the work
	}
}

func (h *HTTPHandler) route(path string) (method string, ok bool) {
	base := h.opts.Base
	if path == base || path == base+"/" {
		return "", true
	}
	if !strings.HasPrefix(path, base+"/") {
		return "", false
	}
	return strings.TrimPrefix(path, base+"/"), true
}

// authorized applies BearerTokens, Authenticate and Authorize, and
// returns the principal the request is served as.
func (h *HTTPHandler) authorized(r *http.Request) (principal string, ok bool) {
	if len(h.opts.BearerTokens) > 0 {
		tok, found := BearerToken(r.Header.Get("Authorization"))
		if !found || !TokenMatches(tok, h.opts.BearerTokens) {
			return "", false
		}
		principal = PrincipalBearer
	}
	if h.opts.Authenticate != nil {
		if principal, ok = h.opts.Authenticate(r); !ok {
			return "", false
		}
	}
	if h.opts.Authorize != nil && !h.opts.Authorize(r) {
		return "", false
	}
	return principal, true
}

// PrincipalBearer is the principal of a request authenticated by one of
// HTTPOptions.BearerTokens.
const PrincipalBearer = "bearer"

// sessionFor picks the session of a request. A non-nil frame is an answer to
// write instead (an unknown session token).
func (h *HTTPHandler) sessionFor(r *http.Request, body []byte) (*session, []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch h.opts.Sessions {
	case SessionStateless:
		if h.stateless == nil {
			h.stateless = h.srv.newSession(h.ctx, sessionStateless)
		}
		return h.stateless, nil
	case SessionSingle:
		if h.single == nil {
			h.single = h.srv.newSession(h.ctx, sessionHTTP)
		}
		return h.single, nil
	}
	h.sweepLocked()
	if tok := r.Header.Get(HeaderSession); tok != "" {
		sess, ok := h.sessions[tok]
		if !ok {
			return nil, errorFrame(idOf(body), NewError(CodeNotInitialized, "unknown or expired %s; call initialize again", HeaderSession))
		}
		sess.lastUsed = time.Now()
		return sess, nil
	}
	// No token and not an initialize: the request is served statelessly,
	// implicitly initialized at the advertised capabilities (§5.2), so
	// clients that never keep a session (curl, the reference SDKs) still
	// work while session-aware clients get their own lifecycle.
	if !isInitialize(body) {
		if h.stateless == nil {
			h.stateless = h.srv.newSession(h.ctx, sessionStateless)
		}
		return h.stateless, nil
	}
	// A tokenless initialize opens a new session, kept when it succeeds.
	peer := remoteIP(r)
	if wait, ok := h.makeRoomLocked(peer); !ok {
		return nil, errorFrame(idOf(body), &Error{Code: CodeRateLimited, Message: "too many sessions, all of them busy",
			Data: &ErrorData{Retryable: ptr(true), RetryAfterMs: ptr(max(wait.Milliseconds(), 1))}})
	}
	sess := h.srv.newSession(h.ctx, sessionHTTP)
	sess.id, sess.peer = newToken(), peer
	h.sessions[sess.id] = sess
	return sess, nil
}

// makeRoomLocked evicts the least recently used idle session when a new
// one from peer would exceed MaxSessionsPerClient or MaxSessions. When no
// session can be evicted it reports how long until one can be: the
// request deadline of the busy session used longest ago.
func (h *HTTPHandler) makeRoomLocked(peer string) (time.Duration, bool) {
	mine := 0
	for _, s := range h.sessions {
		if s.peer == peer {
			mine++
		}
	}
	var scope func(*session) bool
	switch {
	case mine >= h.opts.MaxSessionsPerClient:
		scope = func(s *session) bool { return s.peer == peer }
	case len(h.sessions) >= h.opts.MaxSessions:
		scope = func(*session) bool { return true }
	default:
		return 0, true
	}
	var victim *session
	var busiest time.Time
	for _, s := range h.sessions {
		if !scope(s) {
			continue
		}
		s.mu.Lock()
		idle, used := s.running == 0, s.lastUsed
		s.mu.Unlock()
		if idle && (victim == nil || used.Before(victim.lastUsed)) {
			victim = s
		}
		if !idle && (busiest.IsZero() || used.Before(busiest)) {
			busiest = used
		}
	}
	if victim != nil {
		delete(h.sessions, victim.id)
		victim.closeSession()
		return 0, true
	}
	timeout := h.srv.opts.RequestTimeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	return max(time.Until(busiest.Add(timeout)), time.Millisecond), false
}

// remoteIP identifies the client of r for the per-client session cap.
func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// endSession forgets a session after shutdown.
func (h *HTTPHandler) endSession(sess *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case sess == h.single:
		h.single = nil // the next caller starts afresh
	case sess.id != "":
		delete(h.sessions, sess.id)
	}
}

func (h *HTTPHandler) sweepLocked() {
	now := time.Now()
	if now.Sub(h.lastSweep) < time.Second {
		return
	}
	h.lastSweep = now
	for id, s := range h.sessions {
		s.mu.Lock()
		idle := s.running == 0 && now.Sub(s.lastUsed) > h.opts.SessionIdleTimeout
		s.mu.Unlock()
		if idle {
			delete(h.sessions, id)
		}
	}
}

func isCompact(body []byte) bool {
	if bytes.Contains(body, []byte(`"jsonrpc"`)) {
		return false
	}
	f := jsonrpc.Decode(body, jsonrpc.Options{})
	return !f.Batch && len(f.Messages) == 1 && f.Messages[0].Compact
}

func isInitialize(body []byte) bool {
	f := jsonrpc.Decode(body, jsonrpc.Options{})
	return !f.Batch && len(f.Messages) == 1 && f.Messages[0].Method == MethodInitialize
}

func idOf(body []byte) json.RawMessage {
	f := jsonrpc.Decode(body, jsonrpc.Options{})
	if !f.Batch && len(f.Messages) == 1 {
		return f.Messages[0].ID
	}
	return nil
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// limiter is a per-key token bucket.
type limiter struct {
	rl      RateLimit
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(rl RateLimit) *limiter {
	if rl.Burst <= 0 {
		rl.Burst = max(1, int(rl.RequestsPerSecond))
	}
	if rl.Key == nil {
		rl.Key = func(r *http.Request) string {
			host, _, err := net.SplitHostPort(r.RemoteAddr)
			if err != nil {
				return r.RemoteAddr
			}
			return host
		}
	}
	return &limiter{rl: rl, buckets: map[string]*bucket{}}
}

// allow takes a token for r's client, or reports how long to wait for one.
func (l *limiter) allow(r *http.Request) (time.Duration, bool) {
	key := l.rl.Key(r)
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) > 100000 {
			l.buckets = map[string]*bucket{} // bound memory under key floods
		}
		b = &bucket{tokens: float64(l.rl.Burst), last: now}
		l.buckets[key] = b
	}
	b.tokens = math.Min(float64(l.rl.Burst), b.tokens+now.Sub(b.last).Seconds()*l.rl.RequestsPerSecond)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	if l.rl.RequestsPerSecond <= 0 {
		return time.Minute, false
	}
	return time.Duration((1 - b.tokens) / l.rl.RequestsPerSecond * float64(time.Second)), false
}

// ListenAndServeHTTP serves s over HTTP on addr until ctx ends, then shuts
// down gracefully: it stops accepting, lets in-flight requests finish (up to
// 10 s) and closes the sessions. Use signal.NotifyContext for SIGINT/SIGTERM.
func (s *Server) ListenAndServeHTTP(ctx context.Context, addr string, opts *HTTPOptions) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("rcp: listen %s: %w", addr, err)
	}
	return s.ServeListener(ctx, ln, opts)
}

// ServeListener is ListenAndServeHTTP on an existing listener.
func (s *Server) ServeListener(ctx context.Context, ln net.Listener, opts *HTTPOptions) error {
	h := s.HTTPHandler(opts)
	lim := HTTPLimits{}
	if opts != nil {
		lim = opts.Limits
	}
	if lim.WriteTimeout == 0 && s.opts.RequestTimeout > 0 {
		lim.WriteTimeout = s.opts.RequestTimeout + 30*time.Second
	}
	hs := NewHTTPServer(h, lim)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		_ = h.Close()
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("rcp: serving HTTP: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	_ = h.Close()
	<-errc
	if err != nil {
		return fmt.Errorf("rcp: HTTP shutdown: %w", err)
	}
	return nil
}
