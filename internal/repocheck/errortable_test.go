package repocheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEngineErrorsInOneTable: below the facade no engine package builds an
// rcp.Error itself — a layer returns its sentinel (in a fault.Error) and
// the engine translates it once, in engine/errors.go. Request validation
// (rcp.InvalidParams, rcp.OptionUnsupported) is not translated and is not
// caught here.
func TestEngineErrorsInOneTable(t *testing.T) {
	root := repoRoot(t)
	err := filepath.WalkDir(filepath.Join(root, "engine"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if filepath.ToSlash(rel) == "engine/errors.go" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "&rcp.Error{") || strings.Contains(line, "rcp.Error{Code") {
				t.Errorf("%s:%d builds an rcp.Error: return a sentinel of the layer and add it to engine/errors.go's table", rel, i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
