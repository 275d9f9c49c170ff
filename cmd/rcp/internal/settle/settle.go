// Package settle waits until a server has finished deriving what it
// builds in the background from its index — rcpd's dense generation,
// knowledge graph, communities, summary tree (the x-rcpgo/readiness of
// info's _meta) — so that `rcp eval --ingest` measures, and `rcp index add
// --wait` returns, only once every mode and unit answers from a current
// structure.
package settle

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/rcpgo/rcpgo/internal/progress"
	"github.com/rcpgo/rcpgo/rcp"
)

// Poll is how often Wait asks.
const Poll = 500 * time.Millisecond

// Info returns the _meta of the server's info answer.
type Info func(ctx context.Context) (rcp.Meta, error)

// ClientInfo is Info over an rcp.Client.
func ClientInfo(c *rcp.Client) Info {
	return func(ctx context.Context) (rcp.Meta, error) {
		res, err := c.Info(ctx)
		if err != nil {
			return nil, err
		}
		return res.Meta, nil
	}
}

// Wait asks info every poll until every structure the server reports is
// ready or waiting (nothing left to build), drawing a progress bar on w for
// each one being built (none when w is nil). A server that reports no
// readiness is settled at once. It returns the last readiness seen.
func Wait(ctx context.Context, info Info, w io.Writer, poll time.Duration) (rcp.Readiness, error) {
	var bar *progress.Bar
	var shown string // the structure and phase the bar shows
	defer func() {
		if bar != nil {
			bar.Finish()
		}
	}()
	for {
		meta, err := info(ctx)
		if err != nil {
			return nil, err
		}
		r, _ := rcp.ReadReadiness(meta)
		if r.Settled() {
			return r, nil
		}
		if w != nil {
			name, s := busiest(r)
			label := name + " " + s.State
			if s.Phase != "" {
				label += " (" + s.Phase + ")"
			}
			if label != shown || bar == nil {
				if bar != nil {
					bar.Finish()
				}
				bar, shown = progress.New(w, label, s.Total, progress.WithUnit(s.Unit)), label
			}
			bar.SetTotal(s.Total)
			bar.Set(s.Done)
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return r, fmt.Errorf("waiting for the server's derived structures (%s): %w", Pending(r), ctx.Err())
		case <-t.C:
		}
	}
}

// busiest is the first structure (by name) not settled, preferring one
// that reports progress.
func busiest(r rcp.Readiness) (string, rcp.DerivedState) {
	var name string
	for _, n := range slices.Sorted(maps.Keys(r)) {
		s := r[n]
		if s.Settled() {
			continue
		}
		if name == "" || s.Total > 0 && r[name].Total == 0 {
			name = n
		}
	}
	return name, r[name]
}

// Pending names the structures not settled ("graph stale, tree building").
func Pending(r rcp.Readiness) string {
	var out string
	for _, n := range slices.Sorted(maps.Keys(r)) {
		if s := r[n]; !s.Settled() {
			if out != "" {
				out += ", "
			}
			out += n + " " + s.State
		}
	}
	return out
}
