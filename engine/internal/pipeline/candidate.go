package pipeline

// Candidates: the documents and chunks that flow through the stages, and
// the dense backend that recalls some of them.

import (
	"context"

	"github.com/rcpgo/rcpgo/engine/chunk"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/trust"
)

// Dense is the dense backend: an embedding provider plus a vector index.
type Dense interface {
	// Recall returns up to k documents of the current snapshot most similar
	// to query, best first (ties by id), with strictly positive similarity,
	// restricted to documents for which keep returns true (keep nil: no
	// restriction). ef > 0 sets the search's candidate list (an
	// approximate index's effort); 0 leaves it to the backend.
	Recall(ctx context.Context, query string, k, ef int, keep func(*search.Document) bool) ([]*Candidate, error)
	// Vectors returns the stored embeddings of ids (nil for unknown ids).
	Vectors(ctx context.Context, ids []string) ([][]float32, error)
}

// Candidate is one document or chunk flowing through the pipeline.
type Candidate struct {
	ID  string
	Doc *search.Document // nil until loaded (sparse candidates)
	// Num is the document number of a sparse candidate, for loading it.
	Num     search.DocNum
	hasNum  bool
	hasText bool // Doc.Text is loaded
	// Facts come with documents read by the sparse backend: the
	// index-time screen verdict and the text's length, so a hit needs
	// neither the screen nor (includeText:false) its text at query time.
	// Candidates without them (dense recall) are computed from Doc.Text.
	Facts     search.Facts
	Sparse    float64
	HasSparse bool
	Dense     float64
	HasDense  bool
	Fused     float64
	HasFused  bool
	Rerank    float64
	HasRerank bool
	Score     float64 // the ranking score of the current stage
	conf      float64
	vec       []float32
	// GroupID is the document a hit stands for under unit=document.
	groupID string
	verdict *Verdict // client feedback about this candidate (Deps.Feedback)
}

// StoredDense is a dense candidate whose document the sparse backend
// stores as num: like a sparse candidate, it is loaded only if a stage
// needs its metadata or text (the page, the reranked top N, unit
// grouping, recency, feedback).
func StoredDense(id string, num search.DocNum, score float64) Candidate {
	return Candidate{ID: id, Num: num, hasNum: true, Dense: score, HasDense: true, Score: score}
}

// Verdict is what client feedback (engine/feedback) says about a unit.
type Verdict struct {
	// Factor multiplies a non-negative score and divides a negative one
	// (the ranking prior; 1 is neutral).
	Factor float64
	// Quarantined demotes the unit below every other candidate and marks
	// its hit trust.level "untrusted".
	Quarantined bool
	// Injection sets trust.injectionSuspected on a quarantined hit.
	Injection bool
}

// load reads the stored documents of the sparse candidates cs not loaded
// yet: metadata, and the text when withText — or when a record carries no
// facts under the current screen rules, which its hit then computes from
// the text.
func (s *State) load(ctx context.Context, cs []*Candidate, withText bool) error {
	err := s.loadWhere(ctx, cs, withText, func(c *Candidate) bool { return c.Doc == nil || withText && !c.hasText })
	if err != nil {
		return err
	}
	return s.loadWhere(ctx, cs, true, func(c *Candidate) bool { return !c.hasText && !hasFacts(c) })
}

func (s *State) loadWhere(ctx context.Context, cs []*Candidate, withText bool, need func(*Candidate) bool) error {
	var nums []search.DocNum
	var todo []*Candidate
	for _, c := range cs {
		if c.hasNum && need(c) {
			if nums == nil {
				nums, todo = make([]search.DocNum, 0, len(cs)), make([]*Candidate, 0, len(cs))
			}
			nums = append(nums, c.Num)
			todo = append(todo, c)
		}
	}
	if len(nums) == 0 {
		return nil
	}
	docs, facts, err := s.Deps.Sparse.Load(ctx, nums, withText)
	if err != nil {
		return err
	}
	for i, c := range todo {
		c.Doc, c.Facts, c.hasText = docs[i], facts[i], withText
	}
	return nil
}

// hasFacts reports whether c carries index-time facts under the current
// screen rules.
func hasFacts(c *Candidate) bool { return c.Facts.ScreenRules == trust.RulesVersion }

func tokensOf(c *Candidate) int {
	if hasFacts(c) {
		return c.Facts.Tokens
	}
	return chunk.Tokens(textOf(c))
}

func textOf(c *Candidate) string {
	if c.Doc == nil {
		return ""
	}
	return c.Doc.Text
}
