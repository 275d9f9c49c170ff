package pipeline

// Stage diversify: unit grouping, minScore, confidence and MMR.

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/rcpgo/rcpgo/engine/ann"
	"github.com/rcpgo/rcpgo/internal/wording"
	"github.com/rcpgo/rcpgo/rcp"
)

// diversify groups chunks by document (unit=document), applies minScore,
// computes confidence and reorders by MMR when asked.
func diversify(ctx context.Context, s *State) error {
	r := s.Req
	if r.Unit == rcp.UnitDocument || r.Unit == rcp.UnitPage {
		if err := s.load(ctx, s.Cands, false); err != nil {
			return err
		}
		seen := map[string]bool{}
		out := s.Cands[:0]
		unpaged := 0
		for _, c := range s.Cands {
			g := c.ID
			if c.Doc != nil && c.Doc.Chunk != nil && c.Doc.Chunk.DocID != "" {
				g = c.Doc.Chunk.DocID
			}
			if r.Unit == rcp.UnitPage {
				pg := pageOf(c.Doc)
				if pg == 0 {
					unpaged++ // HTML, Markdown, text: sections are chunks, not pages
					continue
				}
				g = PageID(g, pg)
			}
			if seen[g] {
				continue
			}
			seen[g] = true
			c.groupID = g
			out = append(out, c)
		}
		s.Cands = out
		if unpaged > 0 {
			s.note("unit page: %s of documents without pages (only paginated formats such as PDF have pages) left out; unit chunk or document retrieves them",
				wording.Plural(unpaged, "candidate", "candidates"))
		}
	}
	if r.MinScore != nil {
		s.Cands = slices.DeleteFunc(s.Cands, func(c *Candidate) bool { return c.Score < *r.MinScore })
	}
	if r.Confidence {
		s.confidence()
	}
	if (r.MMRLambda != nil || r.Vectors) && len(s.Cands) > 0 {
		if s.Deps.Dense == nil {
			return fmt.Errorf("pipeline: vectors needed without a dense backend")
		}
		ids := make([]string, len(s.Cands))
		for i, c := range s.Cands {
			ids[i] = c.ID
		}
		vecs, err := s.Deps.Dense.Vectors(ctx, ids)
		if err != nil {
			return err
		}
		for i, c := range s.Cands {
			c.vec = vecs[i]
		}
	}
	if r.MMRLambda != nil && len(s.Cands) > 1 {
		maxScore := s.Cands[0].Score
		cands := make([]ann.Candidate, len(s.Cands))
		for i, c := range s.Cands {
			rel := 0.0
			if maxScore > 0 {
				rel = c.Score / maxScore
			}
			v := c.vec
			if v == nil {
				v = make([]float32, 1) // no vector: dissimilar to everything
			}
			cands[i] = ann.Candidate{ID: uint64(i), Vec: v, Relevance: float32(rel)}
		}
		order, err := ann.MMR(cands, len(cands), *r.MMRLambda)
		if err != nil {
			return fmt.Errorf("pipeline: mmr: %w", err)
		}
		out := make([]*Candidate, 0, len(order))
		for _, i := range order {
			out = append(out, s.Cands[i])
		}
		s.Cands = out
		if s.observing() {
			s.observe("diversify", 0.8, fmt.Sprintf("mmr λ=%g over %d candidates", *r.MMRLambda, len(out)), nil)
		}
	}
	return nil
}

// confidence sets c.conf ∈ [0,1] for every candidate (see the engine
// documentation for the calibration) and makes it non-increasing down the
// list.
func (s *State) confidence() {
	prev := 1.0
	for _, c := range s.Cands {
		v := 0.0 // the largest of the parts below
		if c.HasRerank {
			// the reranker's judgement supersedes recall scores:
			// a logistic of its score (cross-encoder logits)
			v = math.Max(v, 1/(1+math.Exp(-c.Rerank)))
		} else if c.HasSparse && s.termMax > 0 {
			x := c.Sparse / s.termMax
			v = math.Max(v, 1/(1+math.Exp(-8*(x-0.35))))
		}
		if c.HasDense && !c.HasRerank {
			v = math.Max(v, math.Max(0, math.Min(1, c.Dense)))
		}
		v = math.Min(v, prev)
		c.conf, prev = v, v
	}
}
