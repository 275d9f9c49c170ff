package index

// Phrase queries. A query text may quote phrases ("like this"): a document
// matches only if every quoted phrase occurs in it — its analysed terms at
// the same relative positions (stop words removed from the phrase still
// count as gaps) within one field. All terms, quoted or not, are ranked by
// BM25F as usual; the phrases only restrict which documents may rank. An
// unpaired quote is ignored.
//
// Candidates are checked against the phrase terms' positions (format 3,
// positions.go) or, in format 2 segments, against the forward index
// (positions per document, see the segment format). Documents without
// positions (from version 1 segments) are checked against their stored
// text instead.

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/rcpgo/rcpgo/engine/analysis"
)

// maxPhrases bounds the quoted phrases of one query.
const maxPhrases = 16

// phrase is one quoted phrase, analysed: terms and their positions
// relative to the first term.
type phrase struct {
	terms []string
	offs  []int
}

// parsePhrases returns the quoted phrases of text that have at least one
// term (at most maxPhrases).
func parsePhrases(an *analysis.Analyzer, text string) []phrase {
	var out []phrase
	for len(out) < maxPhrases {
		i := strings.IndexByte(text, '"')
		if i < 0 {
			break
		}
		j := strings.IndexByte(text[i+1:], '"')
		if j < 0 {
			break
		}
		toks := an.Analyze(text[i+1 : i+1+j])
		text = text[i+1+j+1:]
		if len(toks) == 0 {
			continue
		}
		p := phrase{}
		for _, t := range toks {
			p.terms = append(p.terms, t.Term)
			p.offs = append(p.offs, t.Position-toks[0].Position)
		}
		out = append(out, p)
	}
	return out
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
// with offsets offs[i]) occurs in one field of toks (appendForward layout).
func matchAll(toks []uint32, ords [][]uint32, offs [][]int) bool {
	for i := range ords {
		if !matchOne(toks, ords[i], offs[i]) {
			return false
		}
	}
	return true
}

func matchOne(toks []uint32, ords []uint32, offs []int) bool {
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
func phraseFilter(an *analysis.Analyzer, seg *segment, phrases []phrase, loadText func(seq uint64) (*Document, error)) (accept func(doc uint32) (bool, error), none bool) {
	ords := make([][]uint32, len(phrases))
	offs := make([][]int, len(phrases))
	for i, p := range phrases {
		offs[i] = p.offs
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
		return forwardFilter(seg, ords, offs, byText), false
	}
	return positionsFilter(seg, ords, offs, byText), false
}

// positionsFilter tests phrases against the terms' positions (format 3):
// one position iterator per distinct phrase term, advanced with the
// candidates.
func positionsFilter(seg *segment, ords [][]uint32, offs [][]int, byText func(uint32) (bool, error)) func(uint32) (bool, error) {
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
			if !phraseIn(cur, tix[i], offs[i]) {
				return false, nil
			}
		}
		return true, nil
	}
}

// phraseIn reports whether the phrase whose terms hold the positions
// cur[tix[j]] at offsets offs[j] occurs in one field.
func phraseIn(cur [][numFields][]uint32, tix []int, offs []int) bool {
	for f := 0; f < numFields; f++ {
	starts:
		for _, p := range cur[tix[0]][f] {
			for j := 1; j < len(tix); j++ {
				if _, ok := slices.BinarySearch(cur[tix[j]][f], p+uint32(offs[j])); !ok {
					continue starts
				}
			}
			return true
		}
	}
	return false
}

// forwardFilter tests phrases against the forward entries of a format 2
// segment.
func forwardFilter(seg *segment, ords [][]uint32, offs [][]int, byText func(uint32) (bool, error)) func(uint32) (bool, error) {
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
		return matchAll(toks, ords, offs), nil
	}
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
		if !matchOne(toks, ords, p.offs) {
			return false
		}
	}
	return true
}
