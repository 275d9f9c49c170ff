// Package bolttest damages bbolt files the way a bad disk does, for the
// tests of the checks and the repair that must find it.
package bolttest

import (
	"encoding/binary"
	"os"
	"testing"
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
	const ps = 4096
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
	le.PutUint64(b[found*ps:], uint64(found)+1_000_000)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
