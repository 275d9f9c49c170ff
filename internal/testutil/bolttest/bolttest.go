// Package bolttest damages bbolt files the way a bad disk does, for the
// tests of the checks and the repair that must find it, and edits them
// below the code that owns them.
package bolttest

import (
	"encoding/binary"
	"os"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// DamageLeafPage overwrites the self-identifying page id of the first
// bbolt leaf page (4 KB pages, in file order) whose keys all satisfy
// match: bbolt panics when it loads that page, as it would reading a page
// a bad disk returned.
func DamageLeafPage(t testing.TB, path string, match func([]byte) bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const ps = pageSize
	le := binary.LittleEndian
	found := -1
	for id := 2; found < 0 && (id+1)*ps <= len(b); id++ {
		p := b[id*ps : (id+1)*ps]
		if le.Uint64(p) != uint64(id) || le.Uint16(p[8:])&0x02 == 0 {
			continue
		}
		n := int(le.Uint16(p[10:]))
		ok := n > 1
		for i := 0; ok && i < n; i++ {
			el := 16 + 16*i
			pos, ksize := int(le.Uint32(p[el+4:])), int(le.Uint32(p[el+8:]))
			if el+pos+ksize > len(p) || !match(p[el+pos:el+pos+ksize]) {
				ok = false
			}
		}
		if ok {
			found = id
		}
	}
	if found < 0 {
		t.Fatalf("no leaf page of the wanted keys in %s", path)
	}
	damage(t, path, b, found)
}

// DamageBucketRoot damages, the same way, the root page of the top-level
// bucket name — the page in use, where a freed copy of it may lie earlier
// in the file.
func DamageBucketRoot(t testing.TB, path, name string) {
	t.Helper()
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var root int
	err = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte(name)); b != nil {
			root = int(b.Root())
		}
		return nil
	})
	db.Close()
	if err != nil || root == 0 {
		t.Fatalf("bucket %q of %s: root page %d, %v (an inline bucket has none)", name, path, root, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	damage(t, path, b, root)
}

// DeleteKey deletes key from the top-level bucket of the bbolt file at
// path: what losing the key's page, then salvaging the rest, leaves.
func DeleteKey(t testing.TB, path, bucket, key string) {
	t.Helper()
	Update(t, path, func(tx *bolt.Tx) error { return tx.Bucket([]byte(bucket)).Delete([]byte(key)) })
}

// Update runs fn in a write transaction on the closed bbolt file at path.
func Update(t testing.TB, path string, fn func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// pageSize is the page size of the files the tests write (bbolt's default
// on the machines they run on).
const pageSize = 4096

// damage rewrites the id of page id of the file b at path.
func damage(t testing.TB, path string, b []byte, id int) {
	t.Helper()
	binary.LittleEndian.PutUint64(b[id*pageSize:], uint64(id)+1_000_000)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
