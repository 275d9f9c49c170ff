package natq

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rcpgo/rcpgo/internal/ingest"
	"github.com/rcpgo/rcpgo/rcp"
)

// GoDocsFiles are the files of $(go env GOROOT)/doc the GoDocs set is
// judged on.
var GoDocsFiles = []string{"go_mem.html", "go_spec.html", "asm.html", "godebug.md"}

// GoDocsDir returns $(go env GOROOT)/doc, or an error saying why the Go
// documentation cannot be read (no go command, no doc folder, a file
// missing).
func GoDocsDir() (string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("natq: go env GOROOT: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "doc")
	for _, f := range GoDocsFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return "", fmt.Errorf("natq: the Go installation has no %s: %w", f, err)
		}
	}
	return dir, nil
}

// ReadGoDocs reads the GoDocs files the way `rcp index add` does
// (internal/ingest: HTML and Markdown to text; id the file:// URI, meta
// source/path/title/format).
func ReadGoDocs(ctx context.Context) ([]rcp.Document, error) {
	dir, err := GoDocsDir()
	if err != nil {
		return nil, err
	}
	var docs []rcp.Document
	for _, f := range GoDocsFiles {
		ds, err := ingest.ReadFile(ctx, filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		docs = append(docs, ds...)
	}
	return docs, nil
}
