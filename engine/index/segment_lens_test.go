package index

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine/search"
)

// TestFieldLengthWidths: a segment whose field lengths all fit in 16 bits
// stores them in 16 bits (format 5: half the bytes the scorer reads at
// random), one holding a longer field in 32 bits; both read back every
// length exactly, and a merge of the two keeps them and the ranking.
func TestFieldLengthWidths(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t, "", Options{NoBackground: true})
	want := map[string][numFields]uint32{}
	var docs []search.Document
	for i := range 50 {
		id := fmt.Sprintf("d%02d", i)
		docs = append(docs, search.Document{ID: id, Title: "zeta theta", Text: strings.Repeat("alpha ", i+1) + "omega"})
		want[id] = [numFields]uint32{2, uint32(i + 2)}
	}
	mustAdd(t, ix, docs...)
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	const long = 70_000
	mustAdd(t, ix, search.Document{ID: "long", Title: "zeta", Text: strings.Repeat("alpha ", long-1) + "omega"})
	want["long"] = [numFields]uint32{1, long}
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(stage string, widths ...int) {
		t.Helper()
		var got []int
		seen := 0
		for _, v := range ix.cur.Load().segs {
			got = append(got, v.seg.lensW)
			for i := 0; i < v.seg.n; i++ {
				id := v.seg.id(uint32(i))
				for f := range numFields {
					if l := v.seg.fieldLen(uint32(i), f); l != want[id][f] {
						t.Fatalf("%s: %s field %d length %d, want %d", stage, id, f, l, want[id][f])
					}
				}
				seen++
			}
		}
		if !slices.Equal(got, widths) || seen != len(want) {
			t.Fatalf("%s: widths %v (want %v), %d documents", stage, got, widths, seen)
		}
	}
	check("flushed", 2, 4)
	q := search.Query{Text: "alpha omega zeta", K: 10}
	before := mustSearch(t, ix, q)
	mergeAll(t, ix)
	check("merged", 4)
	after := mustSearch(t, ix, q)
	if !slices.Equal(hitIDs(before), hitIDs(after)) {
		t.Fatalf("ranking changed by the merge: %v, then %v", hitIDs(before), hitIDs(after))
	}
	for i := range before.Hits {
		if before.Hits[i].Score != after.Hits[i].Score {
			t.Fatalf("%s: score %v, then %v", before.Hits[i].ID, before.Hits[i].Score, after.Hits[i].Score)
		}
	}
}
