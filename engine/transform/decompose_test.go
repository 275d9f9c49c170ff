package transform

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// Issue 33 item 1: "aa and bb of aa and bb of …" made decompose branch on
// every conjunction (2^pairs sub-queries: 21 pairs took 12.6 s and 684 MB).
// Decomposition now does work linear in the words for the n sub-queries
// asked for, and stops when its context ends.
func TestDecomposeIsLinear(t *testing.T) {
	tr := transformer(t)
	q := strings.Repeat("aa and bb of ", 299) + "aa and bb" // 300 pairs, under 4 KiB
	if len(q) > MaxQueryBytes {
		t.Fatalf("query %d bytes > %d", len(q), MaxQueryBytes)
	}
	type outcome struct {
		qs  []string
		err error
	}
	done := make(chan outcome, 1)
	start := time.Now()
	go func() {
		res, err := tr.Transform(context.Background(), Request{Query: q, Method: Decompose, N: MaxN})
		done <- outcome{res.Queries, err}
	}()
	select {
	case o := <-done:
		if o.err != nil || len(o.qs) != MaxN {
			t.Fatalf("decompose = %d sub-queries, %v; want %d", len(o.qs), o.err, MaxN)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("decompose of 300 pairs took %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("decompose of 300 pairs did not finish in 10 s")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr.Transform(ctx, Request{Query: q, Method: Decompose, N: MaxN}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled decompose: err = %v, want context.Canceled", err)
	}
}

// splitClauseReference is the exhaustive expansion decompose replaced; the
// bounded walk must list the same sub-queries in the same order.
func splitClauseReference(ws []string) []string {
	for i, w := range ws {
		if !splitters[w] || i == 0 || i == len(ws)-1 {
			continue
		}
		a, b := ws[i-1], ws[i+1]
		alternatives := !functionWords[a] && !functionWords[b] && (i+2 == len(ws) || functionWords[ws[i+2]])
		left, right := ws[:i], ws[i+1:]
		if !alternatives && len(content(left)) >= 2 && len(content(right)) >= 2 {
			return append(splitClauseReference(left), splitClauseReference(right)...)
		}
		if !alternatives {
			continue
		}
		withA := slices.Concat(ws[:i], ws[i+2:])
		withB := slices.Concat(ws[:i-1], ws[i+1:])
		return append(splitClauseReference(withA), splitClauseReference(withB)...)
	}
	return []string{strings.Join(ws, " ")}
}

func TestDecomposeMatchesExhaustiveExpansion(t *testing.T) {
	vocab := []string{"lift", "drag", "wing", "and", "or", "of", "on", "a", "the", "vs", "also", "shock", "lift"}
	r := rand.New(rand.NewPCG(33, 1))
	tr := New(Config{})
	for range 3000 {
		ws := make([]string, 1+r.IntN(12))
		for i := range ws {
			ws[i] = vocab[r.IntN(len(vocab))]
		}
		n := 1 + r.IntN(MaxN)
		var want []string
		for _, p := range splitClauseReference(ws) {
			if p != "" && !slices.Contains(want, p) && len(want) < n {
				want = append(want, p)
			}
		}
		got, err := tr.decompose(context.Background(), strings.Join(ws, " "), n)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("decompose(%q, %d) = %q, want %q", strings.Join(ws, " "), n, got, want)
		}
	}
}
