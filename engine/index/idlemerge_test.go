package index

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/search"
)

// TestIdleMerge: once writes are quiet for Options.IdleMerge, Merge makes
// the disk segments one when the documents outside the largest are at
// least a quarter of it — not before the quiet period, not for a small
// tail, never when switched off — and the answers do not change.
func TestIdleMerge(t *testing.T) {
	cases := []struct {
		name   string
		idle   time.Duration
		sizes  []int // documents per flushed segment
		merged bool
	}{
		{"quiet and worth it", time.Nanosecond, []int{4, 2, 2}, true},
		{"a tail of exactly a quarter", time.Nanosecond, []int{8, 1, 1}, true},
		{"writes not quiet yet", time.Hour, []int{4, 2, 2}, false},
		{"a small tail", time.Nanosecond, []int{20, 1, 1}, false},
		{"switched off", -1, []int{4, 2, 2}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ix := openTest(t, "", Options{NoBackground: true, IdleMerge: tc.idle})
			n := 0
			for _, size := range tc.sizes {
				for range size {
					mustAdd(t, ix, search.Document{ID: fmt.Sprint("d", n), Text: fmt.Sprint("supersonic wings number ", n)})
					n++
				}
				if err := ix.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			v := ix.Version()
			q := search.Query{Text: "supersonic wings", K: 50}
			before := hitScores(mustSearch(t, ix, q))
			if err := ix.Merge(ctx); err != nil {
				t.Fatal(err)
			}
			want := len(tc.sizes)
			if tc.merged {
				want = 1
			}
			if st := ix.Stats(); st.Segments != want || st.Docs != n {
				t.Fatalf("segments %d docs %d, want %d and %d", st.Segments, st.Docs, want, n)
			}
			if got := hitScores(mustSearch(t, ix, q)); ix.Version() != v || !slices.Equal(got, before) {
				t.Fatalf("version %s → %s, hits %q → %q", v, ix.Version(), before, got)
			}
		})
	}
}
