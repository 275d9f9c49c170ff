package index

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/search"
)

// cpuTime is the process's user+system CPU time: on a shared, loaded
// machine it measures cost better than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds CPU-time metrics for the loop that started at cpu0.
func reportCPU(b *testing.B, cpu0 time.Duration, units int, unit string) {
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	if units > 0 {
		b.ReportMetric(float64(units)/cpu.Seconds(), unit+"/cpu-s")
	}
}

// synthVocab returns n deterministic pronounceable pseudo-words, so the
// analyzer (stemming included) does realistic work.
func synthVocab(n int) []string {
	cons := []string{"b", "c", "d", "f", "g", "l", "m", "n", "p", "r", "s", "t", "v", "st", "tr", "ch"}
	vow := []string{"a", "e", "i", "o", "u", "ea", "io"}
	suf := []string{"", "s", "ing", "ed", "tion", "ly", "ness", "er"}
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		x := i
		for s := 0; s < 2+i%3; s++ {
			b.WriteString(cons[x%len(cons)])
			x /= len(cons)
			b.WriteString(vow[x%len(vow)])
			x /= len(vow)
		}
		b.WriteString(suf[(i/7)%len(suf)])
		fmt.Fprintf(&b, "%c", 'a'+rune(i%26))
		out[i] = b.String()
	}
	return out
}

// synthCorpus generates n documents (title ~8 words, body ~60–180 words)
// with Zipfian word frequencies; the same seed gives the same corpus.
func synthCorpus(seed uint64, n int, vocab []string) []search.Document {
	r := rand.New(rand.NewPCG(seed, 42))
	z := rand.NewZipf(r, 1.07, 3, uint64(len(vocab)-1))
	docs := make([]search.Document, n)
	var b strings.Builder
	for i := range docs {
		b.Reset()
		for j := range 4 + r.IntN(8) {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(vocab[z.Uint64()])
		}
		title := b.String()
		b.Reset()
		for j := range 60 + r.IntN(120) {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(vocab[z.Uint64()])
			if r.IntN(15) == 0 {
				b.WriteByte('.')
			}
		}
		docs[i] = search.Document{ID: fmt.Sprintf("doc-%07d", i), Title: title, Text: b.String(),
			Meta: map[string]any{"lang": []string{"en", "de", "fr"}[i%3], "year": 1990 + i%35}}
	}
	return docs
}

func synthQueries(seed uint64, n int, vocab []string) []string {
	r := rand.New(rand.NewPCG(seed, 7))
	z := rand.NewZipf(r, 1.07, 3, uint64(len(vocab)-1))
	qs := make([]string, n)
	for i := range qs {
		var w []string
		for range 2 + r.IntN(5) {
			// Skip the very head of the distribution (stop-word-like terms)
			// half of the time, like real queries.
			x := z.Uint64()
			if r.IntN(2) == 0 {
				x += 50
			}
			w = append(w, vocab[x%uint64(len(vocab))])
		}
		qs[i] = strings.Join(w, " ")
	}
	return qs
}

var benchVocab = sync.OnceValue(func() []string { return synthVocab(50000) })

// BenchmarkAdd measures durable ingestion: each op is one Add of a
// 1000-document batch (analysis, bbolt commit + fsync, in-memory segment,
// publish); background flushing and merging run as in production.
func BenchmarkAdd(b *testing.B) {
	docs := synthCorpus(1, 20000, benchVocab())
	ctx := context.Background()
	ix := openTest(b, b.TempDir(), Options{})
	bytes := 0
	for _, d := range docs[:1000] {
		bytes += len(d.Title) + len(d.Text)
	}
	b.SetBytes(int64(bytes))
	b.ResetTimer()
	i := 0
	cpu0 := cpuTime()
	for b.Loop() {
		batch := make([]search.Document, 1000)
		copy(batch, docs[(i*1000)%len(docs):])
		for j := range batch {
			batch[j].ID = fmt.Sprintf("%s-%d", batch[j].ID, i)
		}
		if _, err := ix.Add(ctx, batch); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(i*1000)/b.Elapsed().Seconds(), "docs/s")
	reportCPU(b, cpu0, i*1000, "docs")
}

// BenchmarkBuildSegment measures the flush/merge path: rewriting 20000
// buffered documents into one encoded segment.
func BenchmarkBuildSegment(b *testing.B) {
	docs := synthCorpus(2, 20000, benchVocab())
	ctx := context.Background()
	ix := openTest(b, b.TempDir(), Options{NoBackground: true})
	for lo := 0; lo < len(docs); lo += 1000 {
		if _, err := ix.Add(ctx, docs[lo:lo+1000]); err != nil {
			b.Fatal(err)
		}
	}
	segs := ix.cur.Load().segs
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, _, err := mergeViews(ctx, segs, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(docs)*b.N)/b.Elapsed().Seconds(), "docs/s")
	reportCPU(b, cpu0, len(docs)*b.N, "docs")
}

var benchIndex struct {
	once sync.Once
	ix   *Index
	err  error
}

// searchBenchIndex is a 100k-document index in one merged segment, shared
// by the search benchmarks.
func searchBenchIndex(b *testing.B) *Index {
	benchIndex.once.Do(func() {
		ctx := context.Background()
		dir, err := mkdirTemp()
		if err != nil {
			benchIndex.err = err
			return
		}
		ix, err := Open(ctx, dir, Options{NoBackground: true, FlushDocs: 1 << 30})
		if err != nil {
			benchIndex.err = err
			return
		}
		docs := synthCorpus(3, 100000, benchVocab())
		for lo := 0; lo < len(docs); lo += 10000 {
			if _, err := ix.Add(ctx, docs[lo:lo+10000]); err != nil {
				benchIndex.err = err
				return
			}
		}
		benchIndex.err = ix.ForceMerge(ctx)
		benchIndex.ix = ix
	})
	if benchIndex.err != nil {
		b.Fatal(benchIndex.err)
	}
	return benchIndex.ix
}

func BenchmarkSearchTop10(b *testing.B) {
	ix := searchBenchIndex(b)
	qs := synthQueries(9, 1000, benchVocab())
	ctx := context.Background()
	for _, mode := range []struct {
		name string
		q    func(string) search.Query
	}{
		{"ids", func(s string) search.Query { return search.Query{Text: s, K: 10, SkipDocs: true} }},
		{"docs", func(s string) search.Query { return search.Query{Text: s, K: 10} }},
		{"filtered", func(s string) search.Query {
			return search.Query{Text: s, K: 10, SkipDocs: true, Filter: Eq("lang", "de")}
		}},
		{"unpruned", func(s string) search.Query { return search.Query{Text: s, K: 10, SkipDocs: true} }},
		{"phrase", func(s string) search.Query { return search.Query{Text: quoteFirstTwo(s), K: 10, SkipDocs: true} }},
	} {
		b.Run(mode.name, func(b *testing.B) {
			noPruning = mode.name == "unpruned"
			defer func() { noPruning = false }()
			i := 0
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := ix.Search(ctx, mode.q(qs[i%len(qs)])); err != nil {
					b.Fatal(err)
				}
				i++
			}
			reportCPU(b, cpu0, b.N, "queries")
		})
	}
}

// quoteFirstTwo quotes the first two words of q as a phrase.
func quoteFirstTwo(q string) string {
	w := strings.Fields(q)
	return `"` + w[0] + " " + w[1] + `" ` + strings.Join(w[2:], " ")
}

// BenchmarkSearchExhaustive scores every matching document with the naive
// reference scorer of the tests.
func BenchmarkSearchExhaustive(b *testing.B) {
	ix := searchBenchIndex(b)
	qs := synthQueries(9, 1000, benchVocab())
	i := 0
	cpu0 := cpuTime()
	for b.Loop() {
		exhaustive(ix, qs[i%len(qs)], 10, nil)
		i++
	}
	reportCPU(b, cpu0, b.N, "queries")
}

var benchDirs []string

func mkdirTemp() (string, error) {
	d, err := os.MkdirTemp("", "rcpgo-index-bench-")
	if err == nil {
		benchDirs = append(benchDirs, d)
	}
	return d, err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchIndex.ix != nil {
		benchIndex.ix.Close()
	}
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// TestPruningWork checks that top-10 search scores only a small part of
// the matching documents of a synthetic corpus (run with -v for figures).
func TestPruningWork(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes a corpus large enough to count pruned postings; skipped with -short")
	}
	ctx := context.Background()
	ix := openTest(t, "", Options{NoBackground: true})
	docs := synthCorpus(4, 3000, benchVocab())
	for lo := 0; lo < len(docs); lo += 1500 {
		mustAdd(t, ix, docs[lo:lo+1500]...)
	}
	if err := ix.ForceMerge(ctx); err != nil {
		t.Fatal(err)
	}
	seg := ix.cur.Load().segs[0].seg
	scored, matched := 0, 0
	qs := synthQueries(9, 100, benchVocab())
	for _, q := range qs {
		res := mustSearch(t, ix, search.Query{Text: q, K: 10, SkipDocs: true})
		scored += res.Scored
		union := NewBitset(seg.n)
		for _, term := range res.Terms {
			if ti, ok := seg.lookup(term); ok {
				for it := newPostIter(seg.postingsBytes(ti), int(ti.df), seg.n, seg.format); it.doc != noDoc; it.next() {
					union.Set(it.doc)
				}
			}
		}
		matched += union.Count()
	}
	t.Logf("top-10 over %d docs: %.0f docs scored per query of %.0f matching (%.1f%%)",
		len(docs), float64(scored)/float64(len(qs)), float64(matched)/float64(len(qs)), 100*float64(scored)/float64(matched))
	if scored*3 > matched {
		t.Errorf("pruning ineffective: scored %d of %d", scored, matched)
	}
}

// BenchmarkSearchIndexDir searches an existing index directory (for
// example DATA/index of a stopped rcpd) with the queries of a BEIR
// queries.jsonl, for before/after comparisons of the segment format on a
// real corpus (docs/benchmarks.md): RCPGO_BENCH_INDEX=DIR
// RCPGO_BENCH_QUERIES=FILE go test -run XXX -bench SearchIndexDir. Modes:
// top-10, top-10 with the first two words quoted, top-100; SkipDocs.
func BenchmarkSearchIndexDir(b *testing.B) {
	dir, qf := os.Getenv("RCPGO_BENCH_INDEX"), os.Getenv("RCPGO_BENCH_QUERIES")
	if dir == "" || qf == "" {
		b.Skip("set RCPGO_BENCH_INDEX and RCPGO_BENCH_QUERIES")
	}
	ctx := context.Background()
	ix, err := Open(ctx, dir, Options{NoBackground: true})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	raw, err := os.ReadFile(qf)
	if err != nil {
		b.Fatal(err)
	}
	var qs []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var q struct{ Text string }
		if err := json.Unmarshal([]byte(line), &q); err != nil {
			b.Fatal(err)
		}
		if len(strings.Fields(q.Text)) >= 2 {
			qs = append(qs, q.Text)
		}
	}
	for _, mode := range []struct {
		name string
		k    int
		text func(string) string
	}{
		{"top10", 10, func(s string) string { return s }},
		{"phrase", 10, quoteFirstTwo},
		{"top100", 100, func(s string) string { return s }},
	} {
		b.Run(mode.name, func(b *testing.B) {
			for _, q := range qs { // warm the page cache and the pools
				ix.Search(ctx, search.Query{Text: mode.text(q), K: mode.k, SkipDocs: true})
			}
			i := 0
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := ix.Search(ctx, search.Query{Text: mode.text(qs[i%len(qs)]), K: mode.k, SkipDocs: true}); err != nil {
					b.Fatal(err)
				}
				i++
			}
			reportCPU(b, cpu0, b.N, "queries")
		})
	}
}
