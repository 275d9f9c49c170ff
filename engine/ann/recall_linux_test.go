package ann_test

// TestGenerationRecall is an opt-in measurement for docs/rcpd.md and
// docs/benchmarks.md, skipped unless RECALL_GEN is set: on a dense
// generation of an rcpd data directory (RECALL_GEN=DATA/dense/gNNNNNN,
// holding lsa.model and the checkpoint) and the BEIR queries of its corpus
// (RECALL_QUERIES), it reports recall@10 and recall@k of k = 100 searches
// (ef 100) and of k = 20 searches at ef 20 (the hybrid fusion window of a
// top 10, pipeline.hybridDepth) against the exact top 100, and the CPU
// time per search, for the float32 walk and for the int8 walk (after
// Quantize).

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/ann"
	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/embed/lsa"
	"github.com/rcpgo/rcpgo/eval"
)

func TestGenerationRecall(t *testing.T) {
	dir := os.Getenv("RECALL_GEN")
	if dir == "" {
		t.Skip("set RECALL_GEN and RECALL_QUERIES")
	}
	ix, queries := loadGeneration(t, dir, os.Getenv("RECALL_QUERIES"))
	exact := make([][]ann.Result, len(queries))
	for i, q := range queries {
		exact[i], _ = ix.Search(q, 100, ann.SearchOptions{Exact: true})
	}
	measure := func(walk string, k, ef int) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var hit10, hitK, n10, nK int
		var cpu int64
		for i, q := range queries {
			c0 := threadCPU()
			res, err := ix.Search(q, k, ann.SearchOptions{Ef: ef})
			cpu += threadCPU() - c0
			if err != nil {
				t.Fatal(err)
			}
			hit10 += overlap(res, exact[i], 10)
			hitK += overlap(res, exact[i], k)
			n10, nK = n10+min(10, len(exact[i])), nK+min(k, len(exact[i]))
		}
		t.Logf("%s walk, k %d, ef %d: %d vectors, %d queries: recall@10 %.4f, recall@%d %.4f, %.1f cpu-µs per search",
			walk, k, ef, ix.Len(), len(queries), float64(hit10)/float64(n10), k, float64(hitK)/float64(nK),
			float64(cpu)/1e3/float64(len(queries)))
	}
	passes := func(walk string) {
		for range 2 { // the first pass faults the mapped pages in
			measure(walk, 100, 100)
			measure(walk, 20, 20)
		}
	}
	passes("float32")
	if err := ix.Quantize(); err != nil {
		t.Fatal(err)
	}
	passes("int8")
}

// TestGenerationWalkCost is an opt-in measurement for docs/benchmarks.md
// ("The walk's memory traffic"), skipped unless RECALL_GEN is set: on the
// same generation and queries as TestGenerationRecall, the int8 walk of a
// top 20 at ef 20 (the hybrid window of a top 10), 12 passes of the
// queries on one thread, and the CPU per search of the last 11.
func TestGenerationWalkCost(t *testing.T) {
	dir := os.Getenv("RECALL_GEN")
	if dir == "" {
		t.Skip("set RECALL_GEN and RECALL_QUERIES")
	}
	ix, queries := loadGeneration(t, dir, os.Getenv("RECALL_QUERIES"))
	if err := ix.Quantize(); err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu int64
	for pass := range 12 {
		c0 := threadCPU()
		for _, q := range queries {
			if _, err := ix.Search(q, 20, ann.SearchOptions{Ef: 20}); err != nil {
				t.Fatal(err)
			}
		}
		if pass > 0 {
			cpu += threadCPU() - c0
		}
	}
	t.Logf("k 20, ef 20: %d vectors, %d queries: %.1f cpu-µs per search", ix.Len(), len(queries), float64(cpu)/1e3/float64(11*len(queries)))
}

// overlap counts the ids of got[:k] among want[:k].
func overlap(got, want []ann.Result, k int) int {
	n := 0
	for _, r := range got[:min(k, len(got))] {
		if slices.ContainsFunc(want[:min(k, len(want))], func(w ann.Result) bool { return w.ID == r.ID }) {
			n++
		}
	}
	return n
}

// loadGeneration loads the newest checkpoint in dir and embeds the
// queries (those with no vocabulary term, a zero vector, are skipped: dense
// recall returns nothing for them).
func loadGeneration(t *testing.T, dir, queriesPath string) (*ann.Index, [][]float32) {
	m, err := lsa.Load(filepath.Join(dir, "lsa.model"), analysis.Default().Terms)
	if err != nil {
		t.Fatal(err)
	}
	cps, _ := filepath.Glob(filepath.Join(dir, "hnsw-*.ann"))
	if len(cps) == 0 {
		t.Fatalf("no checkpoint in %s", dir)
	}
	ix, err := ann.Load(cps[len(cps)-1])
	if err != nil {
		t.Fatal(err)
	}
	qs, err := eval.ReadQueriesFile(queriesPath)
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Text
	}
	vecs, err := m.Embed(context.Background(), texts, embed.KindQuery)
	if err != nil {
		t.Fatal(err)
	}
	return ix, slices.DeleteFunc(vecs, func(v []float32) bool { return !slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) })
}

func threadCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return ru.Utime.Nano() + ru.Stime.Nano()
}
