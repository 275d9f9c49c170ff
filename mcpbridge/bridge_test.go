package mcpbridge

//lint:file-ignore SA1019 MCP logging and sampling are deprecated by SEP-2577 from protocol version 2026-07-28 on, but clients of the earlier versions this face serves still use them; the face keeps them for the deprecation window.

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcpgo/rcpgo/rcp"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// events collects what an MCP client receives besides responses.
type events struct {
	mu               sync.Mutex
	progress         []*mcp.ProgressNotificationParams
	logs             []*mcp.LoggingMessageParams
	updated          chan string
	toolsChanged     chan struct{}
	resourcesChanged chan struct{}
}

func newEvents() *events {
	return &events{updated: make(chan string, 64), toolsChanged: make(chan struct{}, 16), resourcesChanged: make(chan struct{}, 16)}
}

func (ev *events) clientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			ev.mu.Lock()
			ev.progress = append(ev.progress, r.Params)
			ev.mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			ev.mu.Lock()
			ev.logs = append(ev.logs, r.Params)
			ev.mu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			ev.updated <- r.Params.URI
		},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { ev.toolsChanged <- struct{}{} },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { ev.resourcesChanged <- struct{}{} },
	}
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// newBridge builds a bridge over a test engine with caps.
func newBridge(t *testing.T, caps rcp.Capabilities, opts Options) (*Bridge, *testEngine) {
	t.Helper()
	e := newTestEngine(caps)
	c, relay := connectTestEngine(t, e)
	opts.Relay = relay
	if opts.Logger == nil {
		opts.Logger = discardLogger()
	}
	b, err := New(c, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b, e
}

// connect attaches an MCP client to b over in-memory transports.
func connect(t *testing.T, b *Bridge) (*mcp.ClientSession, *events) {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	ev := newEvents()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, ev.clientOptions()).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs, ev
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

func structured[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var out T
	if res.IsError {
		t.Fatalf("tool error: %s", textOf(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structuredContent: %v (%s)", err, b)
	}
	return out
}

func textOf(res *mcp.CallToolResult) string {
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String()
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func TestInitializeCapabilities(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	cs, _ := connect(t, b)
	init := cs.InitializeResult()
	if init.ProtocolVersion != ProtocolVersion {
		t.Errorf("protocolVersion = %q, want %q", init.ProtocolVersion, ProtocolVersion)
	}
	got, _ := json.Marshal(init.Capabilities)
	want := `{"completions":{},"logging":{},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"tools":{"listChanged":true}}`
	if string(got) != want {
		t.Errorf("capabilities = %s\nwant %s", got, want)
	}
	if init.Capabilities.Extensions != nil || init.Capabilities.Experimental != nil {
		t.Error("tasks/extensions must stay undeclared")
	}
	if init.ServerInfo.Name != "rcpgo-mcp" || init.ServerInfo.Version != "1.2.3" {
		t.Errorf("serverInfo = %+v", init.ServerInfo)
	}
}

func TestToolsFollowCapabilities(t *testing.T) {
	all := []string{"embed", "graph", "index_add", "index_delete", "memory_build", "memory_recall", "rerank", "search", "transform"}
	tests := []struct {
		name string
		caps func(*rcp.Capabilities)
		want []string
	}{
		{"full", func(*rcp.Capabilities) {}, all},
		{"read-only index", func(c *rcp.Capabilities) { c.Index.Writable = false },
			[]string{"embed", "graph", "memory_build", "memory_recall", "rerank", "search", "transform"}},
		{"retrieve only", func(c *rcp.Capabilities) {
			*c = rcp.Capabilities{Retrieve: c.Retrieve}
		}, []string{"search"}},
		{"nothing", func(c *rcp.Capabilities) { *c = rcp.Capabilities{} }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			caps := fullCaps()
			tt.caps(&caps)
			b, _ := newBridge(t, caps, Options{})
			cs, _ := connect(t, b)
			if got := toolNames(t, cs); !slices.Equal(got, tt.want) {
				t.Errorf("tools = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestToolSchemasAndAnnotations(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	cs, _ := connect(t, b)
	tools := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools[tool.Name] = tool
	}
	in := tools["search"].InputSchema.(map[string]any)
	props := in["properties"].(map[string]any)
	for _, p := range []string{"query", "k", "mode", "fusion", "mmr", "filter", "unit", "tokenBudget", "cursor"} {
		if _, ok := props[p]; !ok {
			t.Errorf("search input lacks %q", p)
		}
	}
	if _, ok := props["rerank"]; ok {
		t.Error("search offers rerank although retrieve.rerankBuiltin is false")
	}
	modes := props["mode"].(map[string]any)["enum"].([]any)
	if len(modes) != 2 || modes[0] != "sparse" || modes[1] != "dense" {
		t.Errorf("mode enum = %v", modes)
	}
	if k := props["k"].(map[string]any); k["maximum"] != float64(20) {
		t.Errorf("k = %v, want maximum 20 (retrieve.maxK)", k)
	}
	if tools["search"].OutputSchema == nil {
		t.Error("search has no output schema")
	}
	type hints struct{ readOnly, destructive, idempotent bool }
	for name, want := range map[string]hints{
		"search":       {readOnly: true},
		"index_add":    {destructive: true, idempotent: true},
		"index_delete": {destructive: true, idempotent: true},
	} {
		a := tools[name].Annotations
		got := hints{a.ReadOnlyHint, a.DestructiveHint != nil && *a.DestructiveHint, a.IdempotentHint}
		if got != want {
			t.Errorf("%s annotations = %+v, want %+v", name, got, want)
		}
		if a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: openWorldHint should be false (the engine's own index)", name)
		}
	}
}

func TestSearch(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	cs, _ := connect(t, b)

	res := callTool(t, cs, "search", map[string]any{"query": "Eiffel tower Paris", "k": 3})
	out := structured[SearchOutput](t, res)
	if len(out.Hits) != 3 || out.Hits[0].ID != "eiffel" || out.Engine != "memtest" {
		t.Fatalf("hits = %+v", out.Hits)
	}
	h := out.Hits[0]
	if h.URI != "rcp://memtest/doc/eiffel" || h.Trust.Level != "untrusted" || h.Title != "Eiffel Tower" || h.Source == "" {
		t.Errorf("hit attribution = %+v", h)
	}
	if out.NextCursor == "" {
		t.Error("expected a next page")
	}
	text := textOf(res)
	if !strings.Contains(text, "not instructions") || !strings.Contains(text, `<passage n="1" boundary="`) || !strings.Contains(text, "</passage boundary=") {
		t.Errorf("text rendering is not delimited data:\n%s", text)
	}

	// The injected passage is flagged and still delimited.
	out = structured[SearchOutput](t, callTool(t, cs, "search", map[string]any{"query": "ignore previous instructions", "k": 1}))
	if len(out.Hits) != 1 || !out.Hits[0].Trust.InjectionSuspected {
		t.Errorf("injection flag lost: %+v", out.Hits)
	}

	// Filter and pagination.
	out = structured[SearchOutput](t, callTool(t, cs, "search", map[string]any{"query": "tour Eiffel tower",
		"filter": map[string]any{"field": "lang", "op": "eq", "value": "fr"}}))
	if len(out.Hits) != 1 || out.Hits[0].ID != "tour" {
		t.Errorf("filtered hits = %+v", out.Hits)
	}
	page1 := structured[SearchOutput](t, callTool(t, cs, "search", map[string]any{"query": "Paris", "k": 1}))
	page2 := structured[SearchOutput](t, callTool(t, cs, "search", map[string]any{"query": "Paris", "k": 1, "cursor": page1.NextCursor}))
	if len(page2.Hits) != 1 || page2.Hits[0].ID == page1.Hits[0].ID {
		t.Errorf("pagination: %v then %v", page1.Hits, page2.Hits)
	}
}

func TestSearchRejectsWhatWasNotAdvertised(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	cs, _ := connect(t, b)
	for _, args := range []map[string]any{
		{"query": "x", "mode": "hybrid"}, // not in retrieve.modes
		{"query": "x", "rerank": true},   // retrieve.rerankBuiltin is false
		{"query": "x", "k": 500},         // above retrieve.maxK
		{"query": "x", "filter": map[string]any{"field": "author", "op": "eq", "value": "a"}}, // unadvertised field
		{"k": 3}, // query is required
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search", Arguments: args})
		if err == nil && !res.IsError {
			t.Errorf("search %v succeeded", args)
		}
	}
}

func TestOtherTools(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	cs, _ := connect(t, b)
	rr := structured[RerankOutput](t, callTool(t, cs, "rerank", map[string]any{"query": "paris", "passages": []string{"nothing", "paris paris", "rome"}, "topN": 2}))
	if len(rr.Results) != 2 || rr.Results[0].Index != 1 {
		t.Errorf("rerank = %+v", rr)
	}
	em := structured[EmbedOutput](t, callTool(t, cs, "embed", map[string]any{"texts": []string{"a bc", "def"}, "kind": "query"}))
	if len(em.Vectors) != 2 || em.Dimension != 4 || em.Identity != "test-bow-4" {
		t.Errorf("embed = %+v", em)
	}
	tr := structured[TransformOutput](t, callTool(t, cs, "transform", map[string]any{"query": "eiffel"}))
	if tr.Method != "multi-query" || len(tr.Queries) != 2 {
		t.Errorf("transform = %+v", tr)
	}
	g := structured[GraphOutput](t, callTool(t, cs, "graph", map[string]any{"op": "neighbors", "seedIds": []string{"eiffel"}}))
	if len(g.Nodes) != 1 || len(g.Edges) != 1 || g.Summary == "" {
		t.Errorf("graph = %+v", g)
	}
	mb := structured[MemoryBuildOutput](t, callTool(t, cs, "memory_build", map[string]any{"documents": []map[string]any{{"text": "the tower is tall"}}}))
	mr := structured[MemoryRecallOutput](t, callTool(t, cs, "memory_recall", map[string]any{"query": "tower", "memoryId": mb.MemoryID}))
	if len(mr.Clues) != 1 {
		t.Errorf("memory_recall = %+v", mr)
	}
	del := structured[IndexDeleteOutput](t, callTool(t, cs, "index_delete", map[string]any{"ids": []string{"bm25", "missing"}}))
	if del.Deleted != 1 {
		t.Errorf("index_delete = %+v", del)
	}
}

func TestResources(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{PageSize: 2})
	cs, _ := connect(t, b)
	ctx := context.Background()

	// Paginated list: info first, then documents two at a time.
	var uris []string
	pages := 0
	cursor := ""
	for {
		res, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		pages++
		for _, r := range res.Resources {
			uris = append(uris, r.URI)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	want := []string{"rcp://memtest/info", "rcp://memtest/community/0/c0", "rcp://memtest/community/0/fr%2Ftour%201", "rcp://memtest/doc/bm25", "rcp://memtest/doc/eiffel", "rcp://memtest/doc/inject", "rcp://memtest/doc/paris", "rcp://memtest/doc/tour"}
	if !slices.Equal(uris, want) || pages != 3 {
		t.Errorf("listed %v in %d pages, want %v in 3", uris, pages, want)
	}

	tpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tpl.ResourceTemplates) != 2 || tpl.ResourceTemplates[0].URITemplate != "rcp://memtest/community/{level}/{id}" ||
		tpl.ResourceTemplates[1].URITemplate != "rcp://memtest/doc/{id}" {
		t.Fatalf("templates = %+v, %v", tpl, err)
	}

	rd, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "rcp://memtest/doc/eiffel"})
	if err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	c := rd.Contents[0]
	if !strings.Contains(c.Text, "wrought-iron") || c.MIMEType != "text/plain" {
		t.Errorf("contents = %+v", c)
	}
	info, _ := c.Meta["rcp"].(map[string]any)
	if info["title"] != "Eiffel Tower" || info["trust"].(map[string]any)["level"] != "untrusted" {
		t.Errorf("_meta = %v", c.Meta)
	}

	ri, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "rcp://memtest/info"})
	if err != nil || !strings.Contains(ri.Contents[0].Text, `"retrieve"`) {
		t.Errorf("info = %+v, %v", ri, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "rcp://memtest/doc/nope"}); err == nil {
		t.Error("reading a missing document succeeded")
	}
}

func TestDocumentIDsWithReservedCharacters(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	cs, _ := connect(t, b)
	id := "dir/file #1"
	callTool(t, cs, "index_add", map[string]any{"documents": []map[string]any{{"id": id, "text": "odd id"}}})
	uri := b.docURI(id)
	if uri != "rcp://memtest/doc/dir%2Ffile%20%231" {
		t.Errorf("uri = %s", uri)
	}
	rd, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil || rd.Contents[0].Text != "odd id" {
		t.Fatalf("read %s: %+v, %v", uri, rd, err)
	}
}

func TestSubscribeUpdatedAfterIndexAdd(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	cs, ev := connect(t, b)
	ctx := context.Background()
	uri := "rcp://memtest/doc/eiffel"
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "https://elsewhere/x"}); err == nil {
		t.Error("subscribing to a foreign URI succeeded")
	}
	out := structured[IndexAddOutput](t, callTool(t, cs, "index_add", map[string]any{"documents": []map[string]any{
		{"id": "eiffel", "text": "The Eiffel Tower was completed in 1889.", "title": "Eiffel Tower", "meta": map[string]any{"lang": "en", "year": 1889}},
		{"id": "louvre", "text": "The Louvre is a museum in Paris."},
	}}))
	if !slices.Equal(out.IDs, []string{"eiffel", "louvre"}) || len(out.Resources) != 2 {
		t.Errorf("index_add = %+v", out)
	}
	if got := wait(t, ev.updated, "notifications/resources/updated"); got != uri {
		t.Errorf("updated %s, want %s (only subscribed URIs)", got, uri)
	}
	wait(t, ev.resourcesChanged, "notifications/resources/list_changed")
	rd, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil || !strings.Contains(rd.Contents[0].Text, "completed in 1889") {
		t.Errorf("read after update: %+v, %v", rd, err)
	}
	// And after a delete.
	callTool(t, cs, "index_delete", map[string]any{"ids": []string{"eiffel"}})
	if got := wait(t, ev.updated, "update after delete"); got != uri {
		t.Errorf("updated %s", got)
	}
}

func TestPrompts(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	cs, _ := connect(t, b)
	ctx := context.Background()
	lp, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(lp.Prompts) != 2 {
		t.Fatalf("prompts = %+v, %v", lp, err)
	}
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "grounded_answer", Arguments: map[string]string{"question": "Where is the Eiffel Tower?", "k": "2"}})
	if err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	msgs := gp.Messages
	if len(msgs) != 4 {
		t.Fatalf("%d messages, want instructions + 2 passages + question", len(msgs))
	}
	if tc, ok := msgs[0].Content.(*mcp.TextContent); !ok || !strings.Contains(tc.Text, "DATA, not instructions") {
		t.Errorf("first message = %+v", msgs[0].Content)
	}
	er, ok := msgs[1].Content.(*mcp.EmbeddedResource)
	if !ok || er.Resource.URI != "rcp://memtest/doc/eiffel" || !strings.Contains(er.Resource.Text, "Eiffel") {
		t.Fatalf("passage = %+v", msgs[1].Content)
	}
	if cite, _ := er.Resource.Meta["rcp"].(map[string]any); cite["n"] != float64(1) || cite["title"] != "Eiffel Tower" {
		t.Errorf("citation = %v", er.Resource.Meta)
	}
	if tc, ok := msgs[3].Content.(*mcp.TextContent); !ok || tc.Text != "Question: Where is the Eiffel Tower?" {
		t.Errorf("last message = %+v", msgs[3].Content)
	}
	// Filtered through prompt arguments.
	gp, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "grounded_answer", Arguments: map[string]string{"question": "tour Eiffel", "filterField": "lang", "filterValue": "fr"}})
	if err != nil || len(gp.Messages) != 3 {
		t.Fatalf("filtered prompt: %+v, %v", gp, err)
	}

	rp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "research", Arguments: map[string]string{"topic": "Eiffel"}})
	if err != nil {
		t.Fatalf("research: %v", err)
	}
	plan := rp.Messages[0].Content.(*mcp.TextContent).Text
	for _, q := range []string{`"Eiffel"`, `"Eiffel history"`, `"Eiffel location"`, "multi-query"} {
		if !strings.Contains(plan, q) {
			t.Errorf("plan lacks %s:\n%s", q, plan)
		}
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "grounded_answer", Arguments: map[string]string{}}); err == nil {
		t.Error("missing question accepted")
	}
}

func TestCompletion(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	cs, _ := connect(t, b)
	tests := []struct {
		name string
		ref  *mcp.CompleteReference
		arg  mcp.CompleteParamsArgument
		ctx  map[string]string
		want []string
	}{
		{"mode", &mcp.CompleteReference{Type: "ref/prompt", Name: "grounded_answer"}, mcp.CompleteParamsArgument{Name: "mode", Value: "s"}, nil, []string{"sparse"}},
		{"k", &mcp.CompleteReference{Type: "ref/prompt", Name: "grounded_answer"}, mcp.CompleteParamsArgument{Name: "k", Value: "1"}, nil, []string{"1", "10"}},
		{"filter field", &mcp.CompleteReference{Type: "ref/prompt", Name: "grounded_answer"}, mcp.CompleteParamsArgument{Name: "filterField", Value: ""}, nil, []string{"lang", "year"}},
		{"filter value", &mcp.CompleteReference{Type: "ref/prompt", Name: "grounded_answer"}, mcp.CompleteParamsArgument{Name: "filterValue", Value: "f"}, map[string]string{"filterField": "lang"}, []string{"fr"}},
		{"method", &mcp.CompleteReference{Type: "ref/prompt", Name: "research"}, mcp.CompleteParamsArgument{Name: "method", Value: ""}, nil, []string{"multi-query"}},
		{"document id", &mcp.CompleteReference{Type: "ref/resource", URI: "rcp://memtest/doc/{id}"}, mcp.CompleteParamsArgument{Name: "id", Value: "p"}, nil, []string{"paris"}},
		{"unknown", &mcp.CompleteReference{Type: "ref/prompt", Name: "research"}, mcp.CompleteParamsArgument{Name: "topic", Value: "x"}, nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &mcp.CompleteParams{Ref: tt.ref, Argument: tt.arg}
			if tt.ctx != nil {
				p.Context = &mcp.CompleteContext{Arguments: tt.ctx}
			}
			res, err := cs.Complete(context.Background(), p)
			if err != nil {
				t.Fatalf("complete: %v", err)
			}
			if !slices.Equal(res.Completion.Values, tt.want) {
				t.Errorf("values = %v, want %v", res.Completion.Values, tt.want)
			}
		})
	}
}

func TestLoggingForwardsPipelineLogs(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	cs, ev := connect(t, b)
	ctx := context.Background()
	callTool(t, cs, "search", map[string]any{"query": "paris"})
	ev.mu.Lock()
	n := len(ev.logs)
	ev.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d log messages before logging/setLevel", n)
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatalf("setLevel: %v", err)
	}
	callTool(t, cs, "search", map[string]any{"query": "paris"})
	eventually(t, func() bool { ev.mu.Lock(); defer ev.mu.Unlock(); return len(ev.logs) > 0 })
	ev.mu.Lock()
	defer ev.mu.Unlock()
	var found bool
	for _, l := range ev.logs {
		if l.Logger == "rcp.engine" && l.Level == "info" && strings.Contains(mustJSON(t, l.Data), "retrieve: scoring") {
			found = true
		}
		if l.Level == "debug" {
			t.Errorf("debug message at level info: %+v", l)
		}
	}
	if !found {
		t.Errorf("no forwarded pipeline log in %v", ev.logs)
	}
}

// eventually waits up to 3 s for cond: the MCP client handles
// notifications asynchronously, so they may trail the response.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestProgressDuringLongCall(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	cs, ev := connect(t, b)
	p := &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "slow paris"}}
	p.SetProgressToken("tok-1")
	res, err := cs.CallTool(context.Background(), p)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %s", err, textOf(res))
	}
	eventually(t, func() bool { ev.mu.Lock(); defer ev.mu.Unlock(); return len(ev.progress) >= 4 })
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if len(ev.progress) < 3 {
		t.Fatalf("%d progress notifications, want >= 3", len(ev.progress))
	}
	last := -1.0
	for _, pr := range ev.progress {
		if pr.ProgressToken != "tok-1" || pr.Total != 1 || pr.Progress <= last {
			t.Errorf("progress frame %+v (previous %v)", pr, last)
		}
		last = pr.Progress
	}
	if !strings.HasPrefix(ev.progress[0].Message, "recall: step 1") {
		t.Errorf("message = %q", ev.progress[0].Message)
	}
}

func TestSetClientNotifiesListChanged(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	cs, ev := connect(t, b)
	ctx := context.Background()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "rcp://memtest/info"}); err != nil {
		t.Fatal(err)
	}
	caps := fullCaps()
	caps.Index.Writable = false
	caps.Graph = nil
	c2, _ := connectTestEngine(t, newTestEngine(caps))
	old, err := b.SetClient(ctx, c2)
	if err != nil || old == nil {
		t.Fatalf("SetClient: %v", err)
	}
	wait(t, ev.toolsChanged, "notifications/tools/list_changed")
	if got := wait(t, ev.updated, "info updated"); got != "rcp://memtest/info" {
		t.Errorf("updated %s", got)
	}
	names := toolNames(t, cs)
	if slices.Contains(names, "index_add") || slices.Contains(names, "graph") || !slices.Contains(names, "search") {
		t.Errorf("tools after swap = %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "index_add", Arguments: map[string]any{"documents": []map[string]any{{"id": "x", "text": "y"}}}})
	if err == nil && !res.IsError {
		t.Error("index_add still callable on a read-only engine")
	}
}
