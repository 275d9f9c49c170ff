package query

import (
	"math"
	"slices"
	"sort"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/search"
)

// MatchTokens reports whether the phrase whose terms are the ordinals ords
// at offsets offs occurs, within slop, in one field of toks: per field
// (title, then text) a count n, then n (term ordinal, position) pairs in
// position order.
func MatchTokens(toks []uint32, ords []uint32, offs []int, slop int) bool {
	if slop > 0 {
		return matchSloppy(toks, ords, offs, slop)
	}
	for i := 0; i < len(toks); {
		n := int(toks[i])
		field := toks[i+1 : i+1+2*n]
		i += 1 + 2*n
		for a := 0; a < len(field); a += 2 {
			if field[a] != ords[0] {
				continue
			}
			if phraseAt(field, a, ords, offs) {
				return true
			}
		}
	}
	return false
}

// matchSloppy is MatchTokens for a proximity query: the phrase terms'
// positions are gathered per field of toks, then tested by Proximity.Match.
func matchSloppy(toks []uint32, ords []uint32, offs []int, slop int) bool {
	var sl Proximity
	sl.Size(len(ords))
	for j, o := range ords {
		sl.Group[j] = slices.Index(ords, o)
	}
	for i := 0; i < len(toks); {
		n := int(toks[i])
		field := toks[i+1 : i+1+2*n]
		i += 1 + 2*n
		for j := range sl.Lists {
			sl.Lists[j] = sl.Lists[j][:0]
		}
		for a := 0; a < len(field); a += 2 {
			if j := slices.Index(ords, field[a]); j >= 0 {
				sl.Lists[j] = append(sl.Lists[j], field[a+1]) // positions ascend
			}
		}
		if ok, _ := sl.Match(offs, slop); ok {
			return true
		}
	}
	return false
}

// Proximity tests whether a phrase's terms occur within a slop in one
// field: Lists[Group[j]] holds the positions (ascending) of phrase term j;
// terms with one group are one term repeated in the phrase (offsets
// ascend with j). Interrupt, when set, is asked every proximityCheck
// steps whether to give up (a cancelled search). Its slices are scratch,
// reused from one test to the next.
type Proximity struct {
	Lists     [][]uint32
	Group     []int
	Interrupt func() error
	last      []int64
	steps     int
}

const proximityCheck = 1 << 12

// Size makes room for a phrase of n terms.
func (sl *Proximity) Size(n int) {
	sl.Lists = slices.Grow(sl.Lists[:0], n)[:n]
	sl.Group = slices.Grow(sl.Group[:0], n)[:n]
	sl.last = slices.Grow(sl.last[:0], n)[:n]
}

// Match reports whether every term j can take a position p of its own so
// that the adjusted positions p − offs[j] span at most slop. It slides a
// window start m upwards: from m, every term takes, in phrase order, its
// first free position with p − offs[j] ≥ m (greedy picks are the least a
// window starting at m allows, and they never decrease as m grows). When
// their span exceeds slop, no window starting below the largest adjusted
// pick minus slop can hold that term, so m jumps there — past the least
// pick, which moves on: the loop ends within the terms' positions.
func (sl *Proximity) Match(offs []int, slop int) (bool, error) {
	m := int64(math.MaxInt64)
	for j, o := range offs {
		l := sl.Lists[sl.Group[j]]
		if len(l) == 0 {
			return false, nil
		}
		m = min(m, int64(l[0])-int64(o))
	}
	for {
		if sl.steps++; sl.steps%proximityCheck == 0 && sl.Interrupt != nil {
			if err := sl.Interrupt(); err != nil {
				return false, err
			}
		}
		lo, hi, ok := sl.picks(offs, m)
		if !ok {
			return false, nil
		}
		if hi-lo <= int64(slop) {
			return true, nil
		}
		m = hi - int64(slop)
	}
}

// picks gives every term, in phrase order, its first free position p with
// p − offs[j] ≥ m, and returns the least and greatest p − offs[j]; ok is
// false when a term has none left.
func (sl *Proximity) picks(offs []int, m int64) (lo, hi int64, ok bool) {
	for j := range sl.last {
		sl.last[j] = -1
	}
	lo, hi = math.MaxInt64, math.MinInt64
	for j, o := range offs {
		g := sl.Group[j]
		from := max(m+int64(o), sl.last[g]+1, 0)
		if from > math.MaxUint32 {
			return 0, 0, false
		}
		l := sl.Lists[g]
		i, _ := slices.BinarySearch(l, uint32(from))
		if i == len(l) {
			return 0, 0, false
		}
		sl.last[g] = int64(l[i])
		a := int64(l[i]) - int64(o)
		lo, hi = min(lo, a), max(hi, a)
	}
	return lo, hi, true
}

// phraseAt reports whether the phrase starts at pair index a of field.
func phraseAt(field []uint32, a int, ords []uint32, offs []int) bool {
	start := int64(field[a+1])
	for j := 1; j < len(ords); j++ {
		want := start + int64(offs[j])
		// positions ascend: binary search the pair holding want
		k := sort.Search(len(field)/2, func(k int) bool { return int64(field[2*k+1]) >= want })
		if k == len(field)/2 || int64(field[2*k+1]) != want || field[2*k] != ords[j] {
			return false
		}
	}
	return true
}

// Matcher returns a test of whether a document holds every quoted phrase
// of the query text (each within its proximity), judged on its analysed
// title and text — for a backend that searches without positions — or nil
// when the text quotes no phrase.
func Matcher(an *analysis.Analyzer, text string) func(*search.Document) bool {
	phrases := Phrases(an, text)
	if len(phrases) == 0 {
		return nil
	}
	return func(d *search.Document) bool { return MatchText(an, d, phrases) }
}

// MatchText checks the phrases against a document's analysed title and
// text (a document without stored positions).
func MatchText(an *analysis.Analyzer, d *search.Document, phrases []Phrase) bool {
	ids := map[string]uint32{}
	for _, p := range phrases {
		for _, t := range p.Terms {
			if _, ok := ids[t]; !ok {
				ids[t] = uint32(len(ids))
			}
		}
	}
	var toks []uint32
	for _, text := range [...]string{d.Title, d.Text} {
		ts := an.Analyze(text)
		toks = append(toks, uint32(len(ts)))
		for _, t := range ts {
			id, ok := ids[t.Term]
			if !ok {
				id = math.MaxUint32
			}
			toks = append(toks, id, uint32(t.Position))
		}
	}
	for _, p := range phrases {
		ords := make([]uint32, len(p.Terms))
		for j, t := range p.Terms {
			ords[j] = ids[t]
		}
		if !MatchTokens(toks, ords, p.Offsets, p.Slop) {
			return false
		}
	}
	return true
}
