package repocheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ciFuzz is a line of .ci/run's fuzz step: fuzz NAME ./PACKAGE.
var ciFuzz = regexp.MustCompile(`(?m)^\s*fuzz (Fuzz\w+) (\./\S+)$`)

// TestCIFuzzTargetsExist: every fuzz target .ci/run runs is declared in the
// package it names — when a package moves, go test -fuzz on the old path
// fails the CI run only at its last step.
func TestCIFuzzTargetsExist(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	lines := ciFuzz.FindAllStringSubmatch(string(b), -1)
	if len(lines) == 0 {
		t.Fatal(".ci/run runs no fuzz target: the pattern no longer reads its fuzz step")
	}
	for _, m := range lines {
		name, dir := m[1], filepath.Join(root, filepath.FromSlash(m[2]))
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		found := false
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(src), "\nfunc "+name+"(f *testing.F)") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf(".ci/run fuzzes %s in %s, which declares no such target", name, m[2])
		}
	}
}
