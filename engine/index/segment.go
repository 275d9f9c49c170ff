package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"unsafe"

	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/internal/mmapfile"
	"github.com/rcpgo/rcpgo/internal/prefetch"
	"github.com/rcpgo/rcpgo/internal/varint"
)

// Segment file format, version 5 (all integers little-endian):
//
//	header   "RCPSEG01" | u32 format version | u32 number of text fields
//	sections (see sec* constants), each a byte range of the file
//	footer   nsec × (u64 offset, u64 length) | u32 nsec | u32 CRC-32C of every
//	         byte before the CRC | "RCPSEGND"
//
// Postings of one term: uvarint block count, (version ≥ 3) uvarint offset of
// the term's positions in the positions section, then per block a skip
// entry (uvarint last-doc delta, uvarint byte length, per field uvarint
// max tf and uvarint min field length), then the blocks. A block holds up
// to 128 postings. A full block (version ≥ 3) is bit-packed (bitpack.go):
// three frames of 128 values — doc deltas, title tfs, body tfs — each a
// width byte and the values at that width. A partial block (the last of
// a list; every block before version 3) holds per posting uvarint
// (doc delta << 1 | common), where common means tf = 0 in the title and 1
// in the body; otherwise a uvarint tf per field follows.
//
// Positions (version ≥ 3), per term, in their own section so that queries
// without phrases never touch them: per postings block a uvarint chunk
// length, then the chunks. A chunk lists the positions of the block's
// documents in doc order, per document the title's then the body's
// (tf of them each), each run as its first position then deltas: a
// uvarint count, a width byte and the values packed at that width; an
// empty chunk has no positions. Documents whose positions are unknown
// (merged from version 1 segments) have none and are listed in the
// no-positions section (ascending u32 doc numbers); phrase queries check
// them against the stored text.
//
// The metadata keyword sections (kwOff, kwBlob, kwInfo, kwPost) are laid
// out in keywords.go; version 4 front-codes the keys, versions 1–3 kept
// them whole.
//
// The lengths section holds each document's field lengths, numFields per
// document: u16 each when every length of the segment fits (version 5;
// the scorer reads them at random, and half the bytes stay in the cache
// longer), else u32 each, as every earlier version did. The section's size
// tells which.
//
// Version 2 kept positions per document instead, as a forward index (the
// fwdOff/fwd sections): per field a uvarint token count, then per token
// uvarint (term ordinal << 1 | gap) where gap means a uvarint position
// delta other than 1 follows. An empty entry meant unknown positions.
// Version 1 segments have no positions. All still open, and a merge
// rewrites them in the current version.
const (
	segMagic      = "RCPSEG01"
	segEndMagic   = "RCPSEGND"
	segFormat     = 5
	headerSize    = 16
	blockSize     = 128
	termInfoSize  = 32
	kwInfoSize    = 16 // formats 1–3
	footerTailLen = 4 + 4 + 8
)

// Field numbers of the text fields.
const (
	fieldTitle = 0
	fieldBody  = 1
	numFields  = 2
)

const (
	secInfo = iota
	secSeqs
	secLens
	secIDOff
	secIDBlob
	secTermOff
	secTermBlob
	secTermInfo
	secPost
	secKwOff
	secKwBlob
	secKwInfo
	secKwPost
	secNum
	numSectionsV1 // sections of a version 1 segment
)

const (
	secFwdOff     = iota + numSectionsV1 // version 2: per-document forward entry offsets (u32, n+1)
	secFwd                               // version 2: forward entries
	numSectionsV2                        // sections of a version 2 segment
)

const (
	secPos      = iota + numSectionsV2 // version ≥ 3: positions, per term
	secNoPos                           // version ≥ 3: docs without positions (u32, ascending)
	numSections                        // sections of a version 3 or 4 segment
)

// ErrCorruptSegment reports a segment that fails validation.
var ErrCorruptSegment = errors.New("index: corrupt segment")

var errCorruptForward = fmt.Errorf("%w: malformed positions", ErrCorruptSegment)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// docInput is one analysed document ready to be written to a segment.
type docInput struct {
	seq   uint64
	id    string
	lens  [numFields]uint32
	terms []termFreq // in first-occurrence order
	kw    []string   // keyword keys (field\x00value, \x01field for exists), deduplicated
	nums  []numValue
	facts search.Facts // stored with the record (Add only; replay does not need them)
	enc   []byte       // the encoded record, when prepared with its id (Add only)
	// toks lists each field's tokens: numFields runs of a count, then
	// (index into terms, position) pairs.
	toks []uint32
}

type termFreq struct {
	term string
	tf   [numFields]uint32
}

type numValue struct {
	field string
	v     float64
}

// segBuilder accumulates documents (in ascending seq order) for one segment.
type segBuilder struct {
	seqs  []uint64
	ids   []string
	lens  []uint32 // numFields per doc
	terms map[string]*postAcc
	kw    map[string][]uint32
	nums  map[string]*numCol
	accs  []*postAcc // scratch of add: the postings of each of a document's terms
}

type postAcc struct {
	docs []uint32
	tfs  []uint32 // numFields per doc
	pos  []uint32 // per doc: the title's then the body's positions
}

type numCol struct {
	docs []uint32
	vals []float64
}

func newSegBuilder() *segBuilder {
	return &segBuilder{terms: map[string]*postAcc{}, kw: map[string][]uint32{}, nums: map[string]*numCol{}}
}

func (b *segBuilder) len() int { return len(b.seqs) }

func (b *segBuilder) add(d *docInput) {
	doc := uint32(len(b.seqs))
	b.seqs = append(b.seqs, d.seq)
	b.ids = append(b.ids, d.id)
	b.lens = append(b.lens, d.lens[:]...)
	b.accs = b.accs[:0]
	for _, t := range d.terms {
		p := b.terms[t.term]
		if p == nil {
			p = &postAcc{}
			b.terms[t.term] = p
		}
		b.accs = append(b.accs, p)
		p.docs = append(p.docs, doc)
		p.tfs = append(p.tfs, t.tf[:]...)
	}
	// Fields in order, so each term's positions of this document are its
	// title's then its body's.
	for i := 0; i < len(d.toks); {
		n := int(d.toks[i])
		for k := i + 1; k < i+1+2*n; k += 2 {
			p := b.accs[d.toks[k]]
			p.pos = append(p.pos, d.toks[k+1])
		}
		i += 1 + 2*n
	}
	for _, k := range d.kw {
		b.kw[k] = append(b.kw[k], doc)
	}
	for _, nv := range d.nums {
		c := b.nums[nv.field]
		if c == nil {
			c = &numCol{}
			b.nums[nv.field] = c
		}
		c.docs = append(c.docs, doc)
		c.vals = append(c.vals, nv.v)
	}
}

// encode writes the segment file image.
func (b *segBuilder) encode() []byte {
	w := newSegWriter(b.seqs, b.ids, b.lens, nil)
	terms := make([]string, 0, len(b.terms))
	for t := range b.terms {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	for _, t := range terms {
		p := b.terms[t]
		w.addTerm(t, p.docs, p.tfs, p.pos)
	}
	keys := make([]string, 0, len(b.kw))
	for k := range b.kw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		w.addKeyword(k, b.kw[k])
	}
	return w.finish(b.nums)
}

// segWriter streams a segment image: per-document tables first, then
// terms and keywords in ascending order, then numeric columns.
type segWriter struct {
	secs  [numSections][]byte
	lens  []uint32
	noPos *Bitset // documents without positions; nil: none
	kw    kwWriter
	// scratch of encodePostings
	skips, blk, chunks, chunkLens []byte
	vals                          []uint32
}

// newSegWriter starts a segment of the documents seqs (ascending) with
// their ids and numFields lengths each; noPos (nil: none) lists those
// whose positions are unknown.
func newSegWriter(seqs []uint64, ids []string, lens []uint32, noPos *Bitset) *segWriter {
	w := &segWriter{lens: lens, noPos: noPos}
	n := len(seqs)
	var sumLen [numFields]uint64
	for i, l := range lens {
		sumLen[i%numFields] += uint64(l)
	}
	info := binary.AppendUvarint(nil, uint64(n))
	if n > 0 {
		info = binary.AppendUvarint(info, seqs[0])
		info = binary.AppendUvarint(info, seqs[n-1])
	} else {
		info = binary.AppendUvarint(info, 0)
		info = binary.AppendUvarint(info, 0)
	}
	for _, s := range sumLen {
		info = binary.AppendUvarint(info, s)
	}
	w.secs[secInfo] = info
	sq := make([]byte, 8*n)
	for i, s := range seqs {
		binary.LittleEndian.PutUint64(sq[8*i:], s)
	}
	w.secs[secSeqs] = sq
	w.secs[secLens] = encodeLens(lens)
	w.secs[secIDOff], w.secs[secIDBlob] = encodeStrings(ids)
	if noPos != nil {
		for _, d := range noPos.Members() {
			w.secs[secNoPos] = binary.LittleEndian.AppendUint32(w.secs[secNoPos], d)
		}
	}
	return w
}

// addTerm appends a term (terms must come in ascending order) with its
// ascending docs, numFields tfs per doc and the positions of the docs
// that have them (per doc the title's then the body's, tf of each).
func (w *segWriter) addTerm(term string, docs, tfs, pos []uint32) {
	w.secs[secTermOff] = binary.LittleEndian.AppendUint32(w.secs[secTermOff], uint32(len(w.secs[secTermBlob])))
	w.secs[secTermBlob] = append(w.secs[secTermBlob], term...)
	off := len(w.secs[secPost])
	var ti termInfo
	w.secs[secPost], w.secs[secPos], ti = w.encodePostings(w.secs[secPost], w.secs[secPos], docs, tfs, pos)
	ti.off, ti.n = uint64(off), uint32(len(w.secs[secPost])-off)
	var rec [termInfoSize]byte
	ti.put(rec[:])
	w.secs[secTermInfo] = append(w.secs[secTermInfo], rec[:]...)
}

// finish adds the numeric columns and assembles the file image.
func (w *segWriter) finish(nums map[string]*numCol) []byte {
	w.secs[secFwdOff] = nil // version 2 only
	w.secs[secTermOff] = binary.LittleEndian.AppendUint32(w.secs[secTermOff], uint32(len(w.secs[secTermBlob])))
	w.kw.finish(&w.secs)
	fields := make([]string, 0, len(nums))
	for f := range nums {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	num := binary.AppendUvarint(nil, uint64(len(fields)))
	for _, f := range fields {
		c := nums[f]
		num = binary.AppendUvarint(num, uint64(len(f)))
		num = append(num, f...)
		num = binary.AppendUvarint(num, uint64(len(c.docs)))
		prev := uint32(0)
		for _, d := range c.docs {
			num = binary.AppendUvarint(num, uint64(d-prev))
			prev = d
		}
		for _, v := range c.vals {
			num = binary.LittleEndian.AppendUint64(num, math.Float64bits(v))
		}
	}
	w.secs[secNum] = num

	size := headerSize
	for _, s := range w.secs {
		size += len(s)
	}
	out := make([]byte, 0, size+16*numSections+footerTailLen)
	out = append(out, segMagic...)
	out = binary.LittleEndian.AppendUint32(out, segFormat)
	out = binary.LittleEndian.AppendUint32(out, numFields)
	var table [numSections][2]uint64
	for i, s := range w.secs {
		table[i] = [2]uint64{uint64(len(out)), uint64(len(s))}
		out = append(out, s...)
	}
	for _, e := range table {
		out = binary.LittleEndian.AppendUint64(out, e[0])
		out = binary.LittleEndian.AppendUint64(out, e[1])
	}
	out = binary.LittleEndian.AppendUint32(out, numSections)
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
	out = append(out, segEndMagic...)
	return out
}

func encodeStrings(ss []string) (offs, blob []byte) {
	offs = make([]byte, 4*(len(ss)+1))
	total := 0
	for i, s := range ss {
		binary.LittleEndian.PutUint32(offs[4*i:], uint32(total))
		total += len(s)
	}
	binary.LittleEndian.PutUint32(offs[4*len(ss):], uint32(total))
	blob = make([]byte, 0, total)
	for _, s := range ss {
		blob = append(blob, s...)
	}
	return offs, blob
}

// termInfo locates a term's postings and bounds its scores.
type termInfo struct {
	df     uint32
	off    uint64
	n      uint32
	maxTf  [numFields]uint32
	minLen [numFields]uint32
}

func (t *termInfo) put(b []byte) {
	binary.LittleEndian.PutUint32(b, t.df)
	binary.LittleEndian.PutUint64(b[4:], t.off)
	binary.LittleEndian.PutUint32(b[12:], t.n)
	for f := 0; f < numFields; f++ {
		binary.LittleEndian.PutUint32(b[16+4*f:], t.maxTf[f])
		binary.LittleEndian.PutUint32(b[24+4*f:], t.minLen[f])
	}
}

func getTermInfo(b []byte) termInfo {
	t := termInfo{
		df:  binary.LittleEndian.Uint32(b),
		off: binary.LittleEndian.Uint64(b[4:]),
		n:   binary.LittleEndian.Uint32(b[12:]),
	}
	for f := 0; f < numFields; f++ {
		t.maxTf[f] = binary.LittleEndian.Uint32(b[16+4*f:])
		t.minLen[f] = binary.LittleEndian.Uint32(b[24+4*f:])
	}
	return t
}

// encodePostings appends the version ≥ 3 postings of docs (ascending) with
// per-field tfs to dst and their positions (see addTerm) to posDst, and
// returns the term's info (offset and length are filled by the caller).
func encodePostings(dst, posDst []byte, docs, tfs, pos, lens []uint32, noPos *Bitset) ([]byte, []byte, termInfo) {
	w := segWriter{lens: lens, noPos: noPos}
	return w.encodePostings(dst, posDst, docs, tfs, pos)
}

func (w *segWriter) encodePostings(dst, posDst []byte, docs, tfs, pos []uint32) ([]byte, []byte, termInfo) {
	lens := w.lens
	ti := termInfo{df: uint32(len(docs))}
	for f := range ti.minLen {
		ti.minLen[f] = math.MaxUint32
	}
	nb := (len(docs) + blockSize - 1) / blockSize
	dst = binary.AppendUvarint(dst, uint64(nb))
	dst = binary.AppendUvarint(dst, uint64(len(posDst)))
	skips, blocks := w.skips[:0], w.blk[:0]
	chunks, chunkLens := w.chunks[:0], w.chunkLens[:0]
	prevLast := uint32(0)
	for bi := 0; bi < nb; bi++ {
		lo, hi := bi*blockSize, min((bi+1)*blockSize, len(docs))
		var maxTf, minLen [numFields]uint32
		for f := range minLen {
			minLen[f] = math.MaxUint32
		}
		for j := lo; j < hi; j++ {
			d := docs[j]
			for f := 0; f < numFields; f++ {
				if tf := tfs[numFields*j+f]; tf > 0 {
					maxTf[f] = max(maxTf[f], tf)
					minLen[f] = min(minLen[f], lens[numFields*int(d)+f])
				}
			}
		}
		start := len(blocks)
		if hi-lo == blockSize {
			blocks = w.packBlock(blocks, docs[lo:hi], tfs[numFields*lo:numFields*hi], prevLast)
		} else {
			blocks = appendVarintBlock(blocks, docs[lo:hi], tfs[numFields*lo:numFields*hi], prevLast)
		}
		skips = binary.AppendUvarint(skips, uint64(docs[hi-1]-prevLast))
		skips = binary.AppendUvarint(skips, uint64(len(blocks)-start))
		for f := 0; f < numFields; f++ {
			if maxTf[f] == 0 {
				minLen[f] = 0
			}
			skips = binary.AppendUvarint(skips, uint64(maxTf[f]))
			skips = binary.AppendUvarint(skips, uint64(minLen[f]))
			ti.maxTf[f] = max(ti.maxTf[f], maxTf[f])
			if maxTf[f] > 0 {
				ti.minLen[f] = min(ti.minLen[f], minLen[f])
			}
		}
		cstart := len(chunks)
		chunks, pos = w.appendPosChunk(chunks, docs[lo:hi], tfs[numFields*lo:numFields*hi], pos)
		chunkLens = binary.AppendUvarint(chunkLens, uint64(len(chunks)-cstart))
		prevLast = docs[hi-1]
	}
	for f := range ti.minLen {
		if ti.maxTf[f] == 0 {
			ti.minLen[f] = 0
		}
	}
	dst = append(dst, skips...)
	dst = append(dst, blocks...)
	posDst = append(posDst, chunkLens...)
	posDst = append(posDst, chunks...)
	w.skips, w.blk, w.chunks, w.chunkLens = skips, blocks, chunks, chunkLens
	return dst, posDst, ti
}

// packBlock appends a full block bit-packed: doc deltas (from prev), title
// tfs, body tfs, each a width byte and the packed values.
func (w *segWriter) packBlock(dst []byte, docs, tfs []uint32, prev uint32) []byte {
	vals := w.vals[:0]
	for _, d := range docs {
		vals = append(vals, d-prev)
		prev = d
	}
	dst = appendFrame(dst, vals)
	for f := 0; f < numFields; f++ {
		vals = vals[:0]
		for j := range docs {
			vals = append(vals, tfs[numFields*j+f])
		}
		dst = appendFrame(dst, vals)
	}
	w.vals = vals
	return dst
}

// appendFrame appends a width byte and vals packed at that width.
func appendFrame(dst []byte, vals []uint32) []byte {
	wd := packWidth(vals)
	dst = append(dst, byte(wd))
	return appendPacked(dst, vals, wd)
}

// appendVarintBlock appends a block in the varint layout (partial blocks;
// every block of versions 1 and 2).
func appendVarintBlock(dst []byte, docs, tfs []uint32, prev uint32) []byte {
	for j, d := range docs {
		tf := tfs[numFields*j : numFields*j+numFields]
		common := tf[fieldTitle] == 0 && tf[fieldBody] == 1
		v := uint64(d-prev) << 1
		if common {
			v |= 1
		}
		dst = binary.AppendUvarint(dst, v)
		if !common {
			for f := 0; f < numFields; f++ {
				dst = binary.AppendUvarint(dst, uint64(tf[f]))
			}
		}
		prev = d
	}
	return dst
}

// appendPosChunk appends the positions chunk of one block's docs, taking
// them from the front of pos, and returns the rest of pos. Within each run
// (one doc's positions in one field) positions become deltas.
func (w *segWriter) appendPosChunk(dst []byte, docs, tfs, pos []uint32) ([]byte, []uint32) {
	vals := w.vals[:0]
	for j, d := range docs {
		if w.noPos != nil && w.noPos.Has(d) {
			continue
		}
		for f := 0; f < numFields; f++ {
			run := pos[:tfs[numFields*j+f]]
			pos = pos[len(run):]
			prev := uint32(0)
			for _, p := range run {
				vals = append(vals, p-prev)
				prev = p
			}
		}
	}
	w.vals = vals
	if len(vals) == 0 {
		return dst, pos
	}
	dst = binary.AppendUvarint(dst, uint64(len(vals)))
	return appendFrame(dst, vals), pos
}

// segment is an open, immutable segment image (from a file or built in
// memory). All accessors index into data without copying.
type segment struct {
	name   string // file name, "" while only in memory
	data   []byte
	crc    uint32
	n      int
	minSeq uint64
	maxSeq uint64
	sumLen [numFields]uint64
	sec    [numSections][]byte
	nTerms int
	nKw    int
	nums   map[string]*numCol
	format uint32  // file format version
	lensW  int     // bytes per field length: 2 or 4
	noPos  *Bitset // version ≥ 3: documents without positions; nil: none
}

// openSegmentFile maps the segment file dir/name read-only and opens it:
// the segment's bytes are the page cache's, not the heap's, so a restart
// reads no segment into memory and the kernel may evict cold parts. The
// mapping is released when the segment becomes unreachable (no snapshot
// or search refers to it any more); nothing retains slices of its bytes
// beyond the segment itself (ids and terms are copied out).
//
// With sum false the checksum is left to a later verifySum (Open with
// Options.VerifyAfterOpen): the footer, section table and tables are
// still checked, so that reading the segment stays in bounds.
func openSegmentFile(dir, name string, size int64, sum bool) (*segment, error) {
	data, unmap, err := mmapfile.ReadOnly(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("index: open segment: %w", err)
	}
	if int64(len(data)) != size {
		unmap()
		return nil, fmt.Errorf("%w %s: size %d, manifest says %d", ErrCorruptSegment, name, len(data), size)
	}
	seg, err := openSegmentTables(name, data)
	if err == nil && sum {
		err = seg.verifySum(context.Background())
	}
	if err != nil {
		unmap()
		return nil, err
	}
	releaseMapped(data) // validation read every page; searches fault back what they use
	runtime.AddCleanup(seg, func(unmap func()) { unmap() }, unmap)
	return seg, nil
}

// openSegment validates data (CRC, bounds, monotone tables) and opens it.
func openSegment(name string, data []byte) (*segment, error) {
	s, err := openSegmentTables(name, data)
	if err != nil {
		return nil, err
	}
	if err := s.verifySum(context.Background()); err != nil {
		return nil, err
	}
	return s, nil
}

// sumChunk is how much of a segment verifySum checksums between two looks
// at its context.
const sumChunk = 4 << 20

// verifySum checks the segment's CRC-32C (every byte before the footer's
// CRC) against the footer, stopping early when ctx ends.
func (s *segment) verifySum(ctx context.Context) error {
	crcAt := len(s.data) - 12
	got := uint32(0)
	for off := 0; off < crcAt; off += sumChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		got = crc32.Update(got, castagnoli, s.data[off:min(off+sumChunk, crcAt)])
	}
	if got != s.crc {
		return fmt.Errorf("%w %s: checksum mismatch", ErrCorruptSegment, s.name)
	}
	return nil
}

// openSegmentTables validates data's framing, bounds and monotone tables,
// not its checksum, and opens it.
func openSegmentTables(name string, data []byte) (*segment, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrCorruptSegment, name, fmt.Sprintf(format, args...))
	}
	if len(data) < headerSize+16*numSectionsV1+footerTailLen {
		return nil, bad("short file (%d bytes)", len(data))
	}
	if string(data[:8]) != segMagic || string(data[len(data)-8:]) != segEndMagic {
		return nil, bad("bad magic")
	}
	version := binary.LittleEndian.Uint32(data[8:])
	var nsec int
	switch version {
	case 3, 4, 5:
		nsec = numSections
	case 2:
		nsec = numSectionsV2
	case 1:
		nsec = numSectionsV1
	default:
		return nil, bad("unsupported format version %d", version)
	}
	if len(data) < headerSize+16*nsec+footerTailLen {
		return nil, bad("short file (%d bytes)", len(data))
	}
	if nf := binary.LittleEndian.Uint32(data[12:]); nf != numFields {
		return nil, bad("field count %d", nf)
	}
	crcAt := len(data) - 12
	want := binary.LittleEndian.Uint32(data[crcAt:])
	if ns := binary.LittleEndian.Uint32(data[crcAt-4:]); ns != uint32(nsec) {
		return nil, bad("section count %d", ns)
	}
	s := &segment{name: name, data: data, crc: want, format: version}
	tableAt := crcAt - 4 - 16*nsec
	for i := 0; i < nsec; i++ {
		off := binary.LittleEndian.Uint64(data[tableAt+16*i:])
		n := binary.LittleEndian.Uint64(data[tableAt+16*i+8:])
		if off < headerSize || off > uint64(tableAt) || n > uint64(tableAt)-off {
			return nil, bad("section %d out of bounds", i)
		}
		s.sec[i] = data[off : off+n : off+n]
	}
	r := varint.Reader[[]byte]{Buf: s.sec[secInfo]}
	n := r.Uvarint()
	s.minSeq, s.maxSeq = r.Uvarint(), r.Uvarint()
	for f := range s.sumLen {
		s.sumLen[f] = r.Uvarint()
	}
	if r.Failed() || n > math.MaxUint32/8 {
		return nil, bad("info")
	}
	s.n = int(n)
	var err error
	s.lensW = 4
	if version >= 5 && len(s.sec[secLens]) == 2*numFields*s.n {
		s.lensW = 2
	}
	if len(s.sec[secSeqs]) != 8*s.n || len(s.sec[secLens]) != s.lensW*numFields*s.n {
		return nil, bad("doc table sizes")
	}
	if err := checkStrings(s.sec[secIDOff], s.sec[secIDBlob], s.n); err != nil {
		return nil, bad("ids: %v", err)
	}
	if version == 2 {
		if err := checkStrings(s.sec[secFwdOff], s.sec[secFwd], s.n); err != nil {
			return nil, bad("positions: %v", err)
		}
	}
	if version >= 3 {
		if s.noPos, err = decodeNoPos(s.sec[secNoPos], s.n); err != nil {
			return nil, bad("positions: %v", err)
		}
	}
	for i := 1; i < s.n; i++ {
		if s.seq(uint32(i)) <= s.seq(uint32(i-1)) {
			return nil, bad("document numbers not ascending")
		}
	}
	if s.n > 0 && (s.seq(0) != s.minSeq || s.seq(uint32(s.n-1)) != s.maxSeq) {
		return nil, bad("seq range")
	}
	if len(s.sec[secTermInfo])%termInfoSize != 0 {
		return nil, bad("term info size")
	}
	s.nTerms = len(s.sec[secTermInfo]) / termInfoSize
	if err := checkStrings(s.sec[secTermOff], s.sec[secTermBlob], s.nTerms); err != nil {
		return nil, bad("terms: %v", err)
	}
	for i := 0; i < s.nTerms; i++ {
		ti := s.termInfo(i)
		if ti.off > uint64(len(s.sec[secPost])) || uint64(ti.n) > uint64(len(s.sec[secPost]))-ti.off || ti.df == 0 || ti.df > uint32(s.n) {
			return nil, bad("postings range of term %d", i)
		}
		if i > 0 && s.term(i) <= s.term(i-1) {
			return nil, bad("terms not sorted")
		}
	}
	if err := s.openKeywords(); err != nil {
		return nil, bad("keywords: %v", err)
	}
	nums, err := decodeNums(s.sec[secNum], s.n)
	if err != nil {
		return nil, bad("numeric columns: %v", err)
	}
	s.nums = nums
	return s, nil
}

// addParts adds the segment's bytes per part to p.
func (s *segment) addParts(p *search.SegmentParts) {
	total := int64(0)
	size := func(secs ...int) int64 {
		n := int64(0)
		for _, i := range secs {
			n += int64(len(s.sec[i]))
		}
		total += n
		return n
	}
	p.Documents += size(secInfo, secSeqs, secLens, secIDOff, secIDBlob)
	p.Terms += size(secTermOff, secTermBlob, secTermInfo)
	p.Postings += size(secPost)
	p.Positions += size(secFwdOff, secFwd, secPos, secNoPos)
	p.Keywords += size(secKwOff, secKwBlob, secKwInfo, secKwPost)
	p.Numbers += size(secNum)
	p.Framing += int64(len(s.data)) - total
}

// decodeNoPos reads the no-positions section: ascending doc numbers < n.
func decodeNoPos(b []byte, n int) (*Bitset, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b)%4 != 0 {
		return nil, errors.New("no-positions list size")
	}
	set := NewBitset(n)
	for i := 0; i < len(b); i += 4 {
		d := binary.LittleEndian.Uint32(b[i:])
		if int64(d) >= int64(n) || i > 0 && d <= binary.LittleEndian.Uint32(b[i-4:]) {
			return nil, errors.New("no-positions list out of order")
		}
		set.Set(d)
	}
	return set, nil
}

func checkStrings(offs, blob []byte, n int) error {
	if len(offs) != 4*(n+1) {
		return fmt.Errorf("offset table size %d for %d strings", len(offs), n)
	}
	prev := uint32(0)
	for i := 0; i <= n; i++ {
		o := binary.LittleEndian.Uint32(offs[4*i:])
		if o < prev || int(o) > len(blob) {
			return fmt.Errorf("offset %d out of order", i)
		}
		prev = o
	}
	if int(prev) != len(blob) {
		return fmt.Errorf("blob size")
	}
	return nil
}

func decodeNums(b []byte, n int) (map[string]*numCol, error) {
	r := varint.Reader[[]byte]{Buf: b}
	nf := r.Uvarint()
	if r.Failed() || nf > uint64(len(b)) {
		return nil, errors.New("field count")
	}
	out := make(map[string]*numCol, nf)
	for range nf {
		l := r.Uvarint()
		name := r.Bytes(l)
		cnt := r.Uvarint()
		if r.Failed() || cnt > uint64(len(b)) {
			return nil, errors.New("truncated")
		}
		c := &numCol{docs: make([]uint32, cnt), vals: make([]float64, cnt)}
		d := uint64(0)
		for i := range c.docs {
			d += r.Uvarint()
			if i > 0 && d < uint64(c.docs[i-1]) || d >= uint64(n) {
				return nil, errors.New("doc out of range")
			}
			c.docs[i] = uint32(d)
		}
		for i := range c.vals {
			c.vals[i] = math.Float64frombits(binary.LittleEndian.Uint64(r.Bytes(8)))
			if r.Failed() {
				return nil, errors.New("truncated values")
			}
		}
		if r.Failed() {
			return nil, errors.New("truncated")
		}
		out[string(name)] = c
	}
	if r.Off != len(b) {
		return nil, errors.New("trailing bytes")
	}
	return out, nil
}

func (s *segment) seq(i uint32) uint64 {
	return binary.LittleEndian.Uint64(s.sec[secSeqs][8*i:])
}

// prefetchLens asks the cache for the field lengths of document i (none
// past the last): the scorer reads them for each document it scores,
// scattered over the segment's table (4 or 8 bytes a document: 1.2 or 2.4
// MB at 300 k),
// so the next document of a posting list is fetched while this one is
// scored. Without it, a sparse top 10 over 300 k passages took 1.3–1.5×
// as long once the cache held other work, such as a dense walk
// (docs/benchmarks.md, "Field lengths fetched ahead, then stored in 16 bits").
func (s *segment) prefetchLens(i uint32) {
	if o := s.lensW * numFields * int(i); o < len(s.sec[secLens]) {
		prefetch.Lines(unsafe.Pointer(&s.sec[secLens][o]), 1)
	}
}

func (s *segment) fieldLen(i uint32, f int) uint32 {
	if s.lensW == 2 {
		return uint32(binary.LittleEndian.Uint16(s.sec[secLens][2*(numFields*int(i)+f):]))
	}
	return binary.LittleEndian.Uint32(s.sec[secLens][4*(numFields*int(i)+f):])
}

// encodeLens is the lengths section: u16 each when every length fits,
// else u32 each.
func encodeLens(lens []uint32) []byte {
	if !slices.ContainsFunc(lens, func(l uint32) bool { return l > math.MaxUint16 }) {
		b := make([]byte, 2*len(lens))
		for i, l := range lens {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(l))
		}
		return b
	}
	b := make([]byte, 4*len(lens))
	for i, l := range lens {
		binary.LittleEndian.PutUint32(b[4*i:], l)
	}
	return b
}

func strAt(offs, blob []byte, i int) []byte {
	a := binary.LittleEndian.Uint32(offs[4*i:])
	b := binary.LittleEndian.Uint32(offs[4*i+4:])
	return blob[a:b]
}

func (s *segment) id(i uint32) string { return string(s.idBytes(i)) }

// idBytes is id without a copy: the bytes alias the segment's data.
func (s *segment) idBytes(i uint32) []byte { return strAt(s.sec[secIDOff], s.sec[secIDBlob], int(i)) }

func (s *segment) term(i int) string {
	return string(strAt(s.sec[secTermOff], s.sec[secTermBlob], i))
}

func (s *segment) termInfo(i int) termInfo {
	return getTermInfo(s.sec[secTermInfo][termInfoSize*i:])
}

// lookup finds term in the dictionary.
func (s *segment) lookup(term string) (termInfo, bool) {
	if i, ok := s.lookupOrd(term); ok {
		return s.termInfo(i), true
	}
	return termInfo{}, false
}

// lookupOrd returns the ordinal of term in the dictionary.
func (s *segment) lookupOrd(term string) (int, bool) {
	offs, blob := s.sec[secTermOff], s.sec[secTermBlob]
	i := sort.Search(s.nTerms, func(i int) bool {
		return string(strAt(offs, blob, i)) >= term // compared in place, no copy of term per probe
	})
	return i, i < s.nTerms && string(strAt(offs, blob, i)) == term
}

func (s *segment) postingsBytes(ti termInfo) []byte {
	return s.sec[secPost][ti.off : ti.off+uint64(ti.n)]
}

func decodeDocList(b []byte, cnt, n int, fn func(uint32)) bool {
	r := varint.Reader[[]byte]{Buf: b}
	d := uint64(0)
	for j := 0; j < cnt; j++ {
		v := r.Uvarint()
		if j == 0 {
			d = v
		} else {
			d += v
		}
		if r.Failed() || d >= uint64(n) || (j > 0 && v == 0) {
			return false
		}
		fn(uint32(d))
	}
	return true
}

// findSeq returns the local doc number holding seq. Numbers ascend
// strictly (checked at open), so seq can only sit at a position within
// seq−minSeq of the first and maxSeq−seq of the last: the search is
// confined to that range, which is the one position itself in a segment
// without gaps (most of them; the dense recall resolves every hit here).
func (s *segment) findSeq(seq uint64) (uint32, bool) {
	if s.n == 0 || seq < s.minSeq || seq > s.maxSeq {
		return 0, false
	}
	last := uint64(s.n - 1)
	lo, hi := uint64(0), min(last, seq-s.minSeq)
	if d := s.maxSeq - seq; d < last {
		lo = last - d
	}
	if lo > hi {
		return 0, false
	}
	i := lo + uint64(sort.Search(int(hi-lo+1), func(j int) bool { return s.seq(uint32(lo)+uint32(j)) >= seq }))
	if i <= hi && s.seq(uint32(i)) == seq {
		return uint32(i), true
	}
	return 0, false
}
