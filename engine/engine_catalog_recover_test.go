package engine

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/chunk"
	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/derive"
	"github.com/rcpgo/rcpgo/internal/testutil/syncbuf"
)

// copyFiles copies dir's regular files (recursively) to a new temporary
// directory: with the writer between two commits this is the state a
// crash there leaves, bbolt files included (each holds its last commit).
func copyFiles(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(out, rel), 0o755)
		}
		if d.Name() == "LOCK" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(out, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// copyFile copies the file src over dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCatalogRecoversTheLastWriteOnly: after a crash between a write's
// two commits Open re-derives the catalog records and dense log entries of
// the documents the last writes named only — it does not rebuild the
// catalog from every record of the index (268 s at 1 M documents) — and
// the catalog, its counts and the dense log agree with the index again.
// An add's two commits (engine.db's catalog and dense log; the index's
// store) run at once, so either may survive alone; a delete commits the
// index first.
func TestCatalogRecoversTheLastWriteOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := Config{Dir: dir, Fields: map[string]string{"lang": "keyword"}, Dense: DenseLSA, MinFitDocs: 1 << 20,
		Chunk: chunk.Options{Size: 30, Overlap: 8}, Logger: slog.New(slog.DiscardHandler)}
	cfg.IndexOpts.NoBackground = true
	e, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()
	addDocs(t, e, map[string]any{"chunk": true, "documents": []any{
		map[string]any{"id": "manual", "text": manual, "meta": map[string]any{"title": "Pump manual", "lang": "en"}}}})
	addDocs(t, e, map[string]any{"documents": []any{
		map[string]any{"id": "a", "text": "alpha", "meta": map[string]any{"lang": "fr"}},
		map[string]any{"id": "b", "text": "beta", "meta": map[string]any{"lang": "de"}}}})
	before := copyFiles(t, dir)

	addDocs(t, e, map[string]any{"documents": []any{
		map[string]any{"id": "a", "text": "alpha prime", "meta": map[string]any{"lang": "es"}},
		map[string]any{"id": "c", "text": "gamma", "meta": map[string]any{"lang": "it"}}}})
	after := copyFiles(t, dir)
	// A crash that kept the add's engine.db commit only: engine.db with
	// "c" and the new "a", the index without them.
	addCrash := copyFiles(t, before)
	copyFile(t, filepath.Join(after, "engine.db"), filepath.Join(addCrash, "engine.db"))
	// A crash that kept the add's index commit only.
	indexCrash := copyFiles(t, after)
	copyFile(t, filepath.Join(before, "engine.db"), filepath.Join(indexCrash, "engine.db"))
	// A delete commits the index first: crash before the catalog's commit.
	var deleteCrash string
	e.writer.Hooks.DeleteCommitted = func() { deleteCrash = copyFiles(t, dir) }
	deleted(t, e, "b", "manual")
	e.writer.Hooks.DeleteCommitted = nil
	if deleteCrash == "" {
		t.Fatal("the delete did not reach its catalog commit")
	}

	for _, tc := range []struct {
		name, dir string
		// looked: documents re-derived, those the interrupted write and
		// the last add committed in the index named.
		looked int
		docs   []string
		langs  []string
		alpha  string // the dense text of "a"
	}{
		{"crash during an add, engine.db committed", addCrash, 3, []string{"a", "b", "manual"}, []string{"de", "en", "fr"}, "alpha"},
		{"crash during an add, index committed", indexCrash, 3, []string{"a", "b", "c", "manual"}, []string{"de", "en", "es", "it"}, "alpha prime"},
		{"crash during a delete", deleteCrash, 4, []string{"a", "c"}, []string{"es", "it"}, "alpha prime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log syncbuf.Buffer
			c := cfg
			c.Dir, c.Logger = tc.dir, slog.New(slog.NewTextHandler(&log, nil))
			e, err := Open(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if strings.Contains(log.String(), "rebuilt the document catalog") {
				t.Fatalf("Open rebuilt the whole catalog after a crash:\n%s", log.String())
			}
			if want := fmt.Sprintf("reconciled the document catalog with the index\" reason=\"not closed cleanly\" documents=%d ", tc.looked); !strings.Contains(log.String(), want) {
				t.Errorf("want a reconciliation of %d documents logged:\n%s", tc.looked, log.String())
			}
			if got := refIDs(listAll(t, e, "", 10)); !slices.Equal(got, tc.docs) {
				t.Errorf("catalog lists %v, the index holds %v", got, tc.docs)
			}
			if n, err := e.Documents(); err != nil || n != len(tc.docs) {
				t.Errorf("Documents() = %d, %v; want %d", n, err, len(tc.docs))
			}
			if v := values(t, e, map[string]any{"field": "lang"}); !slices.Equal(v.Values, tc.langs) {
				t.Errorf("lang values %v, want %v", v.Values, tc.langs)
			}
			// The dense log names the index's units, with the index's text.
			var named []string
			if text, _, _, err := derive.Logged(e.db, "a"); err != nil || text != tc.alpha {
				t.Errorf("the dense text of a is %q (%v), the index holds %q", text, err, tc.alpha)
			}
			if err := e.db.View(func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("dense")).ForEach(func(k, _ []byte) error {
					named = append(named, catalog.TopLevel(string(k)))
					return nil
				})
			}); err != nil {
				t.Fatal(err)
			}
			if named = slices.Compact(named); !slices.Equal(named, tc.docs) {
				t.Errorf("the dense log names %v, the index holds %v", named, tc.docs)
			}
		})
	}
}
