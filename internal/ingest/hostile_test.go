package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Non-regular files named explicitly are refused at once (item 8: a FIFO
// hung `rcp index add`, /dev/zero grew it to 1.3 GB), and text files are
// read up to MaxFileBytes.
func TestIngestRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.txt")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	zero := filepath.Join(dir, "zero.txt")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, zero} {
		start := time.Now()
		if files, skipped, err := Collect([]string{p}, Options{}); err != nil || len(files) != 0 || len(skipped) != 1 ||
			!skipped[0].Failed || !strings.Contains(skipped[0].Reason, "not a regular file") {
			t.Errorf("Collect(%s) = %v %+v %v, want a failed skip", p, files, skipped, err)
		}
		if _, err := ReadFile(context.Background(), p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadFile(%s) = %v", p, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s took %v", p, d)
		}
	}
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxFileBytes+1); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(context.Background(), big); err == nil || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("ReadFile of a %d-byte text = %v", MaxFileBytes+1, err)
	}
}
