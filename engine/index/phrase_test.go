package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/internal/store"
	"github.com/rcpgo/rcpgo/engine/query"
	"github.com/rcpgo/rcpgo/engine/search"
)

var phraseDocs = []search.Document{
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
	// Proximity: "great wall of china" puts china 2 moves from "great china".
	{`"great china"~1`, nil},
	{`"great china"~2`, []string{"gw"}},
	{`"great china"~3`, []string{"gap", "gw"}},                           // "wall: China, the great": 3 moves
	{`"wall great"~1`, nil},                                              // the reversed pair needs 2 moves
	{`"wall great"~2`, []string{"gap", "gw", "rev"}},                     // "great wall", "wall … great"
	{`"great wall"~0`, []string{"gw"}},                                   // ~0 is the exact phrase
	{`"great wall"~`, []string{"gw"}},                                    // no digits: no slop
	{`"china landmark"~99`, nil},                                         // the title and the body are two fields
	{`"wall wall"~9`, nil},                                               // a repeated term needs two positions
	{`"wall" "great china"~2 long`, []string{"gw"}},                      // with an exact phrase and a plain word
	{`"china great"~99999999999999999999`, []string{"gap", "gw", "rev"}}, // any slop is clamped
}

func checkPhrases(t *testing.T, ix *Index, stage string) {
	t.Helper()
	for _, c := range phraseCases {
		got := hitIDs(mustSearch(t, ix, search.Query{Text: c.query, K: 10}))
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
	mustAdd(t, ix, search.Document{ID: "late", Text: "Nothing here but a fence."})
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
	queries := []string{"w1 w2", "w3 w17 w250", `"w1 w2" w5`, `w2 "w1 w3"`, "great wall china", "d000009",
		`"w1 w2"~6 w5`, `"w3 w1"~9`, `"w2 w1 w2"~12`, `"great china"~3`}
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
			mustAdd(t, ix, search.Document{ID: "late", Text: "Nothing here but a fence."})
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
			for _, h := range mustSearch(t, ix, search.Query{Text: q, K: 20, SkipDocs: true, Filter: f}).Hits {
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
		query.MatchTokens(toks, []uint32{0, 1}, []int{0, 1}, 0)
		query.MatchTokens(toks, []uint32{0, 1, 0}, []int{0, 1, 3}, 2)
	})
}

// TestSlopIsNotARankedWord: a proximity suffix is syntax (query.RankText).
func TestSlopIsNotARankedWord(t *testing.T) {
	ix := openTest(t, "", Options{NoBackground: true})
	mustAdd(t, ix, phraseDocs...)
	res := mustSearch(t, ix, search.Query{Text: `"great wall"~2 china`, K: 10})
	if !slices.Equal(res.Terms, []string{"great", "wall", "china"}) {
		t.Errorf("ranked terms %q: the slop is not a word", res.Terms)
	}
}

// TestSloppyCancel: a proximity test that would take long — a phrase of
// one word repeated, against a long field where it occurs every other
// position — gives up when the search's context ends.
func TestSloppyCancel(t *testing.T) {
	ix := openTest(t, "", Options{NoBackground: true})
	mustAdd(t, ix, search.Document{ID: "long", Text: strings.Repeat("echo pad ", 160000)})
	// 16 echoes two positions apart spread 15 moves: ~14 is one too few,
	// and the test slides through every field.
	q := search.Query{Text: `"` + strings.Repeat("echo ", 16) + `"~14`, K: 10}
	t0 := time.Now()
	full, err := ix.Search(context.Background(), q)
	if err != nil || len(full.Hits) != 0 {
		t.Fatalf("%v, %d hits", err, len(full.Hits))
	}
	took := time.Since(t0)
	t.Logf("the whole search: %v", took)
	ctx, cancel := context.WithTimeout(context.Background(), took/20)
	defer cancel()
	t0 = time.Now()
	_, err = ix.Search(ctx, q)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > took/2 {
		t.Fatalf("after %v (the whole search takes %v): %v", time.Since(t0), took, err)
	}
}

// TestPhraseMatcher: the test a backend without positions applies to the
// documents it found (nil when the query quotes nothing) agrees with the
// index's phrase search on its stored positions.
func TestPhraseMatcher(t *testing.T) {
	an := analysis.Default()
	if query.Matcher(an, `great wall "`) != nil {
		t.Fatal("a test for a query without a phrase")
	}
	for _, c := range phraseCases {
		m := query.Matcher(an, c.query)
		var got []string
		for _, d := range phraseDocs {
			if m == nil || m(&d) {
				got = append(got, d.ID)
			}
		}
		slices.Sort(got)
		if m != nil && !slices.Equal(got, c.want) && len(got)+len(c.want) > 0 {
			t.Errorf("%s → %q, want %q", c.query, got, c.want)
		}
	}
}
