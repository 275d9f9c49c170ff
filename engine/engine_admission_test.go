package engine

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/rcp"
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

// An index/add marks a write in flight for the engine's admission until
// it is answered.
func TestIndexAddNarrowsAdmission(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone })
	if e.admit.writesComing() {
		t.Fatal("writes coming before any write")
	}
	add := []byte(`{"documents":[{"id":"w1","text":"a zeppelin over the eiffel tower"}]}`)
	if _, err := e.Call(context.Background(), rcp.MethodIndexAdd, add); err != nil {
		t.Fatal(err)
	}
	if e.admit.writing.Load() != 0 || !e.admit.writesComing() {
		t.Fatalf("after an add: writing %d, coming %v; want 0, true", e.admit.writing.Load(), e.admit.writesComing())
	}
}

// While writes come in and the write-time slots are taken, a retrieve that
// waits on another process — a rerank stage (a model call), or any
// retrieve over a Config.Backend (a network search; before, those were
// narrowed like local ones) — is still admitted; a plain local one waits.
func TestRemoteRetrievesAdmittedWide(t *testing.T) {
	remote, err := index.Open(context.Background(), filepath.Join(t.TempDir(), "remote"), index.Options{NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	for _, tc := range []struct {
		name     string
		cfg      func(*Config)
		wide     string // a retrieve admitted while writing
		narrowed string // one that waits for a write-time slot ("": none)
	}{
		{"rerank stage", func(c *Config) { c.Dense = DenseNone; c.Reranker = lengthScorer{&calls} },
			`{"query":"eiffel tower","k":3,"rerank":{"method":"cross-encoder","topN":5}}`,
			`{"query":"eiffel tower","k":3,"rerank":false}`},
		{"remote backend", func(c *Config) { c.Backend, c.Dense = remote, "" },
			`{"query":"eiffel tower","k":3}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, tc.cfg)
			e.admit.beginWrite()
			defer e.admit.endWrite()
			for range cap(e.admit.narrow) {
				e.admit.narrow <- struct{}{}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := e.Call(ctx, rcp.MethodRetrieve, []byte(tc.wide)); err != nil {
				t.Fatalf("a retrieve calling out while the write-time slots are taken: %v", err)
			}
			if tc.narrowed == "" {
				return
			}
			short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancelShort()
			if _, err := e.Call(short, rcp.MethodRetrieve, []byte(tc.narrowed)); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("a plain retrieve with no write-time slot: err = %v, want the deadline", err)
			}
		})
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
