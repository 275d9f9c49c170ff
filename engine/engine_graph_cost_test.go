package engine

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/bench/gen"
	"github.com/rcpgo/rcpgo/rcp"
)

var costDocs = flag.Int("graphcost.docs", 0, "documents of the graph cost A/B (0: skip it); the docs/rcpd.md figures use 100000")

// graphCostArm is one side of the A/B.
type graphCostArm struct {
	e          *Engine
	dir        string
	ack, sync  time.Duration
	heap       int64 // Go heap the engine held once caught up (released when it closes)
	disk, snap int64
}

// TestGraphCostAB measures what the knowledge graph costs at index time —
// ingest until every batch is acknowledged (the two arms ingest batch by
// batch alternately, so both see the same load), the background catch-up
// after it, disk, heap — and checks that plain sparse retrieve is not slower
// with the graph on: the two engines answer the same questions
// alternately, in one process, once the graph has caught up. Sparse only
// (no dense encoder), so only the graph differs. Run:
//
//	RCPGO_SHARED=../shared nice go test ./engine -run TestGraphCostAB -v -timeout 3h -graphcost.docs 100000
func TestGraphCostAB(t *testing.T) {
	if *costDocs == 0 {
		t.Skip("set -graphcost.docs N to run the graph cost A/B")
	}
	m, err := gen.NewMultihop(gen.MultihopConfig{Seed: 1, Docs: *costDocs, Questions: min(*costDocs/3, 1000)})
	if err != nil {
		t.Fatal(err)
	}
	arms := ingestCostArms(t, m)
	for _, on := range []bool{false, true} {
		t.Logf("graph=%-5v ingest (acked) %v  catch-up after %v", on, arms[on].ack.Round(time.Millisecond), arms[on].sync.Round(time.Millisecond))
	}
	for _, on := range []bool{false, true} {
		a := arms[on]
		held := heapInUse()
		if err := a.e.Close(); err != nil {
			t.Fatal(err)
		}
		a.e = nil
		a.heap = held - heapInUse() // what the engine held: released once closed and dropped
		a.disk, a.snap = dirBytes(t, a.dir)
		t.Logf("graph=%-5v disk %.1f MB (graph.snap %.1f MB)  heap held %.1f MB", on, float64(a.disk)/1e6, float64(a.snap)/1e6, float64(a.heap)/1e6)
		cfg := Config{Dir: a.dir, Graph: on, Dense: DenseNone, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if a.e, err = Open(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.e.Close() })
		if on {
			if err := a.e.SyncGraph(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	lat := map[bool][]time.Duration{}
	ctx := context.Background()
	for rep := 0; rep < 3; rep++ {
		for _, q := range m.Questions {
			params, _ := json.Marshal(map[string]any{"query": q.Text, "k": 10, "mode": "sparse"})
			for _, on := range []bool{rep%2 == 0, rep%2 != 0} { // alternate which arm goes first
				start := time.Now()
				if _, err := arms[on].e.Call(ctx, rcp.MethodRetrieve, params); err != nil {
					t.Fatal(err)
				}
				lat[on] = append(lat[on], time.Since(start))
			}
		}
	}
	for _, on := range []bool{false, true} {
		slices.Sort(lat[on])
		p50, p99 := lat[on][len(lat[on])/2], lat[on][len(lat[on])*99/100]
		t.Logf("graph=%-5v retrieve sparse k=10: %d calls, p50 %v p99 %v", on, len(lat[on]), p50.Round(time.Microsecond), p99.Round(time.Microsecond))
	}
	off, on := arms[false], arms[true]
	t.Logf("A/B: ingest ×%.2f, +%v catch-up, disk ×%.2f, heap ×%.2f, retrieve p50 ×%.2f p99 ×%.2f",
		float64(on.ack)/float64(off.ack), on.sync.Round(time.Second), float64(on.disk)/float64(off.disk), float64(on.heap)/float64(max(off.heap, 1)),
		ratioAt(lat, 50), ratioAt(lat, 99))
}

func ratioAt(lat map[bool][]time.Duration, pct int) float64 {
	at := func(l []time.Duration) float64 { return float64(l[len(l)*pct/100]) }
	return at(lat[true]) / at(lat[false])
}

// ingestCostArms ingests m into two engines, graph off and on, batch by
// batch alternately (which arm goes first alternates too), so both see the
// same machine load; then it waits for the graph to catch up.
func ingestCostArms(t *testing.T, m *gen.Multihop) map[bool]*graphCostArm {
	t.Helper()
	ctx := context.Background()
	arms := map[bool]*graphCostArm{}
	for _, on := range []bool{false, true} {
		a := &graphCostArm{dir: t.TempDir()}
		cfg := Config{Dir: a.dir, Graph: on, Dense: DenseNone, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		var err error
		if a.e, err = Open(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		arms[on] = a
	}
	for lo, batch := 0, 0; lo < len(m.Docs); lo, batch = lo+1000, batch+1 {
		docs := make([]map[string]any, 0, 1000)
		for _, d := range m.Docs[lo:min(lo+1000, len(m.Docs))] {
			docs = append(docs, map[string]any{"id": d.ID, "text": d.Title + "\n" + d.Text})
		}
		params, _ := json.Marshal(map[string]any{"documents": docs})
		for _, on := range []bool{batch%2 == 0, batch%2 != 0} {
			start := time.Now()
			if _, err := arms[on].e.Call(ctx, rcp.MethodIndexAdd, params); err != nil {
				t.Fatal(err)
			}
			arms[on].ack += time.Since(start)
		}
	}
	s := time.Now()
	if err := arms[true].e.SyncGraph(ctx); err != nil {
		t.Fatal(err)
	}
	arms[true].sync = time.Since(s)
	return arms
}

func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// dirBytes sums the files under dir, and graph.snap alone.
func dirBytes(t *testing.T, dir string) (total, snap int64) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		if d.Name() == "graph.snap" {
			snap = info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(fmt.Errorf("disk usage: %w", err))
	}
	return total, snap
}
