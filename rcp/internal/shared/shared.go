// Package shared locates the project's shared data for the SDK's tests:
// $RCPGO_SHARED, else ../shared beside the checkout holding the SDK module
// (the RCP test vectors). The data is not part of the repository, so a test
// needing it skips with a one-line reason when it is missing — and fails
// under CI=true, where it must be there. The root module's internal/shared
// does the same for the other packages; the SDK, a module of its own with
// no requirements, cannot import it.
package shared

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the shared directory, skipping (failing under CI=true) tb
// when it does not exist.
func Dir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("RCPGO_SHARED")
	if dir == "" {
		dir = filepath.Join(checkout(tb), "..", "shared")
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		missing(tb, dir+" is missing (the project's shared data: set RCPGO_SHARED or put it beside the checkout)")
	}
	return dir
}

// Path returns a path inside the shared directory, skipping (failing under
// CI=true) tb when it does not exist.
func Path(tb testing.TB, elem ...string) string {
	tb.Helper()
	p := filepath.Join(append([]string{Dir(tb)}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		missing(tb, p+" is missing")
	}
	return p
}

// JSONLines returns the non-empty lines of a JSON Lines file inside the
// shared directory.
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

func missing(tb testing.TB, what string) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("shared: %s", what)
	}
	tb.Skipf("shared: %s", what)
}

// checkout returns the directory holding the SDK module's directory: the
// repository root in a checkout.
func checkout(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatalf("shared: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Dir(dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatalf("shared: no go.mod above the working directory")
		}
		dir = parent
	}
}
