package engine

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/internal/testutil/within"
	"github.com/rcpgo/rcpgo/rcp"
)

// TestConfigBackend runs the engine over a Config.Backend (an embedded
// index opened by the caller, standing in for engine/weaviate): writes,
// retrieve and filters go through the seam, snapshots and the catalog
// methods are not advertised, and the refused combinations are refused.
func TestConfigBackend(t *testing.T) {
	ctx := context.Background()
	ix, err := index.Open(ctx, filepath.Join(t.TempDir(), "remote"), index.Options{NoBackground: true,
		Fields: map[string]index.FieldType{"topic": index.FieldKeyword, "year": index.FieldInt, "lang": index.FieldKeyword}})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.Dense = DenseLSA },
		func(c *Config) { c.Graph = true },
	} {
		cfg := Config{Dir: t.TempDir(), Backend: ix, Dense: DenseNone}
		bad(&cfg)
		if e, err := Open(ctx, cfg); err == nil {
			e.cfg.Backend = nil // keep ix open for the rest of the test
			t.Fatalf("Open accepted %+v", cfg)
		}
	}
	e := newEngine(t, func(c *Config) { c.Backend, c.Dense = ix, "" })
	desc := e.Describe(ctx)
	if desc.Capabilities.Retrieve.Snapshots {
		t.Error("a Config.Backend advertises retrieve.snapshots")
	}
	if e.Handles(rcp.MethodRCPGoGet) || e.Handles(rcp.MethodRCPGoList) || e.Handles(rcp.MethodEmbed) {
		t.Error("catalog methods or embed served over a Config.Backend without dense")
	}
	if n := ix.Stats().Docs; n == 0 {
		t.Fatal("the preload did not reach the backend")
	}
	raw, rerr := call(t, e, rcp.MethodRetrieve, map[string]any{"query": "bm25 saturated term frequency", "k": 3,
		"filter": map[string]any{"field": "lang", "op": "eq", "value": "en"}})
	if rerr != nil {
		t.Fatal(rerr)
	}
	var res rcp.RetrieveResult
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Hits) == 0 || res.IndexVersion != ix.Version() {
		t.Fatalf("retrieve over the backend: %s", raw)
	}
	if _, rerr := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": []map[string]any{{"id": "p", "text": strings.Repeat("chunked text here. ", 200)}}, "chunk": true}); rerr != nil {
		t.Fatal(rerr)
	}
	if _, rerr := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": []map[string]any{{"id": "p", "text": "whole again"}}}); rerr != nil {
		t.Fatal(rerr)
	}
	// The embedded index does not drop the former chunks by itself: over a
	// Config.Backend that is the backend's job (engine/weaviate does it),
	// and the engine must not have done it either.
	if d, _ := ix.Get(ctx, "p#c0"); d == nil {
		t.Error("the engine applied a shape change a Config.Backend owns")
	}
	if !slices.Contains(desc.Capabilities.Retrieve.Modes, rcp.ModeSparse) {
		t.Error("sparse not advertised")
	}
}

// blockingAdd is a Config.Backend whose Add waits for release once armed:
// a remote backend's batch import, which takes seconds. It hides the
// embedded index's Prepare/Commit, as a remote backend has none.
type blockingAdd struct {
	search.Backend
	armed            atomic.Bool
	entered, release chan struct{}
}

func (b *blockingAdd) Add(ctx context.Context, docs []search.Document) ([]string, error) {
	if b.armed.CompareAndSwap(true, false) {
		close(b.entered)
		<-b.release
	}
	return b.Backend.Add(ctx, docs)
}

// A retrieve over a Config.Backend does not wait for a write's remote
// import (the engine read lock serves the embedded index only).
func TestRetrieveDoesNotWaitForRemoteImport(t *testing.T) {
	ctx := context.Background()
	ix, err := index.Open(ctx, filepath.Join(t.TempDir(), "remote"), index.Options{NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	b := &blockingAdd{Backend: ix, entered: make(chan struct{}), release: make(chan struct{})}
	e := newEngine(t, func(c *Config) { c.Backend, c.Dense, c.Fields = b, DenseNone, nil })
	b.armed.Store(true)
	released := false
	release := func() {
		if !released {
			released = true
			close(b.release)
		}
	}
	defer release()
	added := goCall(e, rcp.MethodIndexAdd, map[string]any{"documents": []map[string]any{{"id": "new", "text": "a fresh passage"}}})
	within.Recv(t, b.entered, "the index/add to reach the remote import")
	got := goCall(e, rcp.MethodRetrieve, map[string]any{"query": "bm25 saturated term frequency", "k": 3})
	a := within.RecvIn(t, 30*time.Second, got, "the retrieve while the remote import waits (it must not wait for it)")
	if err := a.fault(); err != nil {
		t.Fatalf("retrieve during the import: %v", err)
	}
	release()
	if err := within.Recv(t, added, "the index/add after the import was released").fault(); err != nil {
		t.Fatalf("index/add: %v", err)
	}
}
