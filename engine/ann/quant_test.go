package ann

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestDot8 checks the int8 kernel against the portable loop at every
// length up to 300 (whole 32-component blocks and tails) over the full
// int8 range.
func TestDot8(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for n := range 301 {
		a, b := make([]int8, n), make([]int8, n)
		for i := range a {
			a[i], b[i] = int8(rng.IntN(256)-128), int8(rng.IntN(256)-128)
		}
		if n > 0 {
			a[0], b[0] = -128, -128
		}
		if got, want := dot8(a, b), dot8Generic(a, b); got != want {
			t.Fatalf("n=%d: dot8 = %d, want %d", n, got, want)
		}
	}
}

// TestQuantizedSearch (issue 15, hybrid latency): after Quantize the walk
// scores int8 codes, yet every returned score is the exact float32 one,
// recall stays that of the float32 walk, and vectors added, replaced or
// compacted afterwards are searched like the rest.
func TestQuantizedSearch(t *testing.T) {
	if !fastDot8 {
		t.Skip("no int8 kernel on this machine: Quantize does nothing")
	}
	vecs := Clustered(3000, 64, 40, 0.6, 31)
	queries := Clustered(100, 64, 40, 0.6, 32)
	ix := buildIndex(t, Config{Dim: 64, ExactThreshold: -1}, vecs)
	before := recallAt(t, ix, queries, 10, SearchOptions{})
	if err := ix.Quantize(); err != nil {
		t.Fatal(err)
	}
	after := recallAt(t, ix, queries, 10, SearchOptions{})
	t.Logf("recall@10: float32 walk %.3f, int8 walk %.3f", before, after)
	if after < before-0.02 {
		t.Errorf("recall@10 fell from %.3f to %.3f", before, after)
	}
	for _, q := range queries[:20] {
		res, err := ix.Search(q, 10, SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		qv, _ := ix.prepare(q)
		for _, r := range res {
			v, _ := ix.Vector(r.ID)
			if want := dot(qv, v); r.Score != want {
				t.Fatalf("id %d: score %v, exact %v", r.ID, r.Score, want)
			}
		}
	}
	// Added after Quantize, one replaced: each is its own nearest neighbour.
	extra := Clustered(50, 64, 40, 0.6, 33)
	ids := []uint64{7}
	for i := range extra[1:] {
		ids = append(ids, uint64(10000+i))
	}
	if err := ix.AddBatch(ids, extra); err != nil {
		t.Fatal(err)
	}
	own := func(stage string) {
		t.Helper()
		for i, v := range extra {
			res, err := ix.Search(v, 1, SearchOptions{})
			if err != nil || len(res) == 0 || res[0].ID != ids[i] {
				t.Fatalf("%s: vector of %d finds %v, %v", stage, ids[i], res, err)
			}
		}
	}
	own("after adding")
	ix.Delete(3)
	if err := ix.Compact(); err != nil {
		t.Fatal(err)
	}
	if ix.q == nil || len(ix.q.codes) != len(ix.ids)*64 {
		t.Fatalf("Compact dropped or misaligned the int8 copy")
	}
	own("after compacting")
}

// TestQuantizeRefusesDamage: Quantize reads every vector, so it checks
// every mapped block first and builds nothing from a damaged file.
func TestQuantizeRefusesDamage(t *testing.T) {
	_, bad := encodedIndex(t)
	bad[len(bad)-4*3000/defaultBlockSlots-100] ^= 0x01 // inside the vectors
	got, err := Decode(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Quantize(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Quantize over a damaged block: %v, want ErrCorrupt", err)
	}
	if got.q != nil {
		t.Fatal("an int8 copy was built from a damaged file")
	}
}

func TestToInt8(t *testing.T) {
	for _, c := range []struct {
		x    float32
		want int8
	}{{0, 0}, {0.49, 0}, {0.5, 1}, {-0.5, -1}, {-0.49, 0}, {126.6, 127}, {300, 127}, {-300, -127}} {
		if got := toInt8(c.x); got != c.want {
			t.Errorf("toInt8(%v) = %d, want %d", c.x, got, c.want)
		}
	}
}

// TestQuantizeWaitsForVectors: Quantize on an index still searched exactly
// (a generation published empty, or small) builds nothing yet — scales from
// no or few vectors would clip the rest — and the copy appears, with scales
// from the stored vectors, once the index grows past ExactThreshold.
func TestQuantizeWaitsForVectors(t *testing.T) {
	if !fastDot8 {
		t.Skip("no int8 kernel on this machine: Quantize does nothing")
	}
	ix, err := New(Config{Dim: 64, ExactThreshold: 500})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Quantize(); err != nil || ix.q != nil {
		t.Fatalf("Quantize on an empty index: %v, copy built %v", err, ix.q != nil)
	}
	vecs := Clustered(1200, 64, 20, 0.6, 41)
	ids := make([]uint64, len(vecs))
	for i := range ids {
		ids[i] = uint64(i)
	}
	if err := ix.AddBatch(ids[:400], vecs[:400]); err != nil || ix.q != nil {
		t.Fatalf("400 vectors (exact search): %v, copy built %v", err, ix.q != nil)
	}
	if err := ix.AddBatch(ids[400:], vecs[400:]); err != nil || ix.q == nil {
		t.Fatalf("1200 vectors: %v, copy built %v", err, ix.q != nil)
	}
	if len(ix.q.codes) != len(ix.ids)*64 || ix.q.scale[0] == 1 {
		t.Fatalf("copy of %d codes for %d slots, scale[0] %v", len(ix.q.codes), len(ix.ids), ix.q.scale[0])
	}
	for i, v := range vecs[:50] {
		if res, err := ix.Search(v, 1, SearchOptions{}); err != nil || len(res) == 0 || res[0].ID != ids[i] {
			t.Fatalf("vector %d finds %v, %v", i, res, err)
		}
	}
}

// BenchmarkSearchQuantized is the int8 walk of a top 20 at ef 20 (the
// hybrid fusion window of a top 10) over 100 000 vectors of 256
// dimensions spread widely around 1 000 centres — close to random, like
// the LSA vectors of a generated corpus — so that the walk is long and
// its codes (25 MB) do not stay in the cache. It reports the allocations
// per search. Building the index takes about a minute.
func BenchmarkSearchQuantized(b *testing.B) {
	if !fastDot8 {
		b.Skip("no int8 kernel on this machine")
	}
	vecs := Clustered(100_000, 256, 1000, 3, 41)
	queries := Clustered(1000, 256, 1000, 3, 42)
	ix, err := New(Config{Dim: 256, Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]uint64, len(vecs))
	for i := range ids {
		ids[i] = uint64(i + 1)
	}
	if err := ix.AddBatch(ids, vecs); err != nil {
		b.Fatal(err)
	}
	if err := ix.Quantize(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := ix.Search(queries[i%len(queries)], 20, SearchOptions{Ef: 20}); err != nil {
			b.Fatal(err)
		}
	}
}
