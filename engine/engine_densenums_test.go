package engine

import (
	"context"
	"encoding/binary"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/rcp"
)

// TestDenseRecallFollowsRewrites: dense recall remembers the document
// number each vector key resolved to (keyNums) and must never serve a
// remembered number whose document has since changed. Re-adding a
// document with the same text logs no dense op (its vector and key stay)
// but gives it a new number; deleting it leaves its vector in the graph
// until the deriver applies the delete. Each answer must be the current
// document, or none.
func TestDenseRecallFollowsRewrites(t *testing.T) {
	ctx := context.Background()
	e := quietEngine(t, Config{Dense: DenseOpenAI, DenseProvider: &hashProvider{id: "hash", dim: 64}})
	docs := topicDocs("a", 40, 3)
	addSettled(t, e, docs)
	c := connect(t, e) // a session offered dense
	target := docs[0]
	dense := func() map[string]rcp.Hit {
		t.Helper()
		res, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery(target.Text), K: 40, Mode: rcp.ModeDense})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]rcp.Hit{}
		for _, h := range res.Hits {
			out[h.ID.String()] = h
		}
		return out
	}
	if _, ok := dense()[target.ID]; !ok {
		t.Fatalf("%s not recalled by its own text", target.ID)
	}
	dense() // every hit's number is remembered now

	// Same text, new metadata: a new document number, no dense op.
	target.Meta = map[string]any{"rev": "2"}
	if _, err := c.IndexAdd(ctx, &rcp.IndexAddParams{Documents: []rcp.Document{target}}); err != nil {
		t.Fatal(err)
	}
	h, ok := dense()[target.ID]
	if !ok || h.Meta["rev"] != "2" {
		t.Fatalf("after a same-text rewrite: hit %v (found %v), want the rewritten document", h.Meta, ok)
	}

	// Deleted: gone from dense recall at once, before the deriver runs.
	e.dense.Pause() // stop upkeep: the vector stays in the graph
	if _, err := c.IndexDelete(ctx, &rcp.IndexDeleteParams{IDs: []string{target.ID}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := dense()[target.ID]; ok {
		t.Fatalf("%s recalled after its deletion", target.ID)
	}
}

// TestKeyNumsBounds: keyNums grows with the keys it is given, but never
// past the highest key assigned, whatever a damaged checkpoint holds.
// TestKeyNumsWarmedAtOpen: once a reopened engine has loaded its dense
// generation, every unit key's document number is remembered before any
// query, so the first queries after a restart take no lookup path.
func TestKeyNumsWarmedAtOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := Config{Dir: dir, Dense: DenseOpenAI, DenseProvider: &hashProvider{id: "hash", dim: 64}}
	e := quietEngine(t, cfg)
	addSettled(t, e, topicDocs("a", 60, 3))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e = quietEngine(t, cfg)
	settle(t, e)
	keys := map[uint64]string{}
	if err := e.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("densekeys")).ForEach(func(k, v []byte) error {
			keys[binary.BigEndian.Uint64(k)] = string(v)
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 60 {
		t.Fatalf("%d dense keys, want 60", len(keys))
	}
	for key, id := range keys {
		want, err := e.ix.(*index.Index).Nums(ctx, []string{id})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.dense.Remembered(key); got == 0 || got != want[0] {
			t.Fatalf("key %d (%s): remembered number %d, want %d", key, id, got, want[0])
		}
	}
}
