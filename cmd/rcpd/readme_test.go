package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/testutil/gobuild"
	"github.com/rcpgo/rcpgo/internal/testutil/syncbuf"
	"github.com/rcpgo/rcpgo/rcp"
)

// The README's integration snippets are checked as a user would use them
// (issue 34, finding 9): each MCP client configuration is parsed and the
// command it names started as that client starts it, with the built rcpd
// on PATH, through an MCP initialize and tools/list; the HTTP one is
// reached at its /mcp endpoint; the rcp.json example is loaded and both of
// its engines written to and queried.

// readmeBlock is a fenced block of README.md marked <!-- NAME -->.
type readmeBlock struct{ name, lang, body string }

var marked = regexp.MustCompile("(?s)<!-- ((?:mcp-config|rcp-registry)[ a-z-]*) -->\n```(\\w+)\n(.*?)\n```")

func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []readmeBlock
	for _, m := range marked.FindAllStringSubmatch(string(b), -1) {
		out = append(out, readmeBlock{strings.TrimSpace(m[1]), m[2], m[3]})
	}
	return out
}

// builtRcpd builds this package's binary into a fresh directory (for PATH).
func builtRcpd(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds rcpd")
	}
	dir := t.TempDir()
	gobuild.Binary(t, dir, "github.com/rcpgo/rcpgo/cmd/rcpd")
	return dir
}

// mcpServerEntry is one server of a client configuration (the keys the
// four clients share: Claude Desktop, Claude Code and Cursor under
// mcpServers, VS Code under servers).
type mcpServerEntry struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
}

// parseClientConfig returns the rcpd entry of a configuration block.
func parseClientConfig(t *testing.T, b readmeBlock) mcpServerEntry {
	t.Helper()
	if b.lang == "sh" { // claude mcp add NAME -- CMD ARGS…
		f := strings.Fields(b.body)
		i := slicesIndex(f, "--")
		if len(f) < 4 || f[0] != "claude" || f[1] != "mcp" || f[2] != "add" || i < 0 || i+1 >= len(f) {
			t.Fatalf("%s: not a 'claude mcp add NAME -- CMD' line: %q", b.name, b.body)
		}
		return mcpServerEntry{Type: "stdio", Command: f[i+1], Args: f[i+2:]}
	}
	var cfg struct {
		MCPServers map[string]mcpServerEntry `json:"mcpServers"`
		Servers    map[string]mcpServerEntry `json:"servers"`
	}
	dec := json.NewDecoder(strings.NewReader(b.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("%s: %v", b.name, err)
	}
	e, ok := cfg.MCPServers["rcpd"]
	if !ok {
		e, ok = cfg.Servers["rcpd"]
	}
	if !ok {
		t.Fatalf("%s: no rcpd server in %s", b.name, b.body)
	}
	return e
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestReadmeMCPConfigs(t *testing.T) {
	bin := builtRcpd(t)
	home := t.TempDir()
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	t.Setenv("RCPD_DATA", "")
	os.Unsetenv("RCPD_DATA")
	seen := map[string]bool{}
	for _, b := range readmeBlocks(t) {
		if !strings.HasPrefix(b.name, "mcp-config ") {
			continue
		}
		client := strings.TrimPrefix(b.name, "mcp-config ")
		seen[client] = true
		t.Run(client, func(t *testing.T) {
			e := parseClientConfig(t, b)
			if e.Type == "http" || e.URL != "" {
				checkHTTPConfig(t, e)
				return
			}
			cmd := exec.Command(e.Command, e.Args...) // as the client does: command, args, env on top of its own
			if len(e.Env) > 0 {
				cmd.Env = os.Environ()
				for k, v := range e.Env {
					cmd.Env = append(cmd.Env, k+"="+v)
				}
			}
			var stderr syncbuf.Buffer
			cmd.Stderr = &stderr
			mcpRoundTrip(t, &mcp.CommandTransport{Command: cmd}, &stderr)
		})
	}
	for _, c := range []string{"claude-desktop", "claude-code", "claude-code-project", "cursor", "vscode", "vscode-http"} {
		if !seen[c] {
			t.Errorf("README.md has no <!-- mcp-config %s --> block", c)
		}
	}
}

// mcpRoundTrip connects over transport and checks initialize, tools/list
// and a search.
func mcpRoundTrip(t *testing.T, transport mcp.Transport, stderr *syncbuf.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "readme-test", Version: "1"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("initialize: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	if info := cs.InitializeResult(); info == nil || info.ServerInfo == nil || info.Capabilities.Tools == nil {
		t.Fatalf("initialize result %+v", info)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
	}
	if !names["search"] {
		t.Fatalf("tools %v: no search", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "anything", "k": 3}})
	if err != nil || res.IsError {
		t.Fatalf("search: %v %+v", err, res)
	}
}

// checkHTTPConfig starts rcpd mcp --http on a free port, checks the
// configuration's path is the endpoint (and GET / says where it is), and
// runs the round trip over streamable HTTP.
func checkHTTPConfig(t *testing.T, e mcpServerEntry) {
	u, err := urlPath(e.URL)
	if err != nil || u != "/mcp" {
		t.Fatalf("url %q: want the /mcp endpoint", e.URL)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "rcpd", "mcp", "--http", "127.0.0.1:0")
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	served := regexp.MustCompile(`url=(http://\S+/mcp)`)
	var endpoint string
	for deadline := time.Now().Add(time.Minute); endpoint == ""; time.Sleep(20 * time.Millisecond) {
		if m := served.FindStringSubmatch(stderr.String()); m != nil {
			endpoint = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("rcpd mcp --http did not log its URL:\n%s", stderr.String())
		}
	}
	resp, err := http.Get(strings.TrimSuffix(endpoint, "/mcp") + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "Its endpoint is /mcp") {
		t.Errorf("GET / on the MCP face: %d %q, want where the endpoint is", resp.StatusCode, body)
	}
	mcpRoundTrip(t, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, &stderr)
}

func urlPath(s string) (string, error) {
	i := strings.Index(s, "://")
	if i < 0 {
		return "", os.ErrInvalid
	}
	rest := s[i+3:]
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		return rest[j:], nil
	}
	return "/", nil
}

func TestReadmeRegistry(t *testing.T) {
	bin := builtRcpd(t)
	home := t.TempDir()
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("HOME", home)
	t.Setenv("NOTES_TOKEN", "notes-secret")
	var block string
	for _, b := range readmeBlocks(t) {
		if b.name == "rcp-registry" {
			block = b.body
		}
	}
	if block == "" {
		t.Fatal("README.md has no <!-- rcp-registry --> block")
	}
	path := filepath.Join(t.TempDir(), "rcp.json")
	if err := os.WriteFile(path, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	reg, err := federation.LoadRegistry(path)
	if err != nil {
		t.Fatalf("the README's registry: %v", err)
	}
	notes, ok := reg.Engine("notes")
	if !ok || notes.URL != "http://127.0.0.1:7700/rcp" {
		t.Fatalf("notes engine %+v", notes)
	}
	// The notes server, on a free port instead of 7700, with the token.
	base := startCommand(t, "serve", serveAddr, "--data", filepath.Join(home, "notes"), "--http", "127.0.0.1:0",
		"--log-level", "info", "--token", "notes-secret", "--dense", "none")
	notes.URL = base + "/rcp"
	ctx := context.Background()
	for _, id := range []string{"notes", "papers"} {
		spec, _ := reg.Engine(id)
		c, err := spec.Connect(ctx, nil)
		if err != nil {
			t.Fatalf("engine %s: %v", id, err)
		}
		text := "a document in the " + id + " engine about zebrafish"
		if _, err := c.IndexAdd(ctx, &rcp.IndexAddParams{Documents: []rcp.Document{{ID: id + "-1", Text: text}}}); err != nil {
			t.Fatalf("engine %s: index/add: %v", id, err)
		}
		res, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("zebrafish"), K: 1})
		if err != nil || len(res.Hits) != 1 || res.Hits[0].ID.String() != id+"-1" {
			t.Fatalf("engine %s: retrieve %+v %v", id, res, err)
		}
		c.Close()
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "share", "rcpd-papers", "LOCK")); err != nil {
		t.Errorf("the papers engine did not use ${HOME}/.local/share/rcpd-papers: %v", err)
	}
}
