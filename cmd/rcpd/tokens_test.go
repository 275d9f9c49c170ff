package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcpgo/rcpgo/cmd/rcpd/internal/mcpcmd"
	"github.com/rcpgo/rcpgo/internal/auth"
	"github.com/rcpgo/rcpgo/internal/testutil/syncbuf"
)

// startMain runs a main (dispatch, mcpcmd.Main) with args until the test
// ends and returns the first URL it logged that matches suffix.
func startMain(t *testing.T, main func(context.Context, []string, io.Reader, io.Writer, io.Writer) int, suffix string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncbuf.Buffer
	done := make(chan int, 1)
	go func() { done <- main(ctx, args, strings.NewReader(""), io.Discard, &stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Errorf("%v did not stop", args)
		}
	})
	re := regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)` + regexp.QuoteMeta(suffix))
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("%v exited with %d:\n%s", args, code, stderr.String())
		default:
		}
	}
	t.Fatalf("%v logged no %s URL:\n%s", args, suffix, stderr.String())
	return ""
}

// rpc posts one JSON-RPC request to /rcp with token and returns its result
// or error object.
func rpc(t *testing.T, base, token, method, params string) (json.RawMessage, map[string]any) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	req, _ := http.NewRequest(http.MethodPost, base+"/rcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  map[string]any  `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: HTTP %d %s", method, resp.StatusCode, b)
	}
	return out.Result, out.Error
}

// refusedForScope checks a -32012 naming scope in error.data.
func refusedForScope(t *testing.T, what string, e map[string]any, scope string) {
	t.Helper()
	data, _ := e["data"].(map[string]any)
	if e == nil || e["code"] != float64(-32012) || data["scope"] != scope {
		t.Errorf("%s: got %v, want -32012 with error.data.scope %q", what, e, scope)
	}
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func mcpSession(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "scope-test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}}, nil)
	if err != nil {
		t.Fatalf("MCP connect with %s: %v", token, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// Least-privilege tokens (issue 33): a token file gives each token its
// scopes; a read-only token changes nothing over RCP, the console or the
// MCP face (-32012 with error.data.scope, or 403 naming the scope), while
// it still reads; rcpd mcp --connect works with a scoped token, and the
// engine enforces that token's scopes behind the MCP face.
func TestReadOnlyTokenChangesNothing(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	lines := "# name scopes secret\nreader read r-secret\n" +
		auth.Line("writer", []auth.Scope{auth.Read, auth.Write}, "w-secret") + "\n" +
		auth.Line("ops", auth.Scopes, "o-secret") + "\n"
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	base := startMain(t, dispatch, "", "serve", "--http", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--dense", "none", "--token-file", file)

	if _, e := rpc(t, base, "w-secret", "index/add", `{"documents":[{"id":"a","text":"alpha document about retrieval"},{"id":"b","text":"beta document"}]}`); e != nil {
		t.Fatalf("writer index/add: %v", e)
	}
	writes := map[string]string{
		"index/add":    `{"documents":[{"id":"c","text":"planted"}]}`,
		"index/delete": `{"ids":["a"]}`,
		"feedback":     `{"signals":[{"hitId":"a","injectionSuspected":true}]}`,
	}
	for method, params := range writes {
		_, e := rpc(t, base, "r-secret", method, params)
		refusedForScope(t, "reader "+method, e, "write")
	}
	_, e := rpc(t, base, "w-secret", "x-rcpgo/quarantine/list", `{}`)
	if e == nil || e["code"] != float64(-32012) {
		t.Errorf("writer x-rcpgo/quarantine/list: %v, want -32012", e)
	}
	res, e := rpc(t, base, "r-secret", "retrieve", `{"query":"document","k":10}`)
	if e != nil || !bytes.Contains(res, []byte(`"a"`)) || !bytes.Contains(res, []byte(`"b"`)) || bytes.Contains(res, []byte(`"c"`)) {
		t.Errorf("reader retrieve after the refused writes: %s %v", res, e)
	}
	if _, e := rpc(t, base, "nope", "retrieve", `{"query":"x"}`); e == nil || e["code"] != float64(-32012) {
		t.Errorf("unknown token: %v", e)
	}

	// The console and /metrics read the same tokens.
	httpDo := func(method, url, token, ctype, body string) (int, string) {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Authorization", "bearer "+token)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := httpDo("POST", base+"/console/api/extract?name=x.md", "r-secret", "application/octet-stream", "# x\n\ntext"); code != 403 || !strings.Contains(body, `"scope":"write"`) {
		t.Errorf("reader console extract: %d %s", code, body)
	}
	if code, body := httpDo("POST", base+"/console/api/extract?name=x.md", "w-secret", "application/octet-stream", "# x\n\ntext"); code != 200 {
		t.Errorf("writer console extract: %d %s", code, body)
	}
	if code, _ := httpDo("GET", base+"/metrics", "r-secret", "", ""); code != 403 {
		t.Errorf("reader /metrics: %d, want 403", code)
	}
	if code, _ := httpDo("GET", base+"/metrics", "o-secret", "", ""); code != 200 {
		t.Errorf("admin /metrics: %d", code)
	}

	// The MCP face: its callers' tokens, and a scoped --connect token.
	connectFile := filepath.Join(dir, "connect")
	if err := os.WriteFile(connectFile, []byte("w-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	face := startMain(t, mcpcmd.Main, "/mcp", "--connect", base+"/rcp", "--connect-token-file", connectFile,
		"--http", "127.0.0.1:0", "--token-file", file)
	add := &mcp.CallToolParams{Name: "index_add", Arguments: map[string]any{"documents": []map[string]any{{"id": "m", "text": "via mcp"}}}}
	_, err := mcpSession(t, face+"/mcp", "r-secret").CallTool(context.Background(), add)
	if err == nil || !strings.Contains(err.Error(), "write scope") {
		t.Errorf("reader MCP index_add: %v, want a refusal naming the write scope", err)
	}
	if res, err := mcpSession(t, face+"/mcp", "w-secret").CallTool(context.Background(), add); err != nil || res.IsError {
		t.Errorf("writer MCP index_add: %v %+v", err, res)
	}
	if err := os.WriteFile(connectFile, []byte("r-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	readFace := startMain(t, mcpcmd.Main, "/mcp", "--connect", base+"/rcp", "--connect-token-file", connectFile,
		"--http", "127.0.0.1:0", "--token-file", file)
	add.Arguments = map[string]any{"documents": []map[string]any{{"id": "n", "text": "via a read-only face"}}}
	// The engine's refusal comes back as the tool's error result.
	if r, err := mcpSession(t, readFace+"/mcp", "w-secret").CallTool(context.Background(), add); err != nil || !r.IsError || !strings.Contains(toolText(r), "write scope") {
		t.Errorf("index_add through a face connected with a read token: %v %+v, want the engine's refusal", err, r)
	}
	res, _ = rpc(t, base, "r-secret", "retrieve", `{"query":"via","k":10}`)
	if bytes.Contains(res, []byte(`"n"`)) {
		t.Errorf("a read-only --connect token wrote: %s", res)
	}
}

func toolText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestTokenNew(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"token", "new", "--name", "ci", "--scopes", "read,write", "--file", file}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	set, err := auth.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	tok, ok := set.Lookup(strings.TrimSpace(out.String()))
	if !ok || tok.Name != "ci" || !tok.Has(auth.Write) || tok.Has(auth.Admin) {
		t.Fatalf("the printed token: %v %v", tok, ok)
	}
	if b, _ := os.ReadFile(file); bytes.Contains(b, bytes.TrimSpace(out.Bytes())) {
		t.Fatal("the token file holds the secret in plain text")
	}
	for _, bad := range [][]string{{"token"}, {"token", "new"}, {"token", "new", "--name", "x", "--scopes", "root"}} {
		if code := dispatch(context.Background(), bad, nil, io.Discard, io.Discard); code != 2 {
			t.Errorf("%q: exit %d, want 2", bad, code)
		}
	}
}
