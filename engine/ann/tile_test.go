package ann

// Opt-in measurement tools for docs/rcpd.md ("At 1 M units"), skipped
// unless their environment variables are set: TestTileCheckpoint tiles a
// checkpoint TILE_K times into one index of k·n slots (k disjoint copies
// of the graph, ids offset by c<<32) and saves it to TILE_DST;
// TestOpenTiledCheckpoint times Load, the first search (k 100) and Verify
// of the checkpoint at OPEN_PATH.

import (
	"os"
	"strconv"
	"testing"
	"time"
)

func TestTileCheckpoint(t *testing.T) {
	src, dst := os.Getenv("TILE_SRC"), os.Getenv("TILE_DST")
	k, _ := strconv.Atoi(os.Getenv("TILE_K"))
	if src == "" {
		t.Skip()
	}
	ix, err := Load(src)
	if err != nil {
		t.Fatal(err)
	}
	n, d, stride := len(ix.ids), ix.cfg.Dim, ix.stride0
	out, _ := New(ix.cfg)
	for c := 0; c < k; c++ {
		off := int32(c * n)
		for s := 0; s < n; s++ {
			id := ix.ids[s] + uint64(c)<<32
			out.ids = append(out.ids, id)
			out.levels = append(out.levels, ix.levels[s])
			out.deleted = append(out.deleted, ix.deleted[s])
			row := append([]int32(nil), ix.layer0[s*stride:(s+1)*stride]...)
			for i := 1; i <= int(row[0]); i++ {
				row[i] += off
			}
			out.layer0 = append(out.layer0, row...)
			var up [][]int32
			for _, nb := range ix.upper[s] {
				cp := make([]int32, len(nb))
				for i, x := range nb {
					cp[i] = x + off
				}
				up = append(up, cp)
			}
			out.upper = append(out.upper, up)
			out.vecs = append(out.vecs, ix.vecs[s*d:(s+1)*d]...)
			if !ix.deleted[s] {
				out.slotOf[id] = int32(c*n + s)
				out.live++
			}
		}
	}
	out.entry, out.topLevel = ix.entry, ix.topLevel
	if err := out.Save(dst); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d slots, %d live -> %s", len(out.ids), out.live, dst)
}

func TestOpenTiledCheckpoint(t *testing.T) {
	path := os.Getenv("OPEN_PATH")
	if path == "" {
		t.Skip()
	}
	t0 := time.Now()
	ix, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	q := Clustered(1, ix.cfg.Dim, 1, 1, 99)[0]
	res, err := ix.Search(q, 100, SearchOptions{})
	if err != nil || len(res) == 0 {
		t.Fatal(err)
	}
	t2 := time.Now()
	if err := ix.Verify(); err != nil {
		t.Fatal(err)
	}
	verify := time.Since(t2)
	t.Logf("RESULT slots %d load %v first-search %v verify %v", len(ix.ids), t1.Sub(t0).Round(time.Millisecond), t2.Sub(t1).Round(time.Millisecond), verify.Round(time.Millisecond))
}
