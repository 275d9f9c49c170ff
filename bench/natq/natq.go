// Package natq is a natural-question benchmark: questions asked the way
// people ask them (plain language, not the entity names a corpus uses),
// each with judged relevant passages, over two corpora — the demo corpus
// (internal/demo) and Go's own documentation as a Go installation ships
// it ($(go env GOROOT)/doc, read at test time and never copied here).
//
// Judgements are by passage identity that survives re-chunking: a demo
// passage is its document id; a Go documentation passage is an anchor, a
// sentence fragment the relevant passage contains (compared with white
// space collapsed), so any chunk or document holding it is that passage.
// Grades: 2 answers the question, 1 helps. Questions with two passages of
// grade 2 need both (the "two-passage" questions).
package natq

import (
	"math"
	"strings"

	"github.com/rcpgo/rcpgo/eval"
)

// Question is one natural question and its judgements: passage key (a
// demo document id or a Go documentation anchor) → grade.
type Question struct {
	ID   string
	Text string
	Rel  map[string]int
}

// TwoPassage reports whether q needs two passages (two of grade 2).
func (q Question) TwoPassage() bool {
	n := 0
	for _, g := range q.Rel {
		if g >= 2 {
			n++
		}
	}
	return n >= 2
}

// Hit is one ranked result as a system returned it.
type Hit struct {
	ID   string // the unit id (a document, or DOC#cN for a chunk)
	Text string
}

// Key maps a hit to the judged passage it is, for question q: for the demo
// set the document id (a chunk is its document); for anchored sets the
// first anchor of q the hit's text contains; else the hit's own id.
func (s *Set) Key(q Question, h Hit) string {
	if !s.Anchored {
		id, _, _ := strings.Cut(h.ID, "#c")
		return id
	}
	text := collapse(h.Text)
	for a := range q.Rel {
		if strings.Contains(text, collapse(a)) {
			return a
		}
	}
	return "hit:" + h.ID
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// Set is a question set over one corpus.
type Set struct {
	Name     string
	Anchored bool // judgements are anchors, not document ids
	Qs       []Question
}

// Scores are a system's figures over a set.
type Scores struct {
	NDCG10   float64 // nDCG@10 (graded)
	Hit3     float64 // share of questions with a grade-2 passage in the top 3
	Recall10 float64 // share of grade ≥ 1 passages found in the top 10
	Both10   float64 // two-passage questions with both grade-2 passages in the top 10
	Empty    int     // questions answered with no hit
	Missed   []string
}

// Score ranks every question with run and computes the figures.
func (s *Set) Score(run func(q Question) []Hit) Scores {
	var sc Scores
	two := 0
	metrics := []eval.Metric{{Kind: eval.NDCG, K: 10}, {Kind: eval.Recall, K: 10}}
	for _, q := range s.Qs {
		hits := run(q)
		if len(hits) == 0 {
			sc.Empty++
		}
		ranking := make([]eval.Ranked, 0, len(hits))
		seen := map[string]bool{}
		for i, h := range hits {
			k := s.Key(q, h)
			if seen[k] {
				continue // a passage counts at its best rank only
			}
			seen[k] = true
			ranking = append(ranking, eval.Ranked{DocID: k, Score: float64(len(hits) - i)})
		}
		m := eval.ScoreQuery(q.Rel, ranking, metrics)
		sc.NDCG10 += m["ndcg@10"]
		sc.Recall10 += m["recall@10"]
		hit3 := false
		for _, r := range ranking[:min(3, len(ranking))] {
			hit3 = hit3 || q.Rel[r.DocID] >= 2
		}
		if hit3 {
			sc.Hit3++
		} else {
			sc.Missed = append(sc.Missed, q.ID)
		}
		if q.TwoPassage() {
			two++
			found := 0
			for _, r := range ranking[:min(10, len(ranking))] {
				if q.Rel[r.DocID] >= 2 {
					found++
				}
			}
			if found >= 2 {
				sc.Both10++
			}
		}
	}
	n := float64(max(len(s.Qs), 1))
	sc.NDCG10, sc.Hit3, sc.Recall10 = sc.NDCG10/n, sc.Hit3/n, sc.Recall10/n
	sc.Both10 /= math.Max(float64(two), 1)
	return sc
}
