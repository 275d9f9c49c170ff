//go:build unix

package engine

// TestRetrieveDataDir is an opt-in measurement for docs/benchmarks.md
// ("Hybrid ÷ sparse"), skipped unless RETRIEVE_DATA is set: it opens an
// rcpd data directory (RETRIEVE_DATA — it is written to: use a copy), waits
// until its dense generation is loaded and checked and the directory is
// verified (the background checks after Open), and sends every query of
// RETRIEVE_QUERIES (BEIR queries.jsonl) through the full retrieve path in
// process (an in-process rcp client: no HTTP) as a top-10 retrieve in each
// mode of RETRIEVE_MODES (comma-separated; default "sparse,hybrid"),
// alternating the modes per pass, for RETRIEVE_ROUNDS passes (default 4;
// the first warms up). Per mode it reports the p50 of
// usage.latencyMs and the process CPU time per retrieve.

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/eval"
	"github.com/rcpgo/rcpgo/rcp"
)

func TestRetrieveDataDir(t *testing.T) {
	dir := os.Getenv("RETRIEVE_DATA")
	if dir == "" {
		t.Skip("set RETRIEVE_DATA and RETRIEVE_QUERIES")
	}
	rounds, _ := strconv.Atoi(os.Getenv("RETRIEVE_ROUNDS"))
	if rounds < 2 {
		rounds = 4
	}
	queries := readQueryTexts(t, os.Getenv("RETRIEVE_QUERIES"))
	modes := []string{rcp.ModeSparse, rcp.ModeHybrid}
	if m := os.Getenv("RETRIEVE_MODES"); m != "" {
		modes = strings.Split(m, ",")
	}
	e := openDataDir(t, dir)
	c := connect(t, e)
	ctx := context.Background()
	lat := map[string][]float64{}
	cpu := map[string]time.Duration{}
	for round := range rounds {
		for _, mode := range modes {
			c0 := processCPU()
			for _, q := range queries {
				res, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery(q), K: 10, Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				if round > 0 && res.Usage != nil && res.Usage.LatencyMs != nil {
					lat[mode] = append(lat[mode], *res.Usage.LatencyMs)
				}
			}
			if round > 0 {
				cpu[mode] += processCPU() - c0
			}
		}
	}
	for _, mode := range modes {
		l := lat[mode]
		slices.Sort(l)
		if len(l) == 0 {
			t.Fatalf("%s: no usage.latencyMs", mode)
		}
		t.Logf("%s: p50 %.3f ms, %.1f cpu-µs per retrieve (%d retrieves)", mode, l[len(l)/2],
			float64(cpu[mode].Microseconds())/float64(len(queries)*(rounds-1)), len(queries)*(rounds-1))
	}
}

// openDataDir opens the data directory dir once its dense generation is
// loaded and its checks after Open are done: the checks read every page
// and segment byte, and a retrieve measured beside them shares the CPU.
func openDataDir(t *testing.T, dir string) *Engine {
	e := quietEngine(t, Config{Dir: dir})
	settle(t, e)
	if err := e.Verified(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestHybridPartsDataDir is the opt-in measurement behind docs/benchmarks.md
// ("Field lengths fetched ahead, then stored in 16 bits"), skipped unless
// RETRIEVE_DATA is set (the same variables as TestRetrieveDataDir): the p50
// of a hybrid request's two recalls — the sparse search of its fusion
// window (top 20, no documents loaded) and the dense recall (embedding,
// walk, re-score) — each run over all the queries on its own, then
// alternated query by query as a hybrid request runs them, 4 passes after
// one unmeasured. What one leaves in the cache changes what the other
// costs.
func TestHybridPartsDataDir(t *testing.T) {
	dir := os.Getenv("RETRIEVE_DATA")
	if dir == "" {
		t.Skip("set RETRIEVE_DATA and RETRIEVE_QUERIES")
	}
	queries := readQueryTexts(t, os.Getenv("RETRIEVE_QUERIES"))
	e := openDataDir(t, dir)
	ix, ok := e.ix.(*index.Index)
	g := e.published()
	if !ok || g == nil {
		t.Fatal("the directory needs the embedded index and a dense generation")
	}
	ctx := context.Background()
	parts := map[string]func(q string){
		"sparse": func(q string) { ix.Search(ctx, search.Query{Text: q, K: 20, SkipDocs: true}) },
		"dense":  func(q string) { e.dense.Recall(g, nil).Recall(ctx, q, 20, 20, nil) },
	}
	lat := map[string][]time.Duration{}
	timed := func(name, as, q string, round int) {
		t0 := time.Now()
		parts[name](q)
		if round > 0 {
			lat[as] = append(lat[as], time.Since(t0))
		}
	}
	for _, name := range []string{"sparse", "dense"} {
		for round := range 5 {
			for _, q := range queries {
				timed(name, name+" alone", q, round)
			}
		}
	}
	for round := range 5 {
		for _, q := range queries {
			timed("sparse", "sparse after dense", q, round)
			timed("dense", "dense after sparse", q, round)
		}
	}
	for _, as := range []string{"sparse alone", "sparse after dense", "dense alone", "dense after sparse"} {
		l := lat[as]
		slices.Sort(l)
		t.Logf("%s: p50 %.1f µs (%d)", as, float64(l[len(l)/2].Nanoseconds())/1e3, len(l))
	}
}

func readQueryTexts(t *testing.T, path string) []string {
	qs, err := eval.ReadQueriesFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Text
	}
	return out
}
