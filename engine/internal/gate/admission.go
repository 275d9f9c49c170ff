package gate

import (
	"context"
	"sync/atomic"
	"time"
)

// admission bounds the retrieves that run their pipeline at once, and
// bounds them tighter while writes come in.
//
// A pipeline is CPU work: more pipelines than cores only share the CPU.
// Up to Config.QueryConcurrency (default 2 × GOMAXPROCS) run at once: a
// pipeline also waits (page faults on mapped files, the read lock), and a
// few more than cores keep the cores busy. But a
// write is a chain of short steps — decoding, planning, then fsyncs in a
// group commit — and after each blocking step its goroutine needs a core
// again: with every core running a retrieve it queues behind them at
// every step, and an add under a retrieve load took 3–4× its time alone
// (bench/soak). So while writes come in — one is in flight, or one ended
// less than writeLinger ago — a retrieve also takes one of
// max(1, GOMAXPROCS − 1) write-time slots: one core stays free for the
// write path, the network and the fsyncs' returns. The linger covers the
// gaps of a stream of writes: a retrieve admitted wide in a gap would
// still be running when the next write of the stream arrives (a
// pipeline is not preempted); narrowing only while a write was in flight
// gave two thirds of the gain (docs/benchmarks.md). A retrieve that may
// wait on another process — a remote backend (Config.Backend), an
// external query embedder, a rerank stage (a cross-encoder or an LLM
// judge), an agentic plan — is admitted wide only: one slot would
// serialize such retrieves behind each other's round trips.
type admission struct {
	slots     chan struct{} // Config.QueryConcurrency
	narrow    chan struct{} // max(1, GOMAXPROCS − 1): taken too while writes come in
	writing   atomic.Int32  // writes between their start and their answer
	lastWrite atomic.Int64  // when the last write ended (Unix nanoseconds)
	linger    int64         // writeLinger in nanoseconds (tests lengthen it)
}

// writeLinger is how long after a write retrieves stay narrowed.
const writeLinger = 250 * time.Millisecond

// newAdmission admits concurrency retrieves at once (0: 2 × cores), and
// max(1, cores − 1) while writes come in.
func newAdmission(concurrency, cores int) *admission {
	if concurrency <= 0 {
		concurrency = 2 * cores
	}
	return &admission{slots: make(chan struct{}, concurrency), narrow: make(chan struct{}, max(1, cores-1)), linger: int64(writeLinger)}
}

// admit takes a slot (and, for a local retrieve, a write-time slot while
// writes come in), waiting for them until ctx ends; narrowed says which,
// for release. A free slot is taken without asking ctx for its Done
// channel, which a request context makes on first use. Neither allocates:
// it runs on every retrieve.
func (a *admission) admit(ctx context.Context, local bool) (narrowed bool, err error) {
	if err := acquire(ctx, a.slots); err != nil {
		return false, err
	}
	if !local || !a.writesComing() {
		return false, nil
	}
	if err := acquire(ctx, a.narrow); err != nil {
		<-a.slots
		return false, err
	}
	return true, nil
}

// release gives back what admit took.
func (a *admission) release(narrowed bool) {
	if narrowed {
		<-a.narrow
	}
	<-a.slots
}

// beginWrite marks a write in flight until endWrite.
func (a *admission) beginWrite() { a.writing.Add(1) }

func (a *admission) endWrite() {
	a.lastWrite.Store(time.Now().UnixNano())
	a.writing.Add(-1)
}

// writesComing reports whether a write is in flight or ended within the
// linger; an engine that has never written reads no clock.
func (a *admission) writesComing() bool {
	if a.writing.Load() > 0 {
		return true
	}
	last := a.lastWrite.Load()
	return last != 0 && time.Now().UnixNano()-last < a.linger
}

func acquire(ctx context.Context, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	default:
	}
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
