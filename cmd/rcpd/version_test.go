package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcpgo/rcpgo/internal/testutil/childtest"
	"github.com/rcpgo/rcpgo/internal/testutil/gobuild"
	"github.com/rcpgo/rcpgo/rcp"
)

// Issue 30: one version everywhere. Binaries built with a release version
// set at link time report it from `rcpd version`, `rcp version`, the
// initialize of rcpd serve (stdio and HTTP), the web console's header, the
// gateway and the MCP face. Before, they said "dev", a pseudo-version or
// "(devel)", and "0.1.0".
func TestOneVersionEverywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rcpd and rcp and runs every face; skipped with -short")
	}
	const want = "v0.0.0-versiontest"
	bin := t.TempDir()
	ldflags := "-X github.com/rcpgo/rcpgo/internal/buildinfo.version=" + want
	rcpd := gobuild.Binary(t, bin, "github.com/rcpgo/rcpgo/cmd/rcpd", "-ldflags", ldflags)
	rcpCLI := gobuild.Binary(t, bin, "github.com/rcpgo/rcpgo/cmd/rcp", "-ldflags", ldflags)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	for _, tool := range []string{rcpd, rcpCLI} {
		out, err := exec.CommandContext(ctx, tool, "version", "--json").Output()
		var v struct{ Version string }
		if err != nil || json.Unmarshal(out, &v) != nil || v.Version != want {
			t.Errorf("%s version --json: %s %v, want version %s", filepath.Base(tool), out, err, want)
		}
		out, err = exec.CommandContext(ctx, tool, "version").Output()
		if f := strings.Fields(string(out)); err != nil || len(f) < 2 || f[1] != want {
			t.Errorf("%s version: %q %v, want %q second", filepath.Base(tool), out, err, want)
		}
	}

	data := t.TempDir()
	stdio := []string{rcpd, "serve", "--stdio", "--demo", "--data", filepath.Join(data, "stdio")}
	if got := initializeVersion(ctx, t, stdio); got != want {
		t.Errorf("rcpd serve --stdio: server.version %q, want %q", got, want)
	}
	reg := filepath.Join(data, "rcp.json")
	spec, _ := json.Marshal(map[string]any{"engines": []any{map[string]any{"id": "demo", "command": stdio}}})
	if err := os.WriteFile(reg, spec, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := initializeVersion(ctx, t, []string{rcpd, "gateway", "--stdio", "--registry", reg}); got != want {
		t.Errorf("rcpd gateway: server.version %q, want %q", got, want)
	}

	base := startServeHTTP(t, rcpd, filepath.Join(data, "http"))
	c, err := rcp.ConnectHTTP(ctx, base+"/rcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.InitializeResult().Server.Version; got != want {
		t.Errorf("rcpd serve --http: server.version %q, want %q", got, want)
	}
	c.Close()
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "rcpd "+want) {
		t.Errorf("the console's page does not say rcpd %s", want)
	}

	mc := mcp.NewClient(&mcp.Implementation{Name: "version-test", Version: "1"}, nil)
	sess, err := mc.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(rcpd, "mcp", "--data", filepath.Join(data, "mcp"))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := sess.InitializeResult().ServerInfo.Version; got != want {
		t.Errorf("rcpd mcp: serverInfo.version %q, want %q", got, want)
	}
	sess.Close()
}

// initializeVersion spawns argv as a stdio RCP server and returns the
// server.version of its initialize.
func initializeVersion(ctx context.Context, t *testing.T, argv []string) string {
	t.Helper()
	c, err := rcp.ConnectStdio(ctx, argv, nil)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(argv, " "), err)
	}
	defer c.Close()
	return c.InitializeResult().Server.Version
}

// startServeHTTP runs `rcpd serve --demo --http 127.0.0.1:0` until the test
// ends and returns its base URL (logged on stderr at info level).
func startServeHTTP(t *testing.T, rcpd, data string) string {
	t.Helper()
	cmd := exec.Command(rcpd, "serve", "--demo", "--data", data, "--http", "127.0.0.1:0", "--log-level", "info")
	return "http://" + childtest.Start(t, cmd, serveAddr)
}
