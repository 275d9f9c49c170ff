package pipeline

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/trust"
	"github.com/rcpgo/rcpgo/rcp"
)

// fakeSparse returns a fixed ranking: documents p0..p(n-1), two chunks
// each, scores descending; single-word queries score 4 at best.
type fakeSparse struct{ n int }

func (f fakeSparse) WordMax(context.Context, string, string) (float64, error) { return 4, nil }

func (f fakeSparse) Search(_ context.Context, q index.Query) (*index.Result, error) {
	var hits []index.Hit
	for i := 0; i < f.n && len(hits) < q.K; i++ {
		for c := 0; c < 2 && len(hits) < q.K; c++ {
			num := index.DocNum(2*i + c + 1)
			h := index.Hit{ID: fakeDoc(num).ID, DocNum: num, Score: float64(100 - 2*i - c)}
			if !q.SkipDocs {
				h.Doc = fakeDoc(num)
			}
			hits = append(hits, h)
		}
	}
	return &index.Result{Hits: hits, Version: "v1"}, nil
}

// fakeDoc is chunk c of document p<i> for num = 2i+c+1.
func fakeDoc(num index.DocNum) *index.Document {
	i, c := int(num-1)/2, int(num-1)%2
	return &index.Document{ID: fmt.Sprintf("p%d#c%d", i, c), Text: fmt.Sprintf("chunk %d of document %d with some words", c, i),
		Meta:  map[string]any{"year": float64(1990 + i)},
		Chunk: &index.ChunkRef{DocID: fmt.Sprintf("p%d", i), Index: c}}
}

func (f fakeSparse) Load(_ context.Context, nums []index.DocNum, withText bool) ([]*index.Document, []index.Facts, error) {
	docs := make([]*index.Document, len(nums))
	for i, n := range nums {
		docs[i] = fakeDoc(n)
		if !withText {
			docs[i].Text = ""
		}
	}
	return docs, make([]index.Facts, len(nums)), nil
}

func run(t *testing.T, req Request) *Page {
	t.Helper()
	var stages []string
	deps := &Deps{Sparse: fakeSparse{n: 10}, Observe: func(stage string, p float64, _ string, _ []rcp.Hit) {
		if p < 0 || p > 1 {
			t.Fatalf("progress %v", p)
		}
		stages = append(stages, stage)
	}}
	if req.Mode == "" {
		req.Mode = rcp.ModeSparse
	}
	if req.Unit == "" {
		req.Unit = rcp.UnitChunk
	}
	page, err := Run(context.Background(), deps, &req)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(stages) != "[recall fuse rerank pack]" {
		t.Fatalf("stages %v", stages)
	}
	return page
}

func TestPagesPartitionTheList(t *testing.T) {
	all := run(t, Request{Query: "q", K: 20, CandidateK: 20, IncludeText: true})
	var got []string
	for off := 0; off >= 0; {
		p := run(t, Request{Query: "q", K: 3, Offset: off, CandidateK: 20})
		for _, h := range p.Hits {
			got = append(got, h.ID.String())
		}
		off = p.Next
	}
	var want []string
	for _, h := range all.Hits {
		want = append(want, h.ID.String())
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || all.Next != -1 {
		t.Fatalf("pages %v\nsingle %v", got, want)
	}
}

func TestDocumentUnitAndConfidence(t *testing.T) {
	p := run(t, Request{Query: "alpha beta", K: 5, CandidateK: 20, Unit: rcp.UnitDocument, Confidence: true})
	prev := 1.0
	for i, h := range p.Hits {
		if h.ID.String() != fmt.Sprintf("p%d", i) || h.Unit != rcp.UnitDocument || h.Chunk.Index != 0 {
			t.Fatalf("hit %d: %+v", i, h)
		}
		if *h.Confidence > prev || *h.Confidence < 0 || *h.Confidence > 1 {
			t.Fatalf("confidence %v after %v", *h.Confidence, prev)
		}
		prev = *h.Confidence
	}
}

func TestTokenBudgetAndMinScore(t *testing.T) {
	budget := 20
	p := run(t, Request{Query: "q", K: 10, CandidateK: 20, TokenBudget: &budget})
	if len(p.Hits) == 0 || len(p.Hits) >= 10 || p.Tokens > budget || p.Next != len(p.Hits) {
		t.Fatalf("%d hits, %d tokens, next %d", len(p.Hits), p.Tokens, p.Next)
	}
	ms := 95.0
	p = run(t, Request{Query: "q", K: 20, CandidateK: 20, MinScore: &ms})
	if len(p.Hits) != 6 {
		t.Fatalf("minScore kept %d", len(p.Hits))
	}
}

func TestRecencyReorders(t *testing.T) {
	now := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	p := run(t, Request{Query: "q", K: 3, CandidateK: 20, Recency: &Recency{Field: "year", HalfLife: 24 * time.Hour * 365, Now: now}})
	if p.Hits[0].ID.String() != "p9#c0" {
		t.Fatalf("newest first expected, got %v", p.Hits[0].ID)
	}
}

// lengthScorer prefers longer passages, so its order differs from BM25's.
type lengthScorer struct{}

func (lengthScorer) Score(_ context.Context, _ string, ps []string) ([]float32, error) {
	out := make([]float32, len(ps))
	for i, p := range ps {
		out[i] = float32(len(p)) + float32(i)/100 // later (lower BM25) wins ties
	}
	return out, nil
}
func (lengthScorer) Identity() string { return "test-length" }

func TestRerankStage(t *testing.T) {
	req := &Request{Query: "q", K: 3, CandidateK: 20, Mode: rcp.ModeSparse, Unit: rcp.UnitChunk, RerankTopN: 5}
	page, err := Run(context.Background(), &Deps{Sparse: fakeSparse{n: 10}, Reranker: lengthScorer{}}, req)
	if err != nil {
		t.Fatal(err)
	}
	if page.Reranked != 5 || page.Hits[0].ID.String() != "p2#c0" || page.Hits[0].Scores["rerank"] == 0 {
		t.Fatalf("reranked %d, top %v %v", page.Reranked, page.Hits[0].ID, page.Hits[0].Scores)
	}
}

func TestParseDate(t *testing.T) {
	for _, v := range []any{"2020-05-01T00:00:00Z", "2020-05-01", float64(1588291200000), float64(2020)} {
		if tm, ok := ParseDate(v); !ok || tm.Year() != 2020 {
			t.Errorf("ParseDate(%v) = %v %v", v, tm, ok)
		}
	}
	if _, ok := ParseDate(true); ok {
		t.Error("bool parsed as a date")
	}
}

// factsSparse serves fakeSparse's documents with index-time facts that
// flag p0#c0 as suspected (its text is benign: a verdict recomputed at
// query time would not flag it) and records how documents were loaded.
type factsSparse struct {
	fakeSparse
	loads []string
}

func (f *factsSparse) Load(ctx context.Context, nums []index.DocNum, withText bool) ([]*index.Document, []index.Facts, error) {
	docs, facts, _ := f.fakeSparse.Load(ctx, nums, withText)
	for i, d := range docs {
		if d.ID == "p0#c0" {
			d.Chunk = nil // a whole document: its citation spans its text
		}
		facts[i] = index.Facts{ScreenRules: trust.RulesVersion, Suspected: d.ID == "p0#c0", ScreenScore: 0.9, Runes: 40, Tokens: 7}
		f.loads = append(f.loads, fmt.Sprintf("%s text=%v", d.ID, withText))
	}
	return docs, facts, nil
}

// TestIndexTimeFacts: hits take the screen verdict, citation length and
// token count from the stored facts; only the page is loaded, and
// includeText:false loads no text.
func TestIndexTimeFacts(t *testing.T) {
	for _, includeText := range []bool{true, false} {
		sp := &factsSparse{fakeSparse: fakeSparse{n: 10}}
		req := &Request{Query: "q", K: 2, CandidateK: 20, Mode: rcp.ModeSparse, Unit: rcp.UnitChunk, IncludeText: includeText}
		page, err := Run(context.Background(), &Deps{Sparse: sp, Screen: true}, req)
		if err != nil {
			t.Fatal(err)
		}
		h := page.Hits[0]
		if !*h.Trust.InjectionSuspected || math.Abs(*h.Trust.Score-0.1) > 1e-12 || *h.Citation.End != 40 || page.Tokens != 14 {
			t.Fatalf("includeText %v: trust %+v citation end %d tokens %d", includeText, h.Trust, *h.Citation.End, page.Tokens)
		}
		if (h.Text != nil) != includeText {
			t.Fatalf("includeText %v: text %v", includeText, h.Text)
		}
		want := []string{fmt.Sprintf("p0#c0 text=%v", includeText), fmt.Sprintf("p0#c1 text=%v", includeText)}
		if fmt.Sprint(sp.loads) != fmt.Sprint(want) {
			t.Fatalf("includeText %v: loads %q, want %q", includeText, sp.loads, want)
		}
	}
}
