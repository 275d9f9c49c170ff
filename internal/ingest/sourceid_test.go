package ingest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSourceIDsAreDistinct: two files have two ids, whatever bytes their
// names hold. Before, the id was the raw path, and JSON turned every byte
// that is not UTF-8 into U+FFFD: x\xff.txt and x\xfe.txt were one
// document (rcp index add reported both indexed, the index held one).
func TestSourceIDsAreDistinct(t *testing.T) {
	dir := t.TempDir()
	names := []string{"x\xff.txt", "x\xfe.txt", "x\uFFFD.txt", "x%FF.txt", "x%25FF.txt", "new\nline.txt", "esc\x1b[2J.txt", "plain name é.txt"}
	seen := map[string]string{}
	for _, n := range names {
		id, err := SourceID(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(id) // what the server receives
		var wire string
		_ = json.Unmarshal(b, &wire)
		if prev, dup := seen[wire]; dup {
			t.Errorf("%q and %q share the id %q", prev, n, wire)
		}
		seen[wire] = n
		if strings.ContainsAny(wire, "\n\x1b\uFFFD") && n != "x\uFFFD.txt" {
			t.Errorf("id %q of %q holds a control character or U+FFFD", wire, n)
		}
	}
	// Ordinary paths keep their ids (no re-indexing after an upgrade), and
	// a folder's id stays a prefix of its files' (rcp index add --prune).
	if id, _ := SourceID(filepath.Join(dir, "plain name é.txt")); id != "file://"+filepath.ToSlash(dir)+"/plain name é.txt" {
		t.Errorf("an ordinary path's id changed: %q", id)
	}
	sub := filepath.Join(dir, "d\xff")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Skip(err)
	}
	root, _ := SourceID(sub)
	file, _ := SourceID(filepath.Join(sub, "f.txt"))
	if !strings.HasPrefix(file, root+"/") {
		t.Errorf("folder id %q is not a prefix of %q", root, file)
	}
}
