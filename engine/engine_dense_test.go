package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/embed/lsa"
	"github.com/rcpgo/rcpgo/engine/internal/derive"
	"github.com/rcpgo/rcpgo/engine/internal/integrity"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp"
)

// topicDocs generates n documents over a few topics, so an LSA basis has
// structure to find.
func topicDocs(prefix string, n int, seed uint64) []rcp.Document {
	topics := [][]string{
		{"ocean", "tide", "wave", "coral", "reef", "salt", "current", "fish"},
		{"engine", "piston", "fuel", "torque", "gear", "exhaust", "valve", "crank"},
		{"garden", "soil", "seed", "bloom", "compost", "root", "leaf", "water"},
		{"market", "price", "stock", "trade", "bond", "yield", "broker", "share"},
	}
	r := rand.New(rand.NewPCG(seed, 5))
	out := make([]rcp.Document, n)
	for i := range out {
		words := topics[i%len(topics)]
		var b strings.Builder
		for j := range 12 {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		out[i] = rcp.Document{ID: fmt.Sprintf("%s%d", prefix, i), Text: b.String()}
	}
	return out
}

func quietEngine(t testing.TB, cfg Config) *Engine {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func connect(t *testing.T, e *Engine) *rcp.Client {
	t.Helper()
	c, err := rcp.ConnectInProcess(context.Background(), rcp.NewServer(e, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func modes(c *rcp.Client) string { return strings.Join(c.Capabilities().Retrieve.Modes, ",") }

func identity(c *rcp.Client) string {
	if e := c.Capabilities().Embed; e != nil {
		return e.Identity
	}
	return ""
}

func errCode(err error) rcp.Code {
	var re *rcp.Error
	if errors.As(err, &re) {
		return re.Code
	}
	return 0
}

// TestDenseGoesLiveWithoutRestart (issue 15, acceptance 2 at small scale):
// an engine started empty fits its LSA basis in the background once the
// corpus reaches MinFitDocs, and a new session is offered dense/hybrid and
// the new embed.identity without a restart; a session negotiated before
// keeps its sparse-only capabilities. After the corpus doubles the basis is
// refitted: sessions of the old identity keep their generation, new
// sessions get the new identity.
func TestDenseGoesLiveWithoutRestart(t *testing.T) {
	ctx := context.Background()
	e := quietEngine(t, Config{MinFitDocs: 40})
	early := connect(t, e)
	if modes(early) != "sparse" || identity(early) != "" {
		t.Fatalf("empty engine offers %q identity %q", modes(early), identity(early))
	}
	add := func(c *rcp.Client, docs []rcp.Document) {
		t.Helper()
		start := time.Now()
		if _, err := c.IndexAdd(ctx, &rcp.IndexAddParams{Documents: docs}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("index/add of %d documents took %v", len(docs), d)
		}
	}
	add(early, topicDocs("a", 60, 1))
	settle(t, e)
	first := e.DenseIdentity()
	if !strings.HasPrefix(first, "lsa-") {
		t.Fatalf("no generation published after the corpus reached MinFitDocs: %q", first)
	}
	fresh := connect(t, e)
	if modes(fresh) != "dense,sparse,hybrid" || identity(fresh) != first {
		t.Fatalf("new session offered %q identity %q, want dense/sparse/hybrid under %q", modes(fresh), identity(fresh), first)
	}
	res, err := fresh.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("coral reef tide"), K: 3, Mode: rcp.ModeDense})
	if err != nil || len(res.Hits) == 0 || !strings.HasPrefix(res.Hits[0].ID.String(), "a") {
		t.Fatalf("dense retrieve in the new session: %v %+v", err, res)
	}
	// The early session keeps what it negotiated: sparse only.
	if modes(early) != "sparse" {
		t.Fatalf("early session's capabilities changed: %q", modes(early))
	}
	if _, err := early.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("coral"), K: 3, Mode: rcp.ModeDense}); errCode(err) != rcp.CodeOptionUnsupported {
		t.Fatalf("dense in the early session: %v, want -32005", err)
	}
	if res, err := early.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("coral"), K: 3}); err != nil || len(res.Hits) == 0 {
		t.Fatalf("sparse in the early session: %v", err)
	}

	// Doubling the corpus refits the basis.
	add(fresh, topicDocs("b", 80, 2))
	settle(t, e)
	second := e.DenseIdentity()
	if second == first || !strings.HasPrefix(second, "lsa-") {
		t.Fatalf("no refit after the corpus doubled: %q", second)
	}
	// A session of the replaced identity keeps its generation (issue 31;
	// TestRefitsDuringDenseRun, TestDroppedGenerationReinitializes).
	if res, err := fresh.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("coral"), K: 3, Mode: rcp.ModeHybrid}); err != nil || len(res.Hits) == 0 {
		t.Fatalf("hybrid under a replaced identity: %v", err)
	}
	if res, err := fresh.Embed(ctx, &rcp.EmbedParams{Inputs: rcp.TextInputs("coral")}); err != nil || res.Dimension != fresh.Capabilities().Embed.Dimension {
		t.Fatalf("embed under a replaced identity: %v", err)
	}
	if res, err := fresh.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("coral"), K: 3}); err != nil || len(res.Hits) == 0 {
		t.Fatalf("sparse under a replaced identity: %v", err)
	}
	late := connect(t, e)
	if identity(late) != second {
		t.Fatalf("late session identity %q, want %q", identity(late), second)
	}
	res, err = late.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("piston torque"), K: 3, Mode: rcp.ModeDense})
	if err != nil || len(res.Hits) == 0 {
		t.Fatalf("dense retrieve in the late session: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(e.cfg.Dir, "dense"))
	if len(ents) != 1 {
		t.Fatalf("dense/ holds %d generations after the refit, want 1", len(ents))
	}
}

// TestDenseRestart (issue 15, acceptance 1 in miniature): a restart loads
// the checkpointed HNSW index instead of re-embedding the corpus; after an
// unclean stop only the writes acknowledged after the last checkpoint are
// embedded again, in the background, and Open does not wait for them.
func TestDenseRestart(t *testing.T) {
	dir := t.TempDir()
	open := func(dir string, p *hashProvider) *Engine {
		t.Helper()
		return quietEngine(t, Config{Dir: dir, Dense: DenseOpenAI, DenseProvider: p, Fields: demoFields, Preload: demoPreload(t)})
	}
	a := &hashProvider{id: "hash", dim: 64}
	e := open(dir, a)
	if got := a.calls.Load(); got != 40 {
		t.Fatalf("first open embedded %d texts, want the 40 preloaded", got)
	}
	var add rcp.IndexAddParams
	add.Documents = append(add.Documents, topicDocs("late", 5, 9)...)
	if _, rerr := call(t, e, rcp.MethodIndexAdd, add); rerr != nil {
		t.Fatal(rerr)
	}
	settle(t, e)
	// An unclean stop: the directory as it is now, with the 5 late writes
	// applied in memory but not checkpointed.
	crashed := t.TempDir()
	if err := integrity.CopyTree(dir, crashed); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	clean := &hashProvider{id: "hash", dim: 64}
	e = open(dir, clean)
	res, rerr := call(t, e, rcp.MethodRetrieve, `{"query":"coral reef tide","k":3,"mode":"dense"}`)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var r rcp.RetrieveResult
	if err := json.Unmarshal(res, &r); err != nil || len(r.Hits) == 0 || !strings.HasPrefix(r.Hits[0].ID.String(), "late") {
		t.Fatalf("dense retrieve right after a clean restart: %s", res)
	}
	settle(t, e)
	if got := clean.calls.Load(); got != 1 { // the query
		t.Fatalf("clean restart embedded %d texts, want only the query", got)
	}

	replay := &hashProvider{id: "hash", dim: 64}
	e = open(crashed, replay)
	settle(t, e)
	if got := replay.calls.Load(); got != 5 {
		t.Fatalf("restart after an unclean stop embedded %d texts, want the 5 written after the checkpoint", got)
	}
	res, rerr = call(t, e, rcp.MethodRetrieve, `{"query":"coral reef tide","k":3,"mode":"dense"}`)
	if rerr != nil || !strings.Contains(string(res), `"late`) {
		t.Fatalf("replayed units not found: %s %v", res, rerr)
	}
	ents, _ := os.ReadDir(derive.GenerationDir(crashed, 1))
	if len(ents) != 1 {
		t.Fatalf("generation 1 holds %d files, want one checkpoint", len(ents))
	}
}

// TestRestartServesWhileDenseLoads (issue 15, acceptance 1): Open returns
// without loading the published LSA model or its checkpoint; new sessions
// are offered dense/hybrid under the published identity at once, sparse
// serves at once, and a dense retrieve that arrives while the generation
// is still loading waits for it — returning what it returns after the
// load — or fails with its deadline; it never answers from a partial
// index. A model damaged on disk is detected by that load and never
// serves: the generation is withdrawn and rebuilt.
func TestRestartServesWhileDenseLoads(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := quietEngine(t, Config{Dir: dir, MinFitDocs: 40})
	if _, rerr := call(t, e, rcp.MethodIndexAdd, rcp.IndexAddParams{Documents: topicDocs("a", 60, 1)}); rerr != nil {
		t.Fatal(rerr)
	}
	settle(t, e)
	published := e.DenseIdentity()
	query := &rcp.RetrieveParams{Query: rcp.TextQuery("coral reef tide"), K: 5, Mode: rcp.ModeHybrid}
	want, err := connect(t, e).Retrieve(ctx, query)
	if err != nil || len(want.Hits) == 0 {
		t.Fatalf("hybrid before the restart: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	hold := make(chan struct{})
	e = quietEngine(t, Config{Dir: dir, MinFitDocs: 40, holdDenseLoad: hold})
	c := connect(t, e)
	if modes(c) != "dense,sparse,hybrid" || identity(c) != published {
		t.Fatalf("session during the load offered %q identity %q, want dense/sparse/hybrid under %q", modes(c), identity(c), published)
	}
	if res, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("coral"), K: 3}); err != nil || len(res.Hits) == 0 {
		t.Fatalf("sparse during the load: %v", err)
	}
	// A call whose deadline would pass during the load is answered before
	// it: -32010, retryable, with retryAfterMs (issue 31).
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = c.Retrieve(short, query)
	var re *rcp.Error
	if !errors.As(err, &re) || re.Code != rcp.CodeBackendUnavailable || !re.Retryable() || re.Data.RetryAfterMs == nil || short.Err() != nil {
		t.Fatalf("hybrid whose deadline passes during the load: %v, want -32010 retryable with retryAfterMs before the deadline", err)
	}
	type answer struct {
		res *rcp.RetrieveResult
		err error
	}
	waiting := make(chan answer, 1)
	go func() {
		res, err := c.Retrieve(ctx, query)
		waiting <- answer{res, err}
	}()
	select {
	case a := <-waiting:
		t.Fatalf("hybrid answered while the dense index was not loaded: %+v %v", a.res, a.err)
	case <-time.After(50 * time.Millisecond):
	}
	close(hold)
	got := <-waiting
	if got.err != nil || !sameHits(got.res, want) {
		t.Fatalf("hybrid that waited for the load: %v %+v, want %+v", got.err, got.res, want)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	// Damage the model's body: the load refuses it.
	model, _ := derive.Files(derive.GenerationDir(dir, 1))
	data, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	if err := os.WriteFile(model, data, 0o600); err != nil {
		t.Fatal(err)
	}
	hold = make(chan struct{})
	e = quietEngine(t, Config{Dir: dir, MinFitDocs: 40, holdDenseLoad: hold})
	c = connect(t, e) // offered the published identity: the load has not run
	close(hold)
	res, err := c.Retrieve(ctx, query)
	if err == nil && !sameHits(res, want) || err != nil && errCode(err) != rcp.CodeBackendUnavailable {
		t.Fatalf("hybrid over a damaged model: %v %+v, want the same hits from a rebuilt index or -32010", err, res)
	}
	settle(t, e)
	if e.DenseIdentity() == "" || e.published().N() == 1 {
		t.Fatalf("damaged generation not rebuilt: identity %q", e.DenseIdentity())
	}
	if res, err := connect(t, e).Retrieve(ctx, query); err != nil || !sameHits(res, want) {
		t.Fatalf("hybrid after the rebuild: %v %+v", err, res)
	}
}

// sameHits reports whether two results rank the same ids with the same
// scores.
func sameHits(a, b *rcp.RetrieveResult) bool {
	if len(a.Hits) != len(b.Hits) {
		return false
	}
	for i := range a.Hits {
		if a.Hits[i].ID != b.Hits[i].ID || a.Hits[i].Score != b.Hits[i].Score {
			return false
		}
	}
	return true
}

// A crash between the dense log's commit and the index's leaves the log
// naming a unit the index never got (the write was not acknowledged). The
// next Open, rebuilding the catalog it cannot trust, drops that record, so
// the unit is neither embedded nor a RAPTOR leaf (TestGraphTreeMemoryCrashSafety
// found a caught-up tree with one leaf more than the index had units).
func TestOpenPrunesUnacknowledgedDenseRecords(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, Dense: DenseOpenAI, DenseProvider: &hashProvider{id: "hash", dim: 64}, Fields: demoFields, Preload: demoPreload(t)}
	e := quietEngine(t, cfg)
	settle(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// What such a crash leaves behind: a dense record the index lacks and a
	// catalog not marked clean.
	db, err := bolt.Open(filepath.Join(dir, "engine.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := derive.OpenLog(tx).Put(derive.NewUnit(&search.Document{ID: "ghost", Text: "a write the index never acknowledged"})); err != nil {
			return err
		}
		return tx.Bucket([]byte("catalog")).Delete([]byte("state")) // the catalog's state: rebuilt at Open
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	e = quietEngine(t, cfg)
	settle(t, e)
	_, _, ghost, _ := derive.Logged(e.db, "ghost")
	_, _, kept, _ := derive.Logged(e.db, demoPreload(t)[0].ID)
	if ghost || !kept {
		t.Fatalf("after the reopen: ghost record present %v, a live unit's record present %v", ghost, kept)
	}
}

// TestLSAFitSample (issue 15, acceptance 1): above Config.LSAFitSample the
// LSA basis is fitted on a deterministic uniform sample of about that many
// units, every unit is still embedded, and the doubling schedule counts the
// corpus the basis was fitted at, not the sample: a reopen does not refit
// the basis, and neither does the deriver until the corpus doubles.
func TestLSAFitSample(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := Config{Dir: dir, MinFitDocs: 20, LSAFitSample: 60}
	e := quietEngine(t, cfg)
	c := connect(t, e)
	if _, err := c.IndexAdd(ctx, &rcp.IndexAddParams{Documents: topicDocs("s", 400, 3)}); err != nil {
		t.Fatal(err)
	}
	settle(t, e)
	g := e.published()
	if g == nil {
		t.Fatal("no generation published")
	}
	// Binomial(400, 60/400): 60 ± 7; ±30 is over four standard deviations.
	if n := g.Model().(*lsa.Model).NumDocs(); n < 30 || n > 90 {
		t.Fatalf("basis fitted on %d units, want a sample of about 60", n)
	}
	if g.FitUnits() != 400 || g.Units() != 400 {
		t.Fatalf("fitted at %d units with %d vectors, want 400 and 400", g.FitUnits(), g.Units())
	}
	id := e.DenseIdentity()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = quietEngine(t, cfg)
	settle(t, e)
	if got := e.DenseIdentity(); got != id {
		t.Fatalf("reopen refitted the basis: %q, was %q", got, id)
	}
	if g := e.published(); g == nil || g.N() != 1 || g.FittedAt() != 400 {
		t.Fatalf("after reopen: generation %+v, want generation 1 fitted at 400", g)
	}
}

// TestDenseCheckpointDamage (issue 15, acceptance 1): the checkpoint is
// mapped and its blocks checked as they are read, so a restart does not
// read it whole; a block damaged on disk is still never served — a
// retrieve that reads it fails, the background verification withdraws the
// generation, and it is rebuilt with the same answers.
func TestDenseCheckpointDamage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := quietEngine(t, Config{Dir: dir, MinFitDocs: 40})
	if _, rerr := call(t, e, rcp.MethodIndexAdd, rcp.IndexAddParams{Documents: topicDocs("a", 60, 1)}); rerr != nil {
		t.Fatal(rerr)
	}
	settle(t, e)
	query := &rcp.RetrieveParams{Query: rcp.TextQuery("coral reef tide"), K: 5, Mode: rcp.ModeDense}
	want, err := connect(t, e).Retrieve(ctx, query)
	if err != nil || len(want.Hits) == 0 {
		t.Fatalf("dense before the restart: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	_, paths := derive.Files(derive.GenerationDir(dir, 1))
	if len(paths) != 1 {
		t.Fatalf("checkpoints %v", paths)
	}
	path := paths[0]
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The vectors end 4 bytes per block plus 4 before the end of the file.
	data[len(data)-4*(60/4)-4-64] ^= 0x20
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	e = quietEngine(t, Config{Dir: dir, MinFitDocs: 40, holdDenseLoad: hold})
	c := connect(t, e)
	close(hold)
	res, err := c.Retrieve(ctx, query)
	if err == nil && !sameHits(res, want) || err != nil && errCode(err) != rcp.CodeBackendUnavailable {
		t.Fatalf("dense over a damaged checkpoint: %v %+v, want -32010 or %+v from a rebuilt index", err, res, want)
	}
	settle(t, e)
	if g := e.published(); g == nil || g.N() == 1 {
		t.Fatal("damaged generation not rebuilt")
	}
	if res, err := connect(t, e).Retrieve(ctx, query); err != nil || !sameHits(res, want) {
		t.Fatalf("dense after the rebuild: %v %+v", err, res)
	}
}
