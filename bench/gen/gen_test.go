package gen

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/eval"
)

func render(t testing.TB, cfg Config, workers int) []byte {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := g.WriteCorpus(context.Background(), &buf, workers, nil); err != nil {
		t.Fatal(err)
	}
	if err := g.WriteQueries(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if err := g.WriteQrels(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// goldenSHA256 pins the bytes of Config{Seed: 42, Docs: 3000, Queries: 100}.
// If it changes, generated corpora are no longer comparable with earlier
// ones: change it only on purpose, and say so in the change log.
const goldenSHA256 = "1e5f05aeae4d1f6015958bd154e81fa804dc64488c9c10d1ebb61014a7598784"

func TestDeterministic(t *testing.T) {
	cfg := Config{Seed: 42, Docs: 3000, Queries: 100}
	a := render(t, cfg, 1)
	b := render(t, cfg, 4) // worker count must not matter
	if !bytes.Equal(a, b) {
		t.Fatal("same seed, different bytes")
	}
	sum := sha256.Sum256(a)
	if got := hex.EncodeToString(sum[:]); got != goldenSHA256 {
		t.Fatalf("sha256 %s, golden %s", got, goldenSHA256)
	}
	if c := render(t, Config{Seed: 43, Docs: 3000, Queries: 100}, 2); bytes.Equal(a, c) {
		t.Fatal("different seeds, same bytes")
	}
	g, _ := New(cfg)
	if d := g.Doc(1234); !bytes.Contains(a, []byte(`{"_id":"d1234","title":"`+d.Title+`","text":"`+d.Text+`"`)) {
		t.Fatalf("Doc(1234) differs from the streamed corpus: %+v", d)
	}
}

func TestBEIRCompatible(t *testing.T) {
	dir := t.TempDir()
	g, err := New(Config{Seed: 7, Docs: 5000, Queries: 200})
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	st, err := g.WriteDir(context.Background(), dir, 2, func(int) { calls++ })
	if err != nil {
		t.Fatal(err)
	}
	if calls != (5000+chunkDocs-1)/chunkDocs || st.CorpusBytes == 0 {
		t.Fatalf("progress calls %d, stats %+v", calls, st)
	}
	ds, err := eval.LoadBEIR(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Queries) != 200 || ds.Qrels.Len() != 200 {
		t.Fatalf("%d queries, %d qrels", len(ds.Queries), ds.Qrels.Len())
	}
	var lengths []int
	langs := map[string]int{}
	words := map[string]int{}
	docs := map[string]eval.Doc{}
	err = eval.StreamCorpusFile(context.Background(), ds.CorpusPath, func(d eval.Doc) error {
		ws := strings.Fields(d.Text)
		lengths = append(lengths, len(ws))
		for _, w := range ws {
			words[strings.ToLower(strings.TrimSuffix(w, "."))]++
		}
		langs[d.Meta["lang"].(string)]++
		y := d.Meta["year"].(float64)
		if y < 1990 || y > 2025 || !strings.HasPrefix(d.Meta["date"].(string), fmtYear(y)) {
			t.Fatalf("doc %s: bad year/date %v", d.ID, d.Meta)
		}
		if s := d.Meta["score"].(float64); s < 0 || s >= 1 {
			t.Fatalf("doc %s: score %v", d.ID, s)
		}
		if _, ok := d.Meta["published"].(bool); !ok || d.Title == "" {
			t.Fatalf("doc %s: %+v", d.ID, d)
		}
		if d.ID == "d17" || len(docs) < 1 {
			docs[d.ID] = d
		}
		return nil
	})
	if err != nil || len(lengths) != 5000 {
		t.Fatalf("%d docs, %v", len(lengths), err)
	}
	sort.Ints(lengths)
	med := lengths[len(lengths)/2]
	if med < 75 || med > 95 || lengths[len(lengths)/10] < 45 || lengths[9*len(lengths)/10] > 140 {
		t.Fatalf("passage lengths: p10 %d median %d p90 %d", lengths[len(lengths)/10], med, lengths[9*len(lengths)/10])
	}
	if langs["en"] < 2700 || langs["en"] > 3300 || len(langs) != 5 {
		t.Fatalf("langs %v", langs)
	}
	// Zipf: the most frequent word is far more common than the 100th.
	var freq []int
	for _, c := range words {
		freq = append(freq, c)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(freq)))
	if ratio := float64(freq[0]) / float64(freq[99]); ratio < 30 || ratio > 300 {
		t.Fatalf("rank-1/rank-100 frequency ratio %.1f, want Zipf-like (~100)", ratio)
	}
	// Every query's words occur in its relevant document.
	for _, q := range ds.Queries {
		var rel string
		for d := range ds.Qrels[q.ID] {
			rel = d
		}
		i, err := strconv.Atoi(strings.TrimPrefix(rel, "d"))
		if err != nil {
			t.Fatal(err)
		}
		d := g.Doc(i)
		body := strings.ToLower(d.Title + " " + d.Text)
		for _, w := range strings.Fields(q.Text) {
			if !strings.Contains(body, w) {
				t.Fatalf("query %s word %q not in %s", q.ID, w, rel)
			}
		}
		if n := len(strings.Fields(q.Text)); n < 2 || n > 6 {
			t.Fatalf("query %s has %d words", q.ID, n)
		}
	}
}

func TestVocabularyDistinct(t *testing.T) {
	ws := vocabulary(3, 70_000)
	seen := map[string]bool{}
	for r, w := range ws {
		if seen[string(w)] || len(w) == 0 {
			t.Fatalf("rank %d: %q repeated or empty", r, w)
		}
		seen[string(w)] = true
	}
	if len(ws[0]) > 5 || len(ws[69_000]) < 4 {
		t.Fatalf("frequent words should be short: %q, %q", ws[0], ws[100_000])
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{{ZipfS: 1}, {Vocab: 10}, {Docs: -1}, {MinWords: 50, MaxWords: 10}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted it", c)
		}
	}
}

func TestWriteCorpusCancel(t *testing.T) {
	g, _ := New(Config{Docs: 100_000})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := g.WriteCorpus(ctx, &bytes.Buffer{}, 2, func(done int) {
		if n++; n == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want Canceled", err)
	}
	_, err = g.WriteCorpus(context.Background(), failWriter{}, 2, nil)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func BenchmarkGenerate(b *testing.B) {
	g, err := New(Config{Seed: 1, Docs: 20_000})
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	b.ReportAllocs()
	for b.Loop() {
		n, err = g.WriteCorpus(context.Background(), io.Discard, 0, nil)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(n)
	b.ReportMetric(float64(20_000*b.N)/b.Elapsed().Seconds(), "docs/s")
}

func BenchmarkGenerateOneWorker(b *testing.B) {
	g, _ := New(Config{Seed: 1, Docs: 20_000})
	var n int64
	for b.Loop() {
		n, _ = g.WriteCorpus(context.Background(), io.Discard, 1, nil)
	}
	b.SetBytes(n)
	b.ReportMetric(float64(20_000*b.N)/b.Elapsed().Seconds(), "docs/s")
}

func fmtYear(y float64) string { return strconv.Itoa(int(y)) }
