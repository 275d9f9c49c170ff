package derive

import (
	"sync/atomic"
	"time"
)

// A dense build (a first fit, a refit, or an external provider's first
// embedding of the corpus) runs for minutes at a million units; operators
// see how far it is from DenseBuild (rcpd's /metrics) and from a log line
// every progressLogEvery.

const progressLogEvery = 30 * time.Second

// Phases of a dense build.
const (
	phaseFit   = 1 // fitting the LSA basis on a sample of the units
	phaseEmbed = 2 // embedding every unit and inserting it into the graph
)

// DenseBuild describes a dense generation being built in the background.
type DenseBuild struct {
	Generation uint64
	// Phase is "fit" while the LSA basis is fitted, then "embed" while
	// every unit is embedded and inserted into the new graph.
	Phase string
	// Done counts the units embedded and inserted so far; Total is the
	// live units when the build started (units written since are applied
	// after it, like any new write).
	Done, Total int
	Started     time.Time
}

// Build returns the dense build in progress; ok is false when none
// is (dense retrieval off, or the published generation is current).
func (d *Dense) Build() (b DenseBuild, ok bool) {
	if d.deriver == nil {
		return DenseBuild{}, false
	}
	p := d.deriver.progress.Load()
	if p == nil {
		return DenseBuild{}, false
	}
	return p.snapshot(), true
}

// buildProgress is the deriver's record of its build in progress.
type buildProgress struct {
	generation uint64
	started    time.Time
	total      int
	phase      atomic.Int32
	done       atomic.Int64
	embedAt    atomic.Int64 // UnixNano when the embed phase began
}

// embedding marks the start of the embed phase.
func (p *buildProgress) embedding() {
	p.embedAt.Store(time.Now().UnixNano())
	p.phase.Store(phaseEmbed)
}

func (p *buildProgress) snapshot() DenseBuild {
	phase := "fit"
	if p.phase.Load() == phaseEmbed {
		phase = "embed"
	}
	return DenseBuild{Generation: p.generation, Phase: phase, Done: int(p.done.Load()), Total: p.total, Started: p.started}
}

// logAttrs are the attributes of the progress log line, with an estimate
// of the time left from the embedding rate so far.
func (p *buildProgress) logAttrs() []any {
	b := p.snapshot()
	elapsed := time.Since(b.Started)
	attrs := []any{"generation", b.Generation, "phase", b.Phase, "units", b.Done, "of", b.Total,
		"elapsed", elapsed.Round(time.Second)}
	if at := p.embedAt.Load(); at != 0 && b.Done > 0 && b.Total > b.Done {
		// At the rate since the embedding began.
		spent := time.Since(time.Unix(0, at))
		left := time.Duration(float64(spent) * float64(b.Total-b.Done) / float64(b.Done))
		attrs = append(attrs, "left", left.Round(time.Second))
	}
	return attrs
}
