package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/engine/chunk"
	"github.com/rcpgo/rcpgo/rcp"
)

const pumpManual = `# Pump manual

The pump moves water from the well to the tank. It runs on mains power.

## Maintenance

Check the impeller every spring. Replace the shaft seal when it drips. The capacitor wears out after some years of hard use.

## Troubleshooting

If the pump hums but does not start, the capacitor has failed. If it starts and stops quickly, the pressure switch needs adjusting.
`

// TestRealEngineDocuments serves the real engine (engine.Open in a
// temporary directory) through the bridge and reads its documents as MCP
// resources: resources/list pages over x-rcpgo/list, resources/read of a
// chunked document returns the whole original text over x-rcpgo/get, and
// document ids and filter values complete over x-rcpgo/list and
// x-rcpgo/values.
func TestRealEngineDocuments(t *testing.T) {
	ctx := context.Background()
	eng, err := engine.Open(ctx, engine.Config{
		Dir: t.TempDir(), Name: "kb", Dense: engine.DenseNone, Logger: discardLogger(),
		Fields:         map[string]string{"lang": "keyword"},
		Chunk:          chunk.Options{Size: 30, Overlap: 8},
		TrustedSources: map[string]string{"handbook": "trusted"},
		Preload: []engine.Preload{
			{ID: "pump", Title: "Pump manual", Text: pumpManual, Meta: map[string]any{"lang": "en"}, Source: "handbook", URI: "file:///pump.md", Chunk: true},
			{ID: "paris", Title: "Paris", Text: "Paris is the capital of France.", Meta: map[string]any{"lang": "en"}, Source: "handbook"},
			{ID: "tour", Text: "La tour Eiffel est à Paris.", Meta: map[string]any{"lang": "fr"}, Source: "handbook"},
			{ID: "pont", Text: "Le pont Neuf est le plus ancien pont de Paris.", Meta: map[string]any{"lang": "fr"}, Source: "handbook"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	relay := &Relay{}
	cl, err := rcp.ConnectInProcess(ctx, rcp.NewServer(eng, &rcp.ServerOptions{Logger: discardLogger()}),
		&rcp.ClientOptions{Info: rcp.PeerInfo{Name: "test", Version: "1"}, Logger: discardLogger(), OnLog: relay.OnLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	if vc, err := rcp.ReadRCPGoCap(cl.Capabilities()); err != nil || !vc.Has(rcp.MethodRCPGoGet) || !vc.Has(rcp.MethodRCPGoList) || !vc.Has(rcp.MethodRCPGoValues) {
		t.Fatalf("engine x-rcpgo capability = %+v, %v", vc, err)
	}
	b, err := New(cl, Options{PageSize: 2, Logger: discardLogger(), Relay: relay})
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := connect(t, b)

	// resources/list: the info resource, then every document (not its
	// chunks) in id order, two per page.
	var got []*mcp.Resource
	pages := 0
	for cursor := ""; ; {
		res, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		pages++
		got = append(got, res.Resources...)
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	// A cursor the engine did not mint is the caller's error: -32602.
	var we *jsonrpc.Error
	if _, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: "not-a-cursor"}); !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("resources/list with a bad cursor: %v, want -32602", err)
	}
	var uris []string
	for _, r := range got {
		uris = append(uris, r.URI)
	}
	want := []string{"rcp://kb/info", "rcp://kb/doc/paris", "rcp://kb/doc/pont", "rcp://kb/doc/pump", "rcp://kb/doc/tour"}
	if !slices.Equal(uris, want) || pages != 2 {
		t.Fatalf("listed %v in %d pages, want %v in 2", uris, pages, want)
	}
	for _, r := range got[1:] {
		if r.Name != strings.TrimPrefix(r.URI, "rcp://kb/doc/") || r.MIMEType != "text/plain" {
			t.Errorf("resource %+v", r)
		}
	}
	if p := got[3]; p.Title != "Pump manual" || p.Size != int64(len(pumpManual)) {
		t.Errorf("pump resource %+v: want the whole document's title and size %d", p, len(pumpManual))
	}

	// resources/read of the chunked document: the original text, whole.
	rd, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "rcp://kb/doc/pump"})
	if err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	c := rd.Contents[0]
	if c.Text != pumpManual || c.MIMEType != "text/plain" || c.URI != "rcp://kb/doc/pump" {
		t.Errorf("contents = %+v", c)
	}
	info, _ := c.Meta["rcp"].(map[string]any)
	meta, _ := info["meta"].(map[string]any)
	trust, _ := info["trust"].(map[string]any)
	if info["id"] != "pump" || info["title"] != "Pump manual" || info["source"] != "file:///pump.md" || meta["lang"] != "en" ||
		trust["level"] != "trusted" || info["indexVersion"] == nil || len(meta) != 1 {
		t.Errorf("_meta = %v", c.Meta)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "rcp://kb/doc/pump%23c1"}); err == nil {
		t.Error("a chunk was readable as a document")
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "rcp://kb/doc/nope"}); err == nil {
		t.Error("reading a missing document succeeded")
	}

	// Completion of document ids (x-rcpgo/list by prefix) and of filter
	// values (x-rcpgo/values).
	complete := func(ref *mcp.CompleteReference, arg mcp.CompleteParamsArgument, args map[string]string) []string {
		t.Helper()
		p := &mcp.CompleteParams{Ref: ref, Argument: arg}
		if args != nil {
			p.Context = &mcp.CompleteContext{Arguments: args}
		}
		res, err := cs.Complete(ctx, p)
		if err != nil {
			t.Fatalf("complete %+v: %v", arg, err)
		}
		return res.Completion.Values
	}
	docRef := &mcp.CompleteReference{Type: "ref/resource", URI: "rcp://kb/doc/{id}"}
	for prefix, want := range map[string][]string{"p": {"paris", "pont", "pump"}, "po": {"pont"}, "": {"paris", "pont", "pump", "tour"}, "x": {}} {
		if got := complete(docRef, mcp.CompleteParamsArgument{Name: "id", Value: prefix}, nil); !slices.Equal(got, want) {
			t.Errorf("id completion of %q = %v, want %v", prefix, got, want)
		}
	}
	prompt := &mcp.CompleteReference{Type: "ref/prompt", Name: "grounded_answer"}
	if got := complete(prompt, mcp.CompleteParamsArgument{Name: "filterValue", Value: ""}, map[string]string{"filterField": "lang"}); !slices.Equal(got, []string{"en", "fr"}) {
		t.Errorf("lang values = %v", got)
	}
	if got := complete(prompt, mcp.CompleteParamsArgument{Name: "filterValue", Value: "f"}, map[string]string{"filterField": "lang"}); !slices.Equal(got, []string{"fr"}) {
		t.Errorf("lang values f* = %v", got)
	}

	// Writes through the bridge show up in the listing and completions.
	callTool(t, cs, "index_add", map[string]any{"documents": []map[string]any{{"id": "pompe", "text": "La pompe.", "meta": map[string]any{"lang": "de"}}}})
	if got := complete(docRef, mcp.CompleteParamsArgument{Name: "id", Value: "po"}, nil); !slices.Equal(got, []string{"pompe", "pont"}) {
		t.Errorf("id completion after index_add = %v", got)
	}
	if got := complete(prompt, mcp.CompleteParamsArgument{Name: "filterValue", Value: ""}, map[string]string{"filterField": "lang"}); !slices.Equal(got, []string{"de", "en", "fr"}) {
		t.Errorf("lang values after index_add = %v", got)
	}
	rd, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "rcp://kb/doc/pompe"})
	if err != nil || rd.Contents[0].Text != "La pompe." {
		t.Fatalf("read after index_add: %+v, %v", rd, err)
	}
	if lvl := rd.Contents[0].Meta["rcp"].(map[string]any)["trust"].(map[string]any)["level"]; lvl != "untrusted" {
		t.Errorf("a document written over the wire has trust %v", lvl)
	}
}

// servedEngine opens the real engine in dir and serves it through a bridge;
// stop closes the MCP session, the bridge's RCP client and the engine.
func servedEngine(t *testing.T, dir string) (cs *mcp.ClientSession, cl *rcp.Client, stop func()) {
	t.Helper()
	ctx := context.Background()
	eng, err := engine.Open(ctx, engine.Config{Dir: dir, Name: "kb", Dense: engine.DenseNone, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cl, err = rcp.ConnectInProcess(ctx, rcp.NewServer(eng, &rcp.ServerOptions{Logger: discardLogger()}),
		&rcp.ClientOptions{Info: rcp.PeerInfo{Name: "test", Version: "1"}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(cl, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err = mcp.NewClient(&mcp.Implementation{Name: "restart", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs, cl, func() {
		_ = cs.Close()
		_ = ss.Wait()
		_ = cl.Close()
		if err := eng.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCursorsSurviveCleanRestart: a search cursor (MCP search tool) and a
// retrieve cursor (RCP) issued before a clean restart page on after it,
// at the same indexVersion, with the hits a single page would have shown.
func TestCursorsSurviveCleanRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cs, cl, stop := servedEngine(t, dir)
	var docs []map[string]any
	for i := range 6 {
		docs = append(docs, map[string]any{"id": fmt.Sprintf("d%d", i), "text": strings.Repeat("pump ", i+1) + "seal impeller"})
	}
	callTool(t, cs, ToolIndexAdd, map[string]any{"documents": docs})
	// An upsert leaves a deleted document in the unflushed segment.
	callTool(t, cs, ToolIndexAdd, map[string]any{"documents": []map[string]any{{"id": "d0", "text": "pump seal"}}})
	args := map[string]any{"query": "pump seal", "k": 2, "mode": "sparse"}
	all := structured[SearchOutput](t, callTool(t, cs, ToolSearch, map[string]any{"query": "pump seal", "k": 6, "mode": "sparse"}))
	first := structured[SearchOutput](t, callTool(t, cs, ToolSearch, args))
	rp := &rcp.RetrieveParams{Query: rcp.TextQuery("pump seal"), K: 2, Mode: "sparse"}
	rfirst, err := cl.Retrieve(ctx, rp)
	if err != nil {
		t.Fatal(err)
	}
	if first.NextCursor == "" || rfirst.NextCursor == "" || first.IndexVersion == "" {
		t.Fatalf("no cursor: %+v / %+v", first, rfirst)
	}
	stop()

	cs, cl, stop = servedEngine(t, dir)
	defer stop()
	args["cursor"] = first.NextCursor
	res := callTool(t, cs, ToolSearch, args)
	if res.IsError {
		t.Fatalf("MCP search with a pre-restart cursor: %s", textOf(res))
	}
	second := structured[SearchOutput](t, res)
	if second.IndexVersion != first.IndexVersion || len(second.Hits) != 2 || second.Hits[0].ID != all.Hits[2].ID || second.Hits[1].ID != all.Hits[3].ID {
		t.Fatalf("page 2 after restart at %s: %+v; all hits at %s: %+v", second.IndexVersion, second.Hits, all.IndexVersion, all.Hits)
	}
	rp.Cursor = rfirst.NextCursor
	rsecond, err := cl.Retrieve(ctx, rp)
	if err != nil {
		t.Fatalf("RCP retrieve with a pre-restart cursor: %v", err)
	}
	if rsecond.IndexVersion != rfirst.IndexVersion || len(rsecond.Hits) != 2 || rsecond.Hits[0].ID.String() != all.Hits[2].ID {
		t.Fatalf("RCP page 2 after restart: %+v", rsecond)
	}
}
