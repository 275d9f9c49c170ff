package ann

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// goldenV1 rebuilds the index stored in testdata/v1.ann (written by the
// version-1 encoder): the same vectors, ids and deterministic build.
func goldenV1(t *testing.T) *Index {
	t.Helper()
	ix, err := New(Config{Dim: 8, M: 6, ExactThreshold: -1, Workers: 1, Identity: "lsa-8:fit=v1golden"})
	if err != nil {
		t.Fatal(err)
	}
	vs := Clustered(600, 8, 6, 0.4, 21)
	ids := make([]uint64, len(vs))
	for i := range ids {
		ids[i] = uint64(i + 1)
	}
	if err := ix.AddBatch(ids, vs); err != nil {
		t.Fatal(err)
	}
	ix.Delete(7)
	return ix
}

func sameSearches(t *testing.T, want, got *Index, queries [][]float32) {
	t.Helper()
	for i, q := range queries {
		a, err := want.Search(q, 10, SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := got.Search(q, 10, SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a, b) {
			t.Fatalf("query %d: %v, want %v", i, b, a)
		}
	}
}

// sameGraph checks that got holds want's slots, tombstones, links and
// vectors.
func sameGraph(t *testing.T, want, got *Index) {
	t.Helper()
	if got.entry != want.entry || got.topLevel != want.topLevel || !slices.Equal(got.ids, want.ids) ||
		!slices.Equal(got.levels, want.levels) || !slices.Equal(got.deleted, want.deleted) {
		t.Fatal("slots differ")
	}
	for s := range want.ids {
		for l := 0; l <= int(want.levels[s]); l++ {
			if !slices.Equal(got.getLinks(int32(s), l), want.getLinks(int32(s), l)) {
				t.Fatalf("slot %d layer %d: links differ", s, l)
			}
		}
		if !slices.Equal(got.vec(int32(s)), want.vec(int32(s))) {
			t.Fatalf("slot %d: vectors differ", s)
		}
	}
}

// TestLoadVersion1 (issue 15): a checkpoint in the version-1 format still
// opens, says it is outdated, searches as the index it was written from,
// and Save rewrites it in the mapped format.
func TestLoadVersion1(t *testing.T) {
	old, err := Load("testdata/v1.ann")
	if err != nil {
		t.Fatal(err)
	}
	want := goldenV1(t)
	queries := Clustered(30, 8, 6, 0.4, 22)
	if !old.Outdated() || old.Len() != want.Len() || old.Contains(7) {
		t.Fatalf("version-1 file: outdated %v, %d vectors", old.Outdated(), old.Len())
	}
	sameGraph(t, want, old)
	path := filepath.Join(t.TempDir(), "v2.ann")
	if err := old.Save(path); err != nil {
		t.Fatal(err)
	}
	cur, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Outdated() || cur.base == nil {
		t.Fatalf("rewritten file: outdated %v, mapped %v", cur.Outdated(), cur.base != nil)
	}
	sameGraph(t, want, cur)
	sameSearches(t, old, cur, queries)
	if err := cur.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestMappedChecksOnTouch (issue 15): a loaded index checks a block of
// links and vectors when a search first reads it, so opening reads only
// the header and meta. The first search checks only the blocks it
// walked; Verify checks the rest.
func TestMappedChecksOnTouch(t *testing.T) {
	vecs := Clustered(20000, 16, 40, 0.3, 5)
	ix := buildIndex(t, Config{Dim: 16, M: 8, EfConstruction: 60, ExactThreshold: -1}, vecs)
	path := filepath.Join(t.TempDir(), "x.ann")
	if err := ix.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks := len(got.base.sums)
	if n := got.base.unchecked.Load(); n != int64(blocks) {
		t.Fatalf("%d of %d blocks unchecked after Load, want all", n, blocks)
	}
	sameSearches(t, ix, got, vecs[:1])
	left := got.base.unchecked.Load()
	if left == 0 || left == int64(blocks) {
		t.Fatalf("one search left %d of %d blocks unchecked, want some but not all", left, blocks)
	}
	if err := got.Verify(); err != nil || got.base.unchecked.Load() != 0 {
		t.Fatalf("verify: %v, %d blocks unchecked", err, got.base.unchecked.Load())
	}
	sameSearches(t, ix, got, vecs[1:40])
}

// encodedIndex builds a graph index over 3000 vectors (16 dimensions,
// several mapped blocks of vectors) and encodes it, for the tests that
// damage its bytes.
func encodedIndex(t *testing.T) (vecs [][]float32, enc []byte) {
	t.Helper()
	vecs = Clustered(3000, 16, 12, 0.5, 6)
	ix := buildIndex(t, Config{Dim: 16, M: 8, ExactThreshold: -1}, vecs)
	var buf bytes.Buffer
	if _, err := ix.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return vecs, buf.Bytes()
}

// TestMappedDamage (issue 15): a byte flipped inside the mapped links or
// vectors is found by the search that touches it or by Verify, and from
// then on the index refuses searches, inserts and saves with ErrCorrupt:
// a damaged file is never served.
func TestMappedDamage(t *testing.T) {
	vecs, good := encodedIndex(t)
	probe, err := Decode(good)
	if err != nil {
		t.Fatal(err)
	}
	rows := len(good) - len(probe.base.vecBytes) - 4*len(probe.base.sums) - 4 - len(probe.base.rowBytes)
	for _, off := range []int{rows + 8, rows + len(probe.base.rowBytes) + 100, len(good) - 4*len(probe.base.sums) - 10} {
		bad := bytes.Clone(good)
		bad[off] ^= 0x01
		path := filepath.Join(t.TempDir(), "bad.ann")
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Load(path)
		if err != nil {
			t.Fatalf("flip at %d: Load checked the block already: %v", off, err)
		}
		if _, err := got.Search(vecs[0], 5, SearchOptions{Exact: true}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d: exact search over every block: %v", off, err)
		}
		if err := got.Verify(); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d: verify: %v", off, err)
		}
		if _, err := got.Search(vecs[1], 5, SearchOptions{}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d: search after damage: %v", off, err)
		}
		if err := got.Add(1<<40, vecs[0]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d: insert: %v", off, err)
		}
		if _, err := got.WriteTo(&bytes.Buffer{}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d: write: %v", off, err)
		}
		if _, ok := got.Vector(3); ok {
			t.Fatalf("flip at %d: Vector served from a damaged index", off)
		}
	}
}

// TestMappedWrites (issue 15): inserts and deletes after Load relink
// mapped nodes in private copies of their pages — the file is unchanged —
// and the index keeps answering as one built in memory with the same
// operations; saving and loading it again gives the same answers.
func TestMappedWrites(t *testing.T) {
	vecs := Clustered(4000, 16, 12, 0.5, 7)
	cfg := Config{Dim: 16, M: 8, ExactThreshold: -1, Workers: 1}
	heap := buildIndex(t, cfg, vecs[:3000])
	path := filepath.Join(t.TempDir(), "x.ann")
	if err := heap.Save(path); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mapped, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, ix := range []*Index{heap, mapped} {
		for i := 3000; i < 4000; i++ {
			if err := ix.Add(uint64(i), vecs[i]); err != nil {
				t.Fatal(err)
			}
		}
		for i := uint64(0); i < 3000; i += 7 {
			ix.Delete(i)
		}
		if err := ix.Add(5, vecs[3999]); err != nil {
			t.Fatal(err)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("writes to the loaded index reached its file")
	}
	queries := Clustered(40, 16, 12, 0.5, 8)
	sameSearches(t, heap, mapped, queries)
	again := filepath.Join(t.TempDir(), "y.ann")
	if err := mapped.Save(again); err != nil {
		t.Fatal(err)
	}
	reloaded, err := Load(again)
	if err != nil {
		t.Fatal(err)
	}
	sameSearches(t, heap, reloaded, queries)
	if reloaded.Len() != heap.Len() || !reloaded.Contains(5) || reloaded.Contains(7) {
		t.Fatalf("reloaded: %d vectors, want %d", reloaded.Len(), heap.Len())
	}
}
