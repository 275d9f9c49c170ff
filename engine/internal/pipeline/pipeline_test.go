package pipeline

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/trust"
	"github.com/rcpgo/rcpgo/rcp"
)

// fakeSparse returns a fixed ranking: documents p0..p(n-1), two chunks
// each, scores descending; single-word queries score 4 at best.
type fakeSparse struct{ n int }

func (f fakeSparse) WordMax(context.Context, string, string) (float64, error) { return 4, nil }

func (f fakeSparse) Search(_ context.Context, q search.Query) (*search.Result, error) {
	var hits []search.Hit
	for i := 0; i < f.n && len(hits) < q.K; i++ {
		for c := 0; c < 2 && len(hits) < q.K; c++ {
			num := search.DocNum(2*i + c + 1)
			h := search.Hit{ID: fakeDoc(num).ID, DocNum: num, Score: float64(100 - 2*i - c)}
			if !q.SkipDocs {
				h.Doc = fakeDoc(num)
			}
			hits = append(hits, h)
		}
	}
	return &search.Result{Hits: hits, Version: "v1"}, nil
}

// fakeDoc is chunk c of document p<i> for num = 2i+c+1.
func fakeDoc(num search.DocNum) *search.Document {
	i, c := int(num-1)/2, int(num-1)%2
	return &search.Document{ID: fmt.Sprintf("p%d#c%d", i, c), Text: fmt.Sprintf("chunk %d of document %d with some words", c, i),
		Meta:  map[string]any{"year": float64(1990 + i)},
		Chunk: &search.ChunkRef{DocID: fmt.Sprintf("p%d", i), Index: c}}
}

func (f fakeSparse) Load(_ context.Context, nums []search.DocNum, withText bool) ([]*search.Document, []search.Facts, error) {
	docs := make([]*search.Document, len(nums))
	for i, n := range nums {
		docs[i] = fakeDoc(n)
		if !withText {
			docs[i].Text = ""
		}
	}
	return docs, make([]search.Facts, len(nums)), nil
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
		if tm, ok := search.MetaDate(v); !ok || tm.Year() != 2020 {
			t.Errorf("ParseDate(%v) = %v %v", v, tm, ok)
		}
	}
	if _, ok := search.MetaDate(true); ok {
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

func (f *factsSparse) Load(ctx context.Context, nums []search.DocNum, withText bool) ([]*search.Document, []search.Facts, error) {
	docs, facts, _ := f.fakeSparse.Load(ctx, nums, withText)
	for i, d := range docs {
		if d.ID == "p0#c0" {
			d.Chunk = nil // a whole document: its citation spans its text
		}
		facts[i] = search.Facts{ScreenRules: trust.RulesVersion, Suspected: d.ID == "p0#c0", ScreenScore: 0.9, Runes: 40, Tokens: 7}
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

// depthSparse is fakeSparse recording the depth of every search.
type depthSparse struct {
	fakeSparse
	depths []int
}

func (d *depthSparse) Search(ctx context.Context, q search.Query) (*search.Result, error) {
	d.depths = append(d.depths, q.K)
	return d.fakeSparse.Search(ctx, q)
}

// vectorDense serves MMR's vectors only: one per id, from its bytes.
type vectorDense struct{}

func (vectorDense) Recall(context.Context, string, int, int, func(*search.Document) bool) ([]*Candidate, error) {
	return nil, fmt.Errorf("no dense recall")
}

func (vectorDense) Vectors(_ context.Context, ids []string) ([][]float32, error) {
	out := make([][]float32, len(ids))
	for i, id := range ids {
		out[i] = []float32{float32(id[1] % 3), float32(id[len(id)-1] % 2), 1}
	}
	return out, nil
}

type neutralFeedback struct{}

func (neutralFeedback) verdict(string, string) (Verdict, bool) { return Verdict{}, false }

// TestPageDepth: a PageDepth request searches only as deep as its page
// (plus one candidate for the next-page test) unless a stage looks past
// it, and every page, score, confidence and cursor equals the full-depth
// run's.
func TestPageDepth(t *testing.T) {
	ms, budget, lambda := 93.0, 15, 0.5
	now := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		req      Request
		rerank   bool
		feedback bool
		want     int // depth of the first page (K 3, CandidateK 20); 0: CandidateK
	}{
		{name: "plain", want: 4},
		{name: "minScore", req: Request{MinScore: &ms}, want: 4},
		{name: "tokenBudget", req: Request{TokenBudget: &budget}, want: 4},
		{name: "not allowed", req: Request{PageDepth: false}},
		{name: "unit document", req: Request{Unit: rcp.UnitDocument}},
		{name: "recency", req: Request{Recency: &Recency{Field: "year", HalfLife: 24 * time.Hour * 365, Now: now}}},
		{name: "rerank", req: Request{RerankTopN: 5}, rerank: true},
		{name: "reranker configured, topN 0", rerank: true, want: 4},
		{name: "feedback", feedback: true},
		{name: "mmr", req: Request{MMRLambda: &lambda}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pages := func(pageDepth bool) (out []string, depths []int) {
				sp := &depthSparse{fakeSparse: fakeSparse{n: 10}}
				deps := &Deps{Sparse: sp}
				if tc.req.MMRLambda != nil {
					deps.Dense = vectorDense{}
				}
				if tc.rerank {
					deps.Reranker = lengthScorer{}
				}
				if tc.feedback {
					deps.Feedback = neutralFeedback{}.verdict
				}
				for off := 0; off >= 0; {
					req := tc.req
					req.Query, req.K, req.Offset, req.CandidateK, req.Mode, req.Confidence = "q", 3, off, 20, rcp.ModeSparse, true
					if req.Unit == "" {
						req.Unit = rcp.UnitChunk
					}
					req.PageDepth = pageDepth && tc.name != "not allowed"
					p, err := Run(context.Background(), deps, &req)
					if err != nil {
						t.Fatal(err)
					}
					for _, h := range p.Hits {
						out = append(out, fmt.Sprintf("%s %g %.6f", h.ID, h.Score, *h.Confidence))
					}
					out = append(out, fmt.Sprintf("next %d", p.Next))
					off = p.Next
				}
				return out, sp.depths
			}
			deep, deepDepths := pages(false)
			shallow, depths := pages(true)
			if fmt.Sprint(shallow) != fmt.Sprint(deep) {
				t.Fatalf("pages differ:\nPageDepth %q\nfull      %q", shallow, deep)
			}
			want := tc.want
			if want == 0 {
				want = 20
			}
			if depths[0] != want {
				t.Fatalf("first page searched %d deep, want %d (all pages: %v)", depths[0], want, depths)
			}
			for _, d := range deepDepths {
				if d != 20 {
					t.Fatalf("full-depth run searched %v", deepDepths)
				}
			}
		})
	}
}

// windowDense ranks the fakeSparse documents in reverse (the last first)
// and records each call's k and ef.
type windowDense struct {
	units int // fakeSparse's 2n
	calls [][2]int
}

func (d *windowDense) Recall(_ context.Context, _ string, k, ef int, _ func(*search.Document) bool) ([]*Candidate, error) {
	d.calls = append(d.calls, [2]int{k, ef})
	var out []*Candidate
	for num := d.units; num > 0 && len(out) < k; num-- {
		c := StoredDense(fakeDoc(search.DocNum(num)).ID, search.DocNum(num), float64(num)/float64(d.units))
		out = append(out, &c)
	}
	return out, nil
}

func (*windowDense) Vectors(context.Context, []string) ([][]float32, error) { return nil, nil }

// TestHybridWindow: a hybrid request whose candidateK the server chose
// fuses hybridDepth(k) candidates of each list, with the dense walk's ef
// at the window, and its pages are those of the same request with that
// window given as candidateK — every page fuses the same two lists, so
// no hit repeats or goes missing across pages. Stages that look past the
// page keep candidateK.
func TestHybridWindow(t *testing.T) {
	for _, tc := range []struct {
		name      string
		k         int
		pageDepth bool
		rerank    bool
		want      [2]int // sparse depth and dense k; the dense ef is the window, or 0 (the backend's) at CandidateK
	}{
		{name: "k 3", k: 3, pageDepth: true, want: [2]int{20, 20}},
		{name: "k 20", k: 20, pageDepth: true, want: [2]int{40, 40}},
		{name: "k 50: the window reaches candidateK", k: 50, pageDepth: true, want: [2]int{100, 100}},
		{name: "not allowed", k: 3, want: [2]int{100, 100}},
		{name: "rerank", k: 3, pageDepth: true, rerank: true, want: [2]int{100, 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pages := func(candK int, pageDepth bool) (hits []string, sp *depthSparse, dn *windowDense) {
				sp, dn = &depthSparse{fakeSparse: fakeSparse{n: 150}}, &windowDense{units: 300}
				deps := &Deps{Sparse: sp, Dense: dn}
				if tc.rerank {
					deps.Reranker = lengthScorer{}
				}
				for off := 0; off >= 0; {
					req := Request{Query: "q", K: tc.k, Offset: off, CandidateK: candK, Mode: rcp.ModeHybrid, Unit: rcp.UnitChunk, PageDepth: pageDepth}
					if tc.rerank {
						req.RerankTopN = tc.k
					}
					p, err := Run(context.Background(), deps, &req)
					if err != nil {
						t.Fatal(err)
					}
					for _, h := range p.Hits {
						hits = append(hits, fmt.Sprintf("%s %g", h.ID, h.Score))
					}
					off = p.Next
				}
				return hits, sp, dn
			}
			got, sp, dn := pages(100, tc.pageDepth)
			wantEf := 0
			if tc.want[1] < 100 {
				wantEf = tc.want[1]
			}
			if sp.depths[0] != tc.want[0] || dn.calls[0] != [2]int{tc.want[1], wantEf} {
				t.Fatalf("sparse depth %d, dense (k, ef) %v; want %d, (%d, %d)", sp.depths[0], dn.calls[0], tc.want[0], tc.want[1], wantEf)
			}
			seen := map[string]bool{}
			for _, h := range got {
				if seen[h] {
					t.Fatalf("hit %s on two pages", h)
				}
				seen[h] = true
			}
			if want, _, _ := pages(tc.want[0], false); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("pages differ from candidateK %d:\ngot  %q\nwant %q", tc.want[0], got, want)
			}
		})
	}
}
