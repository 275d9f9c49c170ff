// Package shared locates the project's shared data for tests: the
// normative RCP JSON Schema, the MCP Description schema and the BEIR
// datasets, kept beside the checkout in ../shared (or at $RCPGO_SHARED)
// because they are upstream's text, never copied into the repository.
//
// It is the one door every test that needs that data goes through. When the
// data is absent — a fresh clone, a user's machine — the test is skipped
// with a one-line reason; under CI=true (CI lays ../shared beside its clone)
// a missing directory or file fails the test instead, so CI can never pass
// by skipping what it is meant to run.
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

// Lookup returns the path of elem inside the shared directory and whether
// it exists, without touching a test: for code that uses the data when it
// is there and does without otherwise (schematest's second opinion).
func Lookup(elem ...string) (string, bool) {
	dir := os.Getenv("RCPGO_SHARED")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", false
		}
		root := wd
		for {
			if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
				break
			}
			parent := filepath.Dir(root)
			if parent == root {
				return "", false
			}
			root = parent
		}
		dir = filepath.Join(root, "..", "shared")
	}
	p := filepath.Join(append([]string{dir}, elem...)...)
	_, err := os.Stat(p)
	return p, err == nil
}

// InCI reports whether the tests run under CI (CI=true), where shared data
// is required.
func InCI() bool { return os.Getenv("CI") == "true" }

// Path returns a path inside the shared directory. When it does not exist
// the test is skipped with a one-line reason naming it, or failed under
// CI=true.
func Path(tb testing.TB, elem ...string) string {
	tb.Helper()
	p, ok := Lookup(elem...)
	if !ok {
		Missing(tb, p)
	}
	return p
}

// Missing ends tb because the shared file at p is absent: a skip with a
// one-line reason, or a failure under CI=true.
func Missing(tb testing.TB, p string) {
	tb.Helper()
	const how = "(the project's shared data: ../shared beside the checkout, or $RCPGO_SHARED)"
	if InCI() {
		tb.Fatalf("shared: %s is missing %s; CI=true requires it", p, how)
	}
	tb.Skipf("shared: %s is missing %s", p, how)
}

// JSONLines returns the non-empty lines of a JSON Lines file inside the
// shared directory (the BEIR files), skipping or failing as Path does.
func JSONLines(tb testing.TB, elem ...string) [][]byte {
	tb.Helper()
	b, err := os.ReadFile(Path(tb, elem...))
	if err != nil {
		tb.Fatalf("shared: %v", err)
	}
	return Lines(b)
}

// Lines returns the non-empty lines of b (a JSON Lines file).
func Lines(b []byte) [][]byte {
	var lines [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			lines = append(lines, l)
		}
	}
	return lines
}
