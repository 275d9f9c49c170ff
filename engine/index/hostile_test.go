package index

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hugeQuery returns n distinct words.
func hugeQuery(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("w")
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(' ')
	}
	return b.String()
}

// Query analysis deduplicates terms in linear time: 80 000 distinct words
// (550 KB) took 7.8 s with the quadratic dedupe.
func TestQueryAnalysisIsLinear(t *testing.T) {
	ix := openTest(t, "", Options{})
	mustAdd(t, ix, Document{ID: "a", Text: "w1 w2 w3"})
	q := hugeQuery(80000)
	start := time.Now()
	res, err := ix.Search(context.Background(), Query{Text: q, K: 3, SkipDocs: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("80 000-word query took %v; want well under 2 s", d)
	}
	if len(res.Terms) != 80000 || len(res.Hits) != 1 {
		t.Errorf("terms %d hits %d; want 80000 and 1", len(res.Terms), len(res.Hits))
	}
}

// A cancelled query stops during analysis instead of running to the end.
func TestQueryAnalysisHonoursContext(t *testing.T) {
	ix := openTest(t, "", Options{})
	mustAdd(t, ix, Document{ID: "a", Text: "w1 w2 w3"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if _, err := ix.Search(ctx, Query{Text: hugeQuery(40000), K: 3}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("a cancelled 40 000-word query ran %v; want it to stop during analysis", d)
	}
}

func TestQueryMaxTerms(t *testing.T) {
	ix := openTest(t, "", Options{})
	mustAdd(t, ix, Document{ID: "a", Text: "w1 w2 w3"})
	for _, tc := range []struct {
		words, max int
		wantErr    bool
	}{{10, 10, false}, {11, 10, true}, {5000, 0, false}} {
		_, err := ix.Search(context.Background(), Query{Text: hugeQuery(tc.words) + " w1 w1", K: 3, MaxTerms: tc.max})
		if got := errors.Is(err, ErrTooManyTerms); got != tc.wantErr {
			t.Errorf("%d words, max %d: err = %v", tc.words, tc.max, err)
		}
	}
}
