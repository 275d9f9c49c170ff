package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/rcpgo/rcpgo/internal/shared"
	"github.com/rcpgo/rcpgo/rcp"
)

// The test binary doubles as the programs the stdio tests spawn:
//
//	<test binary> mcp-main ARGS…   runs Main (rcpd mcp) on its stdin/stdout
//	<test binary> mcpdesc-main ARGS… runs DescMain (rcpd mcpdesc)
//	<test binary> rcp-test-engine  serves the test engine over RCP stdio
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "mcp-main":
			os.Exit(Main(context.Background(), os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
		case "mcpdesc-main":
			os.Exit(DescMain(context.Background(), os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
		case "rcp-test-engine":
			srv := rcp.NewServer(newTestEngine(fullCaps()).router(), &rcp.ServerOptions{Logger: discardLogger()})
			if err := srv.ServeStdio(context.Background(), os.Stdin, os.Stdout); err != nil {
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	base, _ := goroutines()
	code := m.Run()
	if code == 0 {
		if n, stacks := settled(base); n > base {
			fmt.Fprintf(os.Stderr, "goroutine leak: %d goroutines running, %d before the tests\n%s\n", n, base, stacks)
			code = 1
		}
	}
	os.Exit(code)
}

// goroutines counts the running goroutines, less os/signal's watcher,
// which the runtime keeps for the life of the process once Main has used
// signal.NotifyContext.
func goroutines() (int, string) {
	buf := make([]byte, 1<<20)
	all := string(buf[:runtime.Stack(buf, true)])
	n := 0
	for _, g := range strings.Split(all, "\n\n") {
		if strings.HasPrefix(g, "goroutine ") && !strings.Contains(g, "os/signal.signal_recv") {
			n++
		}
	}
	return n, all
}

// settled waits for the goroutines the tests started to end.
func settled(base int) (int, string) {
	http.DefaultClient.CloseIdleConnections()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n, stacks := goroutines()
		if n <= base || time.Now().After(deadline) {
			return n, stacks
		}
	}
}

// spawn starts `rcpd mcp ARGS` (this test binary) and connects an MCP client
// to it over the child's stdin and stdout.
func spawn(t *testing.T, args ...string) (*mcp.ClientSession, *events) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"mcp-main", "--log-level", "warn"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ev := newEvents()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, ev.clientOptions()).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to %v: %v\nstderr:\n%s", cmd.Args, err, stderr.String())
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Logf("close: %v", err)
		}
		if t.Failed() {
			t.Logf("child stderr:\n%s", stderr.String())
		}
	})
	return cs, ev
}

// TestStdioRealEngine runs `rcpd mcp --data DIR` as a process with the
// real engine and drives it over a real stdio pipe.
func TestStdioRealEngine(t *testing.T) {
	cs, ev := spawn(t, "--data", t.TempDir(), "--field", "lang=keyword", "--name", "kb")
	ctx := context.Background()
	names := toolNames(t, cs)
	for _, want := range []string{"index_add", "index_delete", "search"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	add := structured[IndexAddOutput](t, mustCall(t, cs, &mcp.CallToolParams{Name: "index_add", Arguments: map[string]any{"documents": []map[string]any{
		{"id": "eiffel", "text": "The Eiffel Tower is a wrought-iron lattice tower in Paris.", "title": "Eiffel Tower", "meta": map[string]any{"lang": "en"}},
		{"id": "seine", "text": "The Seine flows through Paris to the English Channel.", "meta": map[string]any{"lang": "en"}},
		{"id": "tour", "text": "La tour Eiffel est à Paris.", "meta": map[string]any{"lang": "fr"}},
	}}}))
	if len(add.IDs) != 3 {
		t.Fatalf("index_add = %+v", add)
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	p := &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "wrought iron lattice tower", "k": 2,
		"filter": map[string]any{"field": "lang", "op": "eq", "value": "en"}}}
	p.SetProgressToken("s1")
	out := structured[SearchOutput](t, mustCall(t, cs, p))
	if len(out.Hits) == 0 || out.Hits[0].DocumentID != "eiffel" || out.Engine != "rcpd" {
		t.Fatalf("search = %+v", out)
	}
	if out.Hits[0].Trust.Level == "trusted" {
		t.Error("a document written over the wire must not be trusted (§15.2)")
	}
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "grounded_answer", Arguments: map[string]string{"question": "What is the Seine?"}})
	if err != nil || len(gp.Messages) < 3 {
		t.Fatalf("grounded_answer: %+v, %v", gp, err)
	}
	rd, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "rcp://kb/info"})
	if err != nil || !strings.Contains(rd.Contents[0].Text, `"rcpd"`) {
		t.Errorf("info: %+v, %v", rd, err)
	}
	eventually(t, func() bool { ev.mu.Lock(); defer ev.mu.Unlock(); return len(ev.logs) > 0 && len(ev.progress) > 0 })
	ev.mu.Lock()
	t.Logf("real engine over stdio: %d log messages, %d progress notifications", len(ev.logs), len(ev.progress))
	ev.mu.Unlock()
	del := structured[IndexDeleteOutput](t, mustCall(t, cs, &mcp.CallToolParams{Name: "index_delete", Arguments: map[string]any{"ids": []string{"tour"}}}))
	if del.Deleted != 1 {
		t.Errorf("index_delete = %+v", del)
	}
}

// TestStdioCommandEngine runs `rcpd mcp -- CMD` and `rcpd mcp --registry
// rcp.json --engine ID` where the engine is an RCP stdio server: MCP over
// one pipe, RCP over another.
func TestStdioCommandEngine(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	reg := filepath.Join(t.TempDir(), "rcp.json")
	spec, _ := json.Marshal(map[string]any{"engines": []map[string]any{{"id": "mem", "transport": "stdio", "command": []string{exe, "rcp-test-engine"}}}})
	if err := os.WriteFile(reg, spec, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"command":  {"--", exe, "rcp-test-engine"},
		"registry": {"--registry", reg, "--engine", "mem"},
	} {
		t.Run(name, func(t *testing.T) {
			cs, _ := spawn(t, args...)
			out := structured[SearchOutput](t, mustCall(t, cs, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "BM25 ranking"}}))
			if len(out.Hits) == 0 || out.Hits[0].ID != "bm25" {
				t.Fatalf("search = %+v", out)
			}
			rd, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "rcp://memtest/doc/bm25"})
			if err != nil || !strings.Contains(rd.Contents[0].Text, "term frequency") {
				t.Errorf("read: %+v, %v", rd, err)
			}
		})
	}
}

// TestMainConnectHTTP runs Main in process over pipes, fronting an RCP
// engine reached over HTTP, and checks it ends cleanly at EOF.
func TestMainConnectHTTP(t *testing.T) {
	h := rcp.NewServer(newTestEngine(fullCaps()).router(), &rcp.ServerOptions{Logger: discardLogger()}).HTTPHandler(nil)
	rcpSrv := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Close(); rcpSrv.Close() })

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		code := Main(context.Background(), []string{"--connect", rcpSrv.URL + "/rcp", "--log-level", "warn"}, inR, outW, &stderr)
		_ = outW.Close()
		exited <- code
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "pipe-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	out := structured[SearchOutput](t, mustCall(t, cs, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "Paris capital"}}))
	if len(out.Hits) == 0 || out.Hits[0].ID != "paris" {
		t.Errorf("search = %+v", out)
	}
	_ = cs.Close() // EOF on Main's stdin
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("Main exited %d\n%s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Main did not return after EOF")
	}
}

func TestMainUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no engine", nil, "choose an engine"},
		{"two engines", []string{"--connect", "http://127.0.0.1:1/rcp", "--data", "x"}, "choose one engine"},
		{"registry without engine", []string{"--registry", "rcp.json"}, "--engine"},
		{"engine without registry", []string{"--engine", "a", "--data", "x"}, "--registry"},
		{"remote bind", []string{"--data", "x", "--http", "0.0.0.0:8080"}, "--allow-remote"},
		{"bad flag", []string{"--nope"}, "flag provided but not defined"},
		{"refresh in process", []string{"--data", "x", "--refresh", "1m"}, "--refresh needs a remote engine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := Main(context.Background(), tt.args, strings.NewReader(""), &bytes.Buffer{}, &stderr); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.want)
			}
		})
	}
	var stderr bytes.Buffer
	if code := DescMain(context.Background(), []string{"--data", "x", "--format", "xml"}, nil, &bytes.Buffer{}, &stderr); code != 2 {
		t.Errorf("mcpdesc --format xml: exit %d", code)
	}
}

func descSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	path := shared.Path(t, "mcpdesc", "mcp-description-0.7.0.schema.json")
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	s, err := c.Compile(path)
	if err != nil {
		t.Fatalf("compiling %s: %v", path, err)
	}
	return s
}

func validateDesc(t *testing.T, s *jsonschema.Schema, doc []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("mcpdesc output is not JSON: %v", err)
	}
	if err := s.Validate(inst); err != nil {
		t.Fatalf("mcpdesc document does not validate against MCP Description 0.7.0:\n%v\n%s", err, doc)
	}
}

func TestMCPDescMatchesLiveServer(t *testing.T) {
	schema := descSchema(t)
	b, _ := newBridge(t, fullCaps(), Options{})
	opts := DescribeOptions{Command: "rcpd", Args: []string{"mcp", "--connect", "http://127.0.0.1:7070/rcp"}, HTTPURL: "http://127.0.0.1:8123/mcp", Bearer: true}
	d, err := b.Describe(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	js, err := Encode(d, "json")
	if err != nil {
		t.Fatal(err)
	}
	validateDesc(t, schema, js)

	// What a live client observes over streamable HTTP is the document.
	srv := serveHTTP(t, b, HTTPOptions{})
	cs, _ := connectHTTP(t, srv.URL, nil)
	live, err := Observe(context.Background(), cs, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []struct {
		name      string
		doc, live any
	}{
		{"capabilities", d.Capabilities, cs.InitializeResult().Capabilities},
		{"info", d.Info, live.Info},
		{"tools", d.Tools, live.Tools},
		{"prompts", d.Prompts, live.Prompts},
		{"resourceTemplates", d.ResourceTemplates, live.ResourceTemplates},
		{"resources", d.Resources, live.Resources},
	} {
		if a, b := mustJSON(t, part.doc), mustJSON(t, part.live); a != b {
			t.Errorf("%s: mcpdesc\n%s\nlive\n%s", part.name, a, b)
		}
	}
	var names []string
	for _, tool := range d.Tools {
		names = append(names, tool.Name)
	}
	if want := []string{"embed", "graph", "index_add", "index_delete", "memory_build", "memory_recall", "rerank", "search", "transform"}; !slices.Equal(names, want) {
		t.Errorf("tools = %v", names)
	}
	if d.XRCP["engine"].(rcp.PeerInfo).Name != "memtest" {
		t.Errorf("x-rcp = %v", d.XRCP)
	}

	// YAML says the same thing.
	y, err := Encode(d, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	var fromYAML, fromJSON any
	if err := yaml.Unmarshal(y, &fromYAML); err != nil {
		t.Fatalf("yaml: %v\n%s", err, y)
	}
	if err := json.Unmarshal(js, &fromJSON); err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, fromYAML), mustJSON(t, fromJSON); a != b {
		t.Errorf("yaml and json differ:\n%s\n%s", a, b)
	}
}

func TestDescMainRealEngine(t *testing.T) {
	schema := descSchema(t)
	dir := t.TempDir()
	for _, format := range []string{"json", "yaml"} {
		var stdout, stderr bytes.Buffer
		code := DescMain(context.Background(), []string{"--data", dir, "--format", format, "--http", "127.0.0.1:8765"}, nil, &stdout, &stderr)
		if code != 0 {
			t.Fatalf("rcpd mcpdesc --format %s: exit %d\n%s", format, code, stderr.String())
		}
		doc := stdout.Bytes()
		if format == "yaml" {
			var v any
			if err := yaml.Unmarshal(doc, &v); err != nil {
				t.Fatal(err)
			}
			doc = []byte(mustJSON(t, v))
		}
		validateDesc(t, schema, doc)
		var d Description
		if err := json.Unmarshal(doc, &d); err != nil {
			t.Fatal(err)
		}
		if d.Transports[0].Type != "stdio" || !slices.Equal(d.Transports[0].Args, []string{"mcp", "--data", dir}) ||
			d.Transports[1].URL != "http://127.0.0.1:8765/mcp" || len(d.Tools) == 0 {
			t.Errorf("document = %+v", d)
		}
	}
}
