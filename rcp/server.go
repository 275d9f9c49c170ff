package rcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rcpgo/rcpgo/rcp/internal/jsonrpc"
)

// Defaults of ServerOptions.
const (
	DefaultMaxFrameBytes  = jsonrpc.DefaultMaxFrame // 16 MiB (§5.1)
	DefaultMaxBatch       = 1024
	DefaultMaxInFlight    = 1024
	DefaultRequestTimeout = 60 * time.Second
	DefaultMaxDepth       = jsonrpc.DefaultMaxDepth
)

// ServerOptions configure a Server. The zero value (or nil) is usable.
type ServerOptions struct {
	// Logger receives diagnostics (never protocol traffic). Default: slog
	// to stderr at Info.
	Logger *slog.Logger
	// MaxFrameBytes caps one stdio frame (and one HTTP body); beyond it the
	// server answers -32013 and keeps serving. Default 16 MiB.
	MaxFrameBytes int
	// MaxBatch caps the members of one batch; a larger batch is answered
	// with one -32602 (§11). Default 1024.
	MaxBatch int
	// MaxInFlight caps concurrently running requests per session; beyond it
	// requests are shed with -32011. Default 1024.
	MaxInFlight int
	// RequestTimeout is the per-request deadline (§13.1); on expiry the
	// request is answered -32014. A request's _meta.deadlineMs shortens it.
	// Zero means DefaultRequestTimeout; negative disables the server deadline
	// (deadlineMs still applies).
	RequestTimeout time.Duration
	// MaxDepth bounds JSON nesting of a frame (parse error beyond). Default 256.
	MaxDepth int
}

// Server serves one Handler over any number of sessions (stdio connections,
// in-memory pipes, HTTP sessions). It owns framing, lifecycle (§13), gating
// (§7, §12), batching (§11), cancellation (§7.14), deadlines (§13.1) and the
// progress/log plumbing (§9, §17).
type Server struct {
	h       Handler
	opts    ServerOptions
	log     *slog.Logger
	serials atomic.Uint64 // numbers the sessions (Caller.Session)
}

// NewServer returns a Server for h. opts may be nil.
func NewServer(h Handler, opts *ServerOptions) *Server {
	s := &Server{h: h}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.MaxFrameBytes <= 0 {
		s.opts.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if s.opts.MaxBatch <= 0 {
		s.opts.MaxBatch = DefaultMaxBatch
	}
	if s.opts.MaxInFlight <= 0 {
		s.opts.MaxInFlight = DefaultMaxInFlight
	}
	if s.opts.RequestTimeout == 0 {
		s.opts.RequestTimeout = DefaultRequestTimeout
	}
	if s.opts.MaxDepth <= 0 {
		s.opts.MaxDepth = DefaultMaxDepth
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	return s
}

// Handler returns the server's handler.
func (s *Server) Handler() Handler { return s.h }

// ServeStdio serves one session over NDJSON (§5.1): frames are read from r
// and answers written to w (stdout: protocol only). It returns nil after
// EOF on r or a shutdown request, once in-flight requests have been answered
// and flushed; it returns ctx's error when ctx ends first (r is closed when it
// is an io.Closer, to unblock the read).
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	return s.serveStream(ctx, r, w)
}

// ServeConn is ServeStdio over one bidirectional stream (a socket or pipe).
func (s *Server) ServeConn(ctx context.Context, rw io.ReadWriter) error {
	return s.serveStream(ctx, rw, rw)
}

func (s *Server) serveStream(ctx context.Context, r io.Reader, w io.Writer) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(errTransportClosed)
	if c, ok := r.(io.Closer); ok {
		stop := context.AfterFunc(ctx, func() { _ = c.Close() })
		defer stop()
	}
	wr := jsonrpc.NewWriter(w)
	writeReply := func(b []byte) error {
		if b == nil {
			return nil
		}
		return wr.WriteFrame(b)
	}
	sess := s.newSession(ctx, sessionStream)
	sess.write = wr.WriteFrame
	rd := jsonrpc.NewReader(r, s.opts.MaxFrameBytes)
	var readErr error
	holding := false
	defer func() {
		if holding {
			_ = wr.Release()
		}
	}()
	for {
		// While whole frames are buffered, answers are held and leave
		// together; before the reader can block, they are flushed.
		if holding && !rd.FrameBuffered() {
			_ = wr.Release()
			holding = false
		}
		frame, err := rd.Next()
		if errors.Is(err, jsonrpc.ErrFrameTooLarge) {
			s.log.Warn("rcp: oversize frame rejected", "limit", s.opts.MaxFrameBytes)
			_ = wr.WriteFrame(errorFrame(nil, NewError(CodePayloadTooLarge, "frame exceeds %d bytes", s.opts.MaxFrameBytes)))
			continue
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				readErr = fmt.Errorf("rcp: reading frames: %w", err)
			}
			break
		}
		if !holding && rd.FrameBuffered() {
			wr.Hold()
			holding = true
		}
		if stop := sess.handleFrame(frame, writeReply, frameOpts{notify: sess.writeNotification, syncReply: true}); stop {
			break
		}
	}
	if holding {
		_ = wr.Release()
		holding = false
	}
	// EOF, shutdown or ctx end: finish in-flight work, then return (§5.1, §13.1).
	sess.wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, errTransportClosed) {
		return ctx.Err()
	}
	return readErr
}

// Sentinel causes of request-context cancellation.
var (
	errCancelled       = errors.New("rcp: request cancelled by the client")
	errTimeout         = errors.New("rcp: request deadline elapsed")
	errTransportClosed = errors.New("rcp: transport closed")
	errShed            = errors.New("rcp: too many requests in flight")
)

type sessionKind uint8

const (
	sessionStream    sessionKind = iota // stdio / pipe: one client, strict ids
	sessionHTTP                         // stateful HTTP session (or the shared default)
	sessionStateless                    // stateless HTTP: implicitly initialized
)

const (
	stateNew int32 = iota
	stateReady
	stateClosed
)

// session is the per-connection protocol state machine of §13.
type session struct {
	srv  *Server
	kind sessionKind
	ctx  context.Context // cancelled on transport death
	id   string          // HTTP session token ("" otherwise)
	peer string          // HTTP client address (per-client session caps)
	name string          // this server's name for the session (Caller.Session), made once: every call reads it

	// write sends session-level frames (notifications) on streams.
	write func([]byte) error

	mu         sync.Mutex
	state      int32
	desc       *Description
	negotiated int
	client     *PeerInfo
	clientCaps Capabilities
	logLevel   string
	inflight   map[string]*requestContext
	running    int         // calls in flight, linked from calls
	calls      *serverCall // calls in flight
	stopFollow func() bool
	lastUsed   time.Time

	wg sync.WaitGroup

	workers workerPool
}

func (s *Server) newSession(ctx context.Context, kind sessionKind) *session {
	sess := &session{srv: s, kind: kind, ctx: ctx, inflight: map[string]*requestContext{}, lastUsed: time.Now(), name: sessionName(s.serials.Add(1))}
	sess.workers = workerPool{tasks: make(chan *serverCall), done: ctx.Done()}
	if kind == sessionStateless {
		sess.state = stateReady
		sess.negotiated = ProtocolVersion
	}
	return sess
}

// description returns the session's frozen description, asking the handler
// on first use (§13.2).
func (sess *session) description() *Description {
	if sess.kind == sessionStateless {
		// Every stateless request is its own implicitly initialized
		// session (§5.2): it sees the handler's current set.
		d := sess.srv.h.Describe(sess.ctx)
		return &d
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.desc == nil {
		d := sess.srv.h.Describe(sess.ctx)
		sess.desc = &d
	}
	return sess.desc
}

func (sess *session) wait() { sess.wg.Wait() }

// closeSession cancels every in-flight request (transport death) and marks
// the session closed.
func (sess *session) closeSession() {
	sess.mu.Lock()
	sess.state = stateClosed
	for _, c := range sess.inflight {
		c.cancel(errTransportClosed)
	}
	sess.mu.Unlock()
}

// handleFrame decodes and serves one frame. reply is called exactly once
// per frame, possibly from another goroutine, with the answer frame (one
// response, or one array for a batch) or nil when nothing is to be written. It reports whether
// the session must stop reading (shutdown).
func (sess *session) handleFrame(frame []byte, reply func([]byte) error, fo frameOpts) (stop bool) {
	f := jsonrpc.Decode(frame, jsonrpc.Options{MaxDepth: sess.srv.opts.MaxDepth})
	if f.Code != 0 {
		_ = reply(errorFrame(nil, &Error{Code: Code(f.Code), Message: f.Reason}))
		return false
	}
	if !f.Batch {
		m := &f.Messages[0]
		return sess.serveMessage(m, fo, func(b []byte) {
			if err := reply(b); err != nil {
				sess.srv.log.Debug("rcp: writing response", "err", err)
			}
		})
	}
	if len(f.Messages) > sess.srv.opts.MaxBatch {
		_ = reply(errorFrame(nil, InvalidParams("", "batch of %d members exceeds the limit of %d", len(f.Messages), sess.srv.opts.MaxBatch)))
		return false
	}
	fo.syncReply = false // the collector keeps the answers
	bc := &batchCollector{reply: reply, pending: 1}
	for i := range f.Messages {
		bc.add()
		if sess.serveMessage(&f.Messages[i], fo, bc.done) {
			stop = true
		}
	}
	bc.done(nil) // releases the loop's own token
	return stop
}

func (sess *session) writeNotification(b []byte) {
	if sess.write != nil {
		_ = sess.write(b)
	}
}

// batchCollector gathers the answers of one batch into one array frame.
type batchCollector struct {
	mu      sync.Mutex
	reply   func([]byte) error
	pending int
	out     [][]byte
}

func (bc *batchCollector) add() { bc.mu.Lock(); bc.pending++; bc.mu.Unlock() }

func (bc *batchCollector) done(b []byte) {
	bc.mu.Lock()
	if b != nil {
		bc.out = append(bc.out, b)
	}
	bc.pending--
	finished := bc.pending == 0
	out := bc.out
	bc.mu.Unlock()
	if !finished {
		return
	}
	if len(out) == 0 {
		_ = bc.reply(nil) // an all-notification batch produces no output at all (§11)
		return
	}
	_ = bc.reply(joinArray(out))
}

func joinArray(items [][]byte) []byte {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	buf := make([]byte, 0, n)
	buf = append(buf, '[')
	for i, it := range items {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, it...)
	}
	return append(buf, ']')
}

// frameOpts are per-frame transport facts.
type frameOpts struct {
	// compactOK accepts the {method, params} envelope (HTTP, §5.3).
	compactOK bool
	// notify writes progress/log frames for requests of this frame; nil
	// when the transport cannot deliver them (plain HTTP).
	notify func([]byte)
	// reqCtx, when set, ends the frame's requests when it is done (an HTTP
	// client that went away).
	reqCtx context.Context
	// method is the method named by the HTTP path ("" otherwise); a
	// request naming another one is -32600 (§5.2).
	method string
	// syncReply says that an answer is written before the reply function
	// returns (a stream's writer copies it), so it may be passed in a
	// buffer that is reused afterwards.
	syncReply bool
	// caller is who sent the frame over HTTP (zero on streams).
	caller Caller
}

// serveMessage serves one message. done is called exactly once: with the
// answer frame, or nil when there is nothing to answer (notifications).
// notify writes out-of-band frames (progress, log) for this request.
func (sess *session) serveMessage(m *jsonrpc.Message, fo frameOpts, done func([]byte)) (stop bool) {
	switch m.Kind {
	case jsonrpc.KindInvalid:
		done(errorFrame(m.ID, &Error{Code: Code(m.Code), Message: m.Reason}))
		return false
	case jsonrpc.KindResponse:
		// Servers never send requests, so no response is expected: ignore.
		sess.srv.log.Debug("rcp: ignoring a response frame sent to the server")
		done(nil)
		return false
	case jsonrpc.KindNotification:
		if m.Compact && fo.compactOK {
			break // served as a request; answered with id null
		}
		if m.Compact {
			done(errorFrame(nil, NewError(CodeInvalidRequest, `"jsonrpc" must be "2.0"`)))
			return false
		}
		sess.serveNotification(m)
		done(nil)
		return false
	}

	method := m.Method
	id := m.ID
	if fo.method != "" && fo.method != method {
		done(errorFrame(id, NewError(CodeInvalidRequest, "method %q in the body does not match %q in the path", method, fo.method)))
		return false
	}
	// A request in the notifications/ space is malformed: notifications carry
	// no id. It is rejected and has no effect (a cancel is not applied).
	if IsNotification(method) {
		done(errorFrame(id, NewError(CodeInvalidRequest, "%q is a notification and must not carry an id", method)))
		return false
	}
	if sess.kind == sessionStream && m.Kind == jsonrpc.KindRequest {
		sess.mu.Lock()
		_, dup := sess.inflight[jsonrpc.IDKey(id)]
		sess.mu.Unlock()
		if dup { // §4.7: ids are unique among in-flight requests
			done(errorFrame(id, NewError(CodeInvalidRequest, "id %s is already in flight", id)))
			return false
		}
	}
	paramsOK := m.Params == nil || m.Params[0] == '{'
	badParams := func() bool {
		done(errorFrame(id, InvalidParams("params", "params must be an object (RCP has no positional parameters)")))
		return false
	}

	switch method {
	case MethodInitialize, MethodInfo, MethodPing, MethodShutdown:
		if !paramsOK {
			return badParams()
		}
	}
	switch method {
	case MethodInitialize:
		done(sess.initialize(m))
		return false
	case MethodInfo:
		done(sess.info(id))
		return false
	case MethodPing:
		done(ping(id, m.Params))
		return false
	case MethodShutdown:
		return sess.shutdown(id, done)
	}

	sess.mu.Lock()
	state := sess.state
	sess.mu.Unlock()
	if state != stateReady {
		if state == stateClosed {
			done(errorFrame(id, NewError(CodeInvalidRequest, "session is shut down")))
			return false
		}
		done(errorFrame(id, NewError(CodeNotInitialized, "call initialize first")))
		return false
	}
	capKey, defined := MethodCapability(method)
	if !defined {
		done(errorFrame(id, NewError(CodeUnknownMethod, "method %q is not defined by RCP", method)))
		return false
	}
	desc := sess.description()
	if !desc.Capabilities.Allows(method) {
		done(errorFrame(id, capabilityMissing(&desc.Capabilities, method, capKey)))
		return false
	}
	if !paramsOK {
		return badParams()
	}
	sess.startCall(m, desc, done, fo)
	return false
}

func (sess *session) serveNotification(m *jsonrpc.Message) {
	if m.Method != NotifyCancel {
		// Unknown notifications/* and id-less requests are never answered
		// (§4.5); RCP defines no client→server notification but cancel.
		return
	}
	var p struct {
		ID json.RawMessage `json:"id"`
	}
	if m.Params == nil || json.Unmarshal(m.Params, &p) != nil {
		return
	}
	id := bytes.TrimSpace(p.ID)
	if len(id) == 0 || !(id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9')) {
		return
	}
	sess.mu.Lock()
	rc := sess.inflight[jsonrpc.IDKey(id)]
	sess.mu.Unlock()
	if rc != nil {
		rc.cancel(errCancelled) // unknown or answered ids are a no-op (§7.14)
	}
}

// MaxInitializeBytes bounds the params of initialize: a session keeps the
// client's info and capabilities for its lifetime.
const MaxInitializeBytes = 64 << 10

func (sess *session) initialize(m *jsonrpc.Message) []byte {
	if len(m.Params) > MaxInitializeBytes {
		return errorFrame(m.ID, InvalidParams("client", "initialize params are %d bytes; the limit is %d", len(m.Params), MaxInitializeBytes))
	}
	var p InitializeParams
	if err := DecodeParams(m.Params, &p); err != nil {
		e, _ := AsError(err)
		return errorFrame(m.ID, e)
	}
	sess.mu.Lock()
	state := sess.state
	sess.mu.Unlock()
	if sess.kind == sessionStateless {
		// Stateless HTTP: every request is implicitly initialized; answer
		// initialize idempotently (§5.2).
		if p.ProtocolVersion < 1 {
			return errorFrame(m.ID, NewError(CodeVersionMismatch, "no common protocol version: this server speaks RCP/1..%d", ProtocolVersion))
		}
		return sess.infoFrame(m.ID, min(p.ProtocolVersion, ProtocolVersion))
	}
	switch state {
	case stateReady:
		return errorFrame(m.ID, NewError(CodeInvalidRequest, "already initialized; re-negotiation is not permitted mid-session"))
	case stateClosed:
		return errorFrame(m.ID, NewError(CodeInvalidRequest, "session is shut down"))
	}
	neg := min(p.ProtocolVersion, ProtocolVersion)
	if neg < 1 {
		// A failed negotiation leaves the session uninitialized (§13).
		return errorFrame(m.ID, NewError(CodeVersionMismatch, "no common protocol version: client offers %d, server speaks RCP/1..%d", p.ProtocolVersion, ProtocolVersion))
	}
	desc := sess.description()
	var level string
	p.Meta.Get(MetaLogLevel, &level)
	sess.mu.Lock()
	if sess.state == stateReady { // lost a race with a concurrent initialize
		sess.mu.Unlock()
		return errorFrame(m.ID, NewError(CodeInvalidRequest, "already initialized; re-negotiation is not permitted mid-session"))
	}
	sess.state = stateReady
	sess.negotiated = neg
	sess.client = p.Client
	sess.clientCaps = p.Capabilities
	if _, ok := logRank[level]; ok {
		sess.logLevel = level
	}
	sess.mu.Unlock()
	res := sess.result(desc, neg)
	if sess.id != "" {
		res.Meta = res.Meta.Set(MetaSession, sess.id)
	}
	return resultFrame(m.ID, res)
}

func (sess *session) result(desc *Description, version int) *InitializeResult {
	meta := Meta{}
	for k, v := range desc.Meta {
		meta[k] = v
	}
	if desc.Conformance != "" {
		meta = meta.Set(MetaConformance, desc.Conformance)
	}
	if lm, ok := sess.srv.h.(LiveMeta); ok {
		for k, v := range lm.LiveMeta(sess.ctx) {
			meta[k] = v
		}
	}
	if len(meta) == 0 {
		meta = nil
	}
	return &InitializeResult{ProtocolVersion: version, Server: desc.Server, Capabilities: desc.Capabilities, Meta: meta}
}

func (sess *session) infoFrame(id json.RawMessage, version int) []byte {
	return resultFrame(id, sess.result(sess.description(), version))
}

func (sess *session) info(id json.RawMessage) []byte {
	sess.mu.Lock()
	v := sess.negotiated
	sess.mu.Unlock()
	if v == 0 {
		v = ProtocolVersion
	}
	return sess.infoFrame(id, v)
}

func ping(id json.RawMessage, params json.RawMessage) []byte {
	var p struct {
		Nonce json.RawMessage `json:"nonce"`
	}
	if params != nil {
		// the common case without encoding/json; Member declines what it
		// cannot decide exactly as encoding/json would
		if nonce, _, ok := jsonrpc.Member(params, "nonce"); ok {
			p.Nonce = nonce
		} else if err := json.Unmarshal(params, &p); err != nil {
			return errorFrame(id, InvalidParams("", "%v", err))
		}
	}
	if n := bytes.TrimSpace(p.Nonce); len(n) > 0 && string(n) != "null" {
		if n[0] != '"' && n[0] != '-' && (n[0] < '0' || n[0] > '9') {
			return errorFrame(id, InvalidParams("nonce", "nonce must be a string or a number"))
		}
		return jsonrpc.Response(id, append(append([]byte(`{"nonce":`), n...), '}'))
	}
	return jsonrpc.Response(id, []byte("{}"))
}

// shutdown answers {} and stops the session (§7.12, §13.1): on streams the
// reader stops, in-flight work finishes and the server returns.
func (sess *session) shutdown(id json.RawMessage, done func([]byte)) bool {
	if sess.kind == sessionStateless {
		done(jsonrpc.Response(id, []byte("{}")))
		return false
	}
	sess.mu.Lock()
	sess.state = stateClosed
	sess.mu.Unlock()
	done(jsonrpc.Response(id, []byte("{}")))
	return true
}

// request scope carried in the handler's context.
type scopeKey struct{}

type requestScope struct {
	sess     *session
	desc     *Description // the session's (a stateless request's own)
	id       json.RawMessage
	method   string
	meta     Meta
	token    json.RawMessage // progress token, nil when progress is not allowed
	notify   func([]byte)
	logLevel string // minimum level, "" when the client did not opt in
	caller   Caller
}

func (sess *session) startCall(m *jsonrpc.Message, desc *Description, done func([]byte), fo frameOpts) {
	notify := fo.notify
	srv := sess.srv
	params := m.Params
	if params == nil {
		params = json.RawMessage("{}")
	}
	var meta Meta
	if bytes.Contains(params, []byte(`"_meta"`)) {
		var pm struct {
			Meta Meta `json:"_meta"`
		}
		if err := json.Unmarshal(params, &pm); err != nil {
			done(errorFrame(m.ID, InvalidParams("_meta", "_meta must be an object")))
			return
		}
		meta = pm.Meta
	}
	c := &serverCall{sess: sess, params: params, done: done, syncReply: fo.syncReply}
	c.scope = requestScope{sess: sess, desc: desc, id: m.ID, method: m.Method, meta: meta, notify: notify, caller: sess.caller(fo.caller)}
	scope := &c.scope
	if desc.Capabilities.Streaming != nil {
		if tok := bytes.TrimSpace(meta[MetaProgressToken]); isProgressToken(tok) {
			scope.token = tok
		}
	}
	if desc.Capabilities.Log != nil {
		sess.mu.Lock()
		level, optedIn := sess.logLevel, sess.clientCaps.Log != nil
		sess.mu.Unlock()
		if len(meta) > 0 { // (Get's pointer argument escapes: skip it when there is no _meta)
			var reqLevel string
			if meta.Get(MetaLogLevel, &reqLevel) {
				if _, ok := logRank[reqLevel]; ok {
					level, optedIn = reqLevel, true
				}
			}
		}
		if optedIn {
			if level == "" {
				level = LogDebug
			}
			scope.logLevel = level
		}
	}

	timeout := srv.opts.RequestTimeout
	if len(meta) > 0 {
		var deadlineMs float64
		if meta.Get(MetaDeadlineMs, &deadlineMs) && deadlineMs > 0 && !math.IsInf(deadlineMs, 0) {
			d := time.Duration(deadlineMs * float64(time.Millisecond))
			if timeout < 0 || d < timeout {
				timeout = d
			}
		}
	}

	c.ctx.start(sess.ctx, &c.scope, timeout)

	c.key = jsonrpc.IDKey(m.ID)
	sess.mu.Lock()
	if sess.running >= srv.opts.MaxInFlight {
		sess.mu.Unlock()
		c.ctx.cancel(errShed)
		done(errorFrame(m.ID, &Error{Code: CodeRateLimited, Message: "too many requests in flight",
			Data: &ErrorData{Retryable: ptr(true), RetryAfterMs: ptr(int64(100))}}))
		return
	}
	if _, dup := sess.inflight[c.key]; dup && sess.kind == sessionStream {
		sess.mu.Unlock()
		c.ctx.cancel(nil)
		done(errorFrame(m.ID, NewError(CodeInvalidRequest, "id %s is already in flight", m.ID)))
		return
	}
	if _, dup := sess.inflight[c.key]; !dup {
		sess.inflight[c.key] = &c.ctx
		c.registered = true
	}
	sess.follow(c)
	sess.wg.Add(1)
	sess.mu.Unlock()
	if err := sess.ctx.Err(); err != nil {
		c.ctx.followParent() // the session ended before follow saw this call
	}

	// A cancel or the deadline answers at once; the handler's late result
	// is then discarded (exactly one response, §7.14, §13.1).
	c.ctx.onEnd(c)
	if fo.reqCtx != nil {
		c.unlink = context.AfterFunc(fo.reqCtx, func() { c.ctx.cancel(errTransportClosed) })
	}
	sess.workers.run(c)
}

// caller completes the transport's caller with the session.
func (sess *session) caller(c Caller) Caller {
	switch sess.kind {
	case sessionStream:
		c.Transport = TransportStream
		c.Session = sess.name
	case sessionHTTP:
		if sess.id != "" { // not the single shared session
			c.Session = sess.name
		}
	}
	return c
}

// serverCall is one request being served: its context, its scope and the state
// of its answer in one object (as closures and a context per request they
// cost a dozen allocations). A session links its calls in flight so that
// the end of its context ends them all.
type serverCall struct {
	sess   *session
	ctx    requestContext
	scope  requestScope
	params json.RawMessage
	// done receives the answer frame; with syncReply it is written before
	// done returns, so the answer may be in a reused buffer.
	done       func([]byte)
	syncReply  bool
	key        string // the id's key in the session's inflight map
	registered bool   // in inflight (a duplicate id on HTTP is not)
	answered   sync.Once
	unlink     func() bool // stops following an HTTP request's context
	prev, next *serverCall // the session's calls in flight (sess.mu)
}

// run serves the call on a worker.
func (c *serverCall) run() {
	sess := c.sess
	defer sess.wg.Done()
	defer sess.unfollow(c)
	defer c.ctx.cancel(nil)
	res, err := sess.call(&c.ctx, c.scope.method, c.params)
	c.ctx.unhook()
	if c.unlink != nil {
		c.unlink()
	}
	if err != nil {
		if cause := endedCause(&c.ctx); cause != nil {
			c.respond(contextErrorFrame(c.scope.id, cause))
			return
		}
	}
	if err == nil && c.syncReply && respondBorrowed(c.scope.id, res, c.respond) {
		return
	}
	c.respond(sess.srv.encodeOutcome(c.scope.id, c.scope.method, res, err))
}

// respond answers the call once; later answers are dropped, and a second
// caller waits until the first answer is written.
func (c *serverCall) respond(b []byte) {
	c.answered.Do(func() {
		if c.registered {
			c.sess.mu.Lock()
			delete(c.sess.inflight, c.key)
			c.sess.mu.Unlock()
		}
		c.done(b)
	})
}

// contextEnded answers a call whose context ended (cancel, deadline,
// transport) before its handler returned.
func (c *serverCall) contextEnded() { c.respond(contextErrorFrame(c.scope.id, c.ctx.Cause())) }

// follow links c to the session's calls in flight (under sess.mu); the
// first of them registers the session with its context, so that the
// context's end ends every call in flight (endCalls).
func (sess *session) follow(c *serverCall) {
	if sess.running == 0 {
		sess.stopFollow = context.AfterFunc(sess.ctx, sess.endCalls)
	}
	sess.running++
	c.next = sess.calls
	if c.next != nil {
		c.next.prev = c
	}
	sess.calls = c
}

// unfollow unlinks a finished call; the last one unregisters the session
// from its context.
func (sess *session) unfollow(c *serverCall) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		sess.calls = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	}
	c.prev, c.next = nil, nil
	sess.running--
	if sess.running == 0 {
		sess.stopFollow()
		sess.stopFollow = nil
	}
}

// endCalls ends the context of every call in flight as the session's
// context has ended.
func (sess *session) endCalls() {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	for c := sess.calls; c != nil; c = c.next {
		c.ctx.followParent()
	}
}

// respondBorrowed answers a result with a hand-written encoder from a
// pooled buffer, reused once respond has written it; it reports false
// (nothing answered) for other results and for what the encoder refuses.
func respondBorrowed(id json.RawMessage, res any, respond func([]byte)) bool {
	ra, ok := res.(resultAppender)
	if !ok || isNilPointer(ra) {
		return false
	}
	bp, ok := borrowResultFrame(id, ra)
	if !ok {
		return false
	}
	respond(*bp)
	putAppendBuf(bp)
	return true
}

// workerIdle is how long an idle request goroutine waits for more work.
const workerIdle = time.Second

// workerPool runs a session's requests on reused goroutines. A request runs
// concurrently with the reader exactly as on a goroutine of its own, but a
// goroutine that has served one request keeps its grown stack for the
// next: JSON decoding and encoding run deep, and a fresh goroutine per
// request pays for growing (copying) its stack several times. Idle workers
// exit after one to two workerIdle periods, or when the session's context
// ends. The idle clock is a function timer re-armed once per period, not
// a timer channel reset after every request: a worker parking on a timer
// channel adds that timer to the runtime's heap and removes it again at
// every request.
type workerPool struct {
	tasks chan *serverCall
	done  <-chan struct{}
}

// run starts c on an idle worker, or on a new one when none is waiting.
func (p *workerPool) run(c *serverCall) {
	select {
	case p.tasks <- c:
	default:
		go p.work(c)
	}
}

func (p *workerPool) work(c *serverCall) {
	var busy atomic.Bool // served a request since the last tick
	quit := make(chan struct{})
	var tick *time.Timer
	tick = time.AfterFunc(workerIdle, func() {
		if busy.Swap(false) {
			tick.Reset(workerIdle)
			return
		}
		close(quit)
	})
	defer tick.Stop()
	c.run()
	for {
		busy.Store(true)
		select {
		case c = <-p.tasks:
			c.run()
		case <-quit:
			return
		case <-p.done:
			return
		}
	}
}

// call runs the handler, converting a panic into -32603.
func (sess *session) call(ctx context.Context, method string, params json.RawMessage) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			sess.srv.log.Error("rcp: handler panic", "method", method, "panic", r)
			res, err = nil, NewError(CodeInternalError, "internal error")
		}
	}()
	return sess.srv.h.Call(ctx, method, params)
}

// endedCause reports why a request's context ended, or nil while it runs.
// The deadline can pass before its timer fires: a handler that failed
// because its calls saw the deadline by the clock (gRPC does) must still be
// answered -32014, not with its own error.
func endedCause(ctx *requestContext) error {
	if cause := ctx.Cause(); cause != nil {
		return cause
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return errTimeout
	}
	return nil
}

// contextErrorFrame maps the cause of a request context's end to its answer;
// nil means the transport died and nothing can be written.
func contextErrorFrame(id json.RawMessage, cause error) []byte {
	switch {
	case errors.Is(cause, errCancelled):
		return errorFrame(id, NewError(CodeCancelled, "request cancelled"))
	case errors.Is(cause, errTimeout):
		return errorFrame(id, &Error{Code: CodeTimeout, Message: "request deadline elapsed", Data: &ErrorData{Retryable: ptr(true)}})
	case errors.Is(cause, errTransportClosed):
		return nil
	default:
		return errorFrame(id, NewError(CodeCancelled, "request abandoned"))
	}
}

func (s *Server) encodeOutcome(id json.RawMessage, method string, res any, err error) []byte {
	if err != nil {
		e, ok := AsError(err)
		if !ok {
			s.log.Error("rcp: handler failed", "method", method, "err", err)
		}
		return errorFrame(id, e)
	}
	b, merr := encodeResultFrame(id, res)
	if merr != nil {
		s.log.Error("rcp: cannot encode result", "method", method, "err", merr)
		return errorFrame(id, &Error{Code: CodeInternalError, Message: "internal error: result could not be encoded"})
	}
	return b
}

// frameBufs holds scratch buffers for encodeResultFrame.
var frameBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encodeResultFrame encodes the response to id with result res, the bytes
// jsonrpc.Response(id, marshalResult(res)) would produce, in one pass: the
// envelope and the result are written into one pooled buffer and copied out
// once (json.Marshal would copy the result out, then the envelope copy it
// again). A result holding a non-finite float, which encoding/json refuses,
// takes the sanitising path of marshalResult. A result with a hand-written
// encoder (resultAppender: the retrieve result) skips encoding/json unless
// that encoder refuses the value.
func encodeResultFrame(id json.RawMessage, res any) ([]byte, error) {
	if _, raw := res.(json.RawMessage); raw || res == nil {
		b, err := marshalResult(res)
		if err != nil {
			return nil, err
		}
		return jsonrpc.Response(id, b), nil
	}
	if ra, ok := res.(resultAppender); ok && !isNilPointer(ra) {
		if b, ok := appendResultFrame(id, ra); ok {
			return b, nil
		}
		// encoding/json reports or sanitises what ra refused
	}
	return encodeResultFrameJSON(id, res)
}

// encodeResultFrameJSON is encodeResultFrame through encoding/json.
func encodeResultFrameJSON(id json.RawMessage, res any) ([]byte, error) {
	buf := frameBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 1<<20 { // do not pin the buffer of a huge result
			frameBufs.Put(buf)
		}
	}()
	buf.Reset()
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	if id == nil {
		buf.WriteString("null")
	} else {
		buf.Write(id)
	}
	buf.WriteString(`,"result":`)
	start := buf.Len()
	// Encode escapes HTML like Marshal; it writes nothing when it fails.
	if err := json.NewEncoder(buf).Encode(res); err != nil {
		var uve *json.UnsupportedValueError
		if !errors.As(err, &uve) {
			return nil, err
		}
		b, err := marshalResult(res)
		if err != nil {
			return nil, err
		}
		return jsonrpc.Response(id, b), nil
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	if string(buf.Bytes()[start:]) == "null" {
		buf.Truncate(start)
		buf.WriteString("{}")
	}
	buf.WriteByte('}')
	return bytes.Clone(buf.Bytes()), nil
}

// appendBufs holds scratch buffers for appendResultFrame.
var appendBufs = sync.Pool{New: func() any { return new([]byte) }}

// appendResultFrame is encodeResultFrame for a result with a hand-written
// encoder; ok is false when the encoder refused the value.
func appendResultFrame(id json.RawMessage, ra resultAppender) (frame []byte, ok bool) {
	bp, ok := borrowResultFrame(id, ra)
	if !ok {
		return nil, false
	}
	frame = bytes.Clone(*bp)
	putAppendBuf(bp)
	return frame, true
}

// borrowResultFrame is appendResultFrame without the copy: the frame is
// *bp, a pooled buffer the caller returns with putAppendBuf once the frame
// is written.
func borrowResultFrame(id json.RawMessage, ra resultAppender) (bp *[]byte, ok bool) {
	bp = appendBufs.Get().(*[]byte)
	b := append((*bp)[:0], `{"jsonrpc":"2.0","id":`...)
	if id == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, id...)
	}
	b = append(b, `,"result":`...)
	b, err := ra.appendJSON(b)
	if err != nil {
		*bp = b
		putAppendBuf(bp)
		return nil, false
	}
	*bp = append(b, '}')
	return bp, true
}

// putAppendBuf returns a buffer of borrowResultFrame to the pool.
func putAppendBuf(bp *[]byte) {
	if cap(*bp) <= 1<<20 { // do not pin the buffer of a huge result
		appendBufs.Put(bp)
	}
}

// isNilPointer reports whether ra is a nil *RetrieveResult, which
// encoding/json writes as null (and the frame as {}).
func isNilPointer(ra resultAppender) bool {
	r, ok := ra.(*RetrieveResult)
	return ok && r == nil
}

func marshalResult(res any) ([]byte, error) {
	if res == nil {
		return []byte("{}"), nil
	}
	if raw, ok := res.(json.RawMessage); ok {
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			return []byte("{}"), nil
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	b, err := marshalFinite(res)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return []byte("{}"), nil
	}
	return b, nil
}

func resultFrame(id json.RawMessage, v any) []byte {
	b, err := encodeResultFrame(id, v)
	if err != nil {
		return errorFrame(id, &Error{Code: CodeInternalError, Message: "internal error: result could not be encoded"})
	}
	return b
}

func errorFrame(id json.RawMessage, e *Error) []byte {
	b, err := json.Marshal(e)
	if err != nil {
		b = []byte(`{"code":-32603,"message":"internal error"}`)
	}
	return jsonrpc.ErrorResponse(id, b)
}

func ptr[T any](v T) *T { return &v }

func isProgressToken(tok []byte) bool {
	if len(tok) == 0 {
		return false
	}
	if tok[0] == '"' {
		return true
	}
	if tok[0] != '-' && (tok[0] < '0' || tok[0] > '9') {
		return false
	}
	return !bytes.ContainsAny(tok, ".eE")
}
