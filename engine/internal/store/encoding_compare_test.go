package store

// Opt-in measurement for docs/benchmarks.md ("How the encoding was
// chosen"), skipped unless STOREENC_DB names a store.db (a copy: the test
// opens it read-write, as Open does): every record of that store is
// re-encoded with each candidate encoding, and the test prints bytes per
// record and the decode time per record relative to zstd without a
// dictionary. STOREENC_LIMIT caps the records read (default all).

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// encoding is one candidate: enc compresses the payloads of a group of
// records (one record, or a block of several) and dec decodes one group.
type encoding struct {
	name  string
	group int // records per compressed unit
	enc   func(payload []byte) []byte
	dec   func(block []byte) ([]byte, error)
}

func TestEncodingComparison(t *testing.T) {
	path := os.Getenv("STOREENC_DB")
	if path == "" {
		t.Skip("set STOREENC_DB to a copy of a store.db")
	}
	limit, _ := strconv.Atoi(os.Getenv("STOREENC_LIMIT"))
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	payloads, stored := readPayloads(t, s, limit)
	t.Logf("%d records; format 2 with its text compressed alone: %.0f B/record", len(payloads), float64(stored)/float64(len(payloads)))

	samples := spread(payloads, dictSamples)
	zdict, err := dict.BuildZstdDict(samples, dict.Options{MaxDictSize: dictSize, HashBytes: 6})
	if err != nil {
		t.Fatal(err)
	}
	sdict := s2.NewDict(must(t, func() ([]byte, error) {
		return dict.BuildS2Dict(samples, dict.Options{MaxDictSize: dictSize, HashBytes: 6})
	}))
	cands := candidates(t, zdict, sdict)
	packed := make([]packedSet, len(cands))
	for i, e := range cands {
		packed[i] = pack(e, payloads)
	}
	// Decode passes alternate between the candidates, and each keeps its
	// fastest pass: on a shared machine a slow moment then hits one pass,
	// not one candidate.
	best := make([]time.Duration, len(cands))
	for range 3 {
		for i, e := range cands {
			if d := decodeAll(t, e, packed[i]); best[i] == 0 || d < best[i] {
				best[i] = d
			}
		}
	}
	for i, e := range cands {
		t.Logf("RESULT %-28s %6.0f B/record  decode per unit %.2f× zstd alone", e.name,
			float64(packed[i].size)/float64(len(payloads)), float64(best[i])/float64(best[0]))
	}
}

// readPayloads returns the uncompressed format-2 payload of every record
// (text raw, tag stripped) and the bytes format 2 takes with its text
// compressed alone.
func readPayloads(t *testing.T, s *Store, limit int) ([][]byte, int) {
	var out [][]byte
	stored := 0
	err := s.View(func(r *ReadTx) error {
		c := r.tx.Bucket(bktDocs).Cursor()
		for k, v := c.First(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Next() {
			if len(v) < 8 {
				continue
			}
			d, f, err := s.DecodeRecord(v[8:], true)
			if err != nil {
				return err
			}
			raw, err := encodeRecord(d, f, false)
			if err != nil {
				return err
			}
			plain, err := EncodeDoc(d, f)
			if err != nil {
				return err
			}
			stored += len(plain)
			out = append(out, raw[1:])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no records")
	}
	return out, stored
}

func candidates(t *testing.T, zdict []byte, sdict *s2.Dict) []encoding {
	plainEnc, _ := zstd.NewWriter(nil, zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true))
	plainDec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))
	dictEnc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true), zstd.WithEncoderDict(zdict))
	if err != nil {
		t.Fatal(err)
	}
	dictDec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderDicts(zdict))
	if err != nil {
		t.Fatal(err)
	}
	zstdAlone := func(p []byte) []byte { return plainEnc.EncodeAll(p, nil) }
	zstdAloneDec := func(b []byte) ([]byte, error) { return plainDec.DecodeAll(b, nil) }
	out := []encoding{
		{"zstd, no dictionary", 1, zstdAlone, zstdAloneDec},
		{"zstd, dictionary", 1, func(p []byte) []byte { return dictEnc.EncodeAll(p, nil) },
			func(b []byte) ([]byte, error) { return dictDec.DecodeAll(b, nil) }},
		{"zstd dictionary, text only", 1, func(p []byte) []byte {
			h := headEnd(p)
			return dictEnc.EncodeAll(p[h:], bytes.Clone(p[:h]))
		}, func(b []byte) ([]byte, error) {
			h := headEnd(b)
			return dictDec.DecodeAll(b[h:], bytes.Clone(b[:h]))
		}},
		{"S2, dictionary (format 3)", 1, func(p []byte) []byte { return sdict.EncodeBetter(nil, p) },
			func(b []byte) ([]byte, error) { return sdict.Decode(nil, b) }},
	}
	for _, n := range []int{8, 16, 32, 64} {
		out = append(out, encoding{"zstd blocks of " + strconv.Itoa(n), n, zstdAlone, zstdAloneDec})
	}
	return out
}

// packedSet is the payloads compressed by one candidate.
type packedSet struct {
	blocks, originals [][]byte
	size              int // compressed bytes
}

// pack compresses the payloads in groups of e.group.
func pack(e encoding, payloads [][]byte) packedSet {
	var p packedSet
	for i := 0; i < len(payloads); i += e.group {
		o := bytes.Join(payloads[i:min(i+e.group, len(payloads))], nil)
		b := e.enc(o)
		p.size += len(b)
		p.blocks, p.originals = append(p.blocks, b), append(p.originals, o)
	}
	return p
}

// decodeAll decodes every block, checks it, and returns the mean time per
// block (one unit: what one hit has to decode).
func decodeAll(t *testing.T, e encoding, p packedSet) time.Duration {
	start := time.Now()
	for i, b := range p.blocks {
		got, err := e.dec(b)
		if err != nil || !bytes.Equal(got, p.originals[i]) {
			t.Fatalf("%s: block %d does not round-trip: %v", e.name, i, err)
		}
	}
	return time.Since(start) / time.Duration(len(p.blocks))
}

// headEnd returns the length of a payload's head part: uvarint headLen ‖
// head ‖ the text codec byte.
func headEnd(p []byte) int {
	hl, n := binary.Uvarint(p)
	return n + int(hl) + 1
}

// spread returns up to n payloads spread evenly over all of them, as
// sampleRecords picks the training sample.
func spread(payloads [][]byte, n int) [][]byte {
	step := max(1, len(payloads)/n)
	var out [][]byte
	for i := 0; i < len(payloads) && len(out) < n; i += step {
		out = append(out, payloads[i])
	}
	return out
}

func must(t *testing.T, f func() ([]byte, error)) []byte {
	b, err := f()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
