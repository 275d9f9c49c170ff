package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/rcpgo/rcpgo/internal/testutil/shared"
	"github.com/rcpgo/rcpgo/mcpbridge/tasks"
	"github.com/rcpgo/rcpgo/rcp"
)

// TestMain fails the run when the tests leave goroutines behind.
func TestMain(m *testing.M) {
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
	// The go-sdk client drops what it does not model (tasks, execution):
	// those are compared with the raw wire answers.
	raw := httpSession(t, srv.URL)
	_, rawInit := rawInitialize(t, srv.URL)
	_, rawTools := raw(`{"jsonrpc":"2.0","id":"t","method":"tools/list"}`)
	execution := map[string]any{}
	for _, tool := range rawTools["result"].(map[string]any)["tools"].([]any) {
		m := tool.(map[string]any)
		execution[m["name"].(string)] = m["execution"]
	}
	for i, tool := range live.Tools {
		if e, ok := execution[tool.Name].(map[string]any); ok {
			live.Tools[i].Execution = &tasks.Execution{TaskSupport: tasks.Support(e["taskSupport"].(string))}
		}
	}
	if d.Capabilities.Tasks == nil {
		t.Error("mcpdesc does not declare tasks")
	}
	for _, part := range []struct {
		name      string
		doc, live any
	}{
		{"capabilities", d.Capabilities, rawInit["result"].(map[string]any)["capabilities"]},
		{"info", d.Info, live.Info},
		{"tools", d.Tools, live.Tools},
		{"prompts", d.Prompts, live.Prompts},
		{"resourceTemplates", d.ResourceTemplates, live.ResourceTemplates},
		{"resources", d.Resources, live.Resources},
	} {
		if a, b := canonJSON(t, part.doc), canonJSON(t, part.live); a != b {
			t.Errorf("%s: mcpdesc\n%s\nlive\n%s", part.name, a, b)
		}
	}
	// info.description is serverInfo.description (not the instructions),
	// with websiteUrl and icons (MCP 2025-11-25).
	si := cs.InitializeResult().ServerInfo
	if d.Info.Description == "" || d.Info.Description != si.Description || d.Info.Description == cs.InitializeResult().Instructions ||
		d.Info.WebsiteURL != WebsiteURL || si.WebsiteURL != WebsiteURL || len(d.Info.Icons) == 0 || len(si.Icons) == 0 {
		t.Errorf("info = %+v, serverInfo = %+v", d.Info, si)
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

// canonJSON is v's JSON with object members in sorted order.
func canonJSON(t *testing.T, v any) string {
	t.Helper()
	var x any
	if err := json.Unmarshal([]byte(mustJSON(t, v)), &x); err != nil {
		t.Fatal(err)
	}
	return mustJSON(t, x)
}
