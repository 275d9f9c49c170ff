package index

import (
	"context"
	"slices"
	"testing"
)

// TestLiveIDs: a document number resolves to its id while that version
// of the document is live in the current snapshot — in memory and on
// disk segments alike — and to "" once it is replaced or deleted.
func TestLiveIDs(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t, "", Options{NoBackground: true})
	mustAdd(t, ix, Document{ID: "a", Text: "alpha"}, Document{ID: "b", Text: "beta"}, Document{ID: "c", Text: "gamma"})
	first, err := ix.Nums(ctx, []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	check := func(nums []DocNum, want ...string) {
		t.Helper()
		got, err := ix.LiveIDs(nums)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("LiveIDs(%v) = %q, %v; want %q", nums, got, err, want)
		}
	}
	check(first, "a", "b", "c")
	check([]DocNum{0, 999}, "", "")

	if err := ix.Flush(ctx); err != nil { // now in a disk segment
		t.Fatal(err)
	}
	check(first, "a", "b", "c")
	mustAdd(t, ix, Document{ID: "a", Title: "A", Text: "alpha"}) // a new version
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
