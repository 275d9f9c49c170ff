package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func catalogDB(t testing.TB) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "c.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func catalogCases() map[string]*Record {
	passage := map[string]string{"date": "k", "lang": "k", "published": "b", "score": "f", "title": "k", "year": "i"}
	return map[string]*Record{
		"empty":   {},
		"passage": {Title: "Cytrum brybrio nito netho clolai", Size: 341, Kinds: passage},
		"chunked": {Title: "Big", Size: 9, Chunks: 3, Text: "long text", Context: true, Kinds: map[string]string{"a": "x"},
			Values: map[string][]string{"tag": {"a", "b"}, "lang": {"en"}}},
	}
}

// TestCatalogRecordCodec: catalog records round-trip through the binary
// encoding, JSON records still read, a kind set is stored once however
// many records share it, and a passage's record takes a third of its
// JSON bytes.
func TestCatalogRecordCodec(t *testing.T) {
	db := catalogDB(t)
	err := db.Update(func(tx *bolt.Tx) error {
		for name, rec := range catalogCases() {
			enc, err := encodeCatalogRecord(tx, rec)
			if err != nil {
				return err
			}
			got, err := decodeCatalogRecord(tx, enc)
			if err != nil || !reflect.DeepEqual(normRecord(got), normRecord(rec)) {
				t.Errorf("%s: decoded %+v, %v; want %+v", name, got, err, rec)
			}
			legacy, _ := json.Marshal(rec)
			if got, err := decodeCatalogRecord(tx, legacy); err != nil || !reflect.DeepEqual(normRecord(got), normRecord(rec)) {
				t.Errorf("%s: JSON record decoded %+v, %v", name, got, err)
			}
			for n := range len(enc) {
				if _, err := decodeCatalogRecord(tx, enc[:n]); !errors.Is(err, errCatalogRecord) {
					t.Errorf("%s: truncated to %d of %d bytes: %v", name, n, len(enc), err)
				}
			}
			if name == "passage" {
				again, _ := encodeCatalogRecord(tx, rec)
				if !bytes.Equal(again, enc) {
					t.Errorf("passage: second encoding differs")
				}
				t.Logf("passage record: %d bytes binary, %d JSON", len(enc), len(legacy))
				if len(enc)*3 > len(legacy) {
					t.Errorf("passage record takes %d bytes, JSON %d: want ≤ a third", len(enc), len(legacy))
				}
			}
		}
		n := 0
		tx.Bucket(bucketKindSets).ForEach(func(_, _ []byte) error { n++; return nil })
		if n != 4 {
			t.Errorf("kindsets holds %d keys, want 4 (two sets, two keys each)", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// normRecord maps empty collections to nil, as the encodings do.
func normRecord(r *Record) Record {
	c := *r
	if len(c.Kinds) == 0 {
		c.Kinds = nil
	}
	if len(c.Values) == 0 {
		c.Values = nil
	}
	return c
}

// FuzzCatalogRecord: any bytes decode or fail with errCatalogRecord, and
// what decodes re-encodes to a record that decodes the same.
func FuzzCatalogRecord(f *testing.F) {
	db := catalogDB(f)
	err := db.Update(func(tx *bolt.Tx) error {
		for _, rec := range catalogCases() {
			enc, err := encodeCatalogRecord(tx, rec)
			if err != nil {
				return err
			}
			f.Add(enc)
			legacy, _ := json.Marshal(rec)
			f.Add(legacy)
		}
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := db.View(func(tx *bolt.Tx) error {
			rec, err := decodeCatalogRecord(tx, b)
			if err != nil {
				if !errors.Is(err, errCatalogRecord) {
					t.Fatalf("error %v does not wrap errCatalogRecord", err)
				}
				return nil
			}
			if b[0] != '{' && (rec.Size < 0 || rec.Chunks < 0) {
				t.Fatalf("negative size or chunk count: %+v", rec)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
