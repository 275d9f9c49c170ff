package index

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine/store"
)

var phraseDocs = []Document{
	{ID: "gw", Text: "The great wall of China is very long."},
	{ID: "rev", Text: "China has a wall that is great."},
	{ID: "gap", Text: "A wall: China, the great one."},
	{ID: "title", Title: "Wall of China", Text: "a famous landmark"},
}

var phraseCases = []struct {
	query string
	want  []string
}{
	{`"great wall"`, []string{"gw"}},
	{`"wall of china"`, []string{"gw", "title"}}, // "of" is a stop word but keeps its place
	{`"wall china"`, []string{"gap"}},            // "wall: China" (punctuation is no gap), not "wall of China"
	{`china "great wall"`, []string{"gw"}},
	{`"great wall" "wall china"`, nil},
	{`"china"`, []string{"gap", "gw", "rev", "title"}},
	{`"great wall`, []string{"gap", "gw", "rev", "title"}}, // unpaired quote: no phrase
	{`"the of"`, nil},                                      // only stop words: no terms at all
	{`"great china"`, nil},
}

func checkPhrases(t *testing.T, ix *Index, stage string) {
	t.Helper()
	for _, c := range phraseCases {
		got := hitIDs(search(t, ix, Query{Text: c.query, K: 10}))
		slices.Sort(got)
		if !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("%s: %s → %q, want %q", stage, c.query, got, c.want)
		}
	}
}

// TestPhraseQueries: quoted phrases restrict hits to documents holding
// them, in a memory segment, a flushed one and a merged one.
func TestPhraseQueries(t *testing.T) {
	ix := openTest(t, "", Options{NoBackground: true})
	mustAdd(t, ix, phraseDocs[:2]...)
	mustAdd(t, ix, phraseDocs[2:]...)
	checkPhrases(t, ix, "memory")
	if err := ix.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkPhrases(t, ix, "flushed")
	mustAdd(t, ix, Document{ID: "late", Text: "Nothing here but a fence."})
	ix.Flush(context.Background())
	mergeAll(t, ix)
	checkPhrases(t, ix, "merged")
}

// TestOldSegmentFormats: segments written in formats 1 (no positions), 2
// (positions per document), 3 (keywords kept whole) and 4 (field lengths
// always 32-bit) — golden files in
// testdata, written by the code of their time from phraseDocs and
// randomCorpus(7, 160) — still open, rank exactly as the same documents
// in the current format, answer phrase queries (format 1 from the stored
// text) and keyword filters, and merge with a current segment into one of
// the current format.
func TestOldSegmentFormats(t *testing.T) {
	queries := []string{"w1 w2", "w3 w17 w250", `"w1 w2" w5`, `w2 "w1 w3"`, "great wall china", "d000009"}
	for _, format := range []uint32{1, 2, 3, 4} {
		t.Run(fmt.Sprint("format", format), func(t *testing.T) {
			dir, want := goldenIndex(t, format, queries)
			ix := openTest(t, dir, Options{NoBackground: true})
			if s := ix.cur.Load().segs[0].seg; s.format != format {
				t.Fatalf("segment format %d", s.format)
			}
			if got := rankings(t, ix, queries); !slices.Equal(got, want) {
				t.Errorf("format %d ranks\n%q\nformat %d ranks\n%q", format, got, segFormat, want)
			}
			checkPhrases(t, ix, fmt.Sprint("format ", format))
			mustAdd(t, ix, Document{ID: "late", Text: "Nothing here but a fence."})
			ix.Flush(context.Background())
			want = rankings(t, ix, queries)
			mergeAll(t, ix)
			s := ix.cur.Load().segs[0].seg
			if s.format != segFormat {
				t.Fatalf("merged segment format %d", s.format)
			}
			if n := noPosCount(s); format == 1 && n != s.n-1 || format > 1 && n != 0 {
				t.Errorf("merged segment: %d of %d documents without positions", n, s.n)
			}
			if got := rankings(t, ix, queries); !slices.Equal(got, want) {
				t.Errorf("merged ranks\n%q\nbefore\n%q", got, want)
			}
			checkPhrases(t, ix, fmt.Sprint("merged with format ", format))
		})
	}
}

func noPosCount(s *segment) int {
	if s.noPos == nil {
		return 0
	}
	return s.noPos.Count()
}

// rankings runs queries, unfiltered and under keyword and numeric
// filters, and renders each ranking as "id:score ...".
func rankings(t *testing.T, ix *Index, queries []string) []string {
	t.Helper()
	filters := []Filter{nil, Eq("bucket", "3"), In("bucket", "1", "6"), Contains("bucket", "5"), Exists("n"), Gte("n", 100)}
	var out []string
	for _, q := range queries {
		for fi, f := range filters {
			var b strings.Builder
			for _, h := range search(t, ix, Query{Text: q, K: 20, SkipDocs: true, Filter: f}).Hits {
				fmt.Fprintf(&b, "%s:%.12g ", h.ID, h.Score)
			}
			out = append(out, fmt.Sprintf("%s [filter %d] → %s", q, fi, b.String()))
		}
	}
	return out
}

// mergeAll merges every segment of ix into one.
func mergeAll(t *testing.T, ix *Index) {
	t.Helper()
	ix.bgmu.Lock()
	err := ix.rewrite(context.Background(), ix.cur.Load().segs, false)
	ix.bgmu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.Segments != 1 {
		t.Fatalf("segments after merge: %d", st.Segments)
	}
}

// goldenIndex writes the documents of the golden segment files
// (phraseDocs and randomCorpus(7, 160)) to a new index, returns the
// rankings of queries in the current format, and replaces its segment
// with testdata/format<format>.rseg.
func goldenIndex(t *testing.T, format uint32, queries []string) (dir string, want []string) {
	t.Helper()
	golden, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("format%d.rseg", format)))
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	ix := openTest(t, dir, Options{NoBackground: true})
	mustAdd(t, ix, phraseDocs...)
	mustAdd(t, ix, randomCorpus(7, 160)...)
	if err := ix.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	want = rankings(t, ix, queries)
	ix.Close()
	installSegment(t, dir, golden)
	return dir, want
}

// installSegment replaces the only segment file of the closed index in dir
// with data and fixes the manifest.
func installSegment(t *testing.T, dir string, data []byte) {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, storeFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = st.Update(context.Background(), func(tx *store.Tx) error {
		m, _, err := tx.Manifest()
		if err != nil {
			return err
		}
		if len(m.Segments) != 1 {
			return fmt.Errorf("%d segments", len(m.Segments))
		}
		if err := os.WriteFile(filepath.Join(dir, segDir, m.Segments[0].Name), data, 0o644); err != nil {
			return err
		}
		m.Segments[0].Size = int64(len(data))
		m.Segments[0].CRC = binary.LittleEndian.Uint32(data[len(data)-12:])
		return tx.PutManifest(m)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// appendForward encodes a document's tokens — numFields runs of a count
// then (term id, position) pairs — as a format 2 forward entry, mapping
// term ids to segment ordinals with ord (format 2's writer, kept for the
// decoder's fuzz target).
func appendForward(dst []byte, toks []uint32, ord func(uint32) uint32) []byte {
	for i := 0; i < len(toks); {
		n := int(toks[i])
		dst = binary.AppendUvarint(dst, uint64(n))
		prev := int64(-1)
		for k := i + 1; k < i+1+2*n; k += 2 {
			o, pos := uint64(ord(toks[k])), int64(toks[k+1])
			if d := pos - prev; d == 1 {
				dst = binary.AppendUvarint(dst, o<<1)
			} else {
				dst = binary.AppendUvarint(dst, o<<1|1)
				dst = binary.AppendUvarint(dst, uint64(d))
			}
			prev = pos
		}
		i += 1 + 2*n
	}
	return dst
}

func FuzzForward(f *testing.F) {
	f.Add(appendForward(nil, []uint32{2, 0, 0, 1, 3, 1, 2, 5}, func(o uint32) uint32 { return o }))
	f.Add([]byte{0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		toks, ok := decodeForward(nil, b, 1<<20)
		if !ok {
			return
		}
		if again := appendForward(nil, toks, func(o uint32) uint32 { return o }); string(again) != string(b) {
			// non-canonical varints decode too; the round trip must be stable
			if toks2, ok := decodeForward(nil, again, 1<<20); !ok || !slices.Equal(toks, toks2) {
				t.Fatalf("round trip: %v vs %v", toks, toks2)
			}
		}
		matchOne(toks, []uint32{0, 1}, []int{0, 1})
	})
}
