// Package within bounds the waits of tests. A test that waits for a
// goroutine, a handler or a process waits through Recv or Wait, so that a
// deadlock in the code under test fails that test with a message saying
// what never happened, instead of hanging the package until the test
// binary's -timeout panics with every goroutine's stack.
//
// Call them on the test's goroutine only: they end the test with Fatalf.
package within

import (
	"sync"
	"testing"
	"time"
)

// Patience is how long a wait lasts before it fails: far beyond what any
// awaited step takes, even on a loaded 2-core machine.
const Patience = 2 * time.Minute

// Recv returns the next value from ch, failing tb (what names the awaited
// event) when none arrives within Patience.
func Recv[T any](tb testing.TB, ch <-chan T, what string) T {
	tb.Helper()
	return RecvIn(tb, Patience, ch, what)
}

// RecvIn is Recv with its own deadline.
func RecvIn[T any](tb testing.TB, d time.Duration, ch <-chan T, what string) T {
	tb.Helper()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case v := <-ch:
		return v
	case <-t.C:
		tb.Fatalf("waited %v for %s", d, what)
		panic("unreachable")
	}
}

// Wait waits for wg, failing tb when it is not done within Patience.
func Wait(tb testing.TB, wg *sync.WaitGroup, what string) {
	tb.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	Recv(tb, done, what)
}
