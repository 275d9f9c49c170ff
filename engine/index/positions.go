package index

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/rcpgo/rcpgo/internal/varint"
)

var errCorruptPositions = fmt.Errorf("%w: malformed positions", ErrCorruptSegment)

// posIter walks one term's postings together with its positions (format
// 3): it keeps, beside the postings iterator, where the current document's
// positions start in its block's chunk. Chunks are random-access (packed
// at one width), so nothing is decoded but the positions asked for.
type posIter struct {
	it     postIter
	noPos  *Bitset
	chunks []byte // the term's chunks, back to back
	starts []int  // chunk b is chunks[starts[b]:starts[b+1]]
	at     int    // index of the current doc's first position in its chunk
	// the current block's chunk: count values packed at width w in pk
	blk   int
	count int
	w     uint
	pk    []byte
	err   error
}

// init positions pi on the first posting of the term ti of seg (reusing
// pi's memory).
func (pi *posIter) init(seg *segment, ti termInfo) {
	starts, it := pi.starts[:0], pi.it // memory to reuse (it.reset reuses its skip table)
	*pi = posIter{it: it, noPos: seg.noPos, blk: -1}
	pi.it.reset(seg.postingsBytes(ti), int(ti.df), seg.n, seg.format)
	if pi.it.err != nil {
		pi.err = pi.it.err
		return
	}
	sec := seg.sec[secPos]
	if pi.it.posOff > len(sec) {
		pi.fail()
		return
	}
	r := varint.Reader[[]byte]{Buf: sec[pi.it.posOff:]}
	nb := len(pi.it.skips)
	pi.starts = slices.Grow(starts, nb+1)[:nb+1]
	pi.starts[0] = 0
	for b := range nb {
		n := r.Uvarint()
		if r.Failed() || n > uint64(len(sec)) {
			pi.fail()
			return
		}
		pi.starts[b+1] = pi.starts[b] + int(n)
	}
	if pi.starts[nb] > len(r.Buf)-r.Off {
		pi.fail()
		return
	}
	pi.chunks = r.Buf[r.Off : r.Off+pi.starts[nb]]
}

func (pi *posIter) fail() {
	pi.err = errCorruptPositions
	pi.it.fail()
}

func (pi *posIter) doc() uint32 { return pi.it.doc }

// hasPositions reports whether the current document's positions are known.
func (pi *posIter) hasPositions() bool {
	return pi.noPos == nil || !pi.noPos.Has(pi.it.doc)
}

// next moves to the next posting.
func (pi *posIter) next() {
	if pi.it.doc != noDoc && pi.hasPositions() {
		pi.at += int(pi.it.tf[fieldTitle]) + int(pi.it.tf[fieldBody])
	}
	blk := pi.it.blk
	pi.it.next()
	if pi.it.blk != blk {
		pi.at = 0
	}
}

// advance moves to the first posting with doc ≥ target.
func (pi *posIter) advance(target uint32) {
	if pi.it.doc >= target {
		return
	}
	b := pi.it.shallow(target)
	if b < 0 {
		pi.it.advance(target) // to the end
		return
	}
	if b != pi.it.blk {
		pi.it.enterBlock(b)
		pi.it.next()
		pi.at = 0
	}
	for pi.it.doc < target {
		pi.next()
	}
}

// positions appends the current document's positions in each field to
// dst[f][:0]; it reports false when they are unknown.
func (pi *posIter) positions(dst *[numFields][]uint32) (bool, error) {
	if pi.err != nil {
		return false, pi.err
	}
	if !pi.hasPositions() {
		return false, nil
	}
	if pi.blk != pi.it.blk && !pi.loadChunk(pi.it.blk) {
		pi.fail()
		return false, pi.err
	}
	k := pi.at
	for f := 0; f < numFields; f++ {
		tf := int(pi.it.tf[f])
		if tf > pi.count-k {
			pi.fail()
			return false, pi.err
		}
		out := dst[f][:0]
		p := uint32(0)
		for j := range tf {
			d := unpackAt(pi.pk, pi.w, k+j)
			if uint64(p)+uint64(d) > 1<<31 {
				pi.fail()
				return false, pi.err
			}
			p += d
			out = append(out, p)
		}
		dst[f] = out
		k += tf
	}
	return true, nil
}

// loadChunk reads the header of block b's chunk.
func (pi *posIter) loadChunk(b int) bool {
	if b < 0 || b >= len(pi.starts)-1 {
		return false
	}
	c := pi.chunks[pi.starts[b]:pi.starts[b+1]]
	pi.blk, pi.count, pi.w, pi.pk = b, 0, 0, nil
	if len(c) == 0 {
		return true
	}
	n, k := binary.Uvarint(c)
	if k <= 0 || k >= len(c) || c[k] > maxPackWidth {
		return false
	}
	w := uint(c[k])
	pk := c[k+1:]
	if w == 0 {
		if len(pk) != 0 || n > 1<<31 {
			return false
		}
	} else if n > uint64(len(pk))*8/uint64(w) || packedLen(int(n), w) != len(pk) {
		return false
	}
	pi.count, pi.w, pi.pk = int(n), w, pk
	return true
}
