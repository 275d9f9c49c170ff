package pipeline

// Stage feedback: client feedback verdicts as a ranking prior and
// quarantine.

import (
	"context"
	"slices"
)

// applyFeedback scales each candidate by its feedback prior and moves
// quarantined candidates below all others (stable otherwise); a no-op
// without Deps.Feedback.
func applyFeedback(ctx context.Context, s *State) error {
	if s.Deps.Feedback == nil {
		return nil
	}
	// A chunk's verdict may come from its document: read the metadata of
	// candidates not loaded yet (sparse and stored dense ones).
	if err := s.load(ctx, s.Cands, false); err != nil {
		return err
	}
	adjusted := false
	for _, c := range s.Cands {
		doc := ""
		if c.Doc != nil && c.Doc.Chunk != nil {
			doc = c.Doc.Chunk.DocID
		}
		v, ok := s.Deps.Feedback(c.ID, doc)
		if !ok {
			continue
		}
		adjusted = true
		c.verdict = &v
		if c.Score >= 0 {
			c.Score *= v.Factor
		} else if v.Factor > 0 {
			c.Score /= v.Factor
		}
	}
	if !adjusted {
		return nil
	}
	slices.SortStableFunc(s.Cands, func(a, b *Candidate) int {
		qa, qb := a.verdict != nil && a.verdict.Quarantined, b.verdict != nil && b.verdict.Quarantined
		if qa != qb {
			if qa {
				return 1
			}
			return -1
		}
		return byScore(a, b)
	})
	// Hits are ordered by descending score (§4.6): a quarantined candidate
	// moved below the others scores no higher than the one above it.
	for i := 1; i < len(s.Cands); i++ {
		if c := s.Cands[i]; c.verdict != nil && c.verdict.Quarantined && c.Score > s.Cands[i-1].Score {
			c.Score = s.Cands[i-1].Score
		}
	}
	s.note("feedback prior applied")
	return nil
}
