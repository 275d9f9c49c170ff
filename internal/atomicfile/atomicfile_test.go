package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteSealOpen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "snap")
	if err := WriteFile(p, Seal("m1\n", []byte("body"))); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	if body, err := Open("m1\n", data); err != nil || string(body) != "body" {
		t.Fatalf("%q %v", body, err)
	}
	for name, bad := range map[string][]byte{
		"other magic": Seal("m2\n", []byte("body")),
		"flipped":     append([]byte("m1\nbodX"), data[len(data)-4:]...),
		"short":       []byte("m1"),
	} {
		if _, err := Open("m1\n", bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := WriteFile(filepath.Join(t.TempDir(), "missing", "x"), nil); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(p), ".*tmp*")); len(m) != 0 {
		t.Fatalf("temp files left: %v", m)
	}
}

func FuzzOpen(f *testing.F) {
	f.Add(Seal("m\n", []byte("x")))
	f.Add([]byte("m\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Open("m\n", b) // never panics
	})
}
