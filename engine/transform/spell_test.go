package transform

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// syntheticCorpus returns docs documents over a vocabulary of about words
// pseudo-words (drawn with a Zipf law, as in text), deterministic.
func syntheticCorpus(docs, words int) []string {
	r := rand.New(rand.NewPCG(60, 33))
	syll := []string{"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "pre", "str", "an", "el", "or", "us", "ing", "ed", "th", "qu", "ax", "im"}
	vocab := make([]string, 0, words)
	seen := map[string]bool{}
	for len(vocab) < words {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteString(syll[r.IntN(len(syll))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	z := rand.NewZipf(r, 1.05, 2, uint64(words-1))
	out := make([]string, docs)
	for i := range out {
		var b strings.Builder
		for range 150 {
			b.WriteString(vocab[z.Uint64()])
			b.WriteByte(' ')
		}
		out[i] = b.String()
	}
	return out
}

var (
	bigLex   *Lexicon
	bigWords []string // the vocabulary's candidate words (df ≥ 2)
)

func bigLexicon(tb testing.TB) *Lexicon {
	tb.Helper()
	if bigLex == nil {
		l, err := BuildLexicon(context.Background(), func(yield func(string) bool) {
			for _, d := range syntheticCorpus(5000, 90000) {
				if !yield(d) {
					return
				}
			}
		}, nil)
		if err != nil {
			tb.Fatal(err)
		}
		bigLex = l
		for id, w := range l.words {
			if l.df[id] >= 2 && len([]rune(w)) >= spellMinRunes {
				bigWords = append(bigWords, w)
			}
		}
	}
	return bigLex
}

// typos returns n distinct words the lexicon does not hold, each one or
// two edits from a vocabulary word.
func typos(l *Lexicon, n int) []string {
	r := rand.New(rand.NewPCG(7, 7))
	var out []string
	seen := map[string]bool{}
	for len(out) < n {
		w := []rune(bigWords[r.IntN(len(bigWords))])
		for range 1 + r.IntN(2) {
			i := r.IntN(len(w))
			switch r.IntN(4) {
			case 0:
				w = append(w[:i:i], w[i+1:]...)
			case 1:
				w = append(w[:i:i], append([]rune{'z'}, w[i:]...)...)
			case 2:
				w[i] = 'q'
			case 3:
				if i+1 < len(w) {
					w[i], w[i+1] = w[i+1], w[i]
				}
			}
		}
		if s := string(w); len(w) >= 4 && l.DF(s) == 0 && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// correctByScan is the correction Correct replaced: every vocabulary word
// of a near length compared with the query word.
func correctByScan(l *Lexicon, word string) string {
	r := []rune(word)
	if len(r) < 4 || l.DF(word) > 0 || l.stems[l.stem(word)] {
		return word
	}
	maxD := 1
	if len(r) > 5 {
		maxD = 2
	}
	best, bestD, bestDF := word, maxD+1, int32(0)
	for id, c := range l.words {
		if l.df[id] < 2 {
			continue
		}
		d := osa(r, []rune(c), maxD)
		if d > maxD {
			continue
		}
		if d < bestD || d == bestD && (l.df[id] > bestDF || l.df[id] == bestDF && c < best) {
			best, bestD, bestDF = c, d, l.df[id]
		}
	}
	return best
}

// The symmetric-delete index finds exactly the correction a scan of the
// whole vocabulary finds.
func TestCorrectMatchesScan(t *testing.T) {
	if testing.Short() {
		t.Skip("checks the corrector against a full scan of a large vocabulary; skipped with -short")
	}
	l := bigLexicon(t)
	for _, w := range typos(l, 100) {
		if got, want := l.Correct(w), correctByScan(l, w); got != want {
			t.Errorf("Correct(%q) = %q, a scan finds %q", w, got, want)
		}
	}
}

// Issue 33 item 2: a 4 KiB rewrite of 501 unknown words took 8.6 s on a
// 60 k-word vocabulary (each occurrence compared with the whole
// vocabulary), and nothing looked at the context.
func TestRewriteOfUnknownWordsIsFast(t *testing.T) {
	l := bigLexicon(t)
	t.Logf("vocabulary %d words", l.Size())
	if l.Size() < 55000 {
		t.Fatalf("vocabulary of %d words, want ≈ 60 000", l.Size())
	}
	ws := typos(l, 1000)
	var b strings.Builder
	for i := 0; b.Len() < MaxQueryBytes-64; i++ {
		b.WriteString(ws[i%len(ws)])
		b.WriteByte(' ')
	}
	q := b.String()
	tr := New(Config{Lexicon: l})
	start := time.Now()
	res, err := tr.Transform(context.Background(), Request{Query: q, Method: Rewrite})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("rewrite of %d bytes (%d words) took %v", len(q), len(strings.Fields(q)), d)
	}
	if len(res.Queries) != 1 || res.Queries[0] == strings.TrimSpace(q) {
		t.Fatalf("nothing corrected")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, m := range OfflineMethods {
		if _, err := tr.Transform(ctx, Request{Query: q, Method: m}); !errors.Is(err, context.Canceled) {
			t.Errorf("%s under a cancelled context: err = %v", m, err)
		}
	}
	if _, err := tr.Transform(context.Background(), Request{Query: q + q, Method: Rewrite}); !errors.Is(err, ErrQueryTooLong) {
		t.Errorf("%d-byte query: err = %v, want ErrQueryTooLong", 2*len(q), err)
	}
}

// bkTree is the other bounded candidate search considered: a
// Burkhard-Keller tree under the OSA distance. Kept here to reproduce the
// comparison (BenchmarkSpellCandidates).
type bkTree struct {
	word string
	kids map[int]*bkTree
}

func (t *bkTree) add(w string) {
	for {
		d := osa([]rune(w), []rune(t.word), 64)
		if d == 0 {
			return
		}
		k := t.kids[d]
		if k == nil {
			if t.kids == nil {
				t.kids = map[int]*bkTree{}
			}
			t.kids[d] = &bkTree{word: w}
			return
		}
		t = k
	}
}

func (t *bkTree) find(w []rune, maxD int, fn func(string)) {
	d := osa(w, []rune(t.word), 64)
	if d <= maxD {
		fn(t.word)
	}
	for k, kid := range t.kids {
		if k >= d-maxD && k <= d+maxD {
			kid.find(w, maxD, fn)
		}
	}
}

// BenchmarkSpellCandidates compares the candidate searches on a
// 60 000-word vocabulary, one distance-1 or -2 typo per operation:
//
//	go test ./engine/transform/ -run '^$' -bench SpellCandidates -benchmem
func BenchmarkSpellCandidates(b *testing.B) {
	l := bigLexicon(b)
	qs := typos(l, 1000)
	b.Logf("vocabulary %d words, %d candidates, %d index entries", l.Size(), len(bigWords), len(l.spell.keys))
	b.Run("symspell", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			l.Correct(qs[i%len(qs)])
		}
	})
	b.Run("bktree", func(b *testing.B) {
		root := &bkTree{word: bigWords[0]}
		for _, w := range bigWords[1:] {
			root.add(w)
		}
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			w := []rune(qs[i%len(qs)])
			maxD := 1
			if len(w) > 5 {
				maxD = 2
			}
			root.find(w, maxD, func(string) {})
		}
	})
	b.Run("scan", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			correctByScan(l, qs[i%len(qs)])
		}
	})
}

func ExampleLexicon_Correct() {
	l, _ := BuildLexicon(context.Background(), func(yield func(string) bool) {
		for range 2 {
			if !yield("supersonic flow over a swept wing") {
				return
			}
		}
	}, nil)
	fmt.Println(l.Correct("supersnoic"), l.Correct("wign"))
	// Output: supersonic wing
}
