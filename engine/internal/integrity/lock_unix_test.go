//go:build unix

package integrity

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLockFileIsNeverFollowed: a DIR/LOCK that is a symbolic link (or a
// FIFO) is refused, and the file it points to is left as it was. Before,
// rcpd serve truncated the link's target, wrote its holder record into
// it, and emptied it again on exit: whoever could write the data
// directory could make rcpd clobber any file its user can write.
func TestLockFileIsNeverFollowed(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "LOCK")); err != nil {
		t.Fatal(err)
	}
	release, err := lockDir(dir, Holder{What: "test"})
	if err == nil {
		release()
	}
	if !errors.Is(err, ErrLockFile) {
		t.Errorf("lockDir through a symlink: %v, want ErrLockFile", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Fatalf("the link's target now holds %q", b)
	}
	if _, held := HeldBy(dir); held {
		t.Error("HeldBy: a symlinked LOCK reads as held")
	}

	fifo := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifo, "LOCK"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := lockDir(fifo, Holder{}); !errors.Is(err, ErrLockFile) {
		t.Errorf("lockDir on a FIFO: %v, want ErrLockFile", err)
	}
}

// TestHolderRecordIsShownSafely: what a LOCK file says is printed to the
// terminal of whoever finds the directory held; its escape sequences are
// dropped and its fields bounded.
func TestHolderRecordIsShownSafely(t *testing.T) {
	h := readHolder([]byte(`{"pid":7,"what":"rcpd\u001b]0;owned\u0007 serve\u001b[2J","url":"http://x/` + strings.Repeat("a", 5000) + `"}`))
	if h.What != "rcpd]0;owned serve[2J" || len(h.URL) > 256 || h.PID != 7 {
		t.Fatalf("holder %q %d bytes of URL", h.What, len(h.URL))
	}
}
