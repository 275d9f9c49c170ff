package index

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/internal/testutil/bolttest"
)

// TestLostManifest: a record store that lost its manifest (the page that
// held it damaged, or dropped by a salvage) but still holds documents.
// Before, Open took it for a new index — a fresh manifest numbering
// documents from 1 again, so the next add overwrote the stored document
// numbered 1 — and ResetForRebuild, which `rcpd repair` runs after a
// salvage, failed with ErrNoManifest. Now Open refuses the store with
// ErrNoManifest, and ResetForRebuild rebuilds a manifest above every
// number and version the store mentions: the index reopens with every
// document, and documents added later number after them.
func TestLostManifest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ix := openTest(t, dir, Options{NoBackground: true})
	text := map[string]string{}
	var docs []search.Document
	for i := range 30 {
		id := fmt.Sprintf("d%02d", i)
		text[id] = fmt.Sprintf("document %d about subject%d", i, i)
		docs = append(docs, search.Document{ID: id, Text: text[id]})
	}
	mustAdd(t, ix, docs...)
	text["d03"] = "document three replaced"
	mustAdd(t, ix, search.Document{ID: "d03", Text: text["d03"]})
	if _, err := ix.Delete(ctx, []string{"d05"}); err != nil {
		t.Fatal(err)
	}
	delete(text, "d05")
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	bolttest.DeleteKey(t, filepath.Join(dir, storeFile), "meta", "manifest")

	if lost, err := LostManifest(dir); err != nil || !lost {
		t.Fatalf("LostManifest = %v, %v; want true", lost, err)
	}
	if ix, err := Open(ctx, dir, Options{NoBackground: true}); !errors.Is(err, ErrNoManifest) {
		if err == nil {
			ix.Close()
		}
		t.Fatalf("Open of a store without its manifest: %v; want ErrNoManifest", err)
	}

	// What `rcpd repair` does: the segments go aside, the manifest is rebuilt.
	if err := os.RemoveAll(filepath.Join(dir, segDir)); err != nil {
		t.Fatal(err)
	}
	lost, rebuilt, err := ResetForRebuild(ctx, dir)
	if err != nil || !rebuilt || len(lost) != 0 {
		t.Fatalf("ResetForRebuild = %v, %v, %v; want nothing lost, manifest rebuilt", lost, rebuilt, err)
	}
	check := func(ix *Index, want map[string]string) {
		t.Helper()
		if got := ix.Stats().Docs; got != len(want) {
			t.Fatalf("%d documents, want %d", got, len(want))
		}
		for id, txt := range want {
			d, err := ix.Get(ctx, id)
			if err != nil || d == nil || d.Text != txt {
				t.Fatalf("Get(%s) = %+v, %v; want text %q", id, d, err, txt)
			}
		}
		if d, _ := ix.Get(ctx, "d05"); d != nil {
			t.Fatal("the deleted d05 is back")
		}
	}
	ix = openTest(t, dir, Options{NoBackground: true})
	check(ix, text)
	text["new"] = "a new document added after the repair"
	mustAdd(t, ix, search.Document{ID: "new", Text: text["new"]})
	check(ix, text)
	if got := hitIDs(mustSearch(t, ix, search.Query{Text: "subject0", K: 3})); len(got) != 1 || got[0] != "d00" {
		t.Fatalf("search subject0: %v", got)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = openTest(t, dir, Options{NoBackground: true})
	check(ix, text)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if lost, err := LostManifest(dir); err != nil || lost {
		t.Fatalf("after the repair LostManifest = %v, %v", lost, err)
	}
}
