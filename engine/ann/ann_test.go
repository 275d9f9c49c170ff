package ann

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

func buildIndex(t testing.TB, cfg Config, vecs [][]float32) *Index {
	t.Helper()
	ix, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]uint64, len(vecs))
	for i := range ids {
		ids[i] = uint64(i)
	}
	if err := ix.AddBatch(ids, vecs); err != nil {
		t.Fatal(err)
	}
	return ix
}

func recallAt(t testing.TB, ix *Index, queries [][]float32, k int, opts SearchOptions) float64 {
	t.Helper()
	hit, total := 0, 0
	for _, q := range queries {
		got, err := ix.Search(q, k, opts)
		if err != nil {
			t.Fatal(err)
		}
		eo := opts
		eo.Exact = true
		want, _ := ix.Search(q, k, eo)
		set := map[uint64]bool{}
		for _, r := range want {
			set[r.ID] = true
		}
		for _, r := range got {
			if set[r.ID] {
				hit++
			}
		}
		total += len(want)
	}
	return float64(hit) / float64(total)
}

func TestHNSWRecall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds HNSW graphs large enough to measure recall; skipped with -short")
	}
	vecs := Clustered(6000, 48, 40, 0.6, 1)
	queries := Clustered(100, 48, 40, 0.6, 2)
	for _, workers := range []int{1, 2} {
		ix := buildIndex(t, Config{Dim: 48, ExactThreshold: -1, Workers: workers}, vecs)
		if r := recallAt(t, ix, queries, 10, SearchOptions{}); r < 0.95 {
			t.Errorf("workers=%d: recall@10 = %.3f < 0.95", workers, r)
		} else {
			t.Logf("workers=%d: recall@10 = %.3f", workers, r)
		}
	}
}

func TestHNSWRecallDot(t *testing.T) {
	// Inner product on unnormalised vectors (norms vary by cluster).
	vecs := Clustered(4000, 32, 30, 0.6, 21)
	queries := Clustered(60, 32, 30, 0.6, 22)
	ix := buildIndex(t, Config{Dim: 32, Metric: Dot, ExactThreshold: -1}, vecs)
	if r := recallAt(t, ix, queries, 10, SearchOptions{Ef: 128}); r < 0.9 {
		t.Errorf("dot recall@10 = %.3f", r)
	} else {
		t.Logf("dot recall@10 = %.3f", r)
	}
}

func TestDeterministicBuild(t *testing.T) {
	vecs := Clustered(1500, 16, 10, 0.5, 3)
	a := buildIndex(t, Config{Dim: 16, ExactThreshold: -1, Workers: 1}, vecs)
	b := buildIndex(t, Config{Dim: 16, ExactThreshold: -1, Workers: 1}, vecs)
	var ba, bb bytes.Buffer
	a.WriteTo(&ba)
	b.WriteTo(&bb)
	if !bytes.Equal(ba.Bytes(), bb.Bytes()) {
		t.Fatal("two single-worker builds differ")
	}
}

func TestSearchBasics(t *testing.T) {
	ix, _ := New(Config{Dim: 3, Metric: Dot})
	if r, err := ix.Search([]float32{1, 0, 0}, 5, SearchOptions{}); err != nil || len(r) != 0 {
		t.Fatalf("empty index: %v %v", r, err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ix.Add(7, []float32{1, 0, 0}))
	must(ix.Add(3, []float32{2, 0, 0}))
	must(ix.Add(5, []float32{1, 0, 0}))
	must(ix.Add(9, []float32{0, 1, 0}))
	got, err := ix.Search([]float32{1, 0, 0}, 3, SearchOptions{})
	must(err)
	want := []Result{{3, 2}, {5, 1}, {7, 1}} // ties by ascending id
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	tests := []struct {
		name string
		vec  []float32
		err  error
	}{
		{"short", []float32{1, 2}, ErrDimension},
		{"nan", []float32{float32(math.NaN()), 0, 0}, ErrNotFinite},
		{"inf", []float32{float32(math.Inf(1)), 0, 0}, ErrNotFinite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ix.Add(1, tt.vec); !errors.Is(err, tt.err) {
				t.Errorf("Add: %v, want %v", err, tt.err)
			}
			if _, err := ix.Search(tt.vec, 1, SearchOptions{}); !errors.Is(err, tt.err) {
				t.Errorf("Search: %v, want %v", err, tt.err)
			}
		})
	}
	if _, err := New(Config{Dim: 0}); err == nil {
		t.Error("dim 0 accepted")
	}
	if _, err := New(Config{Dim: 4, Metric: 9}); err == nil {
		t.Error("bad metric accepted")
	}
}

func TestCosineNormalises(t *testing.T) {
	ix, _ := New(Config{Dim: 2})
	ix.Add(1, []float32{10, 0})
	ix.Add(2, []float32{1, 1})
	got, _ := ix.Search([]float32{3, 3}, 2, SearchOptions{})
	if got[0].ID != 2 || math.Abs(float64(got[0].Score)-1) > 1e-6 || math.Abs(float64(got[1].Score)-math.Sqrt2/2) > 1e-6 {
		t.Errorf("got %v", got)
	}
}

func TestFilteredSearch(t *testing.T) {
	vecs := Clustered(5000, 32, 30, 0.6, 4)
	queries := Clustered(60, 32, 30, 0.6, 5)
	ix := buildIndex(t, Config{Dim: 32, ExactThreshold: -1}, vecs)
	tests := []struct {
		name   string
		filter func(uint64) bool
	}{
		{"half", func(id uint64) bool { return id%2 == 0 }},
		{"tenth", func(id uint64) bool { return id%10 == 3 }},
		{"selective 1%", func(id uint64) bool { return id%100 == 42 }},
		{"five ids", func(id uint64) bool { return id == 1 || id == 77 || id == 1234 || id == 4000 || id == 4999 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := SearchOptions{Filter: tt.filter}
			for _, q := range queries[:10] {
				got, err := ix.Search(q, 10, opts)
				if err != nil {
					t.Fatal(err)
				}
				admitted := 0
				for id := range uint64(5000) {
					if tt.filter(id) {
						admitted++
					}
				}
				if len(got) != min(10, admitted) {
					t.Fatalf("got %d hits, want %d", len(got), min(10, admitted))
				}
				for _, r := range got {
					if !tt.filter(r.ID) {
						t.Fatalf("hit %d fails the filter", r.ID)
					}
				}
			}
			if r := recallAt(t, ix, queries, 10, opts); r < 0.95 {
				t.Errorf("filtered recall@10 = %.3f", r)
			}
		})
	}
}

func TestDeleteReplaceCompact(t *testing.T) {
	vecs := Clustered(4000, 24, 20, 0.5, 6)
	queries := Clustered(50, 24, 20, 0.5, 7)
	ix := buildIndex(t, Config{Dim: 24, ExactThreshold: -1}, vecs)
	for id := uint64(0); id < 4000; id += 3 {
		if !ix.Delete(id) {
			t.Fatalf("delete %d", id)
		}
	}
	if ix.Delete(0) {
		t.Error("double delete reported true")
	}
	if ix.Len() != 4000-1334 || ix.Deleted() != 1334 {
		t.Fatalf("len %d deleted %d", ix.Len(), ix.Deleted())
	}
	check := func(stage string) {
		for _, q := range queries {
			got, _ := ix.Search(q, 10, SearchOptions{})
			if len(got) != 10 {
				t.Fatalf("%s: %d hits", stage, len(got))
			}
			for _, r := range got {
				if r.ID%3 == 0 && r.ID != 3 {
					t.Fatalf("%s: deleted id %d returned", stage, r.ID)
				}
			}
		}
		if r := recallAt(t, ix, queries, 10, SearchOptions{}); r < 0.95 {
			t.Errorf("%s: recall %.3f", stage, r)
		}
	}
	// Re-adding a deleted id and replacing a live one.
	ix.Add(3, queries[0])
	ix.Add(4, queries[1])
	if got, _ := ix.Search(queries[1], 1, SearchOptions{}); got[0].ID != 4 || got[0].Score < 0.9999 {
		t.Errorf("replaced vector not found: %v", got)
	}
	if _, ok := ix.Vector(4); !ok {
		t.Error("Vector(4) missing")
	}
	check("tombstones")
	if err := ix.Compact(); err != nil {
		t.Fatal(err)
	}
	if ix.Deleted() != 0 || ix.Len() != 4000-1333 {
		t.Fatalf("after compact: len %d deleted %d", ix.Len(), ix.Deleted())
	}
	check("compacted")
}

func TestPersistRoundTrip(t *testing.T) {
	vecs := Clustered(3000, 16, 12, 0.5, 8)
	ix := buildIndex(t, Config{Dim: 16, ExactThreshold: 100, M: 8, Identity: "lsa-16:fit=abc"}, vecs)
	ix.Delete(10)
	path := filepath.Join(t.TempDir(), "vec.ann")
	if err := ix.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() != ix.Len() || got.Config() != ix.Config() || got.Contains(10) || got.Config().Identity != "lsa-16:fit=abc" {
		t.Fatalf("reloaded: len %d cfg %+v", got.Len(), got.Config())
	}
	for _, q := range vecs[:20] {
		a, _ := ix.Search(q, 10, SearchOptions{})
		b, _ := got.Search(q, 10, SearchOptions{})
		if !slices.Equal(a, b) {
			t.Fatalf("results differ after reload: %v vs %v", a, b)
		}
	}
	// Adding after reload works.
	if err := got.Add(99999, vecs[0]); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	ix.WriteTo(&buf)
	data := buf.Bytes()
	// A damaged header, meta or block table fails at once; a damaged
	// block of links or vectors fails when it is touched or verified.
	for _, off := range []int{0, 9, 40, len(data) / 2, len(data) - 2} {
		bad := bytes.Clone(data)
		bad[off] ^= 0x10
		ix, err := Decode(bad)
		if err == nil {
			err = ix.Verify()
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("flip at %d: %v", off, err)
		}
	}
	if _, err := Decode(data[:len(data)-1]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("truncated: %v", err)
	}
	if _, err := Decode(append(bytes.Clone(data), 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("trailing: %v", err)
	}
}

func TestConcurrentSearch(t *testing.T) {
	vecs := Clustered(3000, 16, 12, 0.5, 9)
	ix := buildIndex(t, Config{Dim: 16, ExactThreshold: -1}, vecs)
	want := make([][]Result, 40)
	for i := range want {
		want[i], _ = ix.Search(vecs[i], 5, SearchOptions{})
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range want {
				got, _ := ix.Search(vecs[i], 5, SearchOptions{})
				if !slices.Equal(got, want[i]) {
					t.Errorf("goroutine %d query %d differs", g, i)
				}
			}
		}()
	}
	wg.Wait()
}

func FuzzDecode(f *testing.F) {
	ix := buildIndex(f, Config{Dim: 4, M: 4}, Clustered(40, 4, 3, 0.5, 1))
	ix.Delete(3)
	var buf bytes.Buffer
	ix.WriteTo(&buf)
	f.Add(buf.Bytes())
	if v1, err := os.ReadFile("testdata/v1.ann"); err == nil {
		f.Add(v1)
	}
	empty, _ := New(Config{Dim: 2})
	buf.Reset()
	empty.WriteTo(&buf)
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		// A decoded index must search and accept inserts without panicking
		// (or fail them with ErrCorrupt when a block is damaged), and an
		// intact one re-encodes to an index that verifies.
		q := make([]float32, ix.Config().Dim)
		q[0] = 1
		for _, opts := range []SearchOptions{{}, {Filter: func(id uint64) bool { return id%2 == 0 }}} {
			if _, err := ix.Search(q, 3, opts); err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("search: %v", err)
			}
		}
		verr := ix.Verify()
		if verr != nil && !errors.Is(verr, ErrCorrupt) {
			t.Fatalf("verify: %v", verr)
		}
		var out bytes.Buffer
		if _, err := ix.WriteTo(&out); (err != nil) != (verr != nil) {
			t.Fatalf("write after verify %v: %v", verr, err)
		}
		if verr != nil {
			if err := ix.Add(1<<40, q); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("insert into a damaged index: %v", err)
			}
			return
		}
		again, err := Decode(out.Bytes())
		if err != nil || again.Verify() != nil || again.Len() != ix.Len() {
			t.Fatalf("re-encoded index: %v", err)
		}
		if err := ix.Add(1<<40, q); err != nil {
			t.Fatal(err)
		}
	})
}

// checkGraph verifies structural invariants: no self-links, no duplicate
// links, links only to nodes that exist on that layer, degree bounds.
func checkGraph(t *testing.T, ix *Index) {
	t.Helper()
	for s := range ix.ids {
		if len(ix.upper[s]) != int(ix.levels[s]) {
			t.Fatalf("slot %d has %d upper layers, level %d", s, len(ix.upper[s]), ix.levels[s])
		}
		for l := 0; l <= int(ix.levels[s]); l++ {
			nb := ix.getLinks(int32(s), l)
			limit := ix.cfg.M
			if l == 0 {
				limit = 2 * ix.cfg.M
			}
			if len(nb) > limit {
				t.Fatalf("slot %d layer %d has %d links > %d", s, l, len(nb), limit)
			}
			seen := map[int32]bool{}
			for _, x := range nb {
				if int(x) == s || seen[x] || int(ix.levels[x]) < l {
					t.Fatalf("slot %d layer %d: bad link %d (self, duplicate or missing layer)", s, l, x)
				}
				seen[x] = true
			}
		}
	}
}

func TestParallelBuildInvariants(t *testing.T) {
	vecs := Clustered(4000, 8, 5, 0.3, 11)
	for range 2 {
		ix := buildIndex(t, Config{Dim: 8, M: 6, EfConstruction: 40, Workers: 4, ExactThreshold: -1}, vecs)
		checkGraph(t, ix)
	}
}
