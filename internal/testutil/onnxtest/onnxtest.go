// Package onnxtest locates the ONNX Runtime shared library for the tests of
// the ONNX providers. The library comes from the npm package
// onnxruntime-node (scripts/fetch-onnxruntime.sh), so a machine with only Go
// cannot have it: there the tests skip, saying how to run them. Under CI (or
// with RCPGO_REQUIRE_ONNX=1) a missing library fails the test instead —
// .ci/run fetches it, so CI always runs them for real.
package onnxtest

import (
	"os"
	"path/filepath"
	"testing"
)

// LibraryEnv names the variable holding the library's path.
const LibraryEnv = "RCPGO_ONNXRUNTIME_LIB"

const hint = `ONNX Runtime not found: run export ` + LibraryEnv + `="$(bash scripts/fetch-onnxruntime.sh)" (needs npm)`

// Library returns the path of libonnxruntime: $RCPGO_ONNXRUNTIME_LIB, else
// the cache scripts/fetch-onnxruntime.sh fills.
func Library(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(LibraryEnv); p != "" {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		m, _ := filepath.Glob(filepath.Join(home, ".cache", "rcpgo", "onnxruntime", "*", "libonnxruntime.so*"))
		if len(m) > 0 {
			return m[len(m)-1]
		}
	}
	if os.Getenv("CI") != "" || os.Getenv("RCPGO_REQUIRE_ONNX") != "" {
		tb.Fatal(hint)
	}
	tb.Skip(hint)
	return ""
}
