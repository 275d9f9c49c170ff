package derive

// Sessions keep the dense generation they negotiated (issue 31): a
// session's capabilities name its generation's embed.identity (§13.2), and
// an LSA refit publishes a new identity. The superseded generation stays in
// e.kept (engine/retain) while sessions use it — at most
// Config.DenseRetain.Max of them and DenseRetain.Budget bytes, each dropped
// a grace period after its last use — and the deriver keeps applying
// writes to it, so its sessions still read their writes. Past those bounds
// a session's dense call gets rcp.CapabilitiesChanged, on which the Go
// Client re-initializes and retries once.

import (
	"context"
	"fmt"

	"github.com/rcpgo/rcpgo/engine/embed/lsa"
	"github.com/rcpgo/rcpgo/engine/internal/fault"
	"github.com/rcpgo/rcpgo/rcp"
)

// generationBytes estimates what generation g holds in memory and mapped
// files (docs/rcpd.md, "Storage and memory model"): per unit the float32
// vector (4·dim bytes, mapped from the checkpoint or on the heap for units
// applied since), its int8 copy (dim), the layer-0 links (2M+1 int32s with
// M 16: 132 bytes), the id, level, deletion flag and id map entry (≈ 58
// bytes); plus the LSA model's projection (terms × dim float32s).
func generationBytes(g *Generation) int64 {
	if g.ann == nil {
		return 0
	}
	per := int64(5*g.info.dim + 190)
	n := int64(g.ann.Len() + g.ann.Deleted())
	b := n * per
	if m, ok := g.model.(*lsa.Model); ok {
		b += int64(m.VocabularySize()) * int64(g.info.dim) * 4
	}
	return b
}

// keep records g as the published generation (the previous one is kept
// for its sessions, within the bounds).
func (d *Dense) keep(g *Generation) {
	for _, old := range d.kept.Publish(g.info.identity, g, generationBytes(g)) {
		d.logDropped(old)
	}
}

func (d *Dense) logDropped(g *Generation) {
	if cur := d.gen.Load(); cur != nil && cur != g {
		d.log.Info("engine: dropped a superseded dense generation; its sessions re-initialize",
			"generation", g.n, "identity", g.info.identity, "kept", d.kept.Stats().Kept)
	}
}

// sweepKept drops the kept generations no session used within the grace
// period (the deriver runs it between steps).
func (d *Dense) sweepKept() {
	for _, old := range d.kept.Sweep() {
		d.logDropped(old)
	}
}

// generationOf returns the generation a session that negotiated identity
// may use: the published one or a kept one (marked used).
func (d *Dense) generationOf(identity string) (*Generation, bool) {
	return d.kept.Get(identity)
}

// notServed is the error of a dense call whose session's generation is no
// longer held: the capabilities changed (a new session is offered the
// published generation), or, while none is published (a damaged one is
// being rebuilt), -32010 retryable.
func (d *Dense) notServed(identity string) error {
	g := d.gen.Load()
	if g == nil {
		return &fault.Error{Err: ErrRebuilding,
			Detail: fmt.Sprintf("the dense index of embed.identity %q is not available; sparse retrieval is unaffected", identity)}
	}
	o := d.kept.Options()
	return rcp.CapabilitiesChanged("the dense index of embed.identity %q was replaced by %q and is no longer kept "+
		"(at most %d superseded generations, %d MiB, each for %v after its last use); a new session is offered %q",
		identity, g.info.identity, o.Max, o.Budget>>20, o.Grace, g.info.identity)
}

// keptToApply returns a kept generation that lags the dense log (nil:
// none), for the deriver to apply the next batch of ops to.
func (d *Dense) keptToApply() *Generation {
	last := d.opSeq.Load()
	for _, g := range d.kept.Kept() {
		select {
		case <-g.ready:
		default:
			continue
		}
		if g.loadErr == nil && g.ann != nil && g.applied.Load() < last {
			return g
		}
	}
	return nil
}

// applyKept applies the next batch of ops to a lagging kept generation and
// updates its size; it reports whether there was one.
func (dv *deriver) applyKept(ctx context.Context) (bool, error) {
	g := dv.d.keptToApply()
	if g == nil {
		return false, nil
	}
	if err := dv.apply(ctx, g); err != nil {
		return true, err
	}
	for _, old := range dv.d.kept.Resize(g, generationBytes(g)) {
		dv.d.logDropped(old)
	}
	return true, nil
}

// trimBound is how far the dense ops may be trimmed once g's checkpoint
// covers them: not past what a kept generation has applied.
func (d *Dense) trimBound(g *Generation) uint64 {
	upTo := g.saved
	for _, k := range d.kept.Kept() {
		upTo = min(upTo, k.applied.Load())
	}
	return upTo
}
