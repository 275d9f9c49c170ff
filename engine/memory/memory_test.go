package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/analysis"
)

func text(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "Alice Smith met Bob Jones in Paris on day %d. ", i)
	}
	return b.String()[:n]
}

// Issue 33 item 7: 25 session memories of 11 MB each took rcpd to 994 MB
// (the cap of 256 memories allowed ≈ 7 GB) and nothing looked at the
// context while building. All memories together now hold at most MaxBytes
// of text: a build beyond it evicts the least recently used others, one
// alone over it is refused, and a build stops when its context ends.
func TestBuildByteBudgetAndContext(t *testing.T) {
	an, err := analysis.New(analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.TempDir(), an, Options{MaxBytes: 10000})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(2e9, 0)
	s.now = func() time.Time { now = now.Add(time.Second); return now }
	ctx := context.Background()
	var ids []string
	for range 3 {
		id, _, err := s.Build(ctx, "", ScopeSession, []Doc{{Text: text(4000)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, err := s.Get(ids[0]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the oldest memory survived past the byte budget: %v", err)
	}
	for _, id := range ids[1:] {
		if _, err := s.Get(id); err != nil {
			t.Fatalf("memory %s: %v", id, err)
		}
	}
	if s.total() > 10000 {
		t.Fatalf("memories hold %d bytes, budget 10000", s.total())
	}
	if _, _, err := s.Build(ctx, "", ScopeSession, []Doc{{Text: text(6000)}, {Text: text(6000)}}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a 12 000-byte build: %v, want ErrTooLarge", err)
	}
	if _, _, err := s.Build(ctx, "", ScopeSession, []Doc{{Text: text(MaxDocBytes + 1)}}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a document over MaxDocBytes: %v, want ErrTooLarge", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	before := len(s.mems)
	if _, _, err := s.Build(cctx, "", ScopeSession, []Doc{{Text: text(100)}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled build: %v", err)
	}
	if len(s.mems) != before {
		t.Fatal("a cancelled build left a memory")
	}
}
