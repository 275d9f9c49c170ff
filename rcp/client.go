package rcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed reports a call on a closed client or over a dead transport. Calls
// in flight when the transport dies fail with an error wrapping it (§13.1:
// nothing is known about whether they took effect).
var ErrClosed = errors.New("rcp: connection closed")

// ClientOptions configure a Client. The zero value (or nil) is usable.
type ClientOptions struct {
	// Info names this client in initialize (default "rcpgo").
	Info PeerInfo
	// Capabilities are the client capabilities sent at initialize (§7.1):
	// set Streaming or Log to opt into those notifications.
	Capabilities Capabilities
	// LogLevel, when set, is sent as initialize _meta.logLevel (§17.1).
	LogLevel string
	// OnProgress receives every progress frame (§9); per-call handlers can
	// also be attached with WithProgress. Called on the reading goroutine:
	// keep it short.
	OnProgress func(ProgressParams)
	// OnLog receives notifications/log (§17.1).
	OnLog func(LogParams)
	// MinProtocolVersion aborts the handshake when the negotiated version is
	// lower (default 1).
	MinProtocolVersion int
	// Timeout is applied to calls whose context has no deadline (0: none).
	Timeout time.Duration
	// Retry enables the §12.2 retry policy (nil: no retries).
	Retry *RetryPolicy
	// NoReinitialize turns off re-initialization. By default a call
	// answered with the capabilities-changed error (Error.CapabilitiesChanged:
	// the server can no longer serve the capability set this session
	// negotiated, §13.2) opens a new session — a new HTTP session, a new
	// process of the stdio command, a new in-process session — and is
	// retried once in it; the new session's capabilities replace the old
	// (Capabilities, InitializeResult).
	NoReinitialize bool
	// Logger receives diagnostics (default slog.Default()).
	Logger *slog.Logger

	// Stdio: extra environment entries ("K=V") for the spawned server, on
	// top of a least-privilege base (PATH, HOME, LANG, LC_ALL, TMPDIR, TZ),
	// or on top of this process's whole environment with InheritEnv (for a
	// command the user typed, which should see what their shell sees);
	// working directory; where the child's stderr goes (default os.Stderr).
	Env        []string
	InheritEnv bool
	Dir        string
	Stderr     interface{ Write([]byte) (int, error) }

	// HTTP: client, extra headers and bearer token.
	HTTPClient  *http.Client
	Header      http.Header
	BearerToken string

	// MaxResponseBytes bounds one answer (HTTP body or SSE frame; default
	// 256 MiB); a larger one fails the call with -32013 instead of being
	// read into memory. A gateway sets it low: it must not trust engines.
	MaxResponseBytes int64
}

// RetryPolicy is the opt-in §12.2 policy: exponential backoff with full
// jitter, honouring error.data.retryAfterMs and Retry-After. Retryable are
// -32010, -32011, -32014 (and whatever error.data.retryable says), -32603
// once. Writes (index/add, feedback, memory/build) are retried only when
// they carry _meta.idempotencyKey (or, for index/add, every document has an
// id, which makes it an upsert).
type RetryPolicy struct {
	MaxAttempts int           // total attempts including the first (default 3)
	BaseDelay   time.Duration // default 100ms
	MaxDelay    time.Duration // default 5s
}

// Client is an RCP client over one connection. It is safe for concurrent
// use; calls are pipelined and correlated by id.
type Client struct {
	cur    atomic.Pointer[clientConn]
	opts   ClientOptions
	log    *slog.Logger
	nextID atomic.Int64
	closed atomic.Bool
	// redial opens a new connection for a new session (nil: not
	// possible); closeFirst: the old one must be closed before (a stdio
	// command holding a resource, such as rcpd its data directory).
	redial     func(ctx context.Context) (clientTransport, error)
	closeFirst bool
	reinitMu   sync.Mutex
	// swapMu orders a call's registration on a session (clientConn.calls)
	// against that session's retirement: a call either registers before
	// the retirement, and is waited for, or sees the session retired and
	// goes to its successor without having sent anything.
	swapMu   sync.RWMutex
	retiring sync.WaitGroup // old connections closing after re-initialization
	// abandoned is set when a call gave up waiting for its answer (its
	// context ended) or the server answered it -32014: the server is not
	// keeping up, so Close waits for it only briefly.
	abandoned atomic.Bool
}

// How long Close waits for the server to finish (a spawned process to exit,
// an in-process server to return, an HTTP session's shutdown) before
// ending it: closeGrace normally, abandonedGrace once a call was abandoned
// at its deadline, so a command given --timeout 3s does not linger 5 s more
// on a server that has stopped answering.
const (
	closeGrace     = 5 * time.Second
	abandonedGrace = 250 * time.Millisecond
)

// clientConn is one session: its connection and what its initialize
// answered. A re-initialization replaces it (Client.reinitialize).
type clientConn struct {
	tr      clientTransport
	init    InitializeResult
	calls   sync.WaitGroup // calls in flight on tr
	retired bool           // replaced by a re-initialization (guarded by Client.swapMu)
}

// errRetired: the session was retired before the request was sent on it.
var errRetired = errors.New("rcp: the session was replaced before the request was sent")

// enter registers a call on cc unless cc is retired.
func (c *Client) enter(cc *clientConn) bool {
	c.swapMu.RLock()
	defer c.swapMu.RUnlock()
	if cc.retired {
		return false
	}
	cc.calls.Add(1)
	return true
}

// retire marks cc replaced: calls that have not registered on it yet go to
// its successor instead.
func (c *Client) retire(cc *clientConn) {
	c.swapMu.Lock()
	cc.retired = true
	c.swapMu.Unlock()
}

// clientTransport moves requests and notifications.
type clientTransport interface {
	// roundTrip sends a request and waits for its response. progress, when
	// non-nil, receives progress frames carrying token.
	roundTrip(ctx context.Context, id int64, method string, params json.RawMessage, token string, progress func(ProgressParams)) (*response, error)
	notify(ctx context.Context, method string, params json.RawMessage) error
	setSession(token string)
	// close ends the connection, waiting up to grace for the peer to
	// finish before cutting it off (killing a child, abandoning a
	// shutdown request).
	close(grace time.Duration) error
}

// response is a decoded answer.
type response struct {
	result     json.RawMessage
	err        *Error
	retryAfter time.Duration // from an HTTP Retry-After header
}

func newClient(ctx context.Context, tr clientTransport, opts *ClientOptions) (*Client, error) {
	c := &Client{}
	if opts != nil {
		c.opts = *opts
	}
	if c.opts.Info.Name == "" {
		c.opts.Info = PeerInfo{Name: "rcpgo", Version: "0.1.0"}
	}
	if c.opts.MinProtocolVersion <= 0 {
		c.opts.MinProtocolVersion = 1
	}
	c.log = c.opts.Logger
	if c.log == nil {
		c.log = slog.Default()
	}
	cc, err := c.handshake(ctx, tr)
	if err != nil {
		_ = tr.close(c.closeGrace())
		return nil, err
	}
	c.cur.Store(cc)
	return c, nil
}

// handshake initializes a session over tr.
func (c *Client) handshake(ctx context.Context, tr clientTransport) (*clientConn, error) {
	p := InitializeParams{ProtocolVersion: ProtocolVersion, Client: &c.opts.Info, Capabilities: c.opts.Capabilities}
	if c.opts.LogLevel != "" {
		p.Meta = p.Meta.Set(MetaLogLevel, c.opts.LogLevel)
	}
	raw, _ := json.Marshal(p)
	cc := &clientConn{tr: tr}
	if err := c.doOn(ctx, cc, MethodInitialize, raw, &cc.init); err != nil {
		return nil, err
	}
	res := &cc.init
	if res.ProtocolVersion < c.opts.MinProtocolVersion {
		return nil, fmt.Errorf("rcp: server negotiated RCP/%d, below the minimum RCP/%d: %w", res.ProtocolVersion, c.opts.MinProtocolVersion,
			&Error{Code: CodeVersionMismatch, Message: "negotiated version below the client's minimum"})
	}
	var tok string
	if res.Meta.Get(MetaSession, &tok) && tok != "" {
		tr.setSession(tok)
	}
	return cc, nil
}

// Close ends the connection. On stdio the server sees EOF (an implicit
// shutdown) and is waited for: up to 5 s, or 250 ms once a call has been
// abandoned at its deadline; then a spawned server is killed.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.reinitMu.Lock() // a re-initialization in progress finishes first
	defer c.reinitMu.Unlock()
	err := c.cur.Load().tr.close(c.closeGrace())
	c.retiring.Wait()
	return err
}

func (c *Client) closeGrace() time.Duration {
	if c.abandoned.Load() {
		return abandonedGrace
	}
	return closeGrace
}

// InitializeResult returns the server's answer to initialize: identity,
// the session's capabilities and _meta.
func (c *Client) InitializeResult() InitializeResult { return c.cur.Load().init }

// Capabilities returns the session's server capabilities.
func (c *Client) Capabilities() *Capabilities { return &c.cur.Load().init.Capabilities }

// Supports reports whether the server advertised capability key.
func (c *Client) Supports(key string) bool { return c.Capabilities().Has(key) }

// Conformance returns the level the server declared in _meta.conformance.
func (c *Client) Conformance() string {
	var s string
	c.cur.Load().init.Meta.Get(MetaConformance, &s)
	return s
}

type progressKey struct{}

// WithProgress returns a context whose calls ask for progress (§9): the
// client attaches a _meta.progressToken and routes that request's progress
// frames to fn. Over HTTP it also asks for SSE.
func WithProgress(ctx context.Context, fn func(ProgressParams)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// Call sends method with params (any JSON-marshalable value or
// json.RawMessage; nil means {}) and decodes the result into result (which
// may be nil or a *json.RawMessage). Client-side gating applies before any
// I/O (-32003 / -32004 as *Error). Server errors are returned as *Error.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	if c.closed.Load() {
		return ErrClosed
	}
	cc := c.cur.Load()
	if err := gate(&cc.init.Capabilities, method); err != nil {
		return err
	}
	raw, err := marshalParams(params)
	if err != nil {
		return fmt.Errorf("rcp: %s: encoding params: %w", method, err)
	}
	err = c.doOn(ctx, cc, method, raw, result)
	if errors.Is(err, errRetired) {
		// Nothing was sent: the call goes to the session that replaced cc.
		next, rerr := c.reinitialize(ctx, cc)
		if rerr != nil {
			return rerr
		}
		if gerr := gate(&next.init.Capabilities, method); gerr != nil {
			return gerr
		}
		cc = next
		err = c.doOn(ctx, cc, method, raw, result)
	}
	var e *Error
	if !errors.As(err, &e) || !e.CapabilitiesChanged() || c.opts.NoReinitialize || method == MethodShutdown {
		return err
	}
	// The session's capability set can no longer be served: a new session
	// negotiates the current one, and the call is retried once in it.
	next, rerr := c.reinitialize(ctx, cc)
	if rerr != nil {
		c.log.Warn("rcp: re-initializing after the server's capabilities changed failed", "method", method, "err", rerr)
		return err
	}
	if gerr := gate(&next.init.Capabilities, method); gerr != nil {
		return fmt.Errorf("%w (re-initialized: %w)", err, gerr)
	}
	return c.doOn(ctx, next, method, raw, result)
}

// reinitialize replaces the session failed with a new one (see
// ClientOptions.NoReinitialize). Calls that fail together re-initialize
// once: the later ones find failed replaced and use its successor.
func (c *Client) reinitialize(ctx context.Context, failed *clientConn) (*clientConn, error) {
	c.reinitMu.Lock()
	defer c.reinitMu.Unlock()
	if cur := c.cur.Load(); cur != failed {
		return cur, nil
	}
	if c.redial == nil {
		return nil, errors.New("rcp: this connection cannot open another session")
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if c.closeFirst {
		// The command's resources (rcpd's data directory lock) go with the
		// old process: let the calls in flight finish (bounded), then end it.
		c.retire(failed)
		waitFor(&failed.calls, c.closeGrace())
		_ = failed.tr.close(c.closeGrace())
	}
	tr, err := c.redial(ctx)
	if err != nil {
		return nil, err
	}
	cc, err := c.handshake(ctx, tr)
	if err != nil {
		_ = tr.close(c.closeGrace())
		return nil, err
	}
	c.cur.Store(cc)
	if !c.closeFirst {
		c.retire(failed)
		c.retiring.Add(1)
		go func() {
			defer c.retiring.Done()
			waitFor(&failed.calls, closeGrace)
			_ = failed.tr.close(c.closeGrace())
		}()
	}
	c.log.Info("rcp: re-initialized: the server's capabilities changed", "server", cc.init.Server.Name)
	return cc, nil
}

// waitFor waits for wg, at most d.
func waitFor(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

func marshalParams(params any) (json.RawMessage, error) {
	switch p := params.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		if len(bytes.TrimSpace(p)) == 0 {
			return json.RawMessage("{}"), nil
		}
		return p, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return json.RawMessage("{}"), nil
	}
	if len(b) == 0 || b[0] != '{' {
		return nil, errors.New("params must encode to a JSON object")
	}
	return b, nil
}

// gate applies §14.4 client rules: never call an undefined or unadvertised
// method.
func gate(caps *Capabilities, method string) error {
	capKey, defined := MethodCapability(method)
	if !defined {
		return NewError(CodeUnknownMethod, "method %q is not defined by RCP", method)
	}
	if capKey == "" {
		return nil
	}
	if !caps.Allows(method) {
		return capabilityMissing(caps, method, capKey)
	}
	return nil
}

// doOn performs one call with retries in session cc.
func (c *Client) doOn(ctx context.Context, cc *clientConn, method string, params json.RawMessage, result any) error {
	if c.opts.Timeout > 0 {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
			defer cancel()
		}
	}
	attempts := 1
	var pol RetryPolicy
	if c.opts.Retry != nil && retrySafe(method, params) {
		pol = *c.opts.Retry
		if pol.MaxAttempts <= 0 {
			pol.MaxAttempts = 3
		}
		if pol.BaseDelay <= 0 {
			pol.BaseDelay = 100 * time.Millisecond
		}
		if pol.MaxDelay <= 0 {
			pol.MaxDelay = 5 * time.Second
		}
		attempts = pol.MaxAttempts
	}
	internalRetried := false
	for attempt := 0; ; attempt++ {
		resp, err := c.once(ctx, cc, method, params)
		if err != nil {
			return err
		}
		if resp.err == nil {
			if result == nil {
				return nil
			}
			if err := json.Unmarshal(resp.result, result); err != nil {
				return fmt.Errorf("rcp: %s: decoding result: %w", method, err)
			}
			return nil
		}
		e := resp.err
		retry := e.Retryable()
		if e.Code == CodeInternalError && !internalRetried && (e.Data == nil || e.Data.Retryable == nil) {
			retry, internalRetried = true, true
		}
		if !retry || attempt+1 >= attempts {
			return e
		}
		delay := backoff(pol, attempt)
		if e.Data != nil && e.Data.RetryAfterMs != nil {
			delay = max(delay, time.Duration(*e.Data.RetryAfterMs)*time.Millisecond)
		}
		delay = max(delay, resp.retryAfter)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return e
		case <-t.C:
		}
	}
}

func backoff(p RetryPolicy, attempt int) time.Duration {
	d := p.BaseDelay << min(attempt, 20)
	if d > p.MaxDelay || d <= 0 {
		d = p.MaxDelay
	}
	return time.Duration(rand.Int64N(int64(d)) + 1) // full jitter
}

// retrySafe reports whether repeating method is harmless (§7.10, §12.2).
func retrySafe(method string, params json.RawMessage) bool {
	switch method {
	case MethodIndexAdd, MethodFeedback, MethodMemoryBuild:
	default:
		return true
	}
	var p struct {
		Meta      Meta `json:"_meta"`
		Documents []struct {
			ID *string `json:"id"`
		} `json:"documents"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	var key string
	if p.Meta.Get(MetaIdempotencyKey, &key) && key != "" {
		return true
	}
	if method == MethodIndexAdd && len(p.Documents) > 0 {
		for _, d := range p.Documents {
			if d.ID == nil || *d.ID == "" {
				return false
			}
		}
		return true
	}
	return false
}

// once sends one request: it attaches _meta.progressToken when the context
// asks for progress and _meta.deadlineMs when it has a deadline (§16.2).
func (c *Client) once(ctx context.Context, cc *clientConn, method string, params json.RawMessage) (*response, error) {
	if !c.enter(cc) {
		return nil, errRetired
	}
	defer cc.calls.Done()
	id := c.nextID.Add(1)
	progress, _ := ctx.Value(progressKey{}).(func(ProgressParams))
	var token string
	extra := map[string]any{}
	if (progress != nil || c.opts.OnProgress != nil) && cc.init.Capabilities.Has(CapStreaming) {
		token = "p" + strconv.FormatInt(id, 10)
		extra[MetaProgressToken] = token
	}
	if dl, ok := ctx.Deadline(); ok && method != MethodInitialize {
		if ms := time.Until(dl).Milliseconds(); ms > 0 {
			extra[MetaDeadlineMs] = ms
		}
	}
	if progress == nil {
		progress = c.opts.OnProgress
	}
	if len(extra) > 0 {
		var err error
		if params, err = mergeMeta(params, extra); err != nil {
			return nil, fmt.Errorf("rcp: %s: %w", method, err)
		}
	}
	resp, err := cc.tr.roundTrip(ctx, id, method, params, token, progress)
	if err != nil {
		if ctx.Err() != nil {
			c.abandoned.Store(true)
			if method != MethodInitialize {
				// §7.14: tell the server; the late answer is discarded.
				cp, _ := json.Marshal(map[string]any{"id": id, "reason": "client context ended"})
				_ = cc.tr.notify(context.WithoutCancel(ctx), NotifyCancel, cp)
			}
		}
		return nil, fmt.Errorf("rcp: %s: %w", method, err)
	}
	if resp.err != nil && resp.err.Code == CodeTimeout {
		// The server gave up at the deadline we sent: its work may still be
		// winding down, and a command bounded by --timeout must not wait
		// the full grace for it either.
		c.abandoned.Store(true)
	}
	return resp, nil
}

// mergeMeta adds keys to params._meta (params must be an object).
func mergeMeta(params json.RawMessage, extra map[string]any) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil {
		return nil, fmt.Errorf("params must be a JSON object: %w", err)
	}
	if obj == nil {
		obj = map[string]json.RawMessage{}
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := obj["_meta"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, fmt.Errorf("_meta must be an object: %w", err)
		}
	}
	for k, v := range extra {
		if _, exists := meta[k]; exists && k == MetaDeadlineMs {
			continue // the caller's explicit budget wins
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		meta[k] = b
	}
	mb, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	obj["_meta"] = mb
	return json.Marshal(obj)
}

// decodeWireError turns a wire error object into *Error.
func decodeWireError(code int, msg string, data json.RawMessage) *Error {
	e := &Error{Code: Code(code), Message: msg}
	if len(data) > 0 && string(data) != "null" {
		var d ErrorData
		if json.Unmarshal(data, &d) == nil {
			e.Data = &d
		} else {
			e.Data = &ErrorData{Detail: string(data)}
		}
	}
	return e
}

// pendingCalls correlates responses with waiting calls by id.
type pendingCalls struct {
	mu       sync.Mutex
	calls    map[int64]chan *response
	progress map[string]func(ProgressParams)
	err      error // set once the transport is dead
}

func newPending() *pendingCalls {
	return &pendingCalls{calls: map[int64]chan *response{}, progress: map[string]func(ProgressParams){}}
}

func (p *pendingCalls) add(id int64, token string, fn func(ProgressParams)) (chan *response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	ch := make(chan *response, 1)
	p.calls[id] = ch
	if token != "" && fn != nil {
		p.progress[token] = fn
	}
	return ch, nil
}

func (p *pendingCalls) remove(id int64, token string) {
	p.mu.Lock()
	delete(p.calls, id)
	if token != "" {
		delete(p.progress, token)
	}
	p.mu.Unlock()
}

// deliver hands a response to its caller; late or unknown ids are dropped.
func (p *pendingCalls) deliver(id int64, r *response) bool {
	p.mu.Lock()
	ch, ok := p.calls[id]
	delete(p.calls, id)
	p.mu.Unlock()
	if ok {
		ch <- r
	}
	return ok
}

// failInFlight answers every waiting call with e (the transport stays up)
// and returns how many there were.
func (p *pendingCalls) failInFlight(e *Error) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.calls)
	for id, ch := range p.calls {
		ch <- &response{err: e}
		delete(p.calls, id)
	}
	return n
}

func (p *pendingCalls) progressFor(token string) func(ProgressParams) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.progress[token]
}

// fail marks the transport dead: every waiting call fails with err.
func (p *pendingCalls) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
	for id, ch := range p.calls {
		close(ch)
		delete(p.calls, id)
	}
}

func (p *pendingCalls) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		return ErrClosed
	}
	return p.err
}
