// Package outcome holds the result of work that finishes once — the
// integrity checks an engine runs after Open, say — for the callers that
// wait for it.
package outcome

import (
	"context"
	"sync/atomic"
)

// Outcome is the result of work that finishes once. Create it with New;
// the worker calls Finish exactly once, and any number of callers Wait.
type Outcome struct {
	done   chan struct{}
	passed atomic.Bool // finished without an error: Wait's path without a channel
	err    error       // set before done is closed
}

// New returns an unfinished Outcome.
func New() *Outcome { return &Outcome{done: make(chan struct{})} }

// Finished returns an Outcome that has finished with err.
func Finished(err error) *Outcome {
	o := New()
	o.Finish(err)
	return o
}

// Finish records err (nil: success) and releases the waiters. It panics
// if called twice.
func (o *Outcome) Finish(err error) {
	o.err = err
	o.passed.Store(err == nil)
	close(o.done)
}

// Wait returns the work's error once it has finished, or ctx's error if
// ctx ends first.
func (o *Outcome) Wait(ctx context.Context) error {
	if err, finished := o.Result(); finished {
		return err
	}
	select {
	case <-o.done:
		return o.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Result returns the work's error and whether it has finished, without
// waiting.
func (o *Outcome) Result() (err error, finished bool) {
	if o.passed.Load() {
		return nil, true
	}
	select {
	case <-o.done:
		return o.err, true
	default:
		return nil, false
	}
}

// Passed reports whether the work has finished without an error, without
// waiting (a fast path for callers on every request).
func (o *Outcome) Passed() bool { return o.passed.Load() }

// Done is closed when the work has finished.
func (o *Outcome) Done() <-chan struct{} { return o.done }
