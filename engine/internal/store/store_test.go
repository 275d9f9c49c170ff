package store

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/internal/testutil/within"
)

func openTest(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestDocsIDsChildrenTombstones(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	docs := []search.Document{
		{ID: "a", Title: "T", Text: "alpha", Meta: map[string]any{"k": "v"}, Source: &search.Source{URI: "file:///a"}},
		{ID: "p#0", Text: "chunk", Chunk: &search.ChunkRef{DocID: "p", Index: 0, End: 5}},
		{ID: "p#1", Text: "chunk two", Chunk: &search.ChunkRef{DocID: "p", Index: 1, Start: 5, End: 14}},
	}
	err := s.Update(ctx, func(tx *Tx) error {
		for i := range docs {
			enc, err := EncodeDoc(&docs[i], search.Facts{})
			if err != nil {
				return err
			}
			if err := tx.PutDoc(uint64(i+1), 1, &docs[i], enc); err != nil {
				return err
			}
		}
		return tx.PutManifest(Manifest{Format: 1, Epoch: "e", Version: 1, NextSeq: 4})
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(func(tx *ReadTx) error {
		m, ok, err := tx.Manifest()
		if err != nil || !ok || m.Version != 1 || m.NextSeq != 4 {
			t.Fatalf("manifest %+v %v %v", m, ok, err)
		}
		seq, ok := tx.LookupID("a")
		if !ok || seq != 1 {
			t.Fatalf("LookupID(a) = %d %v", seq, ok)
		}
		d, err := tx.Doc(seq)
		if err != nil || d.Text != "alpha" || d.Source.URI != "file:///a" || d.Meta["k"] != "v" {
			t.Fatalf("Doc = %+v %v", d, err)
		}
		if got := tx.Children("p"); !slices.Equal(got, []string{"p#0", "p#1"}) {
			t.Fatalf("Children = %q", got)
		}
		if live, stored := tx.Counts(); live != 3 || stored != 3 {
			t.Fatalf("counts %d %d", live, stored)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Kill p#0 at version 2: id and child link go, record stays until purged.
	err = s.Update(ctx, func(tx *Tx) error {
		if err := tx.Kill("p#0", 2, 2, false); err != nil {
			return err
		}
		if n, err := tx.PurgeDead(1); err != nil || len(n) != 0 {
			t.Fatalf("early purge %d %v", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.View(func(tx *ReadTx) error {
		if _, ok := tx.LookupID("p#0"); ok {
			t.Fatal("killed id still live")
		}
		if d, _ := tx.Doc(2); d == nil {
			t.Fatal("record purged too early")
		}
		if got := tx.Children("p"); !slices.Equal(got, []string{"p#1"}) {
			t.Fatalf("Children after kill = %q", got)
		}
		return nil
	})
	s.Update(ctx, func(tx *Tx) error {
		if n, err := tx.PurgeDead(2); err != nil || len(n) != 1 {
			t.Fatalf("purge %d %v", n, err)
		}
		return nil
	})
	s.View(func(tx *ReadTx) error {
		if d, _ := tx.Doc(2); d != nil {
			t.Fatal("record not purged")
		}
		var seen []uint64
		tx.ForEachDocFrom(2, func(seq uint64, d *search.Document) error { seen = append(seen, seq); return nil })
		if !slices.Equal(seen, []uint64{3}) {
			t.Fatalf("ForEachDocFrom = %v", seen)
		}
		return nil
	})
}

func TestUpdateRollsBack(t *testing.T) {
	s := openTest(t)
	boom := errors.New("boom")
	d := search.Document{ID: "x", Text: "t"}
	enc, _ := EncodeDoc(&d, search.Facts{})
	err := s.Update(context.Background(), func(tx *Tx) error {
		if err := tx.PutDoc(1, 1, &d, enc); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Update(ctx, func(tx *Tx) error { return tx.PutDoc(1, 1, &d, enc) }); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled update: %v", err)
	}
	s.View(func(tx *ReadTx) error {
		if _, ok := tx.LookupID("x"); ok {
			t.Fatal("rolled-back write visible")
		}
		return nil
	})
}

func TestEncodeCanonical(t *testing.T) {
	a := search.Document{ID: "x", Text: "t", Meta: map[string]any{"b": 1, "a": []any{"z", 2.5}}}
	b := search.Document{ID: "x", Text: "t", Meta: map[string]any{"a": []any{"z", 2.5}, "b": 1.0}}
	ea, _ := EncodeDoc(&a, search.Facts{})
	eb, _ := EncodeDoc(&b, search.Facts{})
	if string(ea) != string(eb) {
		t.Fatalf("encodings differ: %s vs %s", ea, eb)
	}
	d, err := DecodeDoc(ea)
	if err != nil || d.ID != "x" {
		t.Fatalf("DecodeDoc: %+v %v", d, err)
	}
}

// FuzzDecodeDoc: records of both formats decode or fail with ErrCorrupt,
// and what decodes re-encodes canonically.
func FuzzDecodeDoc(f *testing.F) {
	f.Add([]byte(`{"id":"x","text":"t","meta":{"a":[1,"b"]},"chunk":{"docId":"p","index":1,"start":0,"end":3}}`))
	f.Add([]byte(`{`))
	for _, tc := range codecCases() {
		enc, _ := EncodeDoc(&tc.doc, tc.f)
		f.Add(enc)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, facts, err := DecodeRecord(b, true)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		if _, _, err := DecodeRecord(b, false); err != nil {
			t.Fatalf("decodes with its text but not without: %v", err)
		}
		enc, err := EncodeDoc(d, facts)
		if err != nil {
			return // e.g. NaN cannot occur from JSON, but stay total
		}
		d2, f2, err := DecodeRecord(enc, true)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		enc2, _ := EncodeDoc(d2, f2)
		if string(enc) != string(enc2) {
			t.Fatalf("not canonical: %s vs %s", enc, enc2)
		}
	})
}

// TestRewriteRecordsLetsWritersIn: RewriteRecords computes outside the
// write transaction, so a commit made while fn runs goes through at once
// (before, bbolt's single writer lock held it for the whole batch: under
// load an add waited seconds behind a recompression), and a record that
// commit changed or deleted keeps the commit's bytes.
func TestRewriteRecordsLetsWritersIn(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	putAll(t, s, passages(3), 1)
	inFn, release := make(chan struct{}), make(chan struct{})
	type result struct {
		n   int
		err error
	}
	rewrote := make(chan result, 1)
	go func() {
		first := true
		n, err := s.RewriteRecords(ctx, func(seq uint64, _ []byte) ([]byte, error) {
			if first {
				first = false
				close(inFn)
				<-release
			}
			return []byte("rewritten"), nil
		})
		rewrote <- result{n, err}
	}()
	within.Recv(t, inFn, "the update function to start")
	committed := make(chan error, 1)
	go func() {
		committed <- s.Update(ctx, func(tx *Tx) error {
			docs := tx.tx.Bucket(bktDocs)
			if err := docs.Put(seqKey(2), append(make([]byte, 8), "concurrent"...)); err != nil {
				return err
			}
			return docs.Delete(seqKey(3))
		})
	}()
	select {
	case err := <-committed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("a commit waited for the rewrite's fn: the rewrite held the write transaction")
	}
	close(release)
	r := within.Recv(t, rewrote, "the rewrite to finish")
	if r.err != nil || r.n != 1 {
		t.Fatalf("RewriteRecords = %d, %v; want 1 record rewritten (2 changed, 3 deleted meanwhile)", r.n, r.err)
	}
	s.View(func(tx *ReadTx) error {
		for seq, want := range map[uint64]string{1: "rewritten", 2: "concurrent", 3: ""} {
			if got, _ := tx.DocBytes(seq); string(got) != want {
				t.Errorf("record %d: %q, want %q", seq, got, want)
			}
		}
		return nil
	})
}
