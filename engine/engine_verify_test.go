package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/internal/testutil/bolttest"
	"github.com/rcpgo/rcpgo/rcp"
)

// TestOpenLeavesPageWalkToVerify damages a leaf page that Open does not
// read — one of the document records in index/store.db, one of the
// catalog's in engine.db — in a closed data directory. Open succeeds: it no
// longer walks every page, whose cost grows with the corpus (before, it
// refused to open). The walk after Open finds the page, names the file,
// and from then on every request is refused and Health reports it.
func TestOpenLeavesPageWalkToVerify(t *testing.T) {
	pristine := pageWalkDir(t)
	for _, tc := range []struct {
		file  string
		match func(key []byte) bool // every key of the page to damage
	}{
		{"index/store.db", func(k []byte) bool { return len(k) == 8 && binary.BigEndian.Uint64(k) < 1000 }}, // records by seq
		{"engine.db", func(k []byte) bool { return strings.HasPrefix(string(k), "doc") }},                   // catalog records by id
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := damagedCopy(t, pristine, tc.file, tc.match)
			e, err := openSparse(dir)
			if err != nil {
				t.Fatalf("Open read a page it should leave to the checks after it: %v", err)
			}
			defer e.Close()
			err = e.Verified(context.Background())
			if err == nil {
				t.Fatal("the checks after Open missed a damaged page")
			}
			damagedRefused(t, e, err, filepath.Base(tc.file))
		})
	}
}

// pageWalkDir writes a data directory of 400 documents doc0000…doc0399,
// enough for several leaf pages of records and of catalog entries.
func pageWalkDir(t *testing.T) string {
	t.Helper()
	pristine := t.TempDir()
	e, err := openSparse(pristine)
	if err != nil {
		t.Fatal(err)
	}
	var docs []any
	for i := range 400 {
		docs = append(docs, map[string]any{"id": fmt.Sprintf("doc%04d", i),
			"text": strings.Repeat(fmt.Sprintf("passage %d about subject%d and more words ", i, i), 4)})
	}
	if _, rerr := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": docs}); rerr != nil {
		t.Fatal(rerr)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return pristine
}

// damagedCopy copies the data directory pristine and damages a leaf page
// of its file (see bolttest.DamageLeafPage).
func damagedCopy(t *testing.T, pristine, file string, match func([]byte) bool) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(pristine)); err != nil {
		t.Fatal(err)
	}
	bolttest.DamageLeafPage(t, filepath.Join(dir, file), match)
	return dir
}

// TestDocumentsIsCounted: Documents reads the count the catalog keeps
// (the docs bucket's sequence) instead of walking every catalog page,
// which made all of engine.db resident after every start (294 MiB at 1 M
// passages). The count follows adds, upserts, chunked documents and
// deletes, survives a restart, and a catalog written before the count
// existed is counted once at Open.
func TestDocumentsIsCounted(t *testing.T) {
	dir := t.TempDir()
	open := func() *Engine {
		e, err := openSparse(dir)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	want := func(e *Engine, n int) {
		t.Helper()
		got, err := e.Documents()
		if err != nil || got != n {
			t.Fatalf("Documents() = %d, %v; want %d", got, err, n)
		}
	}
	e := open()
	add := func(docs ...map[string]any) {
		t.Helper()
		if _, rerr := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": docs}); rerr != nil {
			t.Fatal(rerr)
		}
	}
	add(map[string]any{"id": "a", "text": "alpha"}, map[string]any{"id": "b", "text": "beta"}, map[string]any{"id": "c", "text": "gamma"})
	add(map[string]any{"id": "a", "text": "alpha again"})                                                            // upsert
	add(map[string]any{"id": "long", "text": strings.Repeat("many words in a long document. ", 400), "chunk": true}) // chunked: one document
	want(e, 4)
	if _, rerr := call(t, e, rcp.MethodIndexDelete, map[string]any{"ids": []string{"b", "nothing"}}); rerr != nil {
		t.Fatal(rerr)
	}
	want(e, 3)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open()
	want(e, 3)
	// A catalog state from before the count: no "counted", sequence 0.
	if err := e.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket([]byte("docs")).SetSequence(0); err != nil {
			return err
		}
		return tx.Bucket([]byte("catalog")).Put([]byte("state"), []byte(`{"format":2,"clean":true,"fields":""}`))
	}); err != nil {
		t.Fatal(err)
	}
	e.catalog.Settle() // keep that state through Close
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open()
	defer e.Close()
	want(e, 3)
}

// TestRepairDamagedPages: `rcpd repair` does what the refusal's hint
// promises for damaged bbolt pages, which store.CheckFile does not see
// (before, it moved nothing and the directory stayed refused). A damaged
// page of index/store.db: every readable record is salvaged into a new
// store, the damaged file and the segments are moved aside, the lost
// documents are reported exactly, and the directory opens, passes its
// checks and serves every other document. A damaged page of engine.db:
// the file is moved aside and rebuilt from the index.
func TestRepairDamagedPages(t *testing.T) {
	pristine := pageWalkDir(t)
	for _, tc := range []struct {
		file     string
		match    func(key []byte) bool
		salvaged bool
	}{
		{"index/store.db", func(k []byte) bool { return len(k) == 8 && binary.BigEndian.Uint64(k) < 1000 }, true},
		{"engine.db", func(k []byte) bool { return strings.HasPrefix(string(k), "doc") }, false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := damagedCopy(t, pristine, tc.file, tc.match)
			rep, err := Repair(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("repair: moved %v, salvaged %+v", rep.Moved, rep.Salvaged)
			if !slices.Contains(rep.Moved, tc.file) {
				t.Fatalf("moved %v, want %s among them", rep.Moved, tc.file)
			}
			var lost []string
			if tc.salvaged {
				s := rep.Salvaged
				if s == nil || len(s.Lost) != 1 || len(rep.LostDocuments) == 0 || len(rep.LostDocuments) >= 100 || s.Copied < 400 {
					t.Fatalf("salvage report %+v: want one unreadable stretch holding a few of the 400 documents", s)
				}
				lost = rep.LostDocuments
			} else if rep.Salvaged != nil {
				t.Fatalf("engine.db damage salvaged the index: %+v", rep.Salvaged)
			}
			e := openRepaired(t, dir)
			var ids []string
			for i := range 400 {
				ids = append(ids, fmt.Sprintf("doc%04d", i))
			}
			r := getDocs(t, e, ids...)
			if !slices.Equal(r.Missing, lost) || len(r.Documents) != 400-len(lost) {
				t.Fatalf("after repair %d documents served, missing %v; the report lost %v", len(r.Documents), r.Missing, lost)
			}
			if n, err := e.Documents(); err != nil || n != 400-len(lost) {
				t.Fatalf("catalog counts %d, %v; want %d", n, err, 400-len(lost))
			}
			if _, rerr := call(t, e, rcp.MethodRetrieve, map[string]any{"query": "passage subject7", "k": 3}); rerr != nil {
				t.Fatalf("after repair: retrieve: %v", rerr)
			}
		})
	}
}

// TestRepairLostManifest: index/store.db that lost its manifest but not its
// documents — the manifest deleted, or the page holding it damaged. Before,
// Open took a store without a manifest for a new index (numbering new
// documents from 1 again, over the stored ones), or refused it for its
// segments while Repair moved nothing; after a salvage that lost the
// manifest, Repair failed. Now Open refuses pointing at `rcpd repair`, and
// Repair rebuilds the manifest: the directory opens, passes its checks,
// serves every document, and a document added afterwards leaves the others
// intact.
func TestRepairLostManifest(t *testing.T) {
	pristine := pageWalkDir(t)
	for _, tc := range []struct {
		name     string
		lose     func(t *testing.T, path string)
		salvaged bool
	}{
		{"deleted", func(t *testing.T, path string) { bolttest.DeleteKey(t, path, "meta", "manifest") }, false},
		{"damaged page", func(t *testing.T, path string) { bolttest.DamageBucketRoot(t, path, "meta") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(pristine)); err != nil {
				t.Fatal(err)
			}
			tc.lose(t, filepath.Join(dir, "index", "store.db"))
			if !tc.salvaged { // (a damaged page is found by the checks after Open: TestRepairDamagedPages)
				if _, err := openSparse(dir); err == nil || !strings.Contains(err.Error(), "rcpd repair") {
					t.Fatalf("Open = %v, want a refusal pointing at rcpd repair", err)
				}
			}
			rep, err := Repair(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.ManifestRebuilt || (rep.Salvaged != nil) != tc.salvaged || len(rep.LostDocuments) != 0 || len(rep.Moved) == 0 {
				t.Fatalf("repair report %+v: want the manifest rebuilt, the segments moved, nothing lost", rep)
			}
			e := openRepaired(t, dir)
			if _, rerr := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": []any{map[string]any{"id": "new", "text": "added after the repair"}}}); rerr != nil {
				t.Fatal(rerr)
			}
			ids := []string{"new"}
			for i := range 400 {
				ids = append(ids, fmt.Sprintf("doc%04d", i))
			}
			r := getDocs(t, e, ids...)
			if len(r.Missing) != 0 || len(r.Documents) != 401 {
				t.Fatalf("after repair %d documents served, missing %v", len(r.Documents), r.Missing)
			}
			for _, d := range r.Documents {
				var i int
				if _, err := fmt.Sscanf(d.ID, "doc%d", &i); err == nil && !strings.HasPrefix(d.Text, fmt.Sprintf("passage %d about", i)) {
					t.Fatalf("document %s holds %.40q", d.ID, d.Text)
				}
			}
			if n, err := e.Documents(); err != nil || n != 401 {
				t.Fatalf("catalog counts %d, %v; want 401", n, err)
			}
		})
	}
}

// openRepaired opens the repaired dir sparse-only and waits for its checks
// after Open, which must pass; it is closed with the test.
func openRepaired(t *testing.T, dir string) *Engine {
	t.Helper()
	e, err := openSparse(dir)
	if err != nil {
		t.Fatalf("after repair: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	if err := e.Verified(context.Background()); err != nil {
		t.Fatalf("after repair the checks fail: %v", err)
	}
	return e
}

// openSparse opens dir sparse-only, without the index's background work,
// as the checks and repair tests need it.
func openSparse(dir string) (*Engine, error) {
	cfg := Config{Dir: dir, Dense: DenseNone}
	cfg.IndexOpts.NoBackground = true
	return Open(context.Background(), cfg)
}
