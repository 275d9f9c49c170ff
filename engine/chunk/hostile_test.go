package chunk

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A cancelled split stops at once (item 7: a 15.5 MB add ran 95 s past its
// deadline).
func TestSplitContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	text := strings.Repeat("Line of text.\n", 400000)
	start := time.Now()
	_, err := SplitContext(ctx, text, Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("a cancelled split ran %v", d)
	}
}

// The incremental counter agrees with Tokens on every prefix.
func TestTokenCounterMatchesTokens(t *testing.T) {
	s := "Hello, world!  naïve café — 12345678901234 x\ty\n日本語テキスト"
	var tc tokenCounter
	got := 0
	for _, r := range s {
		got = tc.add(r)
	}
	if want := Tokens(s); got != want {
		t.Fatalf("counter %d, Tokens %d", got, want)
	}
}
