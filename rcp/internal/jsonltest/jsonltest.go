// Package jsonltest reads the JSON Lines test vectors of the SDK's
// packages (filter, fusion, vector: each package's testdata).
package jsonltest

import (
	"bytes"
	"os"
	"testing"
)

// Load reads the JSON Lines file path, skipping blank lines, and decodes
// each line into a T with decode (json.Unmarshal, or a decoder that keeps
// numbers' text); a file it cannot read or a line it cannot decode fails
// tb.
func Load[T any](tb testing.TB, path string, decode func([]byte, any) error) []T {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out []T
	for line := range bytes.Lines(b) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var c T
		if err := decode(line, &c); err != nil {
			tb.Fatalf("bad line: %v", err)
		}
		out = append(out, c)
	}
	return out
}
