package weaviate

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/internal/testutil/weaviatetest"
)

func TestRecentWrites(t *testing.T) {
	r := newRecentWrites(time.Minute, 3)
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	r.add([]string{"a", "b"})
	now = now.Add(30 * time.Second)
	r.add([]string{"b", "c"})
	ids, over := r.live()
	sort.Strings(ids)
	if over != 0 || !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("%v %d", ids, over)
	}
	now = now.Add(45 * time.Second) // a is 75 s old, b and c 45 s
	ids, _ = r.live()
	sort.Strings(ids)
	if !slices.Equal(ids, []string{"b", "c"}) {
		t.Fatalf("after the window: %v", ids)
	}
	r.add([]string{"d", "e"})
	if ids, over := r.live(); ids != nil || over != 4 {
		t.Fatalf("beyond max: %v %d", ids, over)
	}
	off := newRecentWrites(-1, 3)
	off.add([]string{"a"})
	if ids, over := off.live(); ids != nil || over != 0 {
		t.Fatal("a negative window keeps nothing")
	}
}

// Issue 31, acceptance 5 in miniature: right after an acknowledged write,
// Weaviate's BM25 ranks the not yet flushed documents too low (its
// BlockMax WAND bounds their postings by the term's idf alone and prunes
// them); the backend ranks what it wrote exactly. The five documents that
// say "alpha" six times must be the top 5 at once; without the recent
// writes (RecentWindow < 0) Weaviate returns the earlier "alpha alpha"
// ones instead.
func TestRecentWritesRankExactly(t *testing.T) {
	cl := weaviatetest.Start(t, 1)
	node := cl.Nodes[0]
	ctx := context.Background()
	var docs []search.Document
	for i := range 200 {
		docs = append(docs, search.Document{ID: fmt.Sprintf("other%03d", i), Text: "unrelated filler text about something else"})
	}
	for i := range 50 {
		docs = append(docs, search.Document{ID: fmt.Sprintf("two%02d", i), Text: "alpha alpha"})
	}
	for i := range 5 {
		docs = append(docs, search.Document{ID: fmt.Sprintf("six%d", i), Text: strings.Repeat("alpha ", 6)})
	}
	top := func(window time.Duration, class string) []string {
		b, err := Open(Config{URL: node.URL(), GRPCAddr: node.GRPC(), Class: class, RecentWindow: window})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := b.WaitConnected(wctx); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Add(ctx, slices.Clone(docs)); err != nil {
			t.Fatal(err)
		}
		res, err := b.Search(ctx, search.Query{Text: "alpha", K: 5})
		if err != nil {
			t.Fatal(err)
		}
		ids := hitIDs(res)
		sort.Strings(ids)
		return ids
	}
	want := []string{"six0", "six1", "six2", "six3", "six4"}
	if got := top(time.Minute, "RcpRecent"); !slices.Equal(got, want) {
		t.Fatalf("top 5 right after the write: %v, want %v", got, want)
	}
	if got := top(-1, "RcpRecentOff"); slices.Equal(got, want) {
		t.Logf("Weaviate ranked its memtable exactly without help (%v): this version no longer needs the recent writes", got)
	}
}
