package index

// Phrase queries. A query text may quote phrases ("like this"): a document
// matches only if every quoted phrase occurs in it — its analysed terms at
// the same relative positions (stop words removed from the phrase still
// count as gaps) within one field. All terms, quoted or not, are ranked by
// BM25F as usual; the phrases only restrict which documents may rank. An
// unpaired quote is ignored.
//
// A proximity query ("like this"~N, Lucene's sloppy phrase) relaxes the
// positions: its terms must occur in one field, each at its own position,
// within N position moves of the phrase — max(p−o) − min(p−o) ≤ N over
// the terms' positions p and offsets o in the phrase. ~0 is the exact
// phrase; ~1 allows one word between two terms; swapping two adjacent
// terms takes ~2. The suffix is syntax, not a ranked word (RankText).
//
// Candidates are checked against the phrase terms' positions (format 3,
// positions.go) or, in format 2 segments, against the forward index
// (positions per document, see the segment format). Documents without
// positions (from version 1 segments) are checked against their stored
// text instead.

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/rcpgo/rcpgo/engine/analysis"
)

// maxPhrases bounds the quoted phrases of one query.
const maxPhrases = 16

// maxSlop bounds a proximity query's slop; a larger one is taken as it
// (no field holds that many positions, so both mean "anywhere in one
// field").
const maxSlop = 1 << 24

// phrase is one quoted phrase, analysed: terms and their positions
// relative to the first term, and the slop of a proximity query (0: the
// exact phrase).
type phrase struct {
	terms []string
	offs  []int
	slop  int
}

// parsePhrases returns the quoted phrases of text that have at least one
// term (at most maxPhrases).
func parsePhrases(an *analysis.Analyzer, text string) []phrase {
	var out []phrase
	for len(out) < maxPhrases {
		_, inner, slop, rest, ok := cutQuoted(text)
		if !ok {
			break
		}
		text = rest
		toks := an.Analyze(inner)
		if len(toks) == 0 {
			continue
		}
		p := phrase{slop: slop}
		for _, t := range toks {
			p.terms = append(p.terms, t.Term)
			p.offs = append(p.offs, t.Position-toks[0].Position)
		}
		out = append(out, p)
	}
	return out
}

// cutQuoted finds the first quoted span of text: head runs up to its
// closing quote, inner is what the quotes hold, slop is its proximity
// suffix's and rest follows that suffix; ok is false when text holds no
// pair of quotes.
func cutQuoted(text string) (head, inner string, slop int, rest string, ok bool) {
	i := strings.IndexByte(text, '"')
	if i < 0 {
		return "", "", 0, "", false
	}
	j := strings.IndexByte(text[i+1:], '"')
	if j < 0 {
		return "", "", 0, "", false
	}
	end := i + 1 + j + 1
	slop, n := parseSlop(text[end:])
	return text[:end], text[i+1 : end-1], slop, text[end+n:], true
}

// parseSlop reads the proximity suffix "~N" at the start of s (right after
// a phrase's closing quote): the slop and the bytes it takes, or (0, 0)
// when s starts with none.
func parseSlop(s string) (slop, n int) {
	if len(s) < 2 || s[0] != '~' {
		return 0, 0
	}
	for n = 1; n < len(s) && s[n] >= '0' && s[n] <= '9'; n++ {
		slop = min(slop*10+int(s[n]-'0'), maxSlop)
	}
	if n == 1 {
		return 0, 0
	}
	return slop, n
}

// RankText is the part of a query text that ranks: the text without the
// proximity suffixes ("~N" right after a quoted phrase), which are syntax,
// not words. A text without one is returned as it is.
func RankText(text string) string {
	if !strings.Contains(text, `"~`) {
		return text
	}
	var b strings.Builder
	for {
		head, _, _, rest, ok := cutQuoted(text)
		if !ok {
			break
		}
		b.WriteString(head)
		text = rest
	}
	b.WriteString(text)
	return b.String()
}

// decodeForward decodes a format 2 forward entry into numFields runs of
// a count then (term ordinal, position) pairs, appended to dst; ok is false when the
// entry is malformed or names an ordinal ≥ nTerms.
func decodeForward(dst []uint32, enc []byte, nTerms int) ([]uint32, bool) {
	r := byteReader{b: enc}
	for f := 0; f < numFields; f++ {
		n := r.uvarint()
		if r.err || n > uint64(len(enc)) {
			return dst, false
		}
		dst = append(dst, uint32(n))
		pos := int64(-1)
		for range n {
			v := r.uvarint()
			d := uint64(1)
			if v&1 != 0 {
				d = r.uvarint()
			}
			pos += int64(d)
			if r.err || v>>1 >= uint64(nTerms) || d == 0 || pos > math.MaxUint32 {
				return dst, false
			}
			dst = append(dst, uint32(v>>1), uint32(pos))
		}
	}
	return dst, r.off == len(enc)
}

// matchAll reports whether every phrase (given as term ordinals ords[i]
// with offsets offs[i] and slop slops[i]) occurs in one field of toks
// (appendForward layout).
func matchAll(toks []uint32, ords [][]uint32, offs [][]int, slops []int) bool {
	for i := range ords {
		if !matchOne(toks, ords[i], offs[i], slops[i]) {
			return false
		}
	}
	return true
}

func matchOne(toks []uint32, ords []uint32, offs []int, slop int) bool {
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

// matchSloppy is matchOne for a proximity query: the phrase terms'
// positions are gathered per field of toks, then tested by sloppy.match.
func matchSloppy(toks []uint32, ords []uint32, offs []int, slop int) bool {
	var sl sloppy
	sl.size(len(ords))
	for j, o := range ords {
		sl.group[j] = slices.Index(ords, o)
	}
	for i := 0; i < len(toks); {
		n := int(toks[i])
		field := toks[i+1 : i+1+2*n]
		i += 1 + 2*n
		for j := range sl.lists {
			sl.lists[j] = sl.lists[j][:0]
		}
		for a := 0; a < len(field); a += 2 {
			if j := slices.Index(ords, field[a]); j >= 0 {
				sl.lists[j] = append(sl.lists[j], field[a+1]) // positions ascend
			}
		}
		if ok, _ := sl.match(offs, slop); ok {
			return true
		}
	}
	return false
}

// sloppy tests proximity: sl.lists[sl.group[j]] holds the positions
// (ascending) of phrase term j in one field; terms with one group are one
// term repeated in the phrase (offsets ascend with j). interrupt, when
// set, is asked every sloppyCheck steps whether to give up (a cancelled
// search).
type sloppy struct {
	lists     [][]uint32
	group     []int
	last      []int64
	steps     int
	interrupt func() error
}

const sloppyCheck = 1 << 12

func (sl *sloppy) size(n int) {
	sl.lists = slices.Grow(sl.lists[:0], n)[:n]
	sl.group = slices.Grow(sl.group[:0], n)[:n]
	sl.last = slices.Grow(sl.last[:0], n)[:n]
}

// match reports whether every term j can take a position p of its own so
// that the adjusted positions p − offs[j] span at most slop. It slides a
// window start m upwards: from m, every term takes, in phrase order, its
// first free position with p − offs[j] ≥ m (greedy picks are the least a
// window starting at m allows, and they never decrease as m grows). When
// their span exceeds slop, no window starting below the largest adjusted
// pick minus slop can hold that term, so m jumps there — past the least
// pick, which moves on: the loop ends within the terms' positions.
func (sl *sloppy) match(offs []int, slop int) (bool, error) {
	m := int64(math.MaxInt64)
	for j, o := range offs {
		l := sl.lists[sl.group[j]]
		if len(l) == 0 {
			return false, nil
		}
		m = min(m, int64(l[0])-int64(o))
	}
	for {
		if sl.steps++; sl.steps%sloppyCheck == 0 && sl.interrupt != nil {
			if err := sl.interrupt(); err != nil {
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
func (sl *sloppy) picks(offs []int, m int64) (lo, hi int64, ok bool) {
	for j := range sl.last {
		sl.last[j] = -1
	}
	lo, hi = math.MaxInt64, math.MinInt64
	for j, o := range offs {
		g := sl.group[j]
		from := max(m+int64(o), sl.last[g]+1, 0)
		if from > math.MaxUint32 {
			return 0, 0, false
		}
		l := sl.lists[g]
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

// phraseFilter returns the phrase test for the documents of seg, and
// none=true when no document of seg can match (a phrase term is not in its
// dictionary). loadText reads a document's stored title and text, for
// documents without positions. Called with ascending doc numbers.
func phraseFilter(ctx context.Context, an *analysis.Analyzer, seg *segment, phrases []phrase, loadText func(seq uint64) (*Document, error)) (accept func(doc uint32) (bool, error), none bool) {
	ords := make([][]uint32, len(phrases))
	offs := make([][]int, len(phrases))
	slops := make([]int, len(phrases))
	for i, p := range phrases {
		offs[i], slops[i] = p.offs, p.slop
		for _, t := range p.terms {
			o, ok := seg.lookupOrd(t)
			if !ok {
				return nil, true
			}
			ords[i] = append(ords[i], uint32(o))
		}
	}
	byText := func(doc uint32) (bool, error) {
		d, err := loadText(seg.seq(doc))
		if err != nil || d == nil {
			return false, err
		}
		return textMatches(an, d, phrases), nil
	}
	switch seg.format {
	case 1:
		return byText, false
	case 2:
		return forwardFilter(seg, ords, offs, slops, byText), false
	}
	return positionsFilter(ctx, seg, ords, offs, slops, byText), false
}

// positionsFilter tests phrases against the terms' positions (format 3):
// one position iterator per distinct phrase term, advanced with the
// candidates.
func positionsFilter(ctx context.Context, seg *segment, ords [][]uint32, offs [][]int, slops []int, byText func(uint32) (bool, error)) func(uint32) (bool, error) {
	slot := map[uint32]int{} // term ordinal → iterator
	tix := make([][]int, len(ords))
	for i, os := range ords {
		for _, o := range os {
			k, ok := slot[o]
			if !ok {
				k = len(slot)
				slot[o] = k
			}
			tix[i] = append(tix[i], k)
		}
	}
	iters := make([]posIter, len(slot))
	for o, k := range slot {
		iters[k].init(seg, seg.termInfo(int(o)))
	}
	cur := make([][numFields][]uint32, len(iters))
	sl := sloppy{interrupt: ctx.Err} // scratch of the proximity tests
	return func(doc uint32) (bool, error) {
		for k := range iters {
			pi := &iters[k]
			pi.advance(doc)
			if pi.err != nil || pi.it.err != nil {
				return false, errCorruptPositions
			}
			if pi.doc() != doc {
				return false, nil
			}
		}
		for k := range iters {
			ok, err := iters[k].positions(&cur[k])
			if err != nil {
				return false, err
			}
			if !ok {
				return byText(doc)
			}
		}
		for i := range tix {
			if ok, err := phraseIn(cur, tix[i], offs[i], slops[i], &sl); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	}
}

// phraseIn reports whether the phrase whose terms hold the positions
// cur[tix[j]] at offsets offs[j] occurs in one field, within slop.
func phraseIn(cur [][numFields][]uint32, tix []int, offs []int, slop int, sl *sloppy) (bool, error) {
	if slop > 0 {
		return sloppyPhraseIn(cur, tix, offs, slop, sl)
	}
	for f := 0; f < numFields; f++ {
	starts:
		for _, p := range cur[tix[0]][f] {
			for j := 1; j < len(tix); j++ {
				if _, ok := slices.BinarySearch(cur[tix[j]][f], p+uint32(offs[j])); !ok {
					continue starts
				}
			}
			return true, nil
		}
	}
	return false, nil
}

// sloppyPhraseIn is phraseIn for a proximity query. Repeated terms share
// an iterator (tix), so they form one group.
func sloppyPhraseIn(cur [][numFields][]uint32, tix []int, offs []int, slop int, sl *sloppy) (bool, error) {
	sl.size(len(tix))
	for j, k := range tix {
		sl.group[j] = slices.Index(tix, k)
	}
	for f := 0; f < numFields; f++ {
		for j, k := range tix {
			sl.lists[j] = cur[k][f]
		}
		if ok, err := sl.match(offs, slop); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// forwardFilter tests phrases against the forward entries of a format 2
// segment.
func forwardFilter(seg *segment, ords [][]uint32, offs [][]int, slops []int, byText func(uint32) (bool, error)) func(uint32) (bool, error) {
	var toks []uint32
	return func(doc uint32) (bool, error) {
		enc := strAt(seg.sec[secFwdOff], seg.sec[secFwd], int(doc))
		if len(enc) == 0 {
			return byText(doc)
		}
		var ok bool
		if toks, ok = decodeForward(toks[:0], enc, seg.nTerms); !ok {
			return false, errCorruptForward
		}
		return matchAll(toks, ords, offs, slops), nil
	}
}

// PhraseMatcher returns a test of whether a document holds every quoted
// phrase of the query text (each within its proximity), judged on its
// analysed title and text — for a backend that searches without positions —
// or nil when the text quotes no phrase.
func PhraseMatcher(an *analysis.Analyzer, text string) func(*Document) bool {
	phrases := parsePhrases(an, text)
	if len(phrases) == 0 {
		return nil
	}
	return func(d *Document) bool { return textMatches(an, d, phrases) }
}

// textMatches checks the phrases against a stored document's analysed
// title and text (documents without positions).
func textMatches(an *analysis.Analyzer, d *Document, phrases []phrase) bool {
	ids := map[string]uint32{}
	for _, p := range phrases {
		for _, t := range p.terms {
			if _, ok := ids[t]; !ok {
				ids[t] = uint32(len(ids))
			}
		}
	}
	var toks []uint32
	for _, text := range [numFields]string{fieldTitle: d.Title, fieldBody: d.Text} {
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
		ords := make([]uint32, len(p.terms))
		for j, t := range p.terms {
			ords[j] = ids[t]
		}
		if !matchOne(toks, ords, p.offs, p.slop) {
			return false
		}
	}
	return true
}
