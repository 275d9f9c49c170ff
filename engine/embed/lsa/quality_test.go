package lsa

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/kljensen/snowball/english"

	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/eval"
	"github.com/rcpgo/rcpgo/internal/testutil/shared"
)

// stemTokenize stands in for the engine analyzer: lower-case, split on
// non-alphanumerics, drop English stop words, Snowball stem.
func stemTokenize(s string) []string {
	fields := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := fields[:0]
	for _, f := range fields {
		if len(f) < 2 || english.IsStopWord(f) {
			continue
		}
		out = append(out, english.Stem(f, false))
	}
	return out
}

type beir struct {
	*eval.Dataset
	docIDs []string
	docs   []string
}

func loadBEIR(t testing.TB, name string) *beir {
	t.Helper()
	ds, err := eval.LoadBEIR(shared.Path(t, "datasets", name), "test")
	if err != nil {
		t.Fatal(err)
	}
	b := &beir{Dataset: ds}
	err = eval.StreamCorpusFile(context.Background(), ds.CorpusPath, func(d eval.Doc) error {
		b.docIDs = append(b.docIDs, d.ID)
		b.docs = append(b.docs, d.Title+"\n"+d.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var ndcg10 = func() []eval.Metric {
	ms, err := eval.ParseMetrics("ndcg@10")
	if err != nil {
		panic(err)
	}
	return ms
}()

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// denseNDCG fits LSA on the corpus and returns the mean dense-only nDCG@10.
func denseNDCG(t *testing.T, b *beir, opts Options) (float64, time.Duration) {
	ctx := context.Background()
	start, cpu0 := time.Now(), cpuTime()
	m, err := FitTexts(ctx, b.docs, stemTokenize, opts)
	if err != nil {
		t.Fatal(err)
	}
	fit := time.Since(start)
	t.Logf("fit: %v wall, %v CPU (user+sys, incl. stemming)", fit.Round(time.Millisecond), (cpuTime() - cpu0).Round(time.Millisecond))
	dv, err := m.Embed(ctx, b.docs, embed.KindDocument)
	if err != nil {
		t.Fatal(err)
	}
	queries := make([]string, len(b.Queries))
	for i, q := range b.Queries {
		queries[i] = q.Text
	}
	qv, err := m.Embed(ctx, queries, embed.KindQuery)
	if err != nil {
		t.Fatal(err)
	}
	run := eval.Run{}
	for qi, q := range qv {
		ranked := make([]eval.Ranked, len(dv))
		for di, d := range dv {
			ranked[di] = eval.Ranked{DocID: b.docIDs[di], Score: float64(embed.Dot(q, d))}
		}
		slices.SortFunc(ranked, func(a, b eval.Ranked) int { return cmp.Compare(b.Score, a.Score) })
		run[b.Queries[qi].ID] = ranked[:min(100, len(ranked))]
	}
	run.TrecOrder()
	return eval.Evaluate(b.Qrels, run, ndcg10).Mean["ndcg@10"], fit
}

func TestDenseQuality(t *testing.T) {
	tests := []struct {
		dataset string
		floor   float64
	}{
		{"scifact", 0.40},
		{"cranfield", 0.28},
	}
	for _, tt := range tests {
		t.Run(tt.dataset, func(t *testing.T) {
			b := loadBEIR(t, tt.dataset)
			ndcg, fit := denseNDCG(t, b, Options{Dimension: 256, Snapshot: tt.dataset, TokenizerID: "snowball-en"})
			t.Logf("%s: LSA-256 dense-only nDCG@10 = %.4f over %d queries (fit on %d docs in %v)",
				tt.dataset, ndcg, len(b.Queries), len(b.docs), fit.Round(time.Millisecond))
			if ndcg < tt.floor {
				t.Errorf("nDCG@10 %.4f below floor %.2f", ndcg, tt.floor)
			}
		})
	}
}
