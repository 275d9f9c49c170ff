package index

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// validSegment builds a small segment image for fuzz seeds.
func validSegment(n int) []byte {
	b := newSegBuilder()
	docs := randomCorpus(5, n)
	for i, d := range docs {
		in, err := prepare(testAnalyzer, nil, &d, &prepScratch{})
		if err != nil {
			panic(err)
		}
		in.seq, in.id = uint64(10+i), d.ID
		b.add(in)
	}
	return b.encode()
}

// fixCRC rewrites the footer checksum so mutations reach the structural
// validation behind it.
func fixCRC(data []byte) []byte {
	if len(data) < headerSize+footerTailLen {
		return data
	}
	at := len(data) - 12
	binary.LittleEndian.PutUint32(data[at:], crc32.Checksum(data[:at], castagnoli))
	return data
}

func FuzzOpenSegment(f *testing.F) {
	f.Add(validSegment(3))
	f.Add(validSegment(40))
	f.Add(newSegBuilder().encode())
	f.Add([]byte(segMagic))
	for _, name := range []string{"format1.rseg", "format2.rseg", "format3.rseg"} {
		if data, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, img := range [][]byte{data, fixCRC(slices.Clone(data))} {
			s, err := openSegment("fuzz", img)
			if err != nil {
				continue
			}
			// Everything reachable from a segment that opened must decode
			// without panicking.
			for i := 0; i < s.nTerms; i++ {
				ti := s.termInfo(i)
				it := newPostIter(s.postingsBytes(ti), int(ti.df), s.n, s.format)
				prev, cnt := -1, 0
				for ; it.doc != noDoc; it.next() {
					if int(it.doc) <= prev || int(it.doc) >= s.n {
						t.Fatalf("term %d: doc %d after %d (n=%d)", i, it.doc, prev, s.n)
					}
					_ = s.fieldLen(it.doc, fieldBody)
					prev = int(it.doc)
					cnt++
				}
				if it.err == nil && cnt != int(ti.df) {
					t.Fatalf("term %d: %d postings, df %d", i, cnt, ti.df)
				}
				if s.format >= 3 {
					var pi posIter
					var buf [numFields][]uint32
					for pi.init(s, ti); pi.doc() != noDoc; pi.next() {
						if _, err := pi.positions(&buf); err != nil {
							break
						}
					}
				}
				s.lookup(s.term(i))
			}
			for i := 0; i < s.nKw; i++ {
				key := string(s.kwKey(i, nil))
				s.kwDocs(key, func(d uint32) {
					if int(d) >= s.n {
						t.Fatalf("keyword doc %d out of range", d)
					}
				})
				s.kwPrefix(key, func(string) {})
			}
			for i := 0; i < s.n; i++ {
				s.id(uint32(i))
				s.findSeq(s.seq(uint32(i)))
			}
		}
	})
}

// FuzzPostings round-trips generated postings and positions (format 3)
// and feeds raw bytes to the decoders of every format.
func FuzzPostings(f *testing.F) {
	f.Add([]byte{1, 2, 3, 200, 7}, []byte{1, 1, 0}, uint16(5), uint32(3))
	f.Add(make([]byte, 300), []byte{}, uint16(300), uint32(0))
	f.Add([]byte{0}, []byte{2, 9, 3}, uint16(0), uint32(1))
	big := make([]byte, 700)
	for i := range big {
		big[i] = byte(i * 37)
	}
	f.Add(big, []byte{5, 1, 2}, uint16(700), uint32(400))
	f.Fuzz(func(t *testing.T, raw, rawPos []byte, df uint16, target uint32) {
		// Raw bytes: must not panic, docs ascending and in range.
		for format := uint32(1); format <= segFormat; format++ {
			it := newPostIter(raw, int(df), 1000, format)
			prev := -1
			for ; it.doc != noDoc; it.next() {
				if int(it.doc) <= prev || it.doc >= 1000 {
					t.Fatalf("raw format %d: doc %d after %d", format, it.doc, prev)
				}
				prev = int(it.doc)
			}
		}
		rawSeg := postingsSegment(raw, rawPos, 1000)
		var pi posIter
		var buf [numFields][]uint32
		for pi.init(rawSeg, termInfo{df: uint32(df), n: uint32(len(raw))}); pi.doc() != noDoc; pi.next() {
			if _, err := pi.positions(&buf); err != nil {
				break
			}
		}

		// Round trip: raw bytes as doc gaps, tfs and positions; docs whose
		// byte has bit 4 set lack positions.
		var docs, tfs, lens, pos []uint32
		d := uint32(0)
		for i, c := range raw {
			if i > 0 {
				d += uint32(c%5) + 1
			} else {
				d = uint32(c % 5)
			}
			docs = append(docs, d)
			tf := [numFields]uint32{uint32(c >> 5), uint32(c&3) + uint32(c>>7)}
			if tf[0] == 0 && tf[1] == 0 {
				tf[1] = 1
			}
			tfs = append(tfs, tf[:]...)
		}
		for range int(d) + 1 {
			lens = append(lens, 3, 9)
		}
		noPos := NewBitset(int(d) + 1)
		want := make([][numFields][]uint32, len(docs))
		for i, c := range raw {
			if c&16 != 0 {
				noPos.Set(docs[i])
				continue
			}
			for f := 0; f < numFields; f++ {
				p := uint32(c) % 3
				for j := range tfs[numFields*i+f] {
					p += 1 + uint32(j)*uint32(c)%7
					want[i][f] = append(want[i][f], p)
				}
				pos = append(pos, want[i][f]...)
			}
		}
		enc, posEnc, ti := encodePostings(nil, nil, docs, tfs, pos, lens, noPos)
		if int(ti.df) != len(docs) {
			t.Fatalf("df %d, want %d", ti.df, len(docs))
		}
		ti.n = uint32(len(enc))
		seg := postingsSegment(enc, posEnc, int(d)+1)
		seg.noPos = noPos
		pi.init(seg, ti)
		for i := range docs {
			if pi.doc() != docs[i] || pi.it.tf[0] != tfs[2*i] || pi.it.tf[1] != tfs[2*i+1] {
				t.Fatalf("posting %d: doc %d tf %v, want %d [%d %d]", i, pi.doc(), pi.it.tf, docs[i], tfs[2*i], tfs[2*i+1])
			}
			ok, err := pi.positions(&buf)
			if err != nil || ok != !noPos.Has(docs[i]) {
				t.Fatalf("posting %d: positions known %v err %v", i, ok, err)
			}
			for f := 0; ok && f < numFields; f++ {
				if !slices.Equal(buf[f], want[i][f]) {
					t.Fatalf("posting %d field %d: positions %v, want %v", i, f, buf[f], want[i][f])
				}
			}
			pi.next()
		}
		if pi.doc() != noDoc || pi.err != nil || pi.it.err != nil {
			t.Fatalf("trailing doc %d err %v %v", pi.doc(), pi.err, pi.it.err)
		}
		// advance lands on the first doc ≥ target, with its positions.
		pi.init(seg, ti)
		target %= d + 2
		pi.advance(target)
		i, _ := slices.BinarySearch(docs, target)
		if i == len(docs) {
			if pi.doc() != noDoc {
				t.Fatalf("advance(%d) = %d, want the end", target, pi.doc())
			}
			return
		}
		if pi.doc() != docs[i] {
			t.Fatalf("advance(%d) = %d, want %d", target, pi.doc(), docs[i])
		}
		if ok, err := pi.positions(&buf); err != nil || ok && !slices.Equal(buf[fieldBody], want[i][fieldBody]) {
			t.Fatalf("advance(%d): positions %v (err %v), want %v", target, buf[fieldBody], err, want[i][fieldBody])
		}
	})
}

// postingsSegment is a format 3 segment of n documents holding one term's
// postings and positions, for the decoders.
func postingsSegment(post, pos []byte, n int) *segment {
	s := &segment{n: n, format: segFormat, nTerms: 1}
	s.sec[secPost], s.sec[secPos] = post, pos
	return s
}

// FuzzKeywords round-trips keyword tables (format 4) built from the input
// and feeds its raw bytes, split into the four keyword sections, to the
// validation and readers.
func FuzzKeywords(f *testing.F) {
	f.Add([]byte("sbucket\x003\nsbucket\x004\nstitle\x00Wall of China\nx"), uint8(3), uint8(9), uint8(20))
	f.Add([]byte{}, uint8(0), uint8(0), uint8(0))
	f.Add([]byte{0, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 1, 0}, uint8(1), uint8(3), uint8(11))
	f.Fuzz(func(t *testing.T, raw []byte, a, b, c uint8) {
		// Raw sections: must not panic.
		cut := func(x uint8) int { return min(int(x), len(raw)) }
		i, j, k := cut(a), cut(b), cut(c)
		j, k = max(i, j), max(i, j, k)
		s := &segment{n: 1000, format: segFormat}
		s.sec[secKwOff], s.sec[secKwBlob], s.sec[secKwInfo], s.sec[secKwPost] = raw[:i], raw[i:j], raw[j:k], raw[k:]
		if s.openKeywords() == nil {
			for n := 0; n < s.nKw; n++ {
				key := string(s.kwKey(n, nil))
				s.kwDocs(key, func(d uint32) {
					if d >= 1000 {
						t.Fatalf("doc %d out of range", d)
					}
				})
				s.kwPrefix(key, func(string) {})
			}
		}

		// Round trip: the input's lines as keys, each with docs from its bytes.
		keys := strings.Split(string(raw), "\n")
		slices.Sort(keys)
		keys = slices.Compact(keys)
		w := &segWriter{}
		want := map[string][]uint32{}
		for n, key := range keys {
			var docs []uint32
			for d := 0; d < len(key) && d < 5; d++ {
				docs = append(docs, uint32(n*7+d))
			}
			want[key] = docs
			w.addKeyword(key, docs)
		}
		w.kw.finish(&w.secs)
		s = &segment{n: len(keys)*7 + 7, format: segFormat, sec: w.secs}
		if err := s.openKeywords(); err != nil {
			t.Fatalf("open: %v", err)
		}
		if s.nKw != len(keys) {
			t.Fatalf("%d keys, want %d", s.nKw, len(keys))
		}
		for n, key := range keys {
			if got := string(s.kwKey(n, nil)); got != key {
				t.Fatalf("key %d = %q, want %q", n, got, key)
			}
			var got []uint32
			if !s.kwDocs(key, func(d uint32) { got = append(got, d) }) || !slices.Equal(got, want[key]) {
				t.Fatalf("docs of %q = %v, want %v", key, got, want[key])
			}
			var with []string
			s.kwPrefix(key, func(k string) { with = append(with, k) })
			if len(with) == 0 || with[0] != key {
				t.Fatalf("prefix %q: %q", key, with)
			}
		}
	})
}
