package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/derive"
	"github.com/rcpgo/rcpgo/engine/internal/writer"
	"github.com/rcpgo/rcpgo/internal/testutil/within"
	"github.com/rcpgo/rcpgo/rcp"
)

// queuedAdd is an index/add sent from its own goroutine.
type queuedAdd struct {
	done chan struct{}
	res  rcp.IndexAddResult
	err  error
}

// enqueueAdd sends an index/add with ctx and returns once the engine has
// queued it behind want-1 earlier writes (the test holds the write lock, so
// the queue's head waits there and the others wait behind it).
func enqueueAdd(t *testing.T, e *Engine, ctx context.Context, params string, want int) *queuedAdd {
	t.Helper()
	q := &queuedAdd{done: make(chan struct{})}
	go func() {
		defer close(q.done)
		var res any
		if res, q.err = e.Call(ctx, rcp.MethodIndexAdd, []byte(params)); q.err == nil {
			b, _ := json.Marshal(res)
			q.err = json.Unmarshal(b, &q.res)
		}
	}()
	deadline := time.Now().Add(time.Minute) // a hang guard, not a timing bound
	for {
		n := e.writer.Pending()
		if n >= want {
			return q
		}
		select {
		case <-q.done:
			t.Fatalf("index/add %s returned before it was queued: %v", params, q.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("index/add %s not queued after a minute (%d queued)", params, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func (q *queuedAdd) wait(t *testing.T) (rcp.IndexAddResult, error) {
	t.Helper()
	select {
	case <-q.done:
	case <-time.After(time.Minute):
		t.Fatal("index/add did not return within a minute")
	}
	return q.res, q.err
}

func doc(id, text string) string {
	return `{"documents":[{"id":"` + id + `","text":"` + text + `"}]}`
}

// Writes queued while a commit runs are committed together, in one index
// version, and each one gets its own result.
func TestGroupCommitJoinsQueuedWrites(t *testing.T) {
	e := newEngine(t, nil)
	before := e.ix.Version()
	docsBefore := e.ix.Stats().Docs
	e.gate.LockWrites() // a commit in progress
	var adds []*queuedAdd
	for i, id := range []string{"g1", "g2", "g3", "g4", "g5"} {
		adds = append(adds, enqueueAdd(t, e, context.Background(), doc(id, "bm25 scores a document by term frequency, grouped write "+id), i+1))
	}
	e.gate.UnlockWrites()
	var version string
	for i, q := range adds {
		res, err := q.wait(t)
		if err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
		if len(res.IDs) != 1 || res.IDs[0] != []string{"g1", "g2", "g3", "g4", "g5"}[i] {
			t.Errorf("add %d: ids %v", i, res.IDs)
		}
		if i == 0 {
			version = res.IndexVersion
		} else if res.IndexVersion != version {
			t.Errorf("add %d committed at %s, add 0 at %s: want one group", i, res.IndexVersion, version)
		}
	}
	if version == before {
		t.Errorf("index version unchanged (%s)", version)
	}
	if got := e.ix.Stats().Docs; got != docsBefore+5 {
		t.Errorf("%d documents after the group, want %d", got, docsBefore+5)
	}
	settle(t, e) // the dense log holds every member's units
	found := map[string]bool{}
	for _, h := range retrieve(t, e, map[string]any{"query": "bm25 term frequency", "k": 100, "mode": "dense"}).Hits {
		found[h.ID] = true
	}
	for _, id := range []string{"g1", "g2", "g3", "g4", "g5"} {
		if !found[id] {
			t.Errorf("%s not found by dense retrieve after the group", id)
		}
	}
}

// A write to an id already in the group waits for the next group, so
// writes to one id take effect in arrival order.
func TestGroupCommitKeepsOrderPerID(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone })
	e.gate.LockWrites()
	a1 := enqueueAdd(t, e, context.Background(), doc("a", "first text"), 1)
	b := enqueueAdd(t, e, context.Background(), doc("b", "other document"), 2)
	a2 := enqueueAdd(t, e, context.Background(), doc("a", "second text"), 3)
	c := enqueueAdd(t, e, context.Background(), doc("c", "third document"), 4)
	e.gate.UnlockWrites()
	var v [4]string
	for i, q := range []*queuedAdd{a1, b, a2, c} {
		res, err := q.wait(t)
		if err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
		v[i] = res.IndexVersion
	}
	if v[0] != v[1] || v[2] != v[3] || v[0] == v[2] {
		t.Errorf("versions %v: want [a b] then [a c]", v)
	}
	if d, err := e.ix.Get(context.Background(), "a"); err != nil || d == nil || d.Text != "second text" {
		t.Fatalf("a = %+v, %v; want the second text", d, err)
	}
}

// Each member of a group is settled on its own: a write whose request ended
// while queued is not stored, a refused write fails alone, a repeated
// idempotency key replays the first result, and the rest commit.
func TestGroupCommitSettlesEachWrite(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone; c.Preload = nil })
	if _, _, err := e.writer.Write(context.Background(), []writer.Doc{{ID: "Q#c1", Text: "a user document", Source: WireSource}}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("Some words to split into several chunks here. ", 200)
	keyed := `{"documents":[{"id":"k","text":"keyed write"}],"_meta":{"idempotencyKey":"key-1"}}`

	e.gate.LockWrites()
	gone, cancel := context.WithCancel(context.Background())
	head := enqueueAdd(t, e, context.Background(), doc("head", "the head of the queue"), 1)
	ended := enqueueAdd(t, e, gone, doc("ended", "its request ended"), 2)
	conflict := enqueueAdd(t, e, context.Background(), `{"documents":[{"id":"Q","text":"`+long+`"}],"chunk":true}`, 3)
	first := enqueueAdd(t, e, context.Background(), keyed, 4)
	replay := enqueueAdd(t, e, context.Background(), keyed, 5)
	plain := enqueueAdd(t, e, context.Background(), doc("plain", "a plain write"), 6)
	cancel()
	e.gate.UnlockWrites()

	if _, err := head.wait(t); err != nil {
		t.Errorf("head: %v", err)
	}
	if _, err := ended.wait(t); !errors.Is(err, context.Canceled) {
		t.Errorf("ended request: err %v, want context.Canceled", err)
	}
	if _, err := conflict.wait(t); rcp.CodeOf(err) != rcp.CodeConflict {
		t.Errorf("chunk id conflict: err %v, want -32016", err)
	}
	r1, err1 := first.wait(t)
	r2, err2 := replay.wait(t)
	if err1 != nil || err2 != nil {
		t.Fatalf("keyed writes: %v, %v", err1, err2)
	}
	if r1.IndexVersion == "" || r2.IndexVersion != r1.IndexVersion {
		t.Errorf("repeated idempotency key: %+v then %+v, want the first result replayed", r1, r2)
	}
	if _, err := plain.wait(t); err != nil {
		t.Errorf("plain: %v", err)
	}
	for id, want := range map[string]bool{"head": true, "ended": false, "Q#c0": false, "k": true, "plain": true} {
		if d, err := e.ix.Get(context.Background(), id); err != nil || (d != nil) != want {
			t.Errorf("%s stored = %v (%v), want %v", id, d != nil, err, want)
		}
	}
	if d, err := e.ix.Get(context.Background(), "Q#c1"); err != nil || d == nil || d.Text != "a user document" {
		t.Errorf("Q#c1 = %+v, %v", d, err)
	}
}

// An identical re-add changes nothing, so it is answered without a commit:
// it returns while another write holds the write lock, at the current
// index version, and logs no dense op.
func TestIdenticalReAddSkipsTheQueue(t *testing.T) {
	e := newEngine(t, nil)
	add := func(params string) (rcp.IndexAddResult, error) {
		var out rcp.IndexAddResult
		res, err := e.Call(context.Background(), rcp.MethodIndexAdd, []byte(params))
		if err == nil {
			b, _ := json.Marshal(res)
			err = json.Unmarshal(b, &out)
		}
		return out, err
	}
	if _, err := add(doc("same", "an identical re-add writes nothing")); err != nil {
		t.Fatal(err)
	}
	version, ops := e.ix.Version(), e.dense.Seq()

	e.gate.LockWrites() // a commit in progress
	done := make(chan error, 1)
	var res rcp.IndexAddResult
	go func() {
		var err error
		res, err = add(doc("same", "an identical re-add writes nothing"))
		done <- err
	}()
	select {
	case err := <-done:
		e.gate.UnlockWrites()
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // a hang guard: it waits for the lock
		e.gate.UnlockWrites()
		within.Recv(t, done, "the identical re-add once the lock was free")
		t.Fatal("an identical re-add waited for the commit in progress")
	}
	if len(res.IDs) != 1 || res.IDs[0] != "same" || res.IndexVersion != version {
		t.Errorf("identical re-add = %+v, want id same at version %s", res, version)
	}
	if got := e.dense.Seq(); got != ops {
		t.Errorf("dense op sequence %d after the identical re-add, want %d", got, ops)
	}
	// A changed document, or a new one, is a write.
	for _, params := range []string{doc("same", "changed text"), doc("other", "a new document")} {
		res, err := add(params)
		if err != nil {
			t.Fatal(err)
		}
		if res.IndexVersion == version {
			t.Errorf("%s answered at the old version %s", params, version)
		}
		version = res.IndexVersion
	}
}

// An identical re-add behind a queued write to the same id is not answered
// early: it waits its turn, so the last write to arrive wins.
func TestIdenticalReAddKeepsOrderPerID(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone })
	if _, err := e.Call(context.Background(), rcp.MethodIndexAdd, []byte(doc("a", "first text"))); err != nil {
		t.Fatal(err)
	}
	e.gate.LockWrites()
	changed := enqueueAdd(t, e, context.Background(), doc("a", "second text"), 1)
	again := enqueueAdd(t, e, context.Background(), doc("a", "first text"), 2)
	e.gate.UnlockWrites()
	for _, q := range []*queuedAdd{changed, again} {
		if _, err := q.wait(t); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := e.ix.Get(context.Background(), "a"); err != nil || d == nil || d.Text != "first text" {
		t.Fatalf("a = %+v, %v; want the first text, written last", d, err)
	}
}

// pausingScorer is a reranker that holds each retrieve in its pipeline
// until released.
type pausingScorer struct {
	entered chan struct{}
	release chan struct{}
}

func (s pausingScorer) Score(ctx context.Context, _ string, ps []string) ([]float32, error) {
	select {
	case s.entered <- struct{}{}:
	default: // a later call: the test saw the first
	}
	<-s.release
	return make([]float32, len(ps)), nil
}
func (pausingScorer) Identity() string { return "test-blocking-scorer" }

// A commit does not wait for the retrieves already running before it writes
// engine.db, only before it changes the index; retrieves that arrive during
// the commit wait for it; the running one answers at the version it began.
func TestCommitDoesNotWaitForRunningRetrieves(t *testing.T) {
	sc := pausingScorer{entered: make(chan struct{}, 1), release: make(chan struct{})}
	e := newEngine(t, func(c *Config) { c.Reranker = sc; c.RerankMaxCandidates = 50 })
	version := e.ix.Version()
	running := goCall(e, rcp.MethodRetrieve, map[string]any{"query": "index", "k": 3, "mode": "sparse", "rerank": map[string]any{"method": "cross-encoder"}})
	within.Recv(t, sc.entered, "the retrieve to reach its rerank stage")

	add := enqueueAdd(t, e, context.Background(), doc("during", "written while a retrieve runs"), 0)
	catalogued := func() bool {
		var rec *catalog.Record
		_ = e.db.View(func(tx *bolt.Tx) error { rec = catalog.Get(tx, "during"); return nil })
		return rec != nil
	}
	deadline := time.Now().Add(time.Minute) // a hang guard, not a timing bound
	for !catalogued() {
		if time.Now().After(deadline) {
			close(sc.release)
			t.Fatal("the commit did not write engine.db while a retrieve was running")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-add.done:
		t.Fatal("the add changed the index while a retrieve was running")
	default:
	}
	arrived := goCall(e, rcp.MethodRetrieve, map[string]any{"query": "written while", "k": 3, "mode": "sparse"})
	close(sc.release)
	a := within.Recv(t, running, "the running retrieve after its rerank was released")
	if err := a.fault(); err != nil {
		t.Fatal(err)
	}
	var res rcp.RetrieveResult
	if err := json.Unmarshal(a.res, &res); err != nil {
		t.Fatal(err)
	}
	if res.IndexVersion != version {
		t.Errorf("the running retrieve answered at %s, want %s (where it began)", res.IndexVersion, version)
	}
	if r, err := add.wait(t); err != nil || r.IndexVersion == version {
		t.Fatalf("add: %+v, %v", r, err)
	}
	if err := within.Recv(t, arrived, "the retrieve that arrived during the commit").fault(); err != nil {
		t.Fatal(err)
	}
}

// An add's engine.db commit and its index commit run at once: the index
// publishes the write while engine.db's transaction is still open (before,
// engine.db committed first, so a group commit cost two durable round
// trips one after the other).
func TestAddCommitsOverlap(t *testing.T) {
	e := newEngine(t, nil)
	v0 := e.ix.Version()
	overlapped := make(chan bool, 1)
	e.writer.Hooks.CatalogCommit = func() error {
		deadline := time.Now().Add(30 * time.Second) // a hang guard, not a timing bound
		for e.ix.Version() == v0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		select {
		case overlapped <- e.ix.Version() != v0:
		default:
		}
		return nil
	}
	t.Cleanup(func() { e.writer.Hooks.CatalogCommit = nil })
	addDocs(t, e, map[string]any{"documents": []any{map[string]any{"id": "o1", "text": "overlapping commits"}}})
	if !<-overlapped {
		t.Fatal("the index did not commit while engine.db's transaction was open")
	}
}

// When an add's engine.db commit fails after its index commit succeeded,
// the add reports the error and the catalog is behind the index: every
// later write names that document again, so the next Open reconciles it
// even though later adds replaced the index's write names.
func TestCatalogBehindAfterAFailedCatalogCommit(t *testing.T) {
	ctx := context.Background()
	cfg := Config{Dir: t.TempDir(), Dense: DenseLSA, MinFitDocs: 1 << 20, Logger: slog.New(slog.DiscardHandler)}
	cfg.IndexOpts.NoBackground = true
	e, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	addDocs(t, e, map[string]any{"documents": []any{map[string]any{"id": "a", "text": "alpha"}}})
	e.writer.Hooks.CatalogCommit = func() error { return errors.New("injected engine.db failure") }
	_, err = e.Call(ctx, rcp.MethodIndexAdd, []byte(doc("x", "xylophone")))
	e.writer.Hooks.CatalogCommit = nil
	if err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("index/add with a failing engine.db commit: %v, want the injected error", err)
	}
	addDocs(t, e, map[string]any{"documents": []any{map[string]any{"id": "y", "text": "yodel"}}})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err = Open(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got, want := refIDs(listAll(t, e, "", 10)), []string{"a", "x", "y"}; !slices.Equal(got, want) {
		t.Errorf("catalog lists %v after reopening, the index holds %v", got, want)
	}
	if _, _, ok, err := derive.Logged(e.db, "x"); err != nil || !ok {
		t.Errorf("the dense log lacks x, which the index holds (%v)", err)
	}
}
