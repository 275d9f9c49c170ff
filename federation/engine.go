package federation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

// DialFunc opens a connected (initialized) client to one engine.
type DialFunc func(ctx context.Context) (*rcp.Client, error)

// Engine is a lazily connected handle on one federated engine. The first
// call that needs the engine dials it; a call that fails because the
// transport died (§13.1) drops the connection, and the next call dials
// again. The last successful handshake is remembered after the connection
// is gone, so an aggregator can keep advertising what the engine offered
// (§13.2) and fail calls with -32010 while it is down.
//
// An Engine is safe for concurrent use.
type Engine struct {
	spec EngineSpec
	dial DialFunc

	sem chan struct{} // one dial at a time

	mu      sync.Mutex
	client  *rcp.Client
	init    *rcp.InitializeResult // last successful handshake
	lastErr error
	closed  bool
}

// NewEngine returns a handle that connects with spec.Connect(opts).
func NewEngine(spec EngineSpec, opts *rcp.ClientOptions) *Engine {
	s := spec
	var o rcp.ClientOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxEngineResponse
	}
	opts = &o
	return NewEngineFunc(spec, func(ctx context.Context) (*rcp.Client, error) { return s.Connect(ctx, opts) })
}

// DefaultMaxEngineResponse bounds one engine answer read by the gateway
// (the default request frame of an RCP server): an engine is not trusted
// to size its hits.
const DefaultMaxEngineResponse = 16 << 20

// NewEngineFunc returns a handle that connects with dial; spec supplies the
// id, priority, weight and required flag (its transport fields are only
// used to expose an endpoint in catalog/list).
func NewEngineFunc(spec EngineSpec, dial DialFunc) *Engine {
	return &Engine{spec: spec, dial: dial, sem: make(chan struct{}, 1)}
}

// ID returns the engine's registry id.
func (e *Engine) ID() string { return e.spec.ID }

// Spec returns a copy of the engine's registry entry.
func (e *Engine) Spec() EngineSpec { return e.spec }

// Known returns the engine's last successful handshake (identity and
// capabilities), whether or not it is connected now.
func (e *Engine) Known() (rcp.InitializeResult, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.init == nil {
		return rcp.InitializeResult{}, false
	}
	return *e.init, true
}

// Connected reports whether the engine has a live connection.
func (e *Engine) Connected() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.client != nil
}

// LastError returns the error of the last failed dial or call (nil after a
// success).
func (e *Engine) LastError() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastErr
}

// Client returns the engine's client, dialling it when there is none.
// Concurrent callers share one dial.
func (e *Engine) Client(ctx context.Context) (*rcp.Client, error) {
	if c := e.current(); c != nil {
		return c, nil
	}
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("engine %s: %w", e.spec.ID, ctx.Err())
	}
	defer func() { <-e.sem }()
	if c := e.current(); c != nil { // another caller dialled meanwhile
		return c, nil
	}
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("engine %s: %w", e.spec.ID, rcp.ErrClosed)
	}
	c, err := e.dial(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.lastErr = err
		return nil, err
	}
	if e.closed { // Close raced with the dial
		go c.Close()
		return nil, fmt.Errorf("engine %s: %w", e.spec.ID, rcp.ErrClosed)
	}
	init := c.InitializeResult()
	e.client, e.init, e.lastErr = c, &init, nil
	return c, nil
}

func (e *Engine) current() *rcp.Client {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.client
}

// Discard drops c if it is still the engine's connection, so the next call
// reconnects. It is called after a transport failure; err is remembered.
func (e *Engine) Discard(c *rcp.Client, err error) {
	e.mu.Lock()
	mine := e.client == c && c != nil
	if mine {
		e.client = nil
	}
	if err != nil {
		e.lastErr = err
	}
	e.mu.Unlock()
	if mine {
		closeQuietly(c)
	}
}

// closeQuietly closes a client whose transport is already dead or no longer
// wanted without blocking the caller (closing a stdio client waits for the
// child process).
func closeQuietly(c *rcp.Client) {
	done := make(chan struct{})
	go func() { _ = c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(100 * time.Millisecond):
	}
}

// Do runs fn with the engine's client, dialling first when needed. When fn
// fails because the transport died, the connection is dropped so the next
// Do reconnects (the failed call is not retried: §13.1 says nothing is known
// about whether it took effect).
func (e *Engine) Do(ctx context.Context, fn func(*rcp.Client) error) error {
	c, err := e.Client(ctx)
	if err != nil {
		return err
	}
	err = fn(c)
	if err != nil && sessionLost(err) && ctx.Err() == nil {
		// The engine no longer knows our session (it restarted behind a
		// live HTTP endpoint): -32001 means the request was not processed,
		// so dial afresh and try once more.
		e.Discard(c, err)
		if c, err = e.Client(ctx); err != nil {
			return err
		}
		err = fn(c)
	}
	if err != nil && transportDead(err) {
		e.Discard(c, err)
	} else if err == nil {
		e.mu.Lock()
		e.lastErr = nil
		e.mu.Unlock()
	}
	return err
}

// Ping checks liveness (§7.15) over the engine's connection, dialling
// first when needed. A failed ping drops the connection.
func (e *Engine) Ping(ctx context.Context) error {
	c, err := e.Client(ctx)
	if err != nil {
		return err
	}
	if _, err := c.Ping(ctx, nil); err != nil {
		if _, isRCP := rcp.AsError(err); !isRCP || transportDead(err) || sessionLost(err) || ctx.Err() != nil {
			e.Discard(c, err)
		}
		return fmt.Errorf("engine %s: ping: %w", e.spec.ID, err)
	}
	return nil
}

// Close closes the engine's connection; the handle cannot dial again.
func (e *Engine) Close() error {
	e.mu.Lock()
	c := e.client
	e.client, e.closed = nil, true
	e.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Close()
}

// transportDead reports whether err means the connection is gone (§13.1).
func transportDead(err error) bool { return errors.Is(err, rcp.ErrClosed) }

// sessionLost reports whether the engine answered -32001 on a connection
// we had initialized: it forgot the session.
func sessionLost(err error) bool {
	var e *rcp.Error
	return errors.As(err, &e) && e.Code == rcp.CodeNotInitialized
}

// errorCode maps an engine failure to the RCP code a caller should see:
// the engine's own code when it answered with an error, -32014 when the
// client-side deadline elapsed, -32006 when the call was cancelled and
// -32010 for anything else (unreachable, transport death).
func errorCode(err error) rcp.Code {
	var e *rcp.Error
	switch {
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, context.DeadlineExceeded):
		return rcp.CodeTimeout
	case errors.Is(err, context.Canceled):
		return rcp.CodeCancelled
	}
	return rcp.CodeBackendUnavailable
}

// engineError converts an engine failure into an *rcp.Error naming the
// engine, keeping the engine's code (see errorCode).
func engineError(id string, err error) *rcp.Error {
	code := errorCode(err)
	out := &rcp.Error{Code: code, Message: fmt.Sprintf("engine %s failed", id), Data: &rcp.ErrorData{Detail: err.Error()}}
	var re *rcp.Error
	if errors.As(err, &re) {
		out.Message = fmt.Sprintf("engine %s: %s", id, re.Message)
		if re.Data != nil {
			d := *re.Data
			d.Detail = err.Error()
			out.Data = &d
		}
	}
	if code.Retryable() && out.Data.Retryable == nil {
		t := true
		out.Data.Retryable = &t
	}
	return out
}
