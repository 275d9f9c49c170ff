package index

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/rcpgo/rcpgo/engine/search"
)

// TestLoadCache: Load serves a repeated document from the decoded-record
// cache (the same *Document), upgrades a text-less entry when the text is
// asked for, and a document whose record was purged fails with
// ErrSnapshotGone instead of coming back from the cache.
func TestLoadCache(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		bytes  int64
		shared bool
	}{
		{"cached", 0, true},
		{"disabled", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := openTest(t, "", Options{NoBackground: true, RetainVersions: 1, DocCacheBytes: tc.bytes})
			mustAdd(t, ix, search.Document{ID: "a", Text: "laminar flow", Meta: map[string]any{"k": "v"}})
			num := mustSearch(t, ix, search.Query{Text: "laminar", SkipDocs: true}).Hits[0].DocNum
			head, _, err := ix.Load(ctx, []search.DocNum{num}, false)
			if err != nil || head[0].Text != "" || head[0].Meta["k"] != "v" {
				t.Fatalf("load without text: %+v, %v", head, err)
			}
			d1, f1, err := ix.Load(ctx, []search.DocNum{num}, true)
			if err != nil || d1[0].Text != "laminar flow" || f1[0].Runes != len("laminar flow") {
				t.Fatalf("load with text: %+v %+v, %v", d1, f1, err)
			}
			d2, _, err := ix.Load(ctx, []search.DocNum{num}, true)
			if err != nil || d2[0].Text != "laminar flow" {
				t.Fatalf("second load: %+v, %v", d2, err)
			}
			if (d1[0] == d2[0]) != tc.shared {
				t.Fatalf("second load shared the first's document: %v, want %v", d1[0] == d2[0], tc.shared)
			}
			if _, err := ix.Delete(ctx, []string{"a"}); err != nil {
				t.Fatal(err)
			}
			for i := range 3 { // move the oldest retained version past the delete: its record is purged
				mustAdd(t, ix, search.Document{ID: fmt.Sprint("f", i), Text: "filler"})
			}
			if _, _, err := ix.Load(ctx, []search.DocNum{num}, true); !errors.Is(err, search.ErrSnapshotGone) {
				t.Fatalf("load of a purged document: err = %v", err)
			}
		})
	}
}
