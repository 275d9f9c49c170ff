package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A negative queryConcurrency in the config file is refused with the key
// named, before anything is opened.
func TestConfigQueryConcurrency(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rcpd.json")
	if err := os.WriteFile(path, []byte(`{"queryConcurrency": -1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	err := serve(context.Background(), serveFlags{stdio: true, config: path, data: filepath.Join(dir, "data")}, strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "queryConcurrency -1") {
		t.Fatalf("err = %v, want the queryConcurrency key named", err)
	}
}
