package index

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/rcpgo/rcpgo/internal/varint"
)

const noDoc = math.MaxUint32

var errBadPostings = errors.New("index: malformed postings")

type skipEntry struct {
	last   uint32 // last doc of the block
	start  int    // byte offset of the block in data
	end    int
	maxTf  [numFields]uint32
	minLen [numFields]uint32
}

// postIter iterates one term's postings in doc order, with block skipping.
type postIter struct {
	data  []byte
	skips []skipEntry
	df    int
	blk   int // current block; len(skips) when exhausted
	pos   int // byte cursor inside the current block
	left  int // postings left to decode in the current block
	doc   uint32
	tf    [numFields]uint32
	err   error
	// format ≥ 3: the term's positions start at posOff in the positions
	// section, and full blocks are bit-packed: while packed, the current
	// block's doc deltas and tfs are frames at dpk, tpk[f], widths wd, wt[f].
	format uint32
	posOff int
	packed bool
	dpk    []byte
	tpk    [numFields][]byte
	wd     uint
	wt     [numFields]uint
	// one holds the skip table of a list of one block (most lists of a
	// query), so that it costs no allocation of its own.
	one [1]skipEntry
}

// newPostIter decodes the skip table of a term's postings and positions the
// iterator on the first posting. maxDoc bounds valid doc numbers.
// format is the segment's format version.
func newPostIter(data []byte, df int, maxDoc int, format uint32) *postIter {
	it := new(postIter)
	it.reset(data, df, maxDoc, format)
	return it
}

// reset is newPostIter in place: a search keeps the iterators of its terms
// in one slice, and a skip table that fits is reused.
func (it *postIter) reset(data []byte, df int, maxDoc int, format uint32) {
	skips := it.skips
	if len(skips) > 0 && &skips[0] == &it.one[0] {
		skips = nil // it.one is zeroed below
	}
	*it = postIter{data: data, df: df, format: format}
	r := varint.Reader[[]byte]{Buf: data}
	nb := r.Uvarint()
	if r.Failed() || nb != uint64((df+blockSize-1)/blockSize) {
		it.fail()
		return
	}
	if format >= 3 {
		po := r.Uvarint()
		if r.Failed() || po > math.MaxInt32 {
			it.fail()
			return
		}
		it.posOff = int(po)
	}
	switch {
	case nb == 1:
		it.skips = it.one[:]
	case uint64(cap(skips)) >= nb:
		it.skips = skips[:nb]
	default:
		it.skips = make([]skipEntry, nb)
	}
	last := uint64(0)
	for i := range it.skips {
		e := &it.skips[i]
		delta := r.Uvarint()
		if i > 0 && delta == 0 {
			r.Fail("skip entry")
		}
		last += delta
		e.end = int(r.Uvarint())
		for f := 0; f < numFields; f++ {
			e.maxTf[f] = uint32(min(r.Uvarint(), math.MaxUint32))
			e.minLen[f] = uint32(min(r.Uvarint(), math.MaxUint32))
		}
		if r.Failed() || last >= uint64(maxDoc) {
			it.fail()
			return
		}
		e.last = uint32(last)
	}
	pos := r.Off
	for i := range it.skips {
		e := &it.skips[i]
		if e.end > len(data)-pos {
			it.fail()
			return
		}
		e.start, e.end = pos, pos+e.end
		pos = e.end
	}
	if pos != len(data) {
		it.fail()
		return
	}
	it.blk = -1
	it.enterBlock(0)
	it.next()
}

func (it *postIter) fail() {
	it.err = errBadPostings
	it.doc = noDoc
	it.blk = len(it.skips)
	it.left = 0
}

func (it *postIter) enterBlock(b int) {
	if b >= len(it.skips) {
		it.blk = len(it.skips)
		it.left = 0
		it.doc = noDoc
		return
	}
	it.blk = b
	it.pos = it.skips[b].start
	it.left = min(blockSize, it.df-b*blockSize)
	if b == 0 {
		it.doc = 0
	} else {
		it.doc = it.skips[b-1].last
	}
	it.packed = it.format >= 3 && it.left == blockSize
	if it.packed && !it.enterPacked() {
		it.fail()
	}
}

// enterPacked locates the three frames of the current (full, packed)
// block and checks that they fill it exactly.
func (it *postIter) enterPacked() bool {
	p, end := it.pos, it.skips[it.blk].end
	frame := func() ([]byte, uint, bool) {
		if p >= end || it.data[p] > maxPackWidth {
			return nil, 0, false
		}
		w := uint(it.data[p])
		b := it.data[p+1:]
		p += 1 + packedLen(blockSize, w)
		return b, w, p <= end
	}
	var ok bool
	if it.dpk, it.wd, ok = frame(); !ok {
		return false
	}
	for f := 0; f < numFields; f++ {
		if it.tpk[f], it.wt[f], ok = frame(); !ok {
			return false
		}
	}
	return p == end
}

// next moves to the next posting (doc = noDoc at the end).
func (it *postIter) next() {
	for it.left == 0 {
		if it.blk >= len(it.skips) || it.err != nil {
			it.doc = noDoc
			return
		}
		it.enterBlock(it.blk + 1)
		if it.blk >= len(it.skips) {
			return
		}
	}
	if it.packed {
		it.nextPacked()
		return
	}
	first := it.left == min(blockSize, it.df-it.blk*blockSize)
	end := it.skips[it.blk].end
	v, n := binary.Uvarint(it.data[it.pos:end])
	if n <= 0 {
		it.fail()
		return
	}
	it.pos += n
	delta := v >> 1
	if delta == 0 && !(first && it.blk == 0) || uint64(it.doc)+delta > uint64(it.skips[it.blk].last) {
		it.fail()
		return
	}
	it.doc += uint32(delta)
	if v&1 == 1 {
		it.tf = [numFields]uint32{fieldTitle: 0, fieldBody: 1}
	} else {
		for f := 0; f < numFields; f++ {
			t, n := binary.Uvarint(it.data[it.pos:end])
			if n <= 0 || t > math.MaxUint32 {
				it.fail()
				return
			}
			it.pos += n
			it.tf[f] = uint32(t)
		}
	}
	it.left--
	if it.left == 0 && (it.doc != it.skips[it.blk].last || it.pos != end) {
		it.fail()
	}
}

// nextPacked decodes the next posting of a packed block.
func (it *postIter) nextPacked() {
	i := blockSize - it.left
	delta := unpackAt(it.dpk, it.wd, i)
	if delta == 0 && !(i == 0 && it.blk == 0) || uint64(it.doc)+uint64(delta) > uint64(it.skips[it.blk].last) {
		it.fail()
		return
	}
	it.doc += delta
	for f := 0; f < numFields; f++ {
		it.tf[f] = unpackAt(it.tpk[f], it.wt[f], i)
	}
	it.left--
	if it.left == 0 && it.doc != it.skips[it.blk].last {
		it.fail()
	}
}

// shallow returns the index of the block that may hold target (the first
// block whose last doc ≥ target) without decoding, or -1 past the end.
func (it *postIter) shallow(target uint32) int {
	b := max(it.blk, 0)
	for b < len(it.skips) && it.skips[b].last < target {
		b++
	}
	if b >= len(it.skips) {
		return -1
	}
	return b
}

// advance moves to the first posting with doc ≥ target.
func (it *postIter) advance(target uint32) {
	if it.doc >= target {
		return
	}
	b := it.shallow(target)
	if b < 0 {
		it.blk = len(it.skips)
		it.left = 0
		it.doc = noDoc
		return
	}
	if b != it.blk {
		it.enterBlock(b)
		it.next()
	}
	for it.doc < target {
		it.next()
	}
}
