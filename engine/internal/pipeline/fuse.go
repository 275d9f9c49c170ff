package pipeline

// Stage fuse: the hybrid lists merged by rcp/fusion.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/fusion"
)

// fuse merges the sparse and dense rankings (hybrid) with rcp/fusion.
func fuse(ctx context.Context, s *State) error {
	r := s.Req
	if r.Mode != rcp.ModeHybrid {
		for _, c := range s.Cands {
			if r.Mode == rcp.ModeDense {
				c.Score = c.Dense
			}
		}
		slices.SortFunc(s.Cands, byScore)
		if s.observing() {
			s.observe("fuse", 0.6, fmt.Sprintf("fuse: single %s list of %d, nothing to fuse", r.Mode, len(s.Cands)), nil)
		}
		return nil
	}
	floor := 0.0
	lists := []fusion.List{
		{Engine: "sparse", Role: fusion.RoleLexical, ScoreFloor: &floor},
		{Engine: "dense", Role: fusion.RoleDense, ScoreFloor: &floor},
	}
	if w, ok := r.Weights["sparse"]; ok {
		lists[0].Weight = &w
	}
	if w, ok := r.Weights["dense"]; ok {
		lists[1].Weight = &w
	}
	sp, dn := ranked(s.Cands, sparseScore), ranked(s.Cands, denseScore)
	scores := make([]float64, len(sp)+len(dn))
	for i, c := range sp {
		scores[i] = c.Sparse
	}
	for i, c := range dn {
		scores[len(sp)+i] = c.Dense
	}
	scales, err := fusion.Scales(lists, [][]float64{scores[:len(sp)], scores[len(sp):]}, r.Fusion)
	if err != nil {
		return fmt.Errorf("pipeline: fuse: %w", err)
	}
	// Each id is one candidate (merge), so adding its contributions in
	// list order from 0 gives rcp/fusion's scores bit for bit
	// (TestFuseMatchesFusion), without building hits, keys or maps.
	for _, c := range s.Cands {
		c.Fused = 0
	}
	for i, c := range sp {
		c.Fused += scales[0].Contribution(i+1, c.Sparse)
	}
	for i, c := range dn {
		c.Fused += scales[1].Contribution(i+1, c.Dense)
	}
	for _, c := range s.Cands {
		c.HasFused, c.Score = true, c.Fused
	}
	slices.SortFunc(s.Cands, byScore)
	method := fusion.EffectiveMethod(lists, r.Fusion.Method)
	if method == "" {
		method = rcp.FusionRRF
	}
	if s.observing() {
		s.observe("fuse", 0.6, fmt.Sprintf("fused %d sparse + %d dense by %s into %d", len(sp), len(dn), method, len(s.Cands)), nil)
	}
	return nil
}

// ranked returns the candidates that have a score by(c) (ok), best first,
// ties by id: one list of the fusion.
func ranked(cs []*Candidate, by func(*Candidate) (float64, bool)) []*Candidate {
	out := make([]*Candidate, 0, len(cs))
	for _, c := range cs {
		if _, ok := by(c); ok {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b *Candidate) int {
		x, _ := by(a)
		y, _ := by(b)
		return byKey(x, y, a.ID, b.ID)
	})
	return out
}

func sparseScore(c *Candidate) (float64, bool) { return c.Sparse, c.HasSparse }
func denseScore(c *Candidate) (float64, bool)  { return c.Dense, c.HasDense }

func byKey(a, b float64, ida, idb string) int {
	if c := cmp.Compare(b, a); c != 0 {
		return c
	}
	return strings.Compare(ida, idb)
}
