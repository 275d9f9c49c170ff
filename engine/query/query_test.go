package query

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rcpgo/rcpgo/engine/analysis"
)

func TestRankText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`great wall`, `great wall`},
		{`"great wall"~2 china`, `"great wall" china`},
		{`"a b"~3"c d"~12x`, `"a b""c d"x`},
		{`"a b"~ c`, `"a b"~ c`}, // no digits: not a slop
		{`a ~3 "b"`, `a ~3 "b"`}, // not after a phrase
		{`"a b~3`, `"a b~3`},     // unpaired quote
		{`"a"~1"~2`, `"a""~2`},   // the second quote opens no phrase
	} {
		if got := RankText(c.in); got != c.want {
			t.Errorf("RankText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzPhraseQuery: any query text parses into at most MaxPhrases phrases
// with a slop in [0, MaxSlop], and its ranked text is never longer.
func FuzzPhraseQuery(f *testing.F) {
	for _, q := range []string{`"great wall"`, `"wall great"~2 china`, `"the wall"`, `x "y z"~0`} {
		f.Add(q)
	}
	f.Add(`"a b"~3"c d"~12x "e"~`)
	an := analysis.Default()
	f.Fuzz(func(t *testing.T, q string) {
		ps := Phrases(an, q)
		if len(ps) > MaxPhrases {
			t.Fatalf("%d phrases", len(ps))
		}
		for _, p := range ps {
			if p.Slop < 0 || p.Slop > MaxSlop || len(p.Terms) != len(p.Offsets) {
				t.Fatalf("%+v", p)
			}
		}
		if r := RankText(q); len(r) > len(q) {
			t.Fatalf("RankText(%q) = %q", q, r)
		}
	})
}

// TestSloppyIn checks the proximity test against every assignment of
// distinct positions, on random fields and phrases (repeated terms
// included), and ~0 against the exact phrase test.
func TestSloppyIn(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	for range 20000 {
		field := make([]uint32, 1+r.IntN(12)) // term per position
		for p := range field {
			field[p] = uint32(r.IntN(4))
		}
		k := 1 + r.IntN(4)
		ords, offs := make([]uint32, k), make([]int, k)
		for j := range k {
			ords[j] = uint32(r.IntN(4))
			if j > 0 {
				offs[j] = offs[j-1] + 1 + r.IntN(2) // a stop word may leave a gap
			}
		}
		slop := r.IntN(6)
		toks := []uint32{uint32(len(field))}
		for p, o := range field {
			toks = append(toks, o, uint32(p))
		}
		got := MatchTokens(toks, ords, offs, slop)
		if want := bruteSloppy(field, ords, offs, slop); got != want {
			t.Fatalf("field %v, phrase %v at %v ~%d: got %v, want %v", field, ords, offs, slop, got, want)
		}
		if slop == 0 && matchSloppy(toks, ords, offs, 0) != got {
			t.Fatalf("field %v, phrase %v at %v: ~0 differs from the exact phrase", field, ords, offs)
		}
	}
}

// bruteSloppy tries every assignment of distinct positions to the terms.
func bruteSloppy(field, ords []uint32, offs []int, slop int) bool {
	used := make([]bool, len(field))
	var try func(j, lo, hi int) bool
	try = func(j, lo, hi int) bool {
		if j == len(ords) {
			return hi-lo <= slop
		}
		for p, o := range field {
			if o != ords[j] || used[p] {
				continue
			}
			d := p - offs[j]
			used[p] = true
			ok := try(j+1, min(lo, d), max(hi, d))
			used[p] = false
			if ok {
				return true
			}
		}
		return false
	}
	return try(0, math.MaxInt, math.MinInt)
}
