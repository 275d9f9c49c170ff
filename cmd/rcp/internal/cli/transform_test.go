package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/internal/testutil/gobuild"
)

func TestParseSignal(t *testing.T) {
	sg, err := parseSignal("arxiv:1706.03762#3:used,cited,reward=-0.5,unhelpful")
	if err != nil || sg.HitID.String() != "arxiv:1706.03762#3" || !*sg.Used || !*sg.Cited || *sg.Reward != -0.5 || *sg.Helpful {
		t.Fatalf("%+v, %v", sg, err)
	}
	for _, bad := range []string{"nocolon", ":used", "d1:reward=2", "d1:bogus", "d1:reward=x"} {
		if _, err := parseSignal(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestTransformAndFeedbackAgainstRcpd runs rcp transform and rcp feedback
// against rcpd --demo over stdio.
func TestTransformAndFeedbackAgainstRcpd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rcpd; skipped with -short")
	}
	dir := t.TempDir()
	rcpd := gobuild.Binary(t, dir, "github.com/rcpgo/rcpgo/cmd/rcpd")
	server := []string{"--", rcpd, "serve", "--stdio", "--demo", "--data", filepath.Join(dir, "data"), "--log-level", "error"}
	run := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := Main(append(args, server...), &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr.String())
		}
		return stdout.String()
	}
	if out := run("transform", "invertd index", "--method", "rewrite"); !strings.HasPrefix(out, "invertd index invertd index invertd index inverted") {
		t.Fatalf("transform rewrite: %q", out)
	}
	if out := run("transform", "how does bm25 rank and what is an inverted index", "--method", "decompose"); strings.Count(out, "\n") != 2 {
		t.Fatalf("transform decompose: %q", out)
	}
	if out := run("query", "invertd index", "--k", "2", "--rewrite", "rewrite"); !strings.HasPrefix(out, "rewritten: invertd index invertd index invertd index inverted") {
		t.Fatalf("query --rewrite: %q", out)
	}
	// (--session: each stdio invocation starts its own rcpd, whose session
	// state lives in memory, so dedup across invocations needs one HTTP rcpd;
	// the engine and agentloop tests cover it.)
	if out := run("feedback", "--session", "s1", "--signal", "bm25:used,helpful", "--signal", "no-such-id:helpful"); out != "accepted 1 of 2 signals\n" {
		t.Fatalf("feedback: %q", out)
	}
	var stderr bytes.Buffer
	if code := Main(append([]string{"transform", "q", "--method", "hyde"}, server...), &bytes.Buffer{}, &stderr); code == 0 {
		t.Fatal("hyde without a chat model succeeded")
	}
}
