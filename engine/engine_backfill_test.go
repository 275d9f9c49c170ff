package engine

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/internal/derive"
	"github.com/rcpgo/rcpgo/engine/internal/integrity"
	"github.com/rcpgo/rcpgo/internal/testutil/syncbuf"
	"github.com/rcpgo/rcpgo/internal/testutil/within"
	"github.com/rcpgo/rcpgo/rcp"
)

// backfillDocs are 60 topic documents and one of two pages (chunked into
// two units, each with its parent).
func backfillDocs() []rcp.Document {
	return append(topicDocs("a", 60, 1), rcp.Document{ID: "paged", Text: "lighthouse keeper logbook\fglacier moraine crevasse"})
}

const backfillUnitCount = 62

// sparseOnlyDir returns a directory indexed by an engine with dense off.
func sparseOnlyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	e := quietEngine(t, Config{Dir: dir, Dense: DenseNone})
	if _, err := connect(t, e).IndexAdd(context.Background(), &rcp.IndexAddParams{Documents: backfillDocs()}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// denseLogged returns the dense log's record of id (ok false: none).
// loggedUnit is a unit's record in the dense log.
type loggedUnit struct{ Text, Parent string }

func denseLogged(t *testing.T, e *Engine, id string) (r loggedUnit, ok bool) {
	t.Helper()
	text, parent, ok, err := derive.Logged(e.db, id)
	if err != nil {
		t.Fatal(err)
	}
	return loggedUnit{text, parent}, ok
}

func denseRecords(t *testing.T, e *Engine) (n int, marked bool) {
	t.Helper()
	n, marked, _ = derive.LogStats(e.db)
	return n, marked
}

func denseTop(t *testing.T, c *rcp.Client, query string) string {
	t.Helper()
	res, err := c.Retrieve(context.Background(), &rcp.RetrieveParams{Query: rcp.TextQuery(query), K: 3, Mode: rcp.ModeDense})
	if err != nil {
		t.Fatalf("dense retrieve %q: %v", query, err)
	}
	if len(res.Hits) == 0 {
		t.Fatalf("dense retrieve %q: no hits", query)
	}
	return res.Hits[0].ID.String()
}

// TestDenseOnBackfillsSparseOnlyDirectory: a directory indexed with dense
// off, reopened with dense on, gets its existing units into the dense log
// in the background (chunks with their parent); the deriver then fits and
// builds, and a new session is offered dense/hybrid and finds an old
// document by its text, without a restart. Before the backfill existed
// the LSA fit failed on an empty log ("fit needs at least 2 documents")
// and an external encoder published an empty generation.
func TestDenseOnBackfillsSparseOnlyDirectory(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"lsa", Config{MinFitDocs: 40}},
		{"external", Config{Dense: DenseOpenAI, DenseProvider: &hashProvider{id: "hash", dim: 64}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Dir = sparseOnlyDir(t)
			e := quietEngine(t, cfg)
			settle(t, e)
			if n, marked := denseRecords(t, e); n != backfillUnitCount || marked {
				t.Fatalf("dense log after the backfill: %d records (want %d), mark left: %v", n, backfillUnitCount, marked)
			}
			if r, ok := denseLogged(t, e, "paged#c1"); !ok || r.Parent != "paged" || !strings.Contains(r.Text, "glacier") {
				t.Fatalf("chunk record %+v (found %v), want parent paged and its text", r, ok)
			}
			c := connect(t, e)
			if modes(c) != "dense,sparse,hybrid" {
				t.Fatalf("new session offered %q after the backfill, want dense,sparse,hybrid", modes(c))
			}
			if tc.name == "lsa" {
				// The basis keeps terms of two documents or more: the topic's.
				top := denseTop(t, c, "coral reef tide")
				var i int
				if _, err := fmt.Sscanf(top, "a%d", &i); err != nil || i%4 != 0 {
					t.Fatalf("dense top hit %q, want an old ocean document (a0, a4, ...)", top)
				}
				return
			}
			if top := denseTop(t, c, "glacier moraine crevasse"); top != "paged#c1" {
				t.Fatalf("dense top hit %q, want the old chunk paged#c1", top)
			}
			old := topicDocs("a", 60, 1)[7]
			if top := denseTop(t, c, old.Text); top != old.ID {
				t.Fatalf("dense top hit for a7's text: %q", top)
			}
		})
	}
}

// TestBackfillKeepsRacingWrite: an add committed while a backfill batch
// is between reading the index and logging what it read keeps its new
// text in the dense log (the batch holds the write lock: the add waits
// for it, and is not reverted by the batch's stale text).
func TestBackfillKeepsRacingWrite(t *testing.T) {
	dir := sparseOnlyDir(t)
	hook, inBatch, proceed := holdFirstBackfillBatch()
	e := quietEngine(t, Config{Dir: dir, Dense: DenseOpenAI, DenseProvider: &hashProvider{id: "hash", dim: 64}, backfillHook: hook})
	select {
	case <-inBatch:
	case <-time.After(2 * time.Minute):
		t.Fatal("no backfill batch started")
	}
	const fresh = "volcano magma basalt caldera obsidian"
	added := make(chan error, 1)
	c := connect(t, e)
	go func() {
		_, err := c.IndexAdd(context.Background(), &rcp.IndexAddParams{Documents: []rcp.Document{{ID: "a1", Text: fresh}}})
		added <- err
	}()
	// Give the add every chance to commit inside the batch (it must not).
	select {
	case err := <-added:
		close(proceed)
		t.Fatalf("the add finished inside a backfill batch (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(proceed)
	if err := within.Recv(t, added, "the add after the backfill batch"); err != nil {
		t.Fatal(err)
	}
	settle(t, e)
	if r, ok := denseLogged(t, e, "a1"); !ok || r.Text != fresh {
		t.Fatalf("dense log holds %q for a1, want the newest text %q", r.Text, fresh)
	}
	if top := denseTop(t, connect(t, e), fresh); top != "a1" {
		t.Fatalf("dense top hit for a1's new text: %q", top)
	}
}

// TestBackfillResumesAfterCrash: a backfill interrupted by an unclean stop
// resumes after its last committed batch at the next Open, and completes.
func TestBackfillResumesAfterCrash(t *testing.T) {
	dir := sparseOnlyDir(t)
	crashed := t.TempDir()
	batches := 0
	copied := make(chan error, 1)
	cfg := Config{Dir: dir, Dense: DenseOpenAI, DenseProvider: &hashProvider{id: "hash", dim: 64}, backfillBatch: 10,
		backfillHook: func() error {
			if batches++; batches == 3 { // two batches committed: the image of a crash now
				copied <- integrity.CopyTree(dir, crashed)
			}
			return nil
		}}
	e := quietEngine(t, cfg)
	select {
	case err := <-copied:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the backfill did not reach its third batch")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.backfillHook = nil

	var logs syncbuf.Buffer
	cfg.Dir = crashed
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	e, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	settle(t, e)
	if n, marked := denseRecords(t, e); n != backfillUnitCount || marked {
		t.Fatalf("dense log after the resumed backfill: %d records (want %d), mark left: %v", n, backfillUnitCount, marked)
	}
	if !strings.Contains(logs.String(), `msg="engine: dense log backfilled" units=42 `) {
		t.Fatalf("the resumed backfill did not log 42 units (62 less the 2 batches of 10 before the crash):\n%s", logs.String())
	}
	if top := denseTop(t, connect(t, e), "glacier moraine crevasse"); top != "paged#c1" {
		t.Fatalf("dense top hit %q, want paged#c1", top)
	}
}

// TestSparseWritesMarkTheDenseLogBehind: adds and deletes of an engine
// with dense off on a directory whose dense log was complete mark it, and
// the next Open with dense on logs the new unit and drops the deleted one.
func TestSparseWritesMarkTheDenseLogBehind(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dense := func() *Engine {
		return quietEngine(t, Config{Dir: dir, Dense: DenseOpenAI, DenseProvider: &hashProvider{id: "hash", dim: 64}})
	}
	e := dense()
	addSettled(t, e, topicDocs("a", 20, 1))
	e.Close()

	e = quietEngine(t, Config{Dir: dir, Dense: DenseNone})
	c := connect(t, e)
	if _, err := c.IndexAdd(ctx, &rcp.IndexAddParams{Documents: []rcp.Document{{ID: "late", Text: "volcano magma basalt caldera"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.IndexDelete(ctx, &rcp.IndexDeleteParams{IDs: []string{"a3"}}); err != nil {
		t.Fatal(err)
	}
	if _, marked := denseRecords(t, e); !marked {
		t.Fatal("writes with dense off left the dense log unmarked")
	}
	e.Close()

	e = dense()
	settle(t, e)
	if n, marked := denseRecords(t, e); n != 20 || marked {
		t.Fatalf("dense log: %d records (want 20), mark left: %v", n, marked)
	}
	if _, ok := denseLogged(t, e, "a3"); ok {
		t.Fatal("the unit deleted with dense off is still in the dense log")
	}
	if top := denseTop(t, connect(t, e), "volcano magma basalt caldera"); top != "late" {
		t.Fatalf("dense top hit %q, want the unit added with dense off", top)
	}
}

// TestBackfillDoesNotHoldOpen: Open returns while the backfill is held
// (an external encoder over an empty dense log no longer waits for its
// first generation when the index holds units), sessions are offered
// sparse and sparse retrieval serves; dense follows the backfill.
func TestBackfillDoesNotHoldOpen(t *testing.T) {
	dir := sparseOnlyDir(t)
	hook, inBatch, release := holdFirstBackfillBatch()
	opened := make(chan *Engine, 1)
	go func() {
		e, err := Open(context.Background(), Config{Dir: dir, Dense: DenseOpenAI, DenseProvider: &hashProvider{id: "hash", dim: 64},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), backfillHook: hook})
		if err != nil {
			t.Error(err)
		}
		opened <- e
	}()
	var e *Engine
	select {
	case e = <-opened:
	case <-time.After(2 * time.Minute):
		close(release)
		t.Fatal("Open waited for the backfill")
	}
	if e == nil {
		close(release)
		t.FailNow()
	}
	t.Cleanup(func() { e.Close() })
	within.Recv(t, inBatch, "the backfill to enter a batch")
	c := connect(t, e)
	if modes(c) != "sparse" {
		t.Errorf("session during the backfill offered %q, want sparse", modes(c))
	}
	res, err := c.Retrieve(context.Background(), &rcp.RetrieveParams{Query: rcp.TextQuery("glacier moraine"), K: 3})
	close(release)
	if err != nil || len(res.Hits) == 0 || res.Hits[0].ID.String() != "paged#c1" {
		t.Fatalf("sparse retrieve during the backfill: %v %+v", err, res)
	}
	settle(t, e)
	if modes(connect(t, e)) != "dense,sparse,hybrid" {
		t.Fatal("no dense after the backfill")
	}
}

// holdFirstBackfillBatch is a backfill hook (Config.backfillHook) that
// makes the first backfill batch stop between reading the index and
// logging what it read: inBatch is closed when it gets there, and it goes
// on once proceed is closed.
func holdFirstBackfillBatch() (hook func() error, inBatch, proceed chan struct{}) {
	inBatch, proceed = make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook = func() error {
		once.Do(func() {
			close(inBatch)
			<-proceed
		})
		return nil
	}
	return hook, inBatch, proceed
}
