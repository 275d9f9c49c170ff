package index

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/rcpgo/rcpgo/engine/search"
)

// TestLiveIDs: a document number resolves to its id while that version
// of the document is live in the current snapshot — in memory and on
// disk segments alike — and to "" once it is replaced or deleted.
func TestLiveIDs(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t, "", Options{NoBackground: true})
	mustAdd(t, ix, search.Document{ID: "a", Text: "alpha"}, search.Document{ID: "b", Text: "beta"}, search.Document{ID: "c", Text: "gamma"})
	first, err := ix.Nums(ctx, []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	check := func(nums []search.DocNum, want ...string) {
		t.Helper()
		got, err := ix.LiveIDs(nums)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("LiveIDs(%v) = %q, %v; want %q", nums, got, err, want)
		}
	}
	check(first, "a", "b", "c")
	check([]search.DocNum{0, 999}, "", "")

	if err := ix.Flush(ctx); err != nil { // now in a disk segment
		t.Fatal(err)
	}
	check(first, "a", "b", "c")
	mustAdd(t, ix, search.Document{ID: "a", Title: "A", Text: "alpha"}) // a new version
	if _, err := ix.Delete(ctx, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	now, err := ix.Nums(ctx, []string{"a"})
	if err != nil || now[0] == first[0] {
		t.Fatalf("re-added a has number %v (was %v), %v", now, first[0], err)
	}
	check(append(first, now[0]), "", "", "c", "a")

	ix.Close()
	if _, err := ix.LiveIDs(first); err != ErrClosed {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

// Unchanged is true exactly when Commit would write nothing: every
// document stored as given under its id, none a chunk.
func TestUnchanged(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t, "", Options{NoBackground: true})
	mustAdd(t, ix, search.Document{ID: "a", Text: "alpha", Meta: map[string]any{"k": "v"}}, search.Document{ID: "b", Text: "beta"})
	if _, err := ix.Delete(ctx, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		docs []search.Document
		want bool
	}{
		{"identical", []search.Document{{ID: "a", Text: "alpha", Meta: map[string]any{"k": "v"}}}, true},
		{"other text", []search.Document{{ID: "a", Text: "alpha!", Meta: map[string]any{"k": "v"}}}, false},
		{"other meta", []search.Document{{ID: "a", Text: "alpha"}}, false},
		{"other title", []search.Document{{ID: "a", Title: "A", Text: "alpha", Meta: map[string]any{"k": "v"}}}, false},
		{"new id", []search.Document{{ID: "a", Text: "alpha", Meta: map[string]any{"k": "v"}}, {ID: "c", Text: "gamma"}}, false},
		{"deleted id", []search.Document{{ID: "b", Text: "beta"}}, false},
		{"no id", []search.Document{{Text: "alpha"}}, false},
		{"chunk", []search.Document{{ID: "a#c0", Text: "alpha", Chunk: &search.ChunkRef{DocID: "a"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ix.Prepare(ctx, tc.docs)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := ix.Unchanged(b); err != nil || got != tc.want {
				t.Errorf("Unchanged = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	// It agrees with Commit: the identical batch publishes no version.
	v := ix.Version()
	b, err := ix.Prepare(ctx, []search.Document{{ID: "a", Text: "alpha", Meta: map[string]any{"k": "v"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Commit(ctx, b); err != nil || ix.Version() != v {
		t.Errorf("Commit of an unchanged batch: %v, version %s → %s", err, v, ix.Version())
	}
}

// TestFindSeq: findSeq confines its search to the positions a number can
// hold; every stored number is found at its position and every other one
// is absent, in segments without gaps, with gaps, and with one document.
func TestFindSeq(t *testing.T) {
	for _, seqs := range [][]uint64{
		{7}, {1, 2, 3, 4, 5}, {10, 11, 12, 20, 21, 40}, {3, 100, 101, 102}, {1, 3, 5, 7, 9, 11, 13},
	} {
		s := &segment{n: len(seqs), minSeq: seqs[0], maxSeq: seqs[len(seqs)-1]}
		for _, q := range seqs {
			s.sec[secSeqs] = binary.LittleEndian.AppendUint64(s.sec[secSeqs], q)
		}
		for q := uint64(0); q <= seqs[len(seqs)-1]+2; q++ {
			at := slices.Index(seqs, q)
			i, ok := s.findSeq(q)
			if ok != (at >= 0) || ok && int(i) != at {
				t.Fatalf("%v: findSeq(%d) = %d, %v; want %d", seqs, q, i, ok, at)
			}
		}
	}
}
