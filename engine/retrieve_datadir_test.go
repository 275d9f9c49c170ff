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
	e := quietEngine(t, Config{Dir: dir})
	settle(t, e)
	// The checks Open leaves to the background read every page and
	// segment byte: measured beside them, a retrieve shares the CPU.
	if err := e.Verified(context.Background()); err != nil {
		t.Fatal(err)
	}
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
