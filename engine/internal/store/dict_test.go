package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine/search"
	bolt "go.etcd.io/bbolt"
)

// passages returns n generated passages shaped like `rcp gen`'s: a title,
// a few sentences of syllable words and the same five metadata keys.
func passages(n int) []search.Document {
	syl := []string{"cy", "nit", "lou", "brat", "vout", "thea", "clo", "gri", "zy", "pli", "stet", "mat", "sout", "ne", "fea", "kro"}
	r := rand.New(rand.NewPCG(15, 15))
	word := func() string {
		var b strings.Builder
		for range 1 + r.IntN(3) {
			b.WriteString(syl[r.IntN(len(syl))])
		}
		return b.String()
	}
	sentence := func(words int) string {
		w := make([]string, words)
		for i := range w {
			w[i] = word()
		}
		s := strings.Join(w, " ")
		return strings.ToUpper(s[:1]) + s[1:] + "."
	}
	out := make([]search.Document, n)
	for i := range out {
		var text []string
		for range 3 + r.IntN(6) {
			text = append(text, sentence(5+r.IntN(12)))
		}
		year := 1990 + r.IntN(35)
		out[i] = search.Document{ID: fmt.Sprint("d", i), Title: sentence(4), Text: strings.Join(text, " "),
			Meta:   map[string]any{"lang": "en", "year": year, "score": r.Float64(), "published": r.IntN(2) == 0, "date": fmt.Sprintf("%d-01-%02d", year, 1+r.IntN(28))},
			Source: &search.Source{Name: "index/add"}}
	}
	return out
}

// docJSON is a document's JSON form, which its decoded form shares
// (metadata numbers come back as json.Number).
func docJSON(d *search.Document) string {
	b, _ := json.Marshal(d)
	return string(b)
}

func putAll(t testing.TB, s *Store, docs []search.Document, from uint64) {
	t.Helper()
	err := s.Update(context.Background(), func(tx *Tx) error {
		for i := range docs {
			enc, err := s.EncodeDoc(&docs[i], search.Facts{ScreenRules: "r1", Runes: len(docs[i].Text)})
			if err != nil {
				return err
			}
			if err := tx.PutDoc(from+uint64(i), 1, &docs[i], enc); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// storedBytes sums the stored record encodings.
func storedBytes(t *testing.T, s *Store) (n int, tags map[byte]int) {
	t.Helper()
	tags = map[byte]int{}
	s.View(func(r *ReadTx) error {
		return r.tx.Bucket(bktDocs).ForEach(func(_, v []byte) error {
			n += len(v) - 8
			tags[v[8]]++
			return nil
		})
	})
	return n, tags
}

// TestDictCompressesRecords: a dictionary trained on the store's records
// is stored, new records use it, Recompress rewrites the older ones, every
// record reads back unchanged (with and without its text, after a
// reopen), and the records take far fewer bytes than compressed one by one.
func TestDictCompressesRecords(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	docs := passages(DictMinDocs + 200)
	putAll(t, s, docs[:DictMinDocs-1], 1)
	if id, err := s.TrainDict(ctx, 0); id != 0 || err != nil {
		t.Fatalf("trained below %d documents: %d %v", DictMinDocs, id, err)
	}
	putAll(t, s, docs[DictMinDocs-1:DictMinDocs], DictMinDocs)
	before, _ := storedBytes(t, s)
	id, err := s.TrainDict(ctx, 0)
	if id != 1 || err != nil {
		t.Fatalf("TrainDict = %d, %v; want dictionary 1", id, err)
	}
	if id, err := s.TrainDict(ctx, 0); id != 0 || err != nil {
		t.Fatalf("trained again without growth: %d %v", id, err)
	}
	n, err := s.Recompress(ctx)
	if n != DictMinDocs || err != nil {
		t.Fatalf("Recompress = %d, %v; want %d", n, err, DictMinDocs)
	}
	after, tags := storedBytes(t, s)
	if tags[dictRecordTag] != DictMinDocs {
		t.Fatalf("record formats after Recompress: %v", tags)
	}
	t.Logf("%d records: %d → %d bytes (%.2f×)", DictMinDocs, before, after, float64(after)/float64(before))
	if after > before*8/10 {
		t.Errorf("dictionary records take %d bytes, one by one %d: want ≤ 0.8×", after, before)
	}
	putAll(t, s, docs[DictMinDocs:], DictMinDocs+1)
	if _, tags := storedBytes(t, s); tags[dictRecordTag] != len(docs) {
		t.Fatalf("new records not written with the dictionary: %v", tags)
	}
	check := func(s *Store) {
		t.Helper()
		err := s.View(func(r *ReadTx) error {
			for i := range docs {
				for _, withText := range []bool{true, false} {
					d, f, err := r.Record(uint64(i+1), withText)
					if err != nil {
						return err
					}
					want := docs[i]
					if !withText {
						want.Text = ""
					}
					if got := docJSON(d); got != docJSON(&want) || f.Runes != len(docs[i].Text) || f.ScreenRules != "r1" {
						return fmt.Errorf("record %d (text %v): %s %+v, want %s", i+1, withText, got, f, docJSON(&want))
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check(s)
	enc, _ := s.EncodeDoc(&docs[0], search.Facts{})
	if _, _, err := DecodeRecord(enc, true); !errors.Is(err, ErrNoDictionary) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("package DecodeRecord of a dictionary record: %v", err)
	}
	s.Close()
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Dictionaries(); !reflect.DeepEqual(got, []uint32{1}) {
		t.Fatalf("dictionaries after reopen: %v", got)
	}
	check(s)
}

// TestSameRecord: encodings of one document in different formats are the
// same record; a changed field or fact is not.
func TestSameRecord(t *testing.T) {
	s := openTest(t)
	docs := passages(DictMinDocs)
	putAll(t, s, docs, 1)
	if _, err := s.TrainDict(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	d := docs[3]
	plain, _ := EncodeDoc(&d, search.Facts{ScreenRules: "r"})
	dict, _ := s.EncodeDoc(&d, search.Facts{ScreenRules: "r"})
	if plain[0] == dict[0] {
		t.Fatalf("no dictionary record: %x", dict[:1])
	}
	if !s.SameRecord(plain, dict) {
		t.Fatal("format-2 and dictionary encodings of one document differ")
	}
	d2 := d
	d2.Text += "!"
	other, _ := s.EncodeDoc(&d2, search.Facts{ScreenRules: "r"})
	otherFacts, _ := s.EncodeDoc(&d, search.Facts{ScreenRules: "r", Tokens: 1})
	if s.SameRecord(dict, other) || s.SameRecord(plain, otherFacts) || s.SameRecord(dict, []byte{dictRecordTag}) {
		t.Fatal("different records reported the same")
	}
}

// TestDictCorrupt: a damaged dictionary fails Open with ErrCorrupt, and a
// damaged or truncated dictionary record fails to decode with ErrCorrupt.
func TestDictCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	putAll(t, s, passages(DictMinDocs), 1)
	if _, err := s.TrainDict(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	d := passages(1)[0]
	enc, _ := s.EncodeDoc(&d, search.Facts{})
	for n := range len(enc) {
		if _, _, err := s.DecodeRecord(enc[:n], true); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d of %d bytes: %v", n, len(enc), err)
		}
	}
	for i := 3; i < len(enc); i++ {
		bad := bytes.Clone(enc)
		bad[i] ^= 0x40
		if got, _, err := s.DecodeRecord(bad, true); err == nil && got.Text == d.Text && got.Title == d.Title {
			continue // a flip the format does not see (e.g. in an unused frame header bit) changed nothing
		} else if err == nil {
			t.Fatalf("flipped byte %d decodes to a different document", i)
		} else if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flipped byte %d: %v", i, err)
		}
	}
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bktMeta)
		v := bytes.Clone(b.Get(dictKey(1)))
		v[len(v)/2] ^= 1
		return b.Put(dictKey(1), v)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if s, err := Open(path); !errors.Is(err, ErrCorrupt) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open with a damaged dictionary: %v", err)
	}
}

// FuzzDecodeDictRecord: any bytes decode through a store with a dictionary
// or fail with ErrCorrupt, and what decodes re-encodes to the same record.
func FuzzDecodeDictRecord(f *testing.F) {
	s, err := Open(filepath.Join(f.TempDir(), "s.db"))
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	putAll(f, s, passages(DictMinDocs), 1)
	if _, err := s.TrainDict(context.Background(), 0); err != nil {
		f.Fatal(err)
	}
	for _, tc := range append(codecCases(), struct {
		name string
		doc  search.Document
		f    search.Facts
	}{"passage", passages(1)[0], search.Facts{ScreenRules: "r"}}) {
		enc, _ := s.EncodeDoc(&tc.doc, tc.f)
		f.Add(enc)
	}
	f.Add([]byte{dictRecordTag, 1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, facts, err := s.DecodeRecord(b, true)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		if _, _, err := s.DecodeRecord(b, false); err != nil {
			t.Fatalf("decodes with its text but not without: %v", err)
		}
		enc, err := s.EncodeDoc(d, facts)
		if err != nil {
			return
		}
		if !s.SameRecord(b, enc) {
			t.Fatalf("re-encoding is another record")
		}
	})
}

// TestRecompressOnce: once a Recompress pass has reached the end, later
// calls return at once — they read no record (a record stored without a
// dictionary afterwards stays as it is, and readable) — where before every
// start of an index re-read the whole store.
func TestRecompressOnce(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	docs := passages(DictMinDocs + 1)
	putAll(t, s, docs[:DictMinDocs], 1)
	if id, err := s.TrainDict(ctx, 0); id != 1 || err != nil {
		t.Fatalf("TrainDict = %d, %v", id, err)
	}
	if n, err := s.Recompress(ctx); n != DictMinDocs || err != nil {
		t.Fatalf("first Recompress = %d, %v", n, err)
	}
	plain, err := EncodeDoc(&docs[DictMinDocs], search.Facts{})
	if err != nil {
		t.Fatal(err)
	}
	seq := uint64(DictMinDocs + 1)
	if err := s.Update(ctx, func(tx *Tx) error { return tx.PutDoc(seq, 1, &docs[DictMinDocs], plain) }); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Recompress(ctx); n != 0 || err != nil {
		t.Fatalf("second Recompress = %d, %v; want 0 without a pass", n, err)
	}
	if err := s.View(func(r *ReadTx) error {
		d, _, err := r.Record(seq, true)
		if err == nil && d.Text != docs[DictMinDocs].Text {
			err = fmt.Errorf("record %d reads %q", seq, d.Text)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// trainedStore is a store of DictMinDocs passages with its first
// dictionary, and the passages.
func trainedStore(t testing.TB) (*Store, []search.Document) {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	docs := passages(DictMinDocs)
	putAll(t, s, docs, 1)
	if id, err := s.TrainDict(context.Background(), 0); id != 1 || err != nil {
		t.Fatalf("TrainDict = %d, %v", id, err)
	}
	return s, docs
}

// TestDictEncodeMemory: encoding a record with the dictionary allocates
// about the record, not S2's better-mode hash tables (576 KiB per block,
// two blocks per record): with klauspost/compress before v1.18.6 every
// record allocated and cleared 1.1 MiB, which made compression ≈ 40 % of
// rcpd's CPU under the soak mix and the garbage collector most of the rest
// of an add's cost. The bound leaves room for sync.Pool dropping tables
// (the race detector drops a quarter of them on purpose).
func TestDictEncodeMemory(t *testing.T) {
	s, docs := trainedStore(t)
	const n = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		if _, err := s.EncodeDoc(&docs[i], search.Facts{ScreenRules: "r1"}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 384<<10 {
		t.Errorf("encoding a record allocates %d KiB: the encoder's tables are allocated per record", per>>10)
	}
}

// BenchmarkEncodeRecord encodes generated passages with the store's
// dictionary (index/add does this for every unit it prepares).
func BenchmarkEncodeRecord(b *testing.B) {
	s, docs := trainedStore(b)
	b.ReportAllocs()
	size := 0
	for i := 0; b.Loop(); i++ {
		enc, err := s.EncodeDoc(&docs[i%len(docs)], search.Facts{ScreenRules: "r1"})
		if err != nil {
			b.Fatal(err)
		}
		size += len(enc)
	}
	b.ReportMetric(float64(size)/float64(b.N), "B/record")
}
