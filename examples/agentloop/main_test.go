package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/internal/testutil/gobuild"
	"github.com/rcpgo/rcpgo/rcp"
)

// TestLoopAgainstRcpdDemo runs the loop against rcpd --demo over stdio and
// checks no retrieve of the session returned a hit twice (the server's
// session dedup) while round 2 still found new evidence.
func TestLoopAgainstRcpdDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the agent loop against a spawned rcpd; skipped with -short")
	}
	dir := t.TempDir()
	rcpd := gobuild.Binary(t, dir, "github.com/rcpgo/rcpgo/cmd/rcpd")
	ctx := context.Background()
	c, err := rcp.ConnectStdio(ctx, []string{rcpd, "serve", "--stdio", "--demo", "--data", filepath.Join(dir, "data"), "--log-level", "error"},
		&rcp.ClientOptions{Info: rcp.PeerInfo{Name: "test", Version: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out bytes.Buffer
	if err := loop(ctx, c, &out, "how does BM25 weight terms and how are posting lists compressed", 3); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	t.Log("\n" + text)
	if !strings.Contains(text, "think: 2 sub-question(s)") {
		t.Fatalf("no decomposition:\n%s", text)
	}
	// The server dedups the whole session: no retrieve, in either round
	// or for either sub-question, returns a hit the session already saw.
	if strings.Contains(text, "(seen before)") {
		t.Fatalf("a hit came back within one session:\n%s", text)
	}
	if !strings.Contains(text, "round 2:") {
		t.Fatalf("round 2 found nothing new:\n%s", text)
	}
	if !strings.Contains(text, "feedback:") || !strings.Contains(text, "server dedup: true") {
		t.Fatalf("missing feedback or dedup:\n%s", text)
	}
}
