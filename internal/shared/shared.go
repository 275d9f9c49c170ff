// Package shared locates the project's shared data (../shared beside the
// checkout: the RCP schema, test vectors, datasets). Tests that need it fail
// loudly when it is missing; they never skip.
package shared

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Root returns the repository root (the directory holding go.mod).
func Root(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatalf("shared: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatalf("shared: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Dir returns the shared directory, or $RCPGO_SHARED when set. It fails the
// test when the directory does not exist.
func Dir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("RCPGO_SHARED")
	if dir == "" {
		dir = filepath.Join(Root(tb), "..", "shared")
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		tb.Fatalf("shared: %s is missing: these tests need the project's shared data beside the checkout (or RCPGO_SHARED)", dir)
	}
	return dir
}

// Path returns a path inside the shared directory and fails the test when it
// does not exist.
func Path(tb testing.TB, elem ...string) string {
	tb.Helper()
	p := filepath.Join(append([]string{Dir(tb)}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("shared: %s is missing", p)
	}
	return p
}

// JSONLines returns the non-empty lines of a JSON Lines file inside the
// shared directory (the test vectors, BEIR files); it fails the test when
// the file is missing or unreadable.
func JSONLines(tb testing.TB, elem ...string) [][]byte {
	tb.Helper()
	b, err := os.ReadFile(Path(tb, elem...))
	if err != nil {
		tb.Fatalf("shared: %v", err)
	}
	var lines [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			lines = append(lines, l)
		}
	}
	return lines
}
