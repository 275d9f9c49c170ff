package lsa

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/kljensen/snowball/english"

	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/internal/shared"
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
	docIDs  []string
	docs    []string
	qIDs    []string
	queries []string
	qrels   map[string]map[string]int
}

func loadBEIR(t testing.TB, name string) *beir {
	t.Helper()
	b := &beir{qrels: map[string]map[string]int{}}
	readJSONL := func(path string, fn func(id, title, text string)) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var rec struct {
				ID    string `json:"_id"`
				Title string `json:"title"`
				Text  string `json:"text"`
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			fn(rec.ID, rec.Title, rec.Text)
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	readJSONL(shared.Path(t, "datasets", name, "corpus.jsonl"), func(id, title, text string) {
		b.docIDs = append(b.docIDs, id)
		b.docs = append(b.docs, title+"\n"+text)
	})
	queryText := map[string]string{}
	readJSONL(shared.Path(t, "datasets", name, "queries.jsonl"), func(id, _, text string) { queryText[id] = text })
	f, err := os.Open(shared.Path(t, "datasets", name, "qrels", "test.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 0; sc.Scan(); line++ {
		parts := strings.Split(sc.Text(), "\t")
		if line == 0 || len(parts) != 3 {
			continue
		}
		rel, err := strconv.Atoi(parts[2])
		if err != nil {
			t.Fatalf("qrels: %v", err)
		}
		if b.qrels[parts[0]] == nil {
			b.qrels[parts[0]] = map[string]int{}
		}
		b.qrels[parts[0]][parts[1]] = rel
	}
	for qid := range b.qrels {
		b.qIDs = append(b.qIDs, qid)
	}
	slices.Sort(b.qIDs)
	for _, qid := range b.qIDs {
		text, ok := queryText[qid]
		if !ok {
			t.Fatalf("%s: qrels query %s has no text", name, qid)
		}
		b.queries = append(b.queries, text)
	}
	return b
}

type scored struct {
	id    string
	score float64
}

// ndcgAt follows trec_eval's ndcg_cut: linear gains from the qrels, log2
// discount, ideal ranking from all judged relevant documents, ties in the
// run broken by descending document id.
func ndcgAt(run []scored, qrels map[string]int, k int) float64 {
	run = slices.Clone(run)
	slices.SortFunc(run, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(b.id, a.id)
	})
	var dcg float64
	for i := 0; i < k && i < len(run); i++ {
		if g := qrels[run[i].id]; g > 0 {
			dcg += float64(g) / math.Log2(float64(i+2))
		}
	}
	var gains []int
	for _, g := range qrels {
		if g > 0 {
			gains = append(gains, g)
		}
	}
	slices.Sort(gains)
	slices.Reverse(gains)
	var idcg float64
	for i := 0; i < k && i < len(gains); i++ {
		idcg += float64(gains[i]) / math.Log2(float64(i+2))
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

func TestNDCGHelper(t *testing.T) {
	qrels := map[string]int{"a": 3, "b": 1}
	perfect := []scored{{"a", 2}, {"b", 1}, {"c", 0}}
	if got := ndcgAt(perfect, qrels, 10); math.Abs(got-1) > 1e-12 {
		t.Errorf("perfect = %g", got)
	}
	swapped := []scored{{"b", 2}, {"a", 1}}
	want := (1 + 3/math.Log2(3)) / (3 + 1/math.Log2(3))
	if got := ndcgAt(swapped, qrels, 10); math.Abs(got-want) > 1e-12 {
		t.Errorf("swapped = %g, want %g", got, want)
	}
	// tie: trec_eval ranks the larger docno first
	tie := []scored{{"a", 1}, {"b", 1}}
	if got := ndcgAt(tie, qrels, 10); math.Abs(got-want) > 1e-12 {
		t.Errorf("tie = %g, want %g", got, want)
	}
}

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
	qv, err := m.Embed(ctx, b.queries, embed.KindQuery)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	run := make([]scored, len(dv))
	for qi, q := range qv {
		for di, d := range dv {
			run[di] = scored{b.docIDs[di], float64(embed.Dot(q, d))}
		}
		slices.SortFunc(run, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
		sum += ndcgAt(run[:min(100, len(run))], b.qrels[b.qIDs[qi]], 10)
	}
	return sum / float64(len(qv)), fit
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
				tt.dataset, ndcg, len(b.queries), len(b.docs), fit.Round(time.Millisecond))
			if ndcg < tt.floor {
				t.Errorf("nDCG@10 %.4f below floor %.2f", ndcg, tt.floor)
			}
		})
	}
}
