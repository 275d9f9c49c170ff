package index

// Phrase queries (engine/query has their syntax and meaning). A query text may quote phrases ("like this"): a document
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

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/query"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/internal/varint"
)

// decodeForward decodes a format 2 forward entry into numFields runs of
// a count then (term ordinal, position) pairs, appended to dst; ok is false when the
// entry is malformed or names an ordinal ≥ nTerms.
func decodeForward(dst []uint32, enc []byte, nTerms int) ([]uint32, bool) {
	r := varint.Reader[[]byte]{Buf: enc}
	for f := 0; f < numFields; f++ {
		n := r.Uvarint()
		if r.Failed() || n > uint64(len(enc)) {
			return dst, false
		}
		dst = append(dst, uint32(n))
		pos := int64(-1)
		for range n {
			v := r.Uvarint()
			d := uint64(1)
			if v&1 != 0 {
				d = r.Uvarint()
			}
			pos += int64(d)
			if r.Failed() || v>>1 >= uint64(nTerms) || d == 0 || pos > math.MaxUint32 {
				return dst, false
			}
			dst = append(dst, uint32(v>>1), uint32(pos))
		}
	}
	return dst, r.Off == len(enc)
}

// matchAll reports whether every phrase (given as term ordinals ords[i]
// with offsets offs[i] and slop slops[i]) occurs in one field of toks
// (appendForward layout).
func matchAll(toks []uint32, ords [][]uint32, offs [][]int, slops []int) bool {
	for i := range ords {
		if !query.MatchTokens(toks, ords[i], offs[i], slops[i]) {
			return false
		}
	}
	return true
}

// phraseFilter returns the phrase test for the documents of seg, and
// none=true when no document of seg can match (a phrase term is not in its
// dictionary). loadText reads a document's stored title and text, for
// documents without positions. Called with ascending doc numbers.
func phraseFilter(ctx context.Context, an *analysis.Analyzer, seg *segment, phrases []query.Phrase, loadText func(seq uint64) (*search.Document, error)) (accept func(doc uint32) (bool, error), none bool) {
	ords := make([][]uint32, len(phrases))
	offs := make([][]int, len(phrases))
	slops := make([]int, len(phrases))
	for i, p := range phrases {
		offs[i], slops[i] = p.Offsets, p.Slop
		for _, t := range p.Terms {
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
		return query.MatchText(an, d, phrases), nil
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
	sl := query.Proximity{Interrupt: ctx.Err} // scratch of the proximity tests
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
func phraseIn(cur [][numFields][]uint32, tix []int, offs []int, slop int, sl *query.Proximity) (bool, error) {
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
func sloppyPhraseIn(cur [][numFields][]uint32, tix []int, offs []int, slop int, sl *query.Proximity) (bool, error) {
	sl.Size(len(tix))
	for j, k := range tix {
		sl.Group[j] = slices.Index(tix, k)
	}
	for f := 0; f < numFields; f++ {
		for j, k := range tix {
			sl.Lists[j] = cur[k][f]
		}
		if ok, err := sl.Match(offs, slop); ok || err != nil {
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
