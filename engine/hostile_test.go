package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/internal/writer"
	"github.com/rcpgo/rcpgo/internal/testutil/within"
	"github.com/rcpgo/rcpgo/rcp"
)

func words(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("q" + strconv.Itoa(i) + " ")
	}
	return b.String()
}

// Oversized queries are refused with -32602 (field query) before any
// analysis; a query within the byte cap but over the distinct-term cap too.
func TestQueryCaps(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone })
	cases := []struct {
		name  string
		query string
		code  rcp.Code
	}{
		{"at the term cap", words(MaxQueryTerms), 0},
		{"over the term cap", words(MaxQueryTerms + 1), rcp.CodeInvalidParams},
		{"over the byte cap", strings.Repeat("bm25 ", MaxQueryBytes/5+1), rcp.CodeInvalidParams},
		{"10 MB", strings.Repeat("x", 10<<20), rcp.CodeInvalidParams},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, rerr := call(t, e, rcp.MethodRetrieve, map[string]any{"query": tc.query, "k": 3})
			switch {
			case tc.code == 0 && rerr != nil:
				t.Fatalf("error %v", rerr)
			case tc.code != 0 && (rerr == nil || rerr.Code != tc.code || rerr.Data == nil || rerr.Data.Field != "query"):
				t.Fatalf("got %+v, want code %d field query", rerr, tc.code)
			}
			// Decoding 10 MB of JSON takes its time; analysing it (what
			// the caps prevent) took minutes.
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// A cancelled retrieve stops promptly (the analysis and
// scoring loops check the context).
func TestRetrieveHonoursCancel(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	_, err := e.Call(ctx, rcp.MethodRetrieve, []byte(`{"query":"`+words(MaxQueryTerms)+`","k":3}`))
	if err == nil {
		t.Fatal("a retrieve already cancelled succeeded")
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("a retrieve already cancelled ran %v", d)
	}
}

// Deleting the data directory under a running engine fails writes with
// -32010 and makes Health report it (item 13: index/add was still
// acknowledged as durable).
func TestDataDirDeletedWhileRunning(t *testing.T) {
	dir := t.TempDir()
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone; c.Dir = dir; c.Preload = nil })
	if _, rerr := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": []any{map[string]any{"id": "a", "text": "alpha"}}}); rerr != nil {
		t.Fatal(rerr)
	}
	if err := e.Health(); err != nil {
		t.Fatalf("healthy engine: %v", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := e.Health(); err == nil {
		t.Fatal("Health is nil after the data directory was deleted")
	}
	_, rerr := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": []any{map[string]any{"id": "b", "text": "beta"}}})
	if rerr == nil || rerr.Code != rcp.CodeBackendUnavailable {
		t.Fatalf("index/add into a deleted directory: %+v, want -32010", rerr)
	}
	_, rerr = call(t, e, rcp.MethodIndexDelete, map[string]any{"ids": []string{"a"}})
	if rerr == nil || rerr.Code != rcp.CodeBackendUnavailable {
		t.Fatalf("index/delete into a deleted directory: %+v, want -32010", rerr)
	}
}

// Chunked adds are linear in the text (item 7: 0.5 MB 0.8 s, 2 MB 3.9 s,
// 4 MB 9.7 s; the character offsets of every chunk were counted from the
// start of the text).
func TestChunkedAddIsLinear(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone; c.Preload = nil })
	add := func(id string, mb float64) time.Duration {
		text := strings.Repeat("A sentence about nothing in particular. ", int(mb*(1<<20)/40))
		start := processCPU()
		if _, rerr := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": []any{map[string]any{"id": id, "text": text}}, "chunk": true}); rerr != nil {
			t.Fatal(rerr)
		}
		return processCPU() - start
	}
	add("warm", 0.05)
	small, big := add("small", 0.25), add("big", 4)
	t.Logf("chunked add: 0.25 MB %v, 4 MB %v of CPU", small, big)
	if ratio := float64(big) / float64(small); ratio > 48 { // 16× the text; quadratic: 256×
		t.Errorf("16× the text took %.1f× the time (%v vs %v)", ratio, big, small)
	}
}

// Ids of the chunk form <id>#c<n> are refused (item 10: adding P#c0 made
// chunk 0 of P unretrievable; chunking Q deleted a document Q#c1), and so
// are ids with unpaired surrogates (they decoded to U+FFFD and collided).
func TestReservedAndInvalidIDs(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone; c.Preload = nil })
	for _, tc := range []struct{ name, doc string }{
		{"chunk form", `{"id":"P#c0","text":"x"}`},
		{"chunk form 12", `{"id":"a#b#c12","text":"x"}`},
		{"lone high surrogate", `{"id":"a\ud800b","text":"x"}`},
		{"lone low surrogate", `{"id":"\udc00","text":"x"}`},
		{"reversed pair", `{"id":"\udc00\ud800","text":"x"}`},
	} {
		_, rerr := call(t, e, rcp.MethodIndexAdd, `{"documents":[`+tc.doc+`]}`)
		if rerr == nil || rerr.Code != rcp.CodeInvalidParams || rerr.Data == nil || rerr.Data.Field != "documents[0].id" {
			t.Errorf("%s: %+v, want -32602 documents[0].id", tc.name, rerr)
		}
	}
	for _, id := range []string{`"P#c"`, `"P#cx"`, `"#c1"`, `"P#c01"`, `"\ud83d\ude00"`, `"a\\ud800"`} {
		if _, rerr := call(t, e, rcp.MethodIndexAdd, `{"documents":[{"id":`+id+`,"text":"x"}]}`); rerr != nil {
			t.Errorf("id %s refused: %v", id, rerr)
		}
	}
}

// A user document stored under a chunk-form id by an older version is not
// silently replaced when its would-be parent is chunked: -32016.
func TestChunkIDCollisionWithLegacyDocument(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone; c.Preload = nil })
	// what an older rcpd accepted
	if _, _, err := e.writer.Write(context.Background(), []writer.Doc{{ID: "Q#c1", Text: "a user document", Source: WireSource}}); err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("Some words to split into several chunks here. ", 200)
	_, rerr := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": []any{map[string]any{"id": "Q", "text": text}}, "chunk": true})
	if rerr == nil || rerr.Code != rcp.CodeConflict {
		t.Fatalf("chunking Q over a document Q#c1: %+v, want -32016", rerr)
	}
	if d, err := e.ix.Get(context.Background(), "Q#c1"); err != nil || d == nil || d.Text != "a user document" {
		t.Fatalf("Q#c1 = %+v, %v", d, err)
	}
}

// k is an integer however it is spelled (§4.6), clamped to maxK (item 15).
func TestKSpellings(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone })
	for _, k := range []string{"5", "5.0", "1E2", "1e1", "1e15"} {
		if _, rerr := call(t, e, rcp.MethodRetrieve, `{"query":"bm25","k":`+k+`}`); rerr != nil {
			t.Errorf("k %s: %v", k, rerr)
		}
	}
	for _, k := range []string{"5.5", "0", "-1", "1e300", `"5"`} {
		if _, rerr := call(t, e, rcp.MethodRetrieve, `{"query":"bm25","k":`+k+`}`); rerr == nil || rerr.Code != rcp.CodeInvalidParams || rerr.Data.Field != "k" {
			t.Errorf("k %s: %+v, want -32602 k", k, rerr)
		}
	}
	_, rerr := call(t, e, rcp.MethodRetrieve, `{"query":"bm25","k":5,"candidateK":1.5}`)
	if rerr == nil || rerr.Data == nil || rerr.Data.Field != "candidateK" {
		t.Errorf("candidateK 1.5: %+v, want field candidateK", rerr)
	}
	if _, rerr := call(t, e, rcp.MethodRetrieve, `{"query":"bm25","k":5,"candidateK":2E2}`); rerr != nil {
		t.Errorf("candidateK 2E2: %v", rerr)
	}
}

func TestStorageErrorNamesFullDisk(t *testing.T) {
	e := &Engine{log: slog.New(slog.DiscardHandler)}
	err := e.rpcError(context.Background(), rcp.MethodIndexAdd, fmt.Errorf("engine: %w", &os.PathError{Op: "write", Path: "store.db", Err: syscall.ENOSPC}))
	re, ok := rcp.AsError(err)
	if !ok || re.Code != rcp.CodeBackendUnavailable || !strings.Contains(re.Message, "no space left") || !re.Retryable() {
		t.Fatalf("%v", err)
	}
}

// Repair moves aside what stops Open and nothing else; the directory then
// opens (item 11/12: an explicit recovery path).
func TestRepair(t *testing.T) {
	dir := t.TempDir()
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone; c.Dir = dir; c.Preload = nil })
	if _, rerr := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": []any{map[string]any{"id": "a", "text": "alpha"}}}); rerr != nil {
		t.Fatal(rerr)
	}
	if err := e.ix.(*index.Index).Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if rep, err := Repair(dir); err != nil || len(rep.Moved) != 0 || rep.Salvaged != nil {
		t.Fatalf("a sound directory: %+v, %v", rep, err)
	}
	if err := os.Remove(filepath.Join(dir, "index", "store.db")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "engine.db"), []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), Config{Dir: dir, Dense: DenseNone})
	if err == nil || !strings.Contains(err.Error(), "rcpd repair") {
		t.Fatalf("Open = %v, want a refusal pointing at rcpd repair", err)
	}
	rep, err := Repair(dir)
	if err != nil {
		t.Fatal(err)
	}
	moved := rep.Moved
	if len(moved) < 2 || moved[0] != "engine.db" {
		t.Fatalf("moved %v", moved)
	}
	for _, m := range moved {
		matches, _ := filepath.Glob(filepath.Join(dir, "quarantine-*", m))
		if len(matches) != 1 {
			t.Errorf("%s is not in the quarantine", m)
		}
	}
	e2, err := Open(context.Background(), Config{Dir: dir, Dense: DenseNone})
	if err != nil {
		t.Fatalf("after repair: %v", err)
	}
	e2.Close()
}

// gateCtx pauses the first cancellation check made from inside a given
// function (a name in the goroutine's stack) until released: a
// deterministic way to hold a request in one phase of its work.
type gateCtx struct {
	context.Context
	in      string
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

func newGateCtx(in string) *gateCtx {
	return &gateCtx{Context: context.Background(), in: in, reached: make(chan struct{}), release: make(chan struct{})}
}

func (g *gateCtx) Err() error {
	if strings.Contains(string(debug.Stack()), g.in) {
		g.once.Do(func() { close(g.reached); <-g.release })
	}
	return g.Context.Err()
}

// While a chunked add is being chunked or analysed, it does not hold the
// write path: a 1-document add completes meanwhile (item 7: one waited
// 7.7 s behind a 4 MB chunked add).
func TestAddPreparesOutsideTheWriteLock(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone; c.Preload = nil })
	text := strings.Repeat("A sentence about nothing in particular. ", 20000) // 800 kB
	big := json.RawMessage(`{"documents":[{"id":"big","text":"` + text + `"}],"chunk":true}`)
	for i, phase := range []string{"engine/chunk.SplitContext", "engine/index.prepareAll"} {
		gate := newGateCtx(phase)
		bigDone := make(chan error, 1)
		go func() { _, err := e.Call(gate, rcp.MethodIndexAdd, big); bigDone <- err }()
		select {
		case <-gate.reached:
		case err := <-bigDone:
			t.Fatalf("%s: the chunked add ended (%v) without passing a cancellation check there", phase, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the chunked add never reached it", phase)
		}
		smallDone := goCall(e, rcp.MethodIndexAdd, map[string]any{"documents": []any{map[string]any{"id": fmt.Sprint("small", i), "text": "a small document"}}})
		select {
		case a := <-smallDone:
			if err := a.fault(); err != nil {
				t.Errorf("%s: small add: %v", phase, err)
			}
			close(gate.release)
		case <-time.After(10 * time.Second):
			t.Errorf("%s: a 1-document add waited > 10 s on a chunked add paused there: it holds the write lock", phase)
			close(gate.release)
			within.Recv(t, smallDone, "the 1-document add once the chunked add went on")
		}
		if err := within.Recv(t, bigDone, "the chunked add"); err != nil {
			t.Fatalf("%s: chunked add: %v", phase, err)
		}
	}
}

// Measured: how long 1-document adds wait while a 4 MB chunked add runs.
// Only its commit (two durable writes of the 4 MB text and its chunks,
// and the in-memory segment) holds the write path.
func TestSmallAddBesideChunkedAdd(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone; c.Preload = nil })
	text := strings.Repeat("A sentence about nothing in particular. ", 4<<20/40) // 4 MB
	began := time.Now()
	bigAdd := goCall(e, rcp.MethodIndexAdd, map[string]any{"documents": []any{map[string]any{"id": "big", "text": text}}, "chunk": true})
	var worst time.Duration
	n := 0
	var big time.Duration
	deadline := time.Now().Add(within.Patience)
	for big == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the 4 MB chunked add did not finish within %v", within.Patience)
		}
		start := time.Now()
		if _, rerr := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": []any{map[string]any{"id": fmt.Sprint("small", n), "text": "a small document"}}}); rerr != nil {
			t.Fatal(rerr)
		}
		worst, n = max(worst, time.Since(start)), n+1
		select {
		case a := <-bigAdd:
			if err := a.fault(); err != nil {
				t.Fatal(err)
			}
			big = time.Since(began)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Logf("4 MB chunked add %v; slowest of %d concurrent 1-document adds %v", big, n, worst)
	if worst > big/2 && worst > 3*time.Second { // generous: shared CI machines

		t.Errorf("a 1-document add waited %v behind a chunked add of %v", worst, big)
	}
}

// Retrieves beyond Config.QueryConcurrency wait for a slot, until their
// deadline; writes are not admitted through it and do not wait for them.
func TestRetrieveAdmission(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone; c.QueryConcurrency = 1 })
	narrowed, err := e.gate.Admit(context.Background(), false) // a retrieve in its pipeline
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.Call(ctx, rcp.MethodRetrieve, []byte(`{"query":"eiffel tower","k":3}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a retrieve with no slot before its deadline: err = %v", err)
	}
	add := []byte(`{"documents":[{"id":"admitted","text":"a zeppelin over the eiffel tower"}]}`)
	if _, err := e.Call(context.Background(), rcp.MethodIndexAdd, add); err != nil {
		t.Fatalf("index/add while the retrieve slots are taken: %v", err)
	}
	e.gate.Release(narrowed)
	if r := retrieve(t, e, map[string]any{"query": "zeppelin", "k": 1}); len(r.Hits) != 1 {
		t.Fatalf("after the slot was freed: %+v", r)
	}
}
