package store

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/internal/testutil/bolttest"
)

// TestSalvage damages one leaf page in the middle of a bucket of a bbolt
// file and salvages the file: every key outside that page is copied,
// nested buckets and bucket sequences included, and the report names the
// unreadable stretch by the keys around it.
func TestSalvage(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	db, err := bolt.Open(src, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	key := func(i int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(i)) }
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("recs"))
		if err != nil {
			return err
		}
		for i := range n {
			if err := b.Put(key(i), []byte(strings.Repeat(fmt.Sprint(i), 20))); err != nil {
				return err
			}
		}
		if err := b.SetSequence(n); err != nil {
			return err
		}
		nb, err := b.CreateBucket([]byte("nested"))
		if err != nil {
			return err
		}
		if err := nb.SetSequence(7); err != nil {
			return err
		}
		return nb.Put([]byte("k"), []byte("v"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Damage a leaf page of the second half of the keys.
	bolttest.DamageLeafPage(t, src, func(k []byte) bool { return len(k) == 8 && binary.BigEndian.Uint64(k) >= n/2 })

	dst := filepath.Join(dir, "dst.db")
	rep, err := Salvage(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Lost) != 1 || !strings.HasPrefix(rep.Lost[0], `bucket "recs": the keys after 0x`) || !strings.Contains(rep.Lost[0], " and before 0x") {
		t.Fatalf("lost %q", rep.Lost)
	}
	out, err := bolt.Open(dst, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := VerifyPages(t.Context(), out); err != nil {
		t.Fatalf("the salvaged file: %v", err)
	}
	err = out.View(func(tx *bolt.Tx) error {
		recs := tx.Bucket([]byte("recs"))
		if recs.Sequence() != n {
			t.Errorf("sequence %d, want %d", recs.Sequence(), n)
		}
		if nb := recs.Bucket([]byte("nested")); nb == nil || nb.Sequence() != 7 || string(nb.Get([]byte("k"))) != "v" {
			t.Errorf("the nested bucket was not copied whole")
		}
		missing := 0
		for i := range n {
			v := recs.Get(key(i))
			switch {
			case v == nil:
				missing++
			case string(v) != strings.Repeat(fmt.Sprint(i), 20):
				t.Errorf("key %d: %q", i, v)
			}
		}
		if missing == 0 || missing > n/4 {
			t.Errorf("%d of %d keys missing; want only the damaged page's", missing, n)
		}
		if rep.Copied != n-missing+1 {
			t.Errorf("reported %d copied, %d present", rep.Copied, n-missing+1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
