package rcp

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// newRequestContext is a request context under parent that follows parent
// as a session makes its calls follow the session's context (endCalls).
func newRequestContext(parent context.Context, scope *requestScope, timeout time.Duration) *requestContext {
	c := &requestContext{}
	c.start(parent, scope, timeout)
	context.AfterFunc(parent, c.followParent)
	return c
}

// hookFunc is an endHook running a function.
type hookFunc func()

func (f hookFunc) contextEnded() { f() }

// waitDone fails t unless ctx ends within a generous bound (the bound only
// catches a hang; no test here measures time).
func waitDone(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("context did not end")
	}
}

// A request context past its deadline ends as context.WithTimeoutCause
// did: Err DeadlineExceeded, cause errTimeout, and what derives from it
// (WithCancel, AfterFunc) ends too, with DeadlineExceeded.
func TestRequestContextDeadline(t *testing.T) {
	before := time.Now()
	rc := newRequestContext(context.Background(), nil, 30*time.Millisecond)
	dl, ok := rc.Deadline()
	if !ok || dl.Before(before) {
		t.Fatalf("Deadline() = %v, %v", dl, ok)
	}
	child, cancel := context.WithCancel(rc)
	defer cancel()
	ran := make(chan struct{})
	context.AfterFunc(rc, func() { close(ran) })
	waitDone(t, rc)
	if !errors.Is(rc.Err(), context.DeadlineExceeded) || !errors.Is(rc.Cause(), errTimeout) || context.Cause(rc) != errTimeout {
		t.Fatalf("Err %v, Cause %v, context.Cause %v; want DeadlineExceeded, errTimeout", rc.Err(), rc.Cause(), context.Cause(rc))
	}
	waitDone(t, child)
	if !errors.Is(child.Err(), context.DeadlineExceeded) || context.Cause(child) != errTimeout {
		t.Fatalf("derived context: Err %v, Cause %v; want DeadlineExceeded, errTimeout", child.Err(), context.Cause(child))
	}
	if cdl, ok := child.Deadline(); !ok || !cdl.Equal(dl) {
		t.Fatalf("derived context: Deadline %v, %v; want %v", cdl, ok, dl)
	}
	waitDone(t, contextOf(ran))
}

// contextOf is a context that ends when ch is closed.
func contextOf(ch chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-ch; cancel() }()
	return ctx
}

// cancel ends a request context with Err Canceled and the given cause;
// functions registered before run, functions stopped in time do not, and
// one registered after the end runs at once.
func TestRequestContextCancel(t *testing.T) {
	rc := newRequestContext(context.Background(), nil, time.Hour)
	ran := make(chan string, 3)
	context.AfterFunc(rc, func() { ran <- "registered" })
	stop := context.AfterFunc(rc, func() { ran <- "stopped" })
	if !stop() {
		t.Fatal("stop before the end reported false")
	}
	child, cancelChild := context.WithCancel(rc)
	defer cancelChild()
	rc.cancel(errCancelled)
	rc.cancel(errTransportClosed) // a second end changes nothing
	if !errors.Is(rc.Err(), context.Canceled) || !errors.Is(rc.Cause(), errCancelled) || context.Cause(rc) != errCancelled {
		t.Fatalf("Err %v, Cause %v, context.Cause %v; want Canceled, errCancelled", rc.Err(), rc.Cause(), context.Cause(rc))
	}
	waitDone(t, child)
	if !errors.Is(child.Err(), context.Canceled) || context.Cause(child) != errCancelled {
		t.Fatalf("derived: Err %v, Cause %v", child.Err(), context.Cause(child))
	}
	if got := <-ran; got != "registered" {
		t.Fatalf("ran %q", got)
	}
	late := context.AfterFunc(rc, func() { ran <- "late" })
	if got := <-ran; got != "late" {
		t.Fatalf("ran %q", got)
	}
	if late() {
		t.Fatal("stop after the end reported true")
	}
	select {
	case got := <-ran:
		t.Fatalf("unexpected run of %q", got)
	default:
	}
	if rc := newRequestContext(context.Background(), nil, 0); rc.Err() != nil {
		t.Fatal("a fresh context has ended")
	} else if _, ok := rc.Deadline(); ok {
		t.Fatal("no timeout, no parent deadline: Deadline reported one")
	} else {
		rc.cancel(nil)
		if !errors.Is(rc.Cause(), context.Canceled) || context.Cause(rc) != context.Canceled {
			t.Fatalf("cancel(nil): cause %v, context.Cause %v; want Canceled", rc.Cause(), context.Cause(rc))
		}
	}
}

// The parent's end (a dead transport) ends the request context with the
// parent's error and cause, at creation when it has already ended; an
// earlier parent deadline is the request's.
func TestRequestContextParent(t *testing.T) {
	parent, cancel := context.WithCancelCause(context.Background())
	rc := newRequestContext(parent, nil, time.Hour)
	cancel(errTransportClosed)
	waitDone(t, rc)
	if !errors.Is(rc.Err(), context.Canceled) || !errors.Is(rc.Cause(), errTransportClosed) || context.Cause(rc) != errTransportClosed {
		t.Fatalf("Err %v, Cause %v, context.Cause %v", rc.Err(), rc.Cause(), context.Cause(rc))
	}
	late := newRequestContext(parent, nil, time.Hour)
	if !errors.Is(late.Cause(), errTransportClosed) {
		t.Fatalf("created under an ended parent: cause %v", late.Cause())
	}

	pdl := time.Now().Add(time.Hour)
	dparent, dcancel := context.WithDeadline(context.Background(), pdl)
	defer dcancel()
	if dl, _ := newRequestContext(dparent, nil, 2*time.Hour).Deadline(); !dl.Equal(pdl) {
		t.Fatalf("parent deadline earlier: Deadline %v, want %v", dl, pdl)
	}
	if dl, _ := newRequestContext(dparent, nil, time.Minute).Deadline(); !dl.Before(pdl) {
		t.Fatalf("own deadline earlier: Deadline %v, want before %v", dl, pdl)
	}
}

type otherKey struct{}

// Value answers the request scope itself and asks the parent for the rest.
func TestRequestContextValue(t *testing.T) {
	scope := &requestScope{method: MethodRetrieve}
	parent := context.WithValue(context.Background(), otherKey{}, "v")
	rc := newRequestContext(parent, scope, 0)
	if rc.Value(scopeKey{}) != scope || rc.Value(otherKey{}) != "v" {
		t.Fatalf("Value: %v %v", rc.Value(scopeKey{}), rc.Value(otherKey{}))
	}
	if got := RequestMeta(context.WithValue(rc, otherKey{}, "w")); got != nil {
		t.Fatalf("RequestMeta through a derived context: %v", got)
	}
}

// The server's hook runs once when the context ends early, and not after
// unhook.
func TestRequestContextHook(t *testing.T) {
	rc := newRequestContext(context.Background(), nil, time.Hour)
	fired := make(chan struct{}, 2)
	rc.onEnd(hookFunc(func() { fired <- struct{}{} }))
	rc.cancel(errCancelled)
	rc.cancel(errCancelled)
	waitDone(t, contextOf(chanOf(fired)))
	quiet := newRequestContext(context.Background(), nil, time.Hour)
	quiet.onEnd(hookFunc(func() { t.Error("hook ran after unhook") }))
	quiet.unhook()
	quiet.cancel(nil)
	ended := newRequestContext(context.Background(), nil, time.Hour)
	ended.cancel(errCancelled)
	ended.onEnd(hookFunc(func() { fired <- struct{}{} })) // already ended: runs at once
	waitDone(t, contextOf(chanOf(fired)))
}

// chanOf is closed once a value arrives on ch.
func chanOf(ch chan struct{}) chan struct{} {
	out := make(chan struct{})
	go func() { <-ch; close(out) }()
	return out
}

// Concurrent ends, Done, Err and registrations are safe (run with -race)
// and every registered function runs exactly once.
func TestRequestContextConcurrent(t *testing.T) {
	for range 50 {
		parent, cancelParent := context.WithCancelCause(context.Background())
		rc := newRequestContext(parent, nil, time.Millisecond)
		var wg sync.WaitGroup
		var mu sync.Mutex
		runs := 0
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				switch i % 4 {
				case 0:
					rc.cancel(errCancelled)
				case 1:
					cancelParent(errTransportClosed)
				case 2:
					<-rc.Done()
					_ = rc.Err()
				default:
					done := make(chan struct{})
					context.AfterFunc(rc, func() { mu.Lock(); runs++; mu.Unlock(); close(done) })
					<-done
				}
			}()
		}
		wg.Wait()
		cancelParent(nil)
		if rc.Err() == nil || rc.Cause() == nil || runs != 2 {
			t.Fatalf("Err %v, Cause %v, runs %d", rc.Err(), rc.Cause(), runs)
		}
	}
}
