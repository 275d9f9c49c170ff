package rcp

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// requestContext is the context a handler runs under: the request's scope
// (Value), its deadline (§13.1) and its cancellation (§7.14), in one object.
// It replaces a stack of context.WithCancelCause, WithTimeoutCause,
// WithValue and AfterFunc, which allocates a dozen objects per request and
// registers three contexts with their parents; this one lives inside the
// request's call (one allocation for both), allocates its timer and (when
// asked for) its Done channel, and is ended by its session when the
// session's context ends instead of registering with it.
//
// It behaves as that stack did: Err is context.DeadlineExceeded after the
// deadline and context.Canceled after any other end; the deadline is the
// earlier of the server's and the parent's; contexts derived from it
// (context.WithCancel, WithTimeout, AfterFunc) end with it through its
// AfterFunc method, without a goroutine each; context.Cause reports why it
// ended (errCancelled, errTimeout, errTransportClosed…) as it did.
type requestContext struct {
	parent   context.Context // the session's
	scope    *requestScope
	deadline time.Time // zero: none of its own

	mu    sync.Mutex
	done  chan struct{} // made on first Done, or closedChan once ended
	err   error
	cause error
	timer *time.Timer
	hook  endHook      // the server's answer to an early end (onEnd)
	funcs []*afterFunc // run when the context ends
	// causer, set when the context ends with a cause other than its
	// error, is an ended context.WithCancelCause holding that cause: the
	// context package reads a cause only from its own contexts (Value).
	causer atomic.Value // context.Context
}

// endHook is what the server runs when a request's context ends before
// its handler returned: an interface, so that the call holding the context
// needs no closure for it.
type endHook interface{ contextEnded() }

// afterFunc is one function registered with requestContext.AfterFunc.
type afterFunc struct{ f func() }

// closedChan is the Done channel of a context that had ended before anyone
// asked for it.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// start makes c the context of a request under parent that ends after
// timeout (none when timeout <= 0), at once when parent has ended. It does
// not register with parent: whoever holds the request ends it when parent
// ends (a session does so for all its calls at once, see
// session.endCalls), which saves the registration and its three objects
// per request.
func (c *requestContext) start(parent context.Context, scope *requestScope, timeout time.Duration) {
	c.parent, c.scope = parent, scope
	if timeout > 0 {
		d := time.Now().Add(timeout)
		if pd, ok := parent.Deadline(); !ok || d.Before(pd) {
			c.deadline = d
		}
	}
	if parent.Err() != nil { // ends at once, as a child of parent would
		c.followParent()
		return
	}
	if !c.deadline.IsZero() {
		c.mu.Lock()
		if c.err == nil {
			c.timer = time.AfterFunc(time.Until(c.deadline), c.expire)
		}
		c.mu.Unlock()
	}
}

func (c *requestContext) followParent() { c.end(c.parent.Err(), context.Cause(c.parent)) }

func (c *requestContext) expire() { c.end(context.DeadlineExceeded, errTimeout) }

// cancel ends the context with cause (a client's cancel, a dead transport,
// or nil when the request is done).
func (c *requestContext) cancel(cause error) {
	if cause == nil {
		cause = context.Canceled
	}
	c.end(context.Canceled, cause)
}

// end ends the context once: it records why, closes Done, releases the
// timer, and starts every registered function in its own
// goroutine (as context.AfterFunc does).
func (c *requestContext) end(err, cause error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err, c.cause = err, cause
	if cause != err {
		causer, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		c.causer.Store(causer)
	}
	if c.done == nil {
		c.done = closedChan
	} else {
		close(c.done)
	}
	funcs, hook, timer := c.funcs, c.hook, c.timer
	c.funcs, c.hook = nil, nil
	c.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
	if hook != nil {
		go hook.contextEnded()
	}
	for _, a := range funcs {
		go a.f()
	}
}

// onEnd sets the hook the server runs (in its own goroutine) if the
// context ends before unhook: at once when it has already ended.
func (c *requestContext) onEnd(h endHook) {
	c.mu.Lock()
	ended := c.err != nil
	if !ended {
		c.hook = h
	}
	c.mu.Unlock()
	if ended {
		go h.contextEnded()
	}
}

// unhook drops the function set by onEnd.
func (c *requestContext) unhook() {
	c.mu.Lock()
	c.hook = nil
	c.mu.Unlock()
}

// Cause is why the context ended (nil while it runs).
func (c *requestContext) Cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

func (c *requestContext) Deadline() (time.Time, bool) {
	if !c.deadline.IsZero() {
		return c.deadline, true
	}
	return c.parent.Deadline()
}

func (c *requestContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *requestContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *requestContext) Value(key any) any {
	if _, ok := key.(scopeKey); ok {
		return c.scope
	}
	if causer, ok := c.causer.Load().(context.Context); ok {
		if v := causer.Value(key); v != nil {
			return v
		}
	}
	return c.parent.Value(key)
}

// AfterFunc arranges for f to run in its own goroutine once the context
// ends (at once if it has); stop unregisters f and reports whether it did
// so before f was started. context.AfterFunc and the contexts derived from
// this one use it.
func (c *requestContext) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	c.funcs = append(c.funcs, a)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.funcs {
			if x == a {
				c.funcs = append(c.funcs[:i], c.funcs[i+1:]...)
				return true
			}
		}
		return false
	}
}

// String names the context as the context package names its own.
func (c *requestContext) String() string { return "rcp.requestContext" }

var _ context.Context = (*requestContext)(nil)
