package pipeline

import (
	"context"
	"fmt"
	"testing"

	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp"
)

// fakeDense recalls the first k chunks of fakeSparse's corpus as stored
// candidates (number only, loaded by pack), best first.
type fakeDense struct{}

func (fakeDense) Recall(_ context.Context, _ string, k, _ int, _ func(*search.Document) bool) ([]*Candidate, error) {
	out := make([]*Candidate, 0, k)
	for i := range k {
		num := search.DocNum(i + 1)
		c := StoredDense(fakeDoc(num).ID, num, float64(100-i))
		out = append(out, &c)
	}
	return out, nil
}

func (fakeDense) Vectors(context.Context, []string) ([][]float32, error) { return nil, nil }

// The first page of a kept list and the pages replayed from it partition
// the list, and the kept list is the stages' list, not the first page's:
// pack loads documents into copies of the page's candidates, so the kept
// candidates hold no documents (a kept list costs its candidates, not
// their texts) and a replay of the first page loads them again.
func TestKeptListPagesAndHoldsNoDocuments(t *testing.T) {
	deps := &Deps{Sparse: fakeSparse{n: 10}, Dense: fakeDense{}}
	req := func(off int) *Request {
		return &Request{Query: "q", K: 3, Offset: off, CandidateK: 12, Mode: rcp.ModeDense, Unit: rcp.UnitChunk, IncludeText: true}
	}
	first, r, err := RunKeeping(context.Background(), deps, req(0))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range r.cands {
		if c.Doc != nil || c.hasText {
			t.Fatalf("kept candidate %d (%s) holds its document", i, c.ID)
		}
	}
	ids := func(p *Page) (s []string) {
		for _, h := range p.Hits {
			if h.Text == nil || *h.Text == "" {
				t.Fatalf("hit %s has no text", h.ID.String())
			}
			s = append(s, h.ID.String())
		}
		return s
	}
	got := ids(first)
	for off := first.Next; off >= 0; {
		p, err := Replay(context.Background(), deps, req(off), r)
		if err != nil {
			t.Fatal(err)
		}
		got, off = append(got, ids(p)...), p.Next
	}
	var want []string
	for i := range 12 {
		want = append(want, fakeDoc(search.DocNum(i+1)).ID)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pages %v, want %v", got, want)
	}
	again, err := Replay(context.Background(), deps, req(0), r)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids(again)) != fmt.Sprint(ids(first)) {
		t.Fatalf("first page replayed %v, was %v", ids(again), ids(first))
	}
}
