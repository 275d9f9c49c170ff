package index

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
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
				it := newPostIter(s.postingsBytes(ti), int(ti.df), s.n)
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
				s.lookup(s.term(i))
			}
			for i := 0; i < s.nKw; i++ {
				s.kwDocs(s.kwKey(i), func(d uint32) {
					if int(d) >= s.n {
						t.Fatalf("keyword doc %d out of range", d)
					}
				})
			}
			for i := 0; i < s.n; i++ {
				s.id(uint32(i))
				s.findSeq(s.seq(uint32(i)))
			}
		}
	})
}

// FuzzPostings round-trips generated postings and feeds raw bytes to the
// decoder.
func FuzzPostings(f *testing.F) {
	f.Add([]byte{1, 2, 3, 200, 7}, uint16(5), uint32(3))
	f.Add(make([]byte, 300), uint16(300), uint32(0))
	f.Add([]byte{0}, uint16(0), uint32(1))
	f.Fuzz(func(t *testing.T, raw []byte, df uint16, target uint32) {
		// Raw bytes: must not panic, docs ascending and in range.
		it := newPostIter(raw, int(df), 1000)
		prev := -1
		for ; it.doc != noDoc; it.next() {
			if int(it.doc) <= prev || it.doc >= 1000 {
				t.Fatalf("raw: doc %d after %d", it.doc, prev)
			}
			prev = int(it.doc)
		}
		// Round trip: raw bytes as doc gaps and tfs.
		var docs, tfs, lens []uint32
		d := uint32(0)
		for i, c := range raw {
			if i > 0 {
				d += uint32(c%5) + 1
			} else {
				d = uint32(c % 5)
			}
			docs = append(docs, d)
			tfs = append(tfs, uint32(c>>5), uint32(c&3)+uint32(c>>7))
		}
		for range int(d) + 1 {
			lens = append(lens, 3, 9)
		}
		for i := range docs {
			if tfs[2*i] == 0 && tfs[2*i+1] == 0 {
				tfs[2*i+1] = 1
			}
		}
		enc, ti := encodePostings(nil, docs, tfs, lens)
		if int(ti.df) != len(docs) {
			t.Fatalf("df %d, want %d", ti.df, len(docs))
		}
		it = newPostIter(enc, len(docs), int(d)+1)
		for i := range docs {
			if it.doc != docs[i] || it.tf[0] != tfs[2*i] || it.tf[1] != tfs[2*i+1] {
				t.Fatalf("posting %d: doc %d tf %v, want %d [%d %d]", i, it.doc, it.tf, docs[i], tfs[2*i], tfs[2*i+1])
			}
			it.next()
		}
		if it.doc != noDoc || it.err != nil {
			t.Fatalf("trailing doc %d err %v", it.doc, it.err)
		}
		// advance lands on the first doc ≥ target.
		it = newPostIter(enc, len(docs), int(d)+1)
		target %= d + 2
		it.advance(target)
		want := uint32(noDoc)
		if i, _ := slices.BinarySearch(docs, target); i < len(docs) {
			want = docs[i]
		}
		if it.doc != want {
			t.Fatalf("advance(%d) = %d, want %d", target, it.doc, want)
		}
	})
}
