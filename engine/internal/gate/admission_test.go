package gate

import (
	"context"
	"errors"
	"testing"
	"time"
)

// admitWithin reports whether a retrieve (local: calling no remote model)
// is admitted before a short deadline, and gives its slots back.
func admitWithin(t *testing.T, a *admission, local bool) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	narrowed, err := a.admit(ctx, local)
	if errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	a.release(narrowed)
	return true
}

// Retrieves are admitted up to the concurrency; while writes come in (one
// in flight, or one ended within writeLinger), only max(1, cores − 1) of
// them, so that a core stays free for the write path.
func TestAdmissionNarrowsWhileWriting(t *testing.T) {
	a := newAdmission(0, 3)     // 6 slots, 2 while writing
	a.linger = int64(time.Hour) // "right after a write" however slow the machine
	var held []func()
	take := func() {
		t.Helper()
		narrowed, err := a.admit(context.Background(), true)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, func() { a.release(narrowed) })
	}
	for range 4 {
		take()
	}
	if !admitWithin(t, a, true) {
		t.Fatal("a fifth retrieve waited with 6 slots and no write")
	}
	for _, r := range held {
		r()
	}
	held = nil

	a.beginWrite()
	take()
	take()
	if admitWithin(t, a, true) {
		t.Fatal("a third retrieve was admitted while a write was in flight (2 write-time slots)")
	}
	if !admitWithin(t, a, false) {
		t.Fatal("a retrieve calling a remote model waited for a write-time slot")
	}
	a.endWrite()
	if admitWithin(t, a, true) {
		t.Fatal("a third retrieve was admitted right after a write (writeLinger)")
	}
	held[0]()
	if !admitWithin(t, a, true) {
		t.Fatal("a released write-time slot was not reused")
	}
	a.lastWrite.Store(time.Now().Add(-2 * time.Hour).UnixNano())
	if !admitWithin(t, a, true) {
		t.Fatal("retrieves stayed narrowed after the writes stopped")
	}
	held[1]()
	if len(a.slots) != 0 || len(a.narrow) != 0 {
		t.Fatalf("slots left taken: %d wide, %d narrow", len(a.slots), len(a.narrow))
	}
}

// One core: one retrieve at a time while writing, never none.
func TestAdmissionOneCore(t *testing.T) {
	a := newAdmission(0, 1)
	a.beginWrite()
	defer a.endWrite()
	if !admitWithin(t, a, true) {
		t.Fatal("no retrieve admitted on one core while writing")
	}
}

// Admitting and releasing a retrieve allocates nothing (the retrieve hot
// path, issue 15 acceptance 3), with writes coming in or not.
func TestAdmissionAllocatesNothing(t *testing.T) {
	a := newAdmission(0, 2)
	ctx := context.Background()
	run := func() {
		narrowed, err := a.admit(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		a.release(narrowed)
	}
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("without writes: %v allocations per retrieve", n)
	}
	a.beginWrite()
	defer a.endWrite()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("while writing: %v allocations per retrieve", n)
	}
}
