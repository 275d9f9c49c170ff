package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// storeWith returns a store file holding some documents, closed.
func storeWith(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// Damaged bbolt files are refused with ErrCorruptFile naming the file
// before bbolt maps them (item 12: a flip panicked bbolt, a truncated file
// faulted the process).
func TestCheckFileAndOpen(t *testing.T) {
	damage := map[string]func(b []byte) []byte{
		"meta pages": func(b []byte) []byte {
			copy(b[16:80], make([]byte, 64))
			copy(b[4096+16:4096+80], make([]byte, 64))
			return b
		},
		"first meta":    func(b []byte) []byte { b[20] ^= 0xFF; return b },
		"truncated":     func(b []byte) []byte { return b[:len(b)/2] },
		"tiny":          func(b []byte) []byte { return b[:100] },
		"root page":     func(b []byte) []byte { return b },
		"all but metas": func(b []byte) []byte { copy(b[8192:], make([]byte, len(b)-8192)); return b },
	}
	for name, f := range damage {
		t.Run(name, func(t *testing.T) {
			path := storeWith(t)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if name == "root page" {
				m, _ := readMeta(b)
				root := int(m.root) * int(m.pageSize)
				for i := root; i < root+16; i++ {
					b[i] ^= 0x5A
				}
			}
			b = f(b)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = Open(path)
			if name == "first meta" {
				if err != nil { // the second meta page is intact: bbolt uses it
					t.Fatalf("one damaged meta page: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrCorruptFile) || !strings.Contains(err.Error(), "store.db") {
				t.Fatalf("Open = %v, want ErrCorruptFile naming store.db", err)
			}
		})
	}
}

func TestProtectConvertsPanics(t *testing.T) {
	err := Protect("x.db", func() error { panic("assertion failed: Page expected to be: 12, but self identifies as 0") })
	if !errors.Is(err, ErrCorruptFile) || !strings.Contains(err.Error(), "x.db") {
		t.Fatalf("%v", err)
	}
}
