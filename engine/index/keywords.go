package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sort"

	"github.com/rcpgo/rcpgo/internal/varint"
)

// The metadata keyword table: sorted keys (field\x00value and the like,
// see prepare.go), each with the ascending list of documents holding it.
//
// Format 4 front-codes the keys in blocks of kwBlock: the keyword offsets
// section has one u32 per block (and the blob's length), a block holds per
// key uvarint (bytes shared with the previous key of the block; 0 for the
// first) | uvarint suffix length | suffix. The info section has one u64
// per key: where its doc list starts in the postings section (it ends
// where the next one starts); a doc list is uvarint count, then uvarint
// doc deltas (the first absolute).
//
// Formats 1–3 kept the keys whole (u32 offsets per key) and a 16-byte
// info per key (u32 count, u64 offset, u32 length); doc lists had no count.
const (
	kwBlock      = 16
	kwInfoSizeV4 = 8
)

// kwWriter appends the keyword table (format 4) to a segment's sections.
type kwWriter struct {
	n    int
	prev []byte
}

// addKeyword appends a metadata key (ascending order) with its docs.
func (w *segWriter) addKeyword(key string, docs []uint32) { w.kw.add(&w.secs, key, docs) }

func (w *kwWriter) add(secs *[numSections][]byte, key string, docs []uint32) {
	shared := 0
	if w.n%kwBlock == 0 {
		secs[secKwOff] = binary.LittleEndian.AppendUint32(secs[secKwOff], uint32(len(secs[secKwBlob])))
	} else {
		for shared < len(key) && shared < len(w.prev) && key[shared] == w.prev[shared] {
			shared++
		}
	}
	secs[secKwBlob] = binary.AppendUvarint(secs[secKwBlob], uint64(shared))
	secs[secKwBlob] = binary.AppendUvarint(secs[secKwBlob], uint64(len(key)-shared))
	secs[secKwBlob] = append(secs[secKwBlob], key[shared:]...)
	w.prev = append(w.prev[:0], key...)
	w.n++

	secs[secKwInfo] = binary.LittleEndian.AppendUint64(secs[secKwInfo], uint64(len(secs[secKwPost])))
	post := binary.AppendUvarint(secs[secKwPost], uint64(len(docs)))
	prev := uint32(0)
	for j, d := range docs {
		if j == 0 {
			post = binary.AppendUvarint(post, uint64(d))
		} else {
			post = binary.AppendUvarint(post, uint64(d-prev))
		}
		prev = d
	}
	secs[secKwPost] = post
}

func (w *kwWriter) finish(secs *[numSections][]byte) {
	secs[secKwOff] = binary.LittleEndian.AppendUint32(secs[secKwOff], uint32(len(secs[secKwBlob])))
}

// openKeywords validates the keyword table and sets s.nKw.
func (s *segment) openKeywords() error {
	if s.format < 4 {
		return s.openKeywordsV1()
	}
	info, post := s.sec[secKwInfo], s.sec[secKwPost]
	if len(info)%kwInfoSizeV4 != 0 {
		return errors.New("info size")
	}
	s.nKw = len(info) / kwInfoSizeV4
	nb := (s.nKw + kwBlock - 1) / kwBlock
	if err := checkOffsets(s.sec[secKwOff], len(s.sec[secKwBlob]), nb); err != nil {
		return err
	}
	var prev, key []byte
	at := 0
	for i := 0; i < s.nKw; i++ {
		b := i / kwBlock
		if i%kwBlock == 0 {
			at = int(binary.LittleEndian.Uint32(s.sec[secKwOff][4*b:]))
		}
		var ok bool
		if key, at, ok = s.kwDecode(b, at, i%kwBlock == 0, prev, key[:0]); !ok {
			return errors.New("malformed key")
		}
		if i > 0 && bytes.Compare(key, prev) <= 0 {
			return errors.New("keys not sorted")
		}
		if (i%kwBlock == kwBlock-1 || i == s.nKw-1) && at != s.kwBlockEnd(b) {
			return errors.New("block length")
		}
		prev, key = key, prev
		cnt, list, ok := s.kwList(i)
		if !ok || cnt > uint64(s.n) || cnt > uint64(len(list)) {
			return errors.New("doc list range")
		}
	}
	if s.nKw > 0 && binary.LittleEndian.Uint64(info) != 0 {
		return errors.New("doc lists do not start the section")
	}
	if s.nKw == 0 && len(post) != 0 {
		return errors.New("doc lists without keys")
	}
	return nil
}

// openKeywordsV1 validates the keyword table of formats 1–3.
func (s *segment) openKeywordsV1() error {
	if len(s.sec[secKwInfo])%kwInfoSize != 0 {
		return errors.New("info size")
	}
	s.nKw = len(s.sec[secKwInfo]) / kwInfoSize
	if err := checkStrings(s.sec[secKwOff], s.sec[secKwBlob], s.nKw); err != nil {
		return err
	}
	for i := 0; i < s.nKw; i++ {
		cnt, off, ln := s.kwInfoV1(i)
		if off > uint64(len(s.sec[secKwPost])) || uint64(ln) > uint64(len(s.sec[secKwPost]))-off || cnt > uint32(s.n) {
			return errors.New("doc list range")
		}
		if i > 0 && bytes.Compare(s.kwKeyV1(i), s.kwKeyV1(i-1)) <= 0 {
			return errors.New("keys not sorted")
		}
	}
	return nil
}

// checkOffsets checks a table of nb+1 ascending u32 offsets ending at size.
func checkOffsets(offs []byte, size, nb int) error {
	if len(offs) != 4*(nb+1) {
		return errors.New("offset table size")
	}
	prev := uint32(0)
	for b := 0; b <= nb; b++ {
		o := binary.LittleEndian.Uint32(offs[4*b:])
		if o < prev || int(o) > size || b == 0 && o != 0 {
			return errors.New("offsets out of order")
		}
		prev = o
	}
	if int(prev) != size {
		return errors.New("offsets do not cover the blob")
	}
	return nil
}

func (s *segment) kwBlockEnd(b int) int {
	return int(binary.LittleEndian.Uint32(s.sec[secKwOff][4*b+4:]))
}

// kwDecode decodes the key at byte at of block b of a format 4 table,
// given the previous key of the block (first: none), appending it to dst;
// next is the byte after it. Only openKeywords reads unvalidated bytes
// this way; readers go through kwKey.
func (s *segment) kwDecode(b, at int, first bool, prev, dst []byte) (key []byte, next int, ok bool) {
	r := varint.Reader[[]byte]{Buf: s.sec[secKwBlob][:s.kwBlockEnd(b)], Off: at}
	shared, n := r.Uvarint(), r.Uvarint()
	suffix := r.Bytes(n)
	if r.Failed() || first && shared != 0 || shared > uint64(len(prev)) {
		return dst, at, false
	}
	return append(append(dst, prev[:shared]...), suffix...), r.Off, true
}

// kwKey returns key i (aliasing the segment for formats 1–3; decoded into
// buf for format 4).
func (s *segment) kwKey(i int, buf []byte) []byte {
	if s.format < 4 {
		return s.kwKeyV1(i)
	}
	blob := s.sec[secKwBlob]
	b := i / kwBlock
	r := varint.Reader[[]byte]{Buf: blob[:s.kwBlockEnd(b)], Off: int(binary.LittleEndian.Uint32(s.sec[secKwOff][4*b:]))}
	buf = buf[:0]
	for j := b * kwBlock; j <= i; j++ {
		shared, n := r.Uvarint(), r.Uvarint()
		buf = append(buf[:shared], r.Bytes(n)...) // validated at open
	}
	return buf
}

func (s *segment) kwKeyV1(i int) []byte { return strAt(s.sec[secKwOff], s.sec[secKwBlob], i) }

func (s *segment) kwInfoV1(i int) (count uint32, off uint64, n uint32) {
	b := s.sec[secKwInfo][kwInfoSize*i:]
	return binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint64(b[4:]), binary.LittleEndian.Uint32(b[12:])
}

// kwList returns the doc count and the encoded doc deltas of key i; ok is
// false when its range is malformed (format 4).
func (s *segment) kwList(i int) (count uint64, list []byte, ok bool) {
	if s.format < 4 {
		cnt, off, n := s.kwInfoV1(i)
		return uint64(cnt), s.sec[secKwPost][off : off+uint64(n)], true
	}
	info, post := s.sec[secKwInfo], s.sec[secKwPost]
	start := binary.LittleEndian.Uint64(info[kwInfoSizeV4*i:])
	end := uint64(len(post))
	if i+1 < s.nKw {
		end = binary.LittleEndian.Uint64(info[kwInfoSizeV4*(i+1):])
	}
	if start > end || end > uint64(len(post)) {
		return 0, nil, false
	}
	r := varint.Reader[[]byte]{Buf: post[start:end]}
	cnt := r.Uvarint()
	if r.Failed() {
		return 0, nil, false
	}
	return cnt, r.Buf[r.Off:], true
}

// kwSearch returns the index of the first key ≥ key (nKw if none).
func (s *segment) kwSearch(key []byte, buf []byte) int {
	if s.format < 4 {
		return sort.Search(s.nKw, func(i int) bool { return bytes.Compare(s.kwKeyV1(i), key) >= 0 })
	}
	nb := (s.nKw + kwBlock - 1) / kwBlock
	// the first block whose first key is > key, then scan the one before
	b := sort.Search(nb, func(b int) bool { return bytes.Compare(s.kwKey(b*kwBlock, buf), key) > 0 })
	if b == 0 {
		return 0
	}
	for i := (b - 1) * kwBlock; i < min(b*kwBlock, s.nKw); i++ {
		if bytes.Compare(s.kwKey(i, buf), key) >= 0 {
			return i
		}
	}
	return min(b*kwBlock, s.nKw)
}

// kwDocs calls fn for each document holding keyword key; it reports false
// when the postings are malformed.
func (s *segment) kwDocs(key string, fn func(doc uint32)) bool {
	buf := make([]byte, 0, 64)
	i := s.kwSearch([]byte(key), buf)
	if i >= s.nKw || string(s.kwKey(i, buf)) != key {
		return true
	}
	cnt, list, ok := s.kwList(i)
	return ok && decodeDocList(list, int(cnt), s.n, fn)
}

// kwPrefix calls fn for every keyword key with the given prefix.
func (s *segment) kwPrefix(prefix string, fn func(key string)) {
	buf := make([]byte, 0, 64)
	for i := s.kwSearch([]byte(prefix), buf); i < s.nKw; i++ {
		k := s.kwKey(i, buf)
		if !bytes.HasPrefix(k, []byte(prefix)) {
			return
		}
		fn(string(k))
	}
}
