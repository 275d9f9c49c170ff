package federation_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/testutil/fedtest"
	"github.com/rcpgo/rcpgo/rcp"
)

// graphCorpora give two real engines graphs that share the Seine.
var graphCorpora = map[string][]engine.Preload{
	"north": {
		{ID: "n1", Text: "Marie Curie worked in Paris. Paris lies on the river Seine."},
		{ID: "n2", Text: "The river Seine flows through Rouen before reaching Le Havre."},
		{ID: "n3", Text: "Rouen Cathedral was painted by Claude Monet many times."},
		{ID: "n4", Text: "Claude Monet lived in Giverny, near the river Seine."},
	},
	"south": {
		{ID: "s1", Text: "The Rhone flows from the Alps through Lyon to the Mediterranean."},
		{ID: "s2", Text: "Lyon is linked to Paris by a fast train along the Seine valley."},
		{ID: "s3", Text: "Marseille is a port on the Mediterranean, south of Lyon."},
	},
}

// graphEngine opens a real engine with the graph on over preloaded docs,
// waits for its graph and serves it in process.
func graphEngine(t *testing.T, id string, graphOn bool) *federation.Engine {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	eng, err := engine.Open(ctx, engine.Config{Dir: t.TempDir(), Name: id, Dense: engine.DenseNone, Graph: graphOn,
		Logger: quiet, Preload: graphCorpora[id]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	if graphOn {
		if err := eng.SyncGraph(ctx); err != nil {
			t.Fatal(err)
		}
	}
	srv := rcp.NewServer(eng, &rcp.ServerOptions{Logger: quiet})
	h := federation.NewEngineFunc(federation.EngineSpec{ID: id}, func(ctx context.Context) (*rcp.Client, error) {
		return rcp.ConnectInProcess(ctx, srv, clientOpts())
	})
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// gatewayClient serves a gateway over engines in process and connects.
func gatewayClient(t *testing.T, engines ...*federation.Engine) *rcp.Client {
	t.Helper()
	gw := federation.NewGatewayEngines(engines, &federation.GatewayOptions{Federation: federation.Options{Logger: quiet}})
	if err := gw.Connect(ctxT(t, 10*time.Second)); err != nil {
		t.Logf("connect: %v", err)
	}
	s := serveGateway(t, gw, nil)
	return dial(t, s.URL, nil)
}

// The gateway advertises graph and memory only when an engine serves them.
func TestGatewayGraphMemoryGating(t *testing.T) {
	plain := inProcess(t, fedtest.New("alpha", fedtest.Features{}), federation.EngineSpec{ID: "alpha"})
	c := gatewayClient(t, plain)
	caps := c.Capabilities()
	if caps.Graph != nil || caps.Memory != nil {
		t.Fatalf("gateway over a plain engine advertises graph %+v memory %+v", caps.Graph, caps.Memory)
	}
	ctx := ctxT(t, 10*time.Second)
	for _, m := range []string{rcp.MethodMemoryBuild, rcp.MethodMemoryRecall, rcp.MethodGraph} {
		err := c.Call(ctx, m, map[string]any{"query": "x", "op": "local"}, nil)
		if codeOf(err) != rcp.CodeCapabilityMissing {
			t.Errorf("%s without a serving engine: %v, want -32003", m, err)
		}
	}

	c = gatewayClient(t, plain, graphEngine(t, "north", true))
	caps = c.Capabilities()
	if caps.Graph == nil || !slices.Equal(caps.Graph.Ops, []string{"local", "global", "drift", "communities", "neighbors"}) {
		t.Errorf("graph cap = %+v", caps.Graph)
	}
	if caps.Memory == nil || !slices.Contains(caps.Memory.Scopes, "session") {
		t.Errorf("memory cap = %+v", caps.Memory)
	}
}

// graph local and drift fan out to every graph engine and fuse; the other
// ops and memory are pinned to the first engine (priority order).
func TestGatewayGraphFanOutAndPins(t *testing.T) {
	north, south := graphEngine(t, "north", true), graphEngine(t, "south", true)
	c := gatewayClient(t, north, south)
	ctx := ctxT(t, 20*time.Second)

	for _, op := range []string{"local", "drift"} {
		k := 10
		res, err := c.Graph(ctx, &rcp.GraphParams{Op: op, Query: "Which river runs through Paris and Lyon?", K: &k})
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		from := map[string]bool{}
		for _, h := range res.Hits {
			eng, _ := h.Meta["engine"].(string)
			from[eng] = true
			if h.Provenance == nil && op == "local" {
				t.Errorf("%s hit %s (engine %s) lost its provenance", op, h.ID, eng)
			}
		}
		if !from["north"] || !from["south"] || len(from) != 2 {
			t.Errorf("%s hits from engines %v, want north and south", op, from)
		}
		var st []federation.EngineStatus
		res.Meta.Get(federation.MetaEngines, &st)
		if len(st) != 2 || st[0].Status != "ok" || st[1].Status != "ok" {
			t.Errorf("%s _meta.engines = %+v", op, st)
		}
		if op == "drift" && len(res.Followups) == 0 {
			t.Errorf("drift: no followups")
		}
	}

	// communities are one graph's: pinned to north, whose ids they are.
	res, err := c.Graph(ctx, &rcp.GraphParams{Op: "communities"})
	if err != nil || len(res.Communities) == 0 {
		t.Fatalf("communities: %v %+v", err, res)
	}
	// A caller error every engine would give passes through with its code.
	bad := 0
	if _, err := c.Graph(ctx, &rcp.GraphParams{Op: "local", Query: "x", K: &bad}); codeOf(err) != rcp.CodeInvalidParams {
		t.Errorf("k 0: %v", err)
	}
	err = c.Call(ctx, rcp.MethodGraph, map[string]any{"op": "local"}, nil)
	if codeOf(err) != rcp.CodeInvalidParams {
		t.Errorf("local without query or seeds: %v", err)
	}

	// memory: built on the memory engine and recalled from it.
	mb, err := c.MemoryBuild(ctx, &rcp.MemoryBuildParams{Scope: "session",
		Documents: []rcp.Document{{ID: "m1", Text: "Gustave Eiffel built the tower in Paris."}}})
	if err != nil || mb.MemoryID == "" {
		t.Fatalf("memory/build: %v %+v", err, mb)
	}
	mr, err := c.MemoryRecall(ctx, &rcp.MemoryRecallParams{Query: "Who built the tower?", MemoryID: mb.MemoryID})
	if err != nil {
		t.Fatalf("memory/recall of a memory built through the gateway: %v", err)
	}
	_ = mr
	gm, err := c.MemoryBuild(ctx, &rcp.MemoryBuildParams{})
	if err != nil || gm.MemoryID != engine.GlobalMemoryID {
		t.Fatalf("memory/build of the global memory: %v %+v", err, gm)
	}
	// The global memory is north's (the pinned engine): its clues seed north's graph.
	mr, err = c.MemoryRecall(ctx, &rcp.MemoryRecallParams{Query: "Which painter lived near the river Seine?"})
	if err != nil || len(mr.Clues) == 0 {
		t.Fatalf("memory/recall of the global memory: %v %+v", err, mr)
	}
	seeds := mr.Clues[0].SeedIDs
	if len(seeds) > 0 {
		if _, err := c.Graph(ctx, &rcp.GraphParams{Op: "neighbors", SeedIDs: seeds}); err != nil {
			t.Errorf("neighbors of recalled seeds %v: %v", seeds, err)
		}
	}
	if err := c.Call(ctx, rcp.MethodMemoryBuild, map[string]any{"scope": "galaxy"}, nil); codeOf(err) != rcp.CodeOptionUnsupported {
		t.Errorf("unadvertised scope: %v", err)
	}
	if err := c.Call(ctx, rcp.MethodMemoryRecall, map[string]any{"query": " "}, nil); codeOf(err) != rcp.CodeInvalidParams {
		t.Errorf("blank recall query: %v", err)
	}
}

// One graph engine failing leaves the other's hits, with the failure
// reported in _meta.degraded.
func TestGatewayGraphDegraded(t *testing.T) {
	north := graphEngine(t, "north", true)
	south := graphEngine(t, "south", true)
	c := gatewayClient(t, north, south)
	ctx := ctxT(t, 20*time.Second)
	_ = south.Close() // the handle cannot dial again: every call to south fails
	res, err := c.Graph(ctx, &rcp.GraphParams{Op: "local", Query: "river Seine Paris"})
	if err != nil {
		t.Fatalf("local with one engine closed: %v", err)
	}
	for _, h := range res.Hits {
		if h.Meta["engine"] != "north" {
			t.Errorf("hit %s from %v", h.ID, h.Meta["engine"])
		}
	}
	var deg []federation.Degraded
	res.Meta.Get(rcp.MetaDegraded, &deg)
	if len(res.Hits) == 0 || len(deg) != 1 || deg[0].Engine != "south" {
		t.Errorf("hits %d, _meta.degraded = %+v", len(res.Hits), deg)
	}
}
