package index

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
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

// TestPhraseVersion1Segments: segments of format version 1 (no positions)
// still open and answer phrase queries from the stored text, also after
// merging with a version 2 segment.
func TestPhraseVersion1Segments(t *testing.T) {
	dir := t.TempDir()
	ix := openTest(t, dir, Options{NoBackground: true})
	mustAdd(t, ix, phraseDocs...)
	if err := ix.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	downgradeSegments(t, dir)
	ix = openTest(t, dir, Options{NoBackground: true})
	if s := ix.cur.Load().segs[0].seg; s.hasFwd {
		t.Fatal("segment still has positions")
	}
	checkPhrases(t, ix, "version 1")
	mustAdd(t, ix, Document{ID: "late", Text: "Nothing here but a fence."})
	ix.Flush(context.Background())
	mergeAll(t, ix)
	checkPhrases(t, ix, "merged with version 1")
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

// downgradeSegments rewrites every segment file of dir in format version
// 1 (without the position sections) and fixes the manifest.
func downgradeSegments(t *testing.T, dir string) {
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
		for i, ref := range m.Segments {
			path := filepath.Join(dir, segDir, ref.Name)
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			seg, err := openSegment(ref.Name, data)
			if err != nil {
				return err
			}
			out := append([]byte(segMagic), 1, 0, 0, 0)
			out = binary.LittleEndian.AppendUint32(out, numFields)
			var table []byte
			for s := 0; s < numSectionsV1; s++ {
				table = binary.LittleEndian.AppendUint64(table, uint64(len(out)))
				table = binary.LittleEndian.AppendUint64(table, uint64(len(seg.sec[s])))
				out = append(out, seg.sec[s]...)
			}
			out = append(out, table...)
			out = binary.LittleEndian.AppendUint32(out, numSectionsV1)
			crc := crc32.Checksum(out, castagnoli)
			out = binary.LittleEndian.AppendUint32(out, crc)
			out = append(out, segEndMagic...)
			if err := os.WriteFile(path, out, 0o644); err != nil {
				return err
			}
			m.Segments[i].Size, m.Segments[i].CRC = int64(len(out)), crc
		}
		return tx.PutManifest(m)
	})
	if err != nil {
		t.Fatal(err)
	}
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
