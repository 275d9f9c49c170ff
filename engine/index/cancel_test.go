package index

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine/search"
)

// TestMergeStopsWhenCancelled: a merge whose context ends while it
// inverts a format 2 segment's positions (the longest step of a merge of
// old segments: over a minute at 1 M documents, during which a SIGTERM
// waited) stops within invertCheckEvery documents, leaves no file behind
// and changes nothing; the index reopens with the same answers and the
// merge then completes.
func TestMergeStopsWhenCancelled(t *testing.T) {
	dir, _ := goldenIndex(t, 2, nil)
	ix := openTest(t, dir, Options{NoBackground: true})
	mustAdd(t, ix, search.Document{ID: "late", Text: "Nothing here but a fence."})
	if err := ix.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	queries := []string{"w1 w2", `"w1 w2" w5`, "great wall china", "fence"}
	want := rankings(t, ix, queries)
	version := ix.Version()

	ctx, cancel := context.WithCancel(context.Background())
	read := 0
	testHookInvert = func() {
		read++
		cancel() // the shutdown arrives as the inversion starts
	}
	defer func() { testHookInvert = nil }()
	err := ix.ForceMerge(ctx)
	testHookInvert = nil
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled merge: %v", err)
	}
	if read > invertCheckEvery {
		t.Errorf("the cancelled merge read %d documents of the format 2 segment (both passes: %d); it should stop within %d",
			read, 2*ix.cur.Load().segs[0].seg.n, invertCheckEvery)
	}
	if st := ix.Stats(); st.Segments != 2 || ix.Version() != version {
		t.Fatalf("after a cancelled merge: %d segments, version %s → %s", st.Segments, version, ix.Version())
	}
	ents, err := os.ReadDir(filepath.Join(dir, segDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}

	ix = openTest(t, dir, Options{NoBackground: true})
	if got := rankings(t, ix, queries); !slices.Equal(got, want) {
		t.Fatalf("reopened after a cancelled merge:\n%q\nbefore:\n%q", got, want)
	}
	mergeAll(t, ix)
	if st := ix.Stats(); st.Segments != 1 {
		t.Fatalf("merge after reopening: %d segments", st.Segments)
	}
	if got := rankings(t, ix, queries); !slices.Equal(got, want) {
		t.Fatalf("merged:\n%q\nbefore:\n%q", got, want)
	}
}
