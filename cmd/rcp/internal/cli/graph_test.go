package cli

import (
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/testutil/syncbuf"
	"github.com/rcpgo/rcpgo/rcp"
)

// httpRcpd starts `rcpd serve --http` on a free loopback port with extra
// flags and returns its URL; the process is killed at cleanup.
func httpRcpd(t *testing.T, data string, extra ...string) string {
	t.Helper()
	return startRcpd(t, func(addr string) []string {
		return append([]string{"serve", "--http", addr, "--data", data, "--dense", "none", "--log-level", "error"}, extra...)
	})
}

// startRcpd runs rcpd with the arguments args gives for a free loopback
// address, waits until it answers ping and returns its URL.
func startRcpd(t *testing.T, args func(addr string) []string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	var stderr syncbuf.Buffer
	cmd := exec.Command(rcpdBinary(t), args(addr)...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + addr + "/rcp"
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if code, _, _ := rcpRun("ping", "-n", "1", "--timeout", "2s", "--http", url); code == 0 {
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("rcpd --http did not come up:\n%s", stderr.String())
		}
	}
}

// rcp graph OP and rcp memory build|recall against rcpd --graph: text and
// --json output for every op, usage errors exit 2, and a server without
// the graph is refused with a hint.
func TestGraphAndMemoryAgainstRcpd(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes")
	writeFiles(t, notes, map[string]string{
		"curie.md":  "# Curie\n\nMarie Curie worked in Paris. Paris lies on the river Seine.\n",
		"seine.md":  "# Seine\n\nThe river Seine flows through Rouen before reaching Le Havre.\n",
		"monet.md":  "# Monet\n\nRouen Cathedral was painted by Claude Monet many times. Claude Monet lived in Giverny.\n",
		"rhone.txt": "The Rhone flows from the Alps through Lyon to the Mediterranean.\n",
	})
	url := httpRcpd(t, filepath.Join(dir, "data"), "--graph")
	run := func(args ...string) string {
		t.Helper()
		code, out, errs := rcpRun(append(args, "--http", url)...)
		if code != 0 {
			t.Fatalf("rcp %v: exit %d\n%s", args, code, errs)
		}
		return out
	}
	run("index", "add", notes)
	// Building the global memory waits until the graph holds every write.
	if out := run("memory", "build"); !strings.HasPrefix(out, "memory global built from the live index") {
		t.Fatalf("memory build: %q", out)
	}

	if out := run("graph", "local", "Which river flows through Rouen?", "--k", "3"); !strings.Contains(out, "seine.md") || !strings.Contains(out, "paths:\n") {
		t.Errorf("graph local: %q", out)
	}
	if out := run("graph", "drift", "Which river flows through Paris?"); !strings.Contains(out, "followups:") {
		t.Errorf("graph drift: %q", out)
	}
	if out := run("graph", "global", "painters and cathedrals"); !strings.Contains(out, "summary:") || !strings.Contains(out, " 1. ") {
		t.Errorf("graph global: %q", out)
	}
	if out := run("graph", "communities", "--level", "0", "--k", "2"); !strings.Contains(out, "level 0") {
		t.Errorf("graph communities: %q", out)
	}
	if out := run("graph", "neighbors", "--seed", "claude monet", "--hops", "1"); !strings.Contains(out, "nodes,") || !strings.Contains(out, " — ") {
		t.Errorf("graph neighbors: %q", out)
	}
	var gr rcp.GraphResult
	if out := run("graph", "local", "Claude Monet", "--json"); json.Unmarshal([]byte(out), &gr) != nil || len(gr.Hits) == 0 || gr.Hits[0].Provenance == nil {
		t.Errorf("graph local --json: %q", out)
	}

	var mr rcp.MemoryRecallResult
	out := run("memory", "recall", "Which painter lived near the Seine?", "--n", "2", "--json")
	if err := json.Unmarshal([]byte(out), &mr); err != nil || len(mr.Clues) == 0 {
		t.Fatalf("memory recall --json: %v %q", err, out)
	}
	if out := run("memory", "recall", "Which painter lived near the Seine?"); !strings.Contains(out, " 1. ") {
		t.Errorf("memory recall: %q", out)
	}
	var mb rcp.MemoryBuildResult
	out = run("memory", "build", filepath.Join(notes, "monet.md"), "--scope", "global", "--json")
	if err := json.Unmarshal([]byte(out), &mb); err != nil || mb.MemoryID == "" || mb.MemoryID == "global" {
		t.Fatalf("memory build PATH --json: %v %q", err, out)
	}
	if out := run("memory", "recall", "Where did Claude Monet live?", "--memory", mb.MemoryID); strings.Contains(out, "no clues") {
		t.Errorf("memory recall --memory %s: %q", mb.MemoryID, out)
	}
	// The server's own errors keep their code and reach the user.
	if code, _, errs := rcpRun("memory", "recall", "x", "--memory", "nope", "--http", url); code != 1 || !strings.Contains(errs, "unknown memoryId") {
		t.Errorf("unknown memoryId: %d %q", code, errs)
	}

	for _, args := range [][]string{
		{"graph"}, {"graph", "sideways", "x"}, {"graph", "local"}, {"graph", "communities", "x"},
		{"graph", "local", "x", "--k", "0"}, {"graph", "neighbors", "x", "--hops", "-1"}, {"graph", "global", "x", "--level", "-2"},
		{"memory"}, {"memory", "forget"}, {"memory", "recall"}, {"memory", "recall", "x", "--n", "-1"}, {"graph", "local", "--bogus", "x"},
	} {
		if code, _, errs := rcpRun(append(args, "--http", url)...); code != 2 {
			t.Errorf("rcp %q: exit %d, want 2 (%s)", args, code, errs)
		}
	}

	// Over stdio, against an rcpd without the graph: refused, not faked.
	plain := filepath.Join(dir, "plain")
	code, _, errs := rcpRun(append([]string{"graph", "local", "x"}, serverArgs(t, plain)...)...)
	if code != 1 || !strings.Contains(errs, "does not advertise graph") {
		t.Errorf("graph against rcpd without --graph: %d %q", code, errs)
	}
	code, out, errs = rcpRun(append([]string{"graph", "communities", "--json"}, serverArgs(t, plain, "--graph")...)...)
	if code != 0 || !json.Valid([]byte(out)) {
		t.Errorf("graph communities over stdio: %d %q %s", code, out, errs)
	}
}

// rcp graph through rcpd gateway over two rcpd --graph engines: graph local
// hits of both engines, fused, each naming its engine; memory is the
// first engine's.
func TestGraphThroughGateway(t *testing.T) {
	dir := t.TempDir()
	corpora := map[string]map[string]string{
		"north": {"curie.md": "Marie Curie worked in Paris. Paris lies on the river Seine.\n",
			"seine.md": "The river Seine flows through Rouen before reaching Le Havre.\n"},
		"south": {"rhone.md": "The Rhone flows from the Alps through Lyon to the Mediterranean.\n",
			"lyon.md": "Lyon is linked to Paris by a fast train along the Seine valley.\n"},
	}
	var reg federation.Registry
	for _, id := range []string{"north", "south"} {
		writeFiles(t, filepath.Join(dir, id), corpora[id])
		url := httpRcpd(t, filepath.Join(dir, id+"-data"), "--graph")
		for _, args := range [][]string{{"index", "add", filepath.Join(dir, id)}, {"memory", "build"}} {
			if code, _, errs := rcpRun(append(args, "--http", url)...); code != 0 {
				t.Fatalf("%s: rcp %v: %s", id, args, errs)
			}
		}
		reg.Engines = append(reg.Engines, federation.EngineSpec{ID: id, URL: url})
	}
	regFile := filepath.Join(dir, "rcp.json")
	b, _ := json.Marshal(reg)
	writeFiles(t, dir, map[string]string{"rcp.json": string(b)})
	gw := startRcpd(t, func(addr string) []string {
		return []string{"gateway", "--registry", regFile, "--http", addr, "--log-level", "error"}
	})

	code, out, errs := rcpRun("graph", "local", "Which river flows through Paris and Lyon?", "--json", "--http", gw)
	var res rcp.GraphResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("graph local through the gateway: %d %s %s", code, out, errs)
	}
	from := map[any]bool{}
	for _, h := range res.Hits {
		from[h.Meta["engine"]] = true
	}
	if !from["north"] || !from["south"] {
		t.Errorf("hits from %v, want north and south", from)
	}
	if code, out, errs := rcpRun("memory", "recall", "river Seine", "--http", gw); code != 0 || strings.Contains(out, "no clues") {
		t.Errorf("memory recall through the gateway: %d %q %s", code, out, errs)
	}
}
