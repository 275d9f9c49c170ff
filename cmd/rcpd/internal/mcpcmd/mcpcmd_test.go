package mcpcmd

//lint:file-ignore SA1019 MCP logging and sampling are deprecated by SEP-2577 from protocol version 2026-07-28 on, but clients of the earlier versions this face serves still use them; the face keeps them for the deprecation window.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/internal/testutil/shared"
	"github.com/rcpgo/rcpgo/internal/testutil/syncbuf"
	"github.com/rcpgo/rcpgo/mcpbridge"
	"github.com/rcpgo/rcpgo/rcp"
)

// The test binary doubles as the programs the stdio tests spawn:
//
//	<test binary> mcp-main ARGS…     runs Main (rcpd mcp) on its stdin/stdout
//	<test binary> mcpdesc-main ARGS… runs DescMain (rcpd mcpdesc)
//	<test binary> rcp-test-engine    serves a small real engine over RCP stdio
//	<test binary> hold-dir DIR       opens the engine on DIR and holds it until stdin closes
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "mcp-main":
			os.Exit(Main(context.Background(), os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
		case "mcpdesc-main":
			os.Exit(DescMain(context.Background(), os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
		case "rcp-test-engine":
			os.Exit(serveTestEngine())
		case "hold-dir":
			os.Exit(holdDir(os.Args[2]))
		}
	}
	os.Exit(m.Run())
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

var testDocs = []engine.Preload{
	{ID: "bm25", Title: "BM25", Text: "BM25 ranks documents by term frequency and inverse document frequency.", Source: "handbook"},
	{ID: "paris", Title: "Paris", Text: "Paris is the capital of France.", Source: "handbook"},
}

func openTestEngine(dir string) (*engine.Engine, error) {
	return engine.Open(context.Background(), engine.Config{Dir: dir, Name: "memtest", Dense: engine.DenseNone,
		Logger: discardLogger(), Preload: testDocs})
}

func serveTestEngine() int {
	dir, err := os.MkdirTemp("", "mcpcmd-engine")
	if err != nil {
		return 1
	}
	defer os.RemoveAll(dir)
	eng, err := openTestEngine(dir)
	if err != nil {
		return 1
	}
	defer eng.Close()
	if err := rcp.NewServer(eng, &rcp.ServerOptions{Logger: discardLogger()}).ServeStdio(context.Background(), os.Stdin, os.Stdout); err != nil {
		return 1
	}
	return 0
}

func holdDir(dir string) int {
	eng, err := openTestEngine(dir)
	if err != nil {
		return 1
	}
	defer eng.Close()
	os.Stdout.WriteString("held\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

func structured[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var out T
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structuredContent: %v\n%s", err, b)
	}
	return out
}

func mustCall(t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		t.Fatalf("tools/call %s: %v", p.Name, err)
	}
	if res.IsError {
		t.Fatalf("tools/call %s: %+v", p.Name, res.Content)
	}
	return res
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// logs collects the MCP log messages and progress a client receives.
type logs struct {
	mu       sync.Mutex
	logs     int
	progress int
}

func (l *logs) clientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			l.mu.Lock()
			l.progress++
			l.mu.Unlock()
		},
		LoggingMessageHandler: func(context.Context, *mcp.LoggingMessageRequest) { l.mu.Lock(); l.logs++; l.mu.Unlock() },
	}
}

func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
	}
}

// spawn starts `rcpd mcp ARGS` (this test binary) and connects an MCP client
// to it over the child's stdin and stdout.
func spawn(t *testing.T, args ...string) (*mcp.ClientSession, *logs, *syncbuf.Buffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"mcp-main", "--log-level", "warn"}, args...)...)
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	ev := &logs{}
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
	return cs, ev, &stderr
}

// TestStdioRealEngine runs `rcpd mcp --data DIR` as a process with the
// real engine and drives it over a real stdio pipe.
func TestStdioRealEngine(t *testing.T) {
	cs, ev, _ := spawn(t, "--data", t.TempDir(), "--field", "lang=keyword", "--name", "kb")
	ctx := context.Background()
	names := toolNames(t, cs)
	for _, want := range []string{"index_add", "index_delete", "search"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	add := structured[mcpbridge.IndexAddOutput](t, mustCall(t, cs, &mcp.CallToolParams{Name: "index_add", Arguments: map[string]any{"documents": []map[string]any{
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
	out := structured[mcpbridge.SearchOutput](t, mustCall(t, cs, p))
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
	eventually(t, func() bool { ev.mu.Lock(); defer ev.mu.Unlock(); return ev.logs > 0 && ev.progress > 0 })
	del := structured[mcpbridge.IndexDeleteOutput](t, mustCall(t, cs, &mcp.CallToolParams{Name: "index_delete", Arguments: map[string]any{"ids": []string{"tour"}}}))
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
			cs, _, _ := spawn(t, args...)
			out := structured[mcpbridge.SearchOutput](t, mustCall(t, cs, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "BM25 ranking"}}))
			if len(out.Hits) == 0 || out.Hits[0].DocumentID != "bm25" {
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
	eng, err := openTestEngine(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	h := rcp.NewServer(eng, &rcp.ServerOptions{Logger: discardLogger()}).HTTPHandler(nil)
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
	out := structured[mcpbridge.SearchOutput](t, mustCall(t, cs, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "Paris capital"}}))
	if len(out.Hits) == 0 || out.Hits[0].DocumentID != "paris" {
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
		{"two engines", []string{"--connect", "http://127.0.0.1:1/rcp", "--data", "x"}, "choose one engine"},
		{"registry without engine", []string{"--registry", "rcp.json"}, "--engine"},
		{"engine without registry", []string{"--engine", "a", "--data", "x"}, "--registry"},
		{"remote bind", []string{"--data", "x", "--http", "0.0.0.0:8080"}, "--allow-remote"},
		{"bad flag", []string{"--nope"}, "flag provided but not defined"},
		{"refresh in process", []string{"--data", "x", "--refresh", "1m"}, "--refresh needs a remote engine"},
		{"trust without data", []string{"--connect", "http://127.0.0.1:1/rcp", "--trust", "a=trusted"}, "need --data"},
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

func validateDesc(t *testing.T, doc []byte) {
	t.Helper()
	path := shared.Path(t, "mcpdesc", "mcp-description-0.7.0.schema.json")
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	s, err := c.Compile(path)
	if err != nil {
		t.Fatalf("compiling %s: %v", path, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("mcpdesc output is not JSON: %v", err)
	}
	if err := s.Validate(inst); err != nil {
		t.Fatalf("mcpdesc document does not validate against MCP Description 0.7.0:\n%v\n%s", err, doc)
	}
}

func TestDescMainRealEngine(t *testing.T) {
	dir := t.TempDir()
	for _, format := range []string{"json", "yaml"} {
		var stdout, stderr bytes.Buffer
		code := DescMain(context.Background(), []string{"--data", dir, "--read-only", "--sampling", "--format", format, "--http", "127.0.0.1:8765"}, nil, &stdout, &stderr)
		if code != 0 {
			t.Fatalf("rcpd mcpdesc --format %s: exit %d\n%s", format, code, stderr.String())
		}
		doc := stdout.Bytes()
		if format == "yaml" {
			var v any
			if err := yaml.Unmarshal(doc, &v); err != nil {
				t.Fatal(err)
			}
			js, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			doc = js
		}
		validateDesc(t, doc)
		var d mcpbridge.Description
		if err := json.Unmarshal(doc, &d); err != nil {
			t.Fatal(err)
		}
		if d.Transports[0].Type != "stdio" || !slices.Equal(d.Transports[0].Args, []string{"mcp", "--data", dir, "--read-only=true", "--sampling=true"}) ||
			!strings.Contains(mustJSON(t, d.Tools), `"hyde"`) ||
			d.Transports[1].URL != "http://127.0.0.1:8765/mcp" || len(d.Tools) == 0 || d.Capabilities == nil || d.Capabilities.Tasks == nil {
			t.Errorf("document = %+v", d)
		}
	}
}

// TestDataDirHeldByAnotherProcess (issue 16 finding 5): `rcpd mcp --data
// DIR` and `rcpd mcpdesc --data DIR` work while another process (rcpd
// serve) holds DIR: they serve a read-only snapshot, and say so.
func TestDataDirHeldByAnotherProcess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	holder := exec.Command(exe, "hold-dir", dir)
	in, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(); _ = holder.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("holder: %q, %v", line, err)
	}

	cs, _, stderr := spawn(t, "--data", dir)
	res := structured[mcpbridge.SearchOutput](t, mustCall(t, cs, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "capital of France"}}))
	if len(res.Hits) == 0 || res.Hits[0].DocumentID != "paris" {
		t.Errorf("search over the snapshot = %+v", res)
	}
	if names := toolNames(t, cs); slices.Contains(names, "index_add") {
		t.Errorf("a snapshot is read-only, yet tools = %v", names)
	}
	eventually(t, func() bool { return strings.Contains(stderr.String(), "read-only snapshot") })

	var stdout, descErr bytes.Buffer
	if code := DescMain(context.Background(), []string{"--data", dir}, nil, &stdout, &descErr); code != 0 {
		t.Fatalf("rcpd mcpdesc --data (held): exit %d\n%s", code, descErr.String())
	}
	validateDesc(t, stdout.Bytes())
	if !strings.Contains(descErr.String(), "read-only snapshot") {
		t.Errorf("mcpdesc does not say it described a snapshot:\n%s", descErr.String())
	}
}

// TestTrustFlag (issue 17 defect 6): trust levels of ingestion sources can
// be configured under rcpd mcp --data, as trustedSources under rcpd serve.
func TestTrustFlag(t *testing.T) {
	dir := t.TempDir()
	eng, err := openTestEngine(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "untrusted"},
		{[]string{"--trust", "handbook=trusted"}, "trusted"},
	} {
		cs, _, _ := spawn(t, append([]string{"--data", dir}, tt.args...)...)
		out := structured[mcpbridge.SearchOutput](t, mustCall(t, cs, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "capital of France"}}))
		if len(out.Hits) == 0 || out.Hits[0].Trust.Level != tt.want {
			t.Errorf("%v: hits = %+v, want trust %s", tt.args, out.Hits, tt.want)
		}
		_ = cs.Close()
	}
	var stderr bytes.Buffer
	if code := Main(context.Background(), []string{"--data", dir, "--trust", "handbook=very"}, strings.NewReader(""), &bytes.Buffer{}, &stderr); code == 0 ||
		!strings.Contains(stderr.String(), "--trust") {
		t.Errorf("--trust handbook=very: exit %d, %s", code, stderr.String())
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
