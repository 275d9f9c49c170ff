// Package gobuild builds this module's commands for the tests that run
// them as programs.
package gobuild

import (
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"testing"
)

// Build builds pkg, an import path of this module (the go command finds
// it from any working directory inside the module), into the file out,
// with flags (e.g. "-ldflags", "-X …") passed to go build before it. A
// failure's error carries go's output.
func Build(out, pkg string, flags ...string) error {
	args := append(append([]string{"build", "-o", out}, flags...), pkg)
	if b, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// Binary builds pkg as Build does into dir, under pkg's last element
// ("…/cmd/rcpd" → dir/rcpd), and returns the binary's path; a failed
// build fails tb.
func Binary(tb testing.TB, dir, pkg string, flags ...string) string {
	tb.Helper()
	out := filepath.Join(dir, path.Base(pkg))
	if err := Build(out, pkg, flags...); err != nil {
		tb.Fatal(err)
	}
	return out
}
