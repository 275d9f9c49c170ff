package readiness

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/internal/fault"
	"github.com/rcpgo/rcpgo/rcp"
)

// fake is a structure whose observation the test sets.
type fake struct {
	mu sync.Mutex
	o  Observation
}

func (f *fake) set(o Observation) { f.mu.Lock(); f.o = o; f.mu.Unlock() }
func (f *fake) probe() Observation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.o
}

func TestStates(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Observation
		want string
	}{
		{"built and current", Observation{Built: true, Current: true}, rcp.StateReady},
		{"built and behind", Observation{Built: true}, rcp.StateStale},
		{"first build", Observation{Phase: "fit"}, rcp.StateBuilding},
		{"nothing to build from", Observation{Waiting: "LSA needs ≥ 20 documents; 1 indexed"}, rcp.StateWaiting},
		{"built wins over waiting", Observation{Built: true, Current: true, Waiting: "x"}, rcp.StateReady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New()
			f := &fake{o: tc.o}
			b.Add("s", "the structure", f.probe)
			s, ok := b.State("s")
			if !ok || s.State != tc.want {
				t.Fatalf("state %q, want %q", s.State, tc.want)
			}
			if tc.want == rcp.StateWaiting && s.Detail != tc.o.Waiting {
				t.Fatalf("detail %q", s.Detail)
			}
			if got := b.Readiness()["s"].State; got != tc.want {
				t.Fatalf("Readiness: %q", got)
			}
		})
	}
}

// Work reported as what is left becomes progress against the episode's
// peak, with an estimate of the time left; a settled structure starts a
// new episode.
func TestProgressFromRemaining(t *testing.T) {
	b := New()
	now := time.Unix(1000, 0)
	b.now = func() time.Time { return now }
	f := &fake{}
	b.Add("graph", "the knowledge graph", f.probe)
	f.set(Observation{Remaining: 100, Unit: "documents"})
	if s, _ := b.State("graph"); s.Done != 0 || s.Total != 100 {
		t.Fatalf("%+v", s)
	}
	now = now.Add(2 * time.Second)
	f.set(Observation{Remaining: 60, Unit: "documents"})
	s, _ := b.State("graph")
	if s.Done != 40 || s.Total != 100 || s.ETAMs != 3000 {
		t.Fatalf("%+v: want 40/100, 3 s left", s)
	}
	f.set(Observation{Built: true, Current: true})
	if s, _ := b.State("graph"); s.State != rcp.StateReady || s.Total != 0 {
		t.Fatalf("%+v", s)
	}
	f.set(Observation{Built: true, Remaining: 5})
	if s, _ := b.State("graph"); s.State != rcp.StateStale || s.Total != 5 {
		t.Fatalf("a new episode: %+v", s)
	}
	f.set(Observation{Phase: "embed", Done: 3, Total: 9})
	if s, _ := b.State("graph"); s.Done != 3 || s.Total != 9 {
		t.Fatalf("explicit progress: %+v", s)
	}
}

// A call waits for a structure's first build within its deadline.
func TestWaitForFirstBuild(t *testing.T) {
	b := New()
	f := &fake{o: Observation{Phase: "extract"}}
	b.Add("graph", "the knowledge graph", f.probe)
	go func() {
		time.Sleep(50 * time.Millisecond)
		f.set(Observation{Built: true})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := b.Wait(ctx, "graph", "unregistered")
	if err != nil {
		t.Fatal(err)
	}
	if got["graph"].State != rcp.StateStale {
		t.Fatalf("%+v", got)
	}
	if n := Note("the knowledge graph", got["graph"]); !strings.Contains(n, "recent writes") {
		t.Fatalf("stale note %q", n)
	}
	if n := Note("x", rcp.DerivedState{State: rcp.StateReady}); n != "" {
		t.Fatalf("ready note %q", n)
	}
}

// Past the deadline the call gets -32010, retryable with retryAfterMs,
// early enough to be answered before the deadline.
func TestWaitAnswersBeforeTheDeadline(t *testing.T) {
	b := New()
	f := &fake{o: Observation{Phase: "embed", Done: 1, Total: 4, Unit: "units"}}
	b.Add("dense", "the dense index", f.probe)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := b.Wait(ctx, "dense")
	took := time.Since(start)
	var e *fault.Error
	if !errors.As(err, &e) || !errors.Is(err, ErrBuilding) || e.RetryAfterMs < 250 {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(e.Detail, "1/4 units") {
		t.Fatalf("detail %q", e.Detail)
	}
	if took >= 300*time.Millisecond || ctx.Err() != nil {
		t.Fatalf("answered after %v: past the deadline", took)
	}
}

// A structure waiting for data is refused at once, not retryable.
func TestWaitOnWaitingStructure(t *testing.T) {
	b := New()
	b.Add("dense", "the dense index", func() Observation { return Observation{Waiting: "LSA needs ≥ 20 documents; 1 indexed"} })
	_, err := b.Wait(context.Background(), "dense")
	var e *fault.Error
	if !errors.As(err, &e) || !errors.Is(err, ErrWaiting) || !strings.Contains(e.Detail, "1 indexed") {
		t.Fatalf("%v", err)
	}
}

func TestWaitCancelled(t *testing.T) {
	b := New()
	b.Add("tree", "the summary tree", func() Observation { return Observation{} })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(30 * time.Millisecond); cancel() }()
	if _, err := b.Wait(ctx, "tree"); err != context.Canceled {
		t.Fatalf("%v", err)
	}
}
