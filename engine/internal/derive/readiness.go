package derive

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rcpgo/rcpgo/engine/internal/readiness"
	"github.com/rcpgo/rcpgo/rcp"
)

// Name and Label name the dense index among the derived structures
// (rcp.Readiness).
const (
	Name  = "dense"
	Label = "the dense index"
)

// deriveState is what the deriver records for readiness at each step (its
// own fields are not safe to read from other goroutines).
type deriveState struct {
	buildDue    atomic.Bool  // a new generation is due (first fit, refit, rebuild)
	backfilling atomic.Bool  // the dense log is being backfilled from the index
	backfilled  atomic.Int64 // units backfilled so far
	fitFailed   atomic.Int64 // corpus size of the last failed LSA fit (0: none)
}

// note records what is due (called by the deriver at each step).
func (dv *deriver) note(g *Generation) {
	s := &dv.state
	s.backfilling.Store(dv.backfill != nil)
	if dv.backfill != nil {
		s.backfilled.Store(int64(dv.backfill.units))
	}
	s.buildDue.Store(dv.backfill == nil && dv.buildDue(g))
	s.fitFailed.Store(int64(dv.failedAt))
}

// probe observes the published generation and the deriver (readiness).
func (d *Dense) probe() readiness.Observation {
	if d.remote != nil {
		return readiness.Observation{Built: true, Current: true} // the backend holds the vectors
	}
	var o readiness.Observation
	st := &d.deriver.state
	var building uint64
	if p := d.deriver.progress.Load(); p != nil {
		b := p.snapshot()
		o.Phase, o.Done, o.Total, o.Unit, building = b.Phase, int64(b.Done), int64(b.Total), "units", b.Generation
	}
	if st.backfilling.Load() {
		o.Phase, o.Done, o.Total, o.Unit = "backfill", st.backfilled.Load(), int64(d.ix.Stats().Docs), "units"
	}
	g := d.gen.Load()
	if g == nil {
		o.Waiting = d.Waiting()
		return o
	}
	select {
	case <-g.ready:
		o.Built = g.loadErr == nil
	default:
		o.Phase = "load" // the published generation's model and checkpoint
		return o
	}
	backlog := d.Backlog(g)
	o.Current = backlog == 0 && o.Phase == "" && !st.buildDue.Load()
	switch {
	case o.Phase != "":
		o.Detail = fmt.Sprintf("building generation %d beside the published one", building)
	case backlog > 0:
		o.Phase, o.Remaining, o.Unit = "embed", int64(backlog), "writes"
		o.Detail = fmt.Sprintf("%d recent writes not yet embedded", backlog)
	case st.buildDue.Load():
		o.Phase, o.Detail = "refit", "the corpus doubled since the fit: a refit is due once writes pause"
	}
	return o
}

// Waiting says why no generation can be built yet ("" when one is being
// built or due).
func (d *Dense) Waiting() string {
	if d.cfg.Dense != lsaKind || d.deriver.state.backfilling.Load() || d.deriver.progress.Load() != nil {
		return ""
	}
	units := d.ix.Stats().Docs
	if units < d.cfg.MinFitDocs {
		return fmt.Sprintf("LSA needs ≥ %d documents; %d indexed", d.cfg.MinFitDocs, units)
	}
	if failed := d.deriver.state.fitFailed.Load(); failed > 0 && int64(units) < 2*failed {
		return fmt.Sprintf("the LSA fit over %d units failed (the engine log says why); it is retried when the corpus reaches %d", failed, 2*failed)
	}
	return ""
}

// awaitLoaded waits until generation g's model and checkpoint are loaded
// (right after a start), within ctx's deadline: past it the call gets
// -32010 retryable with retryAfterMs rather than the server's -32014.
func (d *Dense) awaitLoaded(ctx context.Context, g *Generation) error {
	select {
	case <-g.ready:
		return nil
	default:
	}
	t := time.NewTimer(readiness.Budget(ctx, time.Now()))
	defer t.Stop()
	select {
	case <-g.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		s, _ := d.board.State(Name)
		if s.State != rcp.StateBuilding {
			s = rcp.DerivedState{State: rcp.StateBuilding, Phase: "load"}
		}
		return readiness.NotReady(Label, s)
	}
}

// Read-your-writes in dense recall: a dense retrieve waits until the writes
// acknowledged before it are embedded into its generation — the deriver
// applies them within milliseconds unless it is busy building a generation
// — for at most embedWait (and within the call's deadline); past it the
// request is served, its usage.notes counting the writes not embedded yet.
const embedWait = 2 * time.Second

// AwaitEmbedded waits for generation g to apply the dense ops committed so
// far (see embedWait).
func (d *Dense) AwaitEmbedded(ctx context.Context, g *Generation) {
	if d.remote != nil || g.ann == nil {
		return
	}
	want := d.opSeq.Load()
	if g.applied.Load() >= want {
		return
	}
	deadline := time.Now().Add(min(embedWait, readiness.Budget(ctx, time.Now())))
	d.deriver.notify()
	for poll := time.Millisecond; g.applied.Load() < want && time.Now().Before(deadline); poll = min(2*poll, 50*time.Millisecond) {
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
