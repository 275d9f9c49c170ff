// Package readiness tracks the structures an engine derives from its index
// in the background — a dense generation with its HNSW index, a knowledge
// graph, its communities, a summary tree — so that a call never answers an
// empty success while one is still being built, and operators see how far
// a build is.
//
// Each structure is registered with a probe that observes it on demand
// (nothing is pushed by the builders, so the builders stay unaware of
// it). A structure is
//
//   - waiting: nothing can be built yet (the probe says why);
//   - building: its first build (or a rebuild after it was withdrawn) is
//     in progress, nothing is served from it;
//   - ready: built and current with every acknowledged write;
//   - stale: built and served, behind recent writes while it is updated.
//
// Wait blocks a call on a structure that is not built until it is, within
// the call's deadline; past it the call gets -32010 with retryAfterMs.
package readiness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rcpgo/rcpgo/engine/internal/fault"
	"github.com/rcpgo/rcpgo/rcp"
)

// Observation is what a probe sees of its structure now.
type Observation struct {
	// Built: a usable structure exists (served, possibly behind writes).
	// A structure with nothing to build from but already correct (the
	// graph of an empty corpus) is built.
	Built bool
	// Current: it reflects every acknowledged write.
	Current bool
	// Waiting, when not built, says why nothing can be built yet ("LSA
	// needs ≥ 20 documents; 1 indexed"); empty: a build is due or running.
	Waiting string
	// Phase names the step in progress ("fit", "embed", "extract", …).
	Phase string
	// Done and Total count the work in progress in Unit. When the builder
	// knows only what is left, it sets Remaining instead and the board
	// derives Done and Total from the largest Remaining of the episode.
	Done, Total int64
	Remaining   int64
	Unit        string
	// Detail is shown as is (what is behind, what is being done).
	Detail string
}

// Probe observes one structure. It is called on demand (status requests,
// waiting calls every few tens of milliseconds) and must be cheap.
type Probe func() Observation

// Board holds the structures of one engine. The zero value is not usable;
// call New.
type Board struct {
	mu      sync.Mutex
	entries []*entry
	now     func() time.Time
}

type entry struct {
	name, label string
	probe       Probe
	// The current episode of work (from when the structure was last seen
	// settled): its start and the largest Remaining seen in it.
	since time.Time
	peak  int64
}

// New returns an empty board.
func New() *Board { return &Board{now: time.Now} }

// Add registers a structure: name is its key in rcp.Readiness ("dense",
// "graph", …), label how errors and notes name it ("the knowledge graph").
func (b *Board) Add(name, label string, probe Probe) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.entries = append(b.entries, &entry{name: name, label: label, probe: probe})
}

// Readiness returns every structure's state.
func (b *Board) Readiness() rcp.Readiness {
	b.mu.Lock()
	entries := b.entries
	b.mu.Unlock()
	out := make(rcp.Readiness, len(entries))
	for _, e := range entries {
		out[e.name] = b.state(e)
	}
	return out
}

// State returns one structure's state; ok is false when name is not
// registered.
func (b *Board) State(name string) (rcp.DerivedState, bool) {
	e := b.find(name)
	if e == nil {
		return rcp.DerivedState{}, false
	}
	return b.state(e), true
}

func (b *Board) find(name string) *entry {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.entries {
		if e.name == name {
			return e
		}
	}
	return nil
}

// state observes e and derives its state and progress.
func (b *Board) state(e *entry) rcp.DerivedState {
	o := e.probe()
	s := rcp.DerivedState{Phase: o.Phase, Unit: o.Unit, Detail: o.Detail}
	switch {
	case o.Built && o.Current:
		s.State = rcp.StateReady
	case o.Built:
		s.State = rcp.StateStale
	case o.Waiting != "":
		s.State, s.Detail = rcp.StateWaiting, o.Waiting
	default:
		s.State = rcp.StateBuilding
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.Settled() {
		e.since, e.peak = time.Time{}, 0
		return s
	}
	if e.since.IsZero() {
		e.since = now
	}
	s.Done, s.Total = o.Done, o.Total
	if o.Total == 0 && o.Remaining > 0 {
		e.peak = max(e.peak, o.Remaining)
		s.Done, s.Total = e.peak-o.Remaining, e.peak
	}
	if s.Total > 0 && s.Done > 0 && s.Done < s.Total {
		spent := now.Sub(e.since)
		s.ETAMs = int64(float64(spent.Milliseconds()) * float64(s.Total-s.Done) / float64(s.Done))
	}
	return s
}

// Settled reports whether no structure is building or stale.
func (b *Board) Settled() bool { return b.Readiness().Settled() }

// Poll bounds of Wait: it observes every pollMin at first, backing off to
// pollMax.
const (
	pollMin = 10 * time.Millisecond
	pollMax = 200 * time.Millisecond
	// NoDeadlineWait bounds a Wait whose context has no deadline (an
	// in-process call): nothing waits forever.
	NoDeadlineWait = 30 * time.Second
)

// Wait waits until the structures named are built (ready or stale) and
// returns their states. It gives up early enough to answer within ctx's
// deadline (keeping a reserve of a twentieth of the time left, at least
// 50 ms; NoDeadlineWait without one), with -32010: retryable with
// retryAfterMs while building, not retryable while waiting (more data is
// needed, not more time). Names not registered are ignored.
func (b *Board) Wait(ctx context.Context, names ...string) (map[string]rcp.DerivedState, error) {
	deadline := b.now().Add(Budget(ctx, b.now()))
	out := make(map[string]rcp.DerivedState, len(names))
	poll := pollMin
	for _, name := range names {
		e := b.find(name)
		if e == nil {
			continue
		}
		for {
			s := b.state(e)
			if s.State == rcp.StateReady || s.State == rcp.StateStale {
				out[name] = s
				break
			}
			if s.State == rcp.StateWaiting {
				return nil, NotReady(e.label, s)
			}
			if !b.now().Add(poll).Before(deadline) {
				return nil, NotReady(e.label, s)
			}
			t := time.NewTimer(poll)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
			poll = min(2*poll, pollMax)
		}
	}
	return out, nil
}

// Budget is how long a call may wait for a structure at now: until ctx's
// deadline less a reserve to answer in (a twentieth of the time left, at
// least 50 ms), or NoDeadlineWait when ctx has none.
func Budget(ctx context.Context, now time.Time) time.Duration {
	d, ok := ctx.Deadline()
	if !ok {
		return NoDeadlineWait
	}
	left := d.Sub(now)
	return left - max(left/20, 50*time.Millisecond)
}

// Errors the engine's error table translates (-32010).
var (
	// ErrBuilding: the structure is being built; retry after the
	// fault.Error's RetryAfterMs.
	ErrBuilding = errors.New("not built yet")
	// ErrWaiting: the structure cannot be built until more data comes;
	// retrying sooner does not help.
	ErrWaiting = errors.New("cannot be built yet")
)

// NotReady is the error a call gets on a structure (named label) that is
// not built, in state s: ErrBuilding with retryAfterMs while it is
// building, ErrWaiting while it waits for data.
func NotReady(label string, s rcp.DerivedState) error {
	if s.State == rcp.StateWaiting {
		return &fault.Error{Err: ErrWaiting, Message: label + " cannot be built yet", Detail: s.Detail}
	}
	after := int64(1000)
	if s.ETAMs > 0 {
		after = min(max(s.ETAMs, 250), 60_000)
	}
	detail := label + " is being built"
	if s.Phase != "" {
		detail += " (" + s.Phase
		if s.Total > 0 {
			detail += fmt.Sprintf(": %d/%d %s", s.Done, s.Total, s.Unit)
		}
		detail += ")"
	}
	if s.Detail != "" {
		detail += "; " + s.Detail
	}
	return &fault.Error{Err: ErrBuilding, Message: label + " is not built yet",
		Detail: detail + "; retry after retryAfterMs", RetryAfterMs: after}
}

// Note is the usage note of an answer served from a stale structure ("" when
// it is ready).
func Note(label string, s rcp.DerivedState) string {
	if s.State != rcp.StateStale {
		return ""
	}
	n := label + " is being updated for recent writes; this answer reflects it as of its last update"
	if s.Detail != "" {
		n += " (" + s.Detail + ")"
	}
	return n
}
