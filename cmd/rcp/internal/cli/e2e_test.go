package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/internal/testutil/gobuild"
	"github.com/rcpgo/rcpgo/internal/testutil/syncbuf"
	"github.com/rcpgo/rcpgo/rcp"
)

// binary is a command of this module built once per test binary.
type binary struct {
	pkg  string // its import path
	once sync.Once
	path string
	err  error
}

var (
	rcpdBin = &binary{pkg: "github.com/rcpgo/rcpgo/cmd/rcpd"}
	rcpBin  = &binary{pkg: "github.com/rcpgo/rcpgo/cmd/rcp"}
)

// build builds b.pkg once into dir (a new temporary folder, which TestMain
// removes, when empty) and returns the binary's path.
func (b *binary) build(t *testing.T, dir string) string {
	t.Helper()
	b.once.Do(func() {
		if dir == "" {
			if dir, b.err = os.MkdirTemp("", "rcp-cli-test"); b.err != nil {
				return
			}
		}
		b.path = filepath.Join(dir, path.Base(b.pkg))
		b.err = gobuild.Build(b.path, b.pkg)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// rcpdBinary builds cmd/rcpd once per test binary.
func rcpdBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds rcpd; skipped with -short")
	}
	return rcpdBin.build(t, "")
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(testServerEnv); mode != "" {
		os.Exit(serveTestServer(mode))
	}
	code := m.Run()
	if rcpdBin.path != "" {
		os.RemoveAll(filepath.Dir(rcpdBin.path))
	}
	os.Exit(code)
}

// rcpRun runs the rcp command in-process and returns its exit code, stdout
// and stderr.
func rcpRun(args ...string) (int, string, string) {
	var stdout, stderr syncbuf.Buffer
	code := Main(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// serverArgs is "-- rcpd serve --stdio" over data, with no dense encoder
// (quick to open).
func serverArgs(t *testing.T, data string, extra ...string) []string {
	return append([]string{"--", rcpdBinary(t), "serve", "--stdio", "--data", data, "--dense", "none", "--log-level", "error"}, extra...)
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Finding 1: a file's document follows the file. Re-adding an edited file
// replaces its text, an unchanged file is a no-op, sync prunes deleted
// files, list shows what is stored and delete --source removes a file's
// document. Finding 7: skipped files are reported with reasons.
func TestIndexFileLifecycle(t *testing.T) {
	dir := t.TempDir()
	data, notes := filepath.Join(dir, "data"), filepath.Join(dir, "notes")
	writeFiles(t, notes, map[string]string{
		"plan.md":     "# Plan\n\nWe ship the release on Monday.\n",
		"ideas.txt":   "Ideas about a garden.\n",
		"page.mdx":    "---\ntitle: MDX page\n---\n\nComponents and prose.\n",
		"program.txt": "\x7fELF\x02\x01\x01\x00\x00\x00\x00binary",
		"image.png":   "PNG",
	})
	srv := func(args ...string) []string { return append(args, serverArgs(t, data)...) }

	code, out, errs := rcpRun(srv("index", "add", notes)...)
	if code != 0 || !strings.Contains(out, "indexed 3 files: 3 new, 0 updated, 0 unchanged") ||
		!strings.Contains(out, "skipped 2 files: 1 binary content, not text; 1 unsupported type .png") {
		t.Fatalf("first add: %d\n%s%s", code, out, errs)
	}
	writeFiles(t, notes, map[string]string{"plan.md": "# Plan\n\nWe ship the release on Friday.\n"})
	code, out, errs = rcpRun(srv("index", "add", "--verbose", notes)...)
	if code != 0 || !strings.Contains(out, "indexed 3 files: 0 new, 1 updated, 2 unchanged") || !strings.Contains(errs, "program.txt: binary content") {
		t.Fatalf("re-add: %d\n%s%s", code, out, errs)
	}
	code, out, errs = rcpRun(srv("query", "--json", "ship release")...)
	var res rcp.RetrieveResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("query: %d\n%s%s", code, out, errs)
	}
	if len(res.Hits) != 1 || !strings.Contains(res.Hits[0].TextOf(), "Friday") {
		t.Fatalf("query after the edit: want only the new text, got %s", out)
	}

	code, out, errs = rcpRun(srv("index", "list", "--json")...)
	var page rcp.ListDocumentsResult
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Documents) != 3 {
		t.Fatalf("list: %d\n%s%s", code, out, errs)
	}
	if id := page.Documents[0].ID; !strings.HasPrefix(id, "file://") || page.Documents[0].Size == 0 {
		t.Fatalf("list entry %+v: want a file:// source id and a size", page.Documents[0])
	}
	code, out, _ = rcpRun(srv("index", "list", "--limit", "2")...)
	if code != 0 || !strings.Contains(out, "more: rcp index list --cursor") || !strings.Contains(out, "ideas") {
		t.Fatalf("paged list:\n%s", out)
	}

	if err := os.Remove(filepath.Join(notes, "page.mdx")); err != nil {
		t.Fatal(err)
	}
	code, out, errs = rcpRun(srv("index", "sync", notes)...)
	if code != 0 || !strings.Contains(out, "0 new, 0 updated, 2 unchanged; pruned 1") {
		t.Fatalf("sync: %d\n%s%s", code, out, errs)
	}
	code, out, errs = rcpRun(srv("index", "delete", "--source", filepath.Join(notes, "plan.md"))...)
	if code != 0 || !strings.Contains(out, "deleted 1 of 1") {
		t.Fatalf("delete --source: %d\n%s%s", code, out, errs)
	}
	code, _, errs = rcpRun(srv("index", "delete", filepath.Join(notes, "ideas.txt"))...)
	if code != 0 || !strings.Contains(errs, "hint:") || !strings.Contains(errs, "--source") {
		t.Fatalf("delete by path: want a hint to use --source, got %d %s", code, errs)
	}
	code, out, _ = rcpRun(srv("index", "list")...)
	if code != 0 || strings.Contains(out, "plan") || !strings.Contains(out, "ideas") {
		t.Fatalf("list after delete:\n%s", out)
	}
}

// Finding 2: a command the user typed sees their environment (here
// RCPD_DATA), and a slow start is announced; an initialize timeout names
// its flag and the likely cause.
func TestSpawnedCommandEnvironmentAndStart(t *testing.T) {
	rcpd := rcpdBinary(t)
	dir := t.TempDir()
	t.Setenv("HOME", filepath.Join(dir, "home"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "xdg"))
	data := filepath.Join(dir, "from-env")
	t.Setenv("RCPD_DATA", data)
	writeFiles(t, dir, map[string]string{"n.txt": "environment inheritance"})
	code, out, errs := rcpRun("index", "add", filepath.Join(dir, "n.txt"), "--", rcpd, "serve", "--stdio", "--dense", "none", "--log-level", "error")
	if code != 0 || !strings.Contains(out, "1 new") {
		t.Fatalf("add: %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(data); err != nil {
		t.Fatalf("RCPD_DATA did not reach the spawned rcpd: %v", err)
	}

	code, _, errs = rcpRun("ping", "-n", "1", "--", "sh", "-c", "sleep 1.5; exec \"$0\" serve --stdio --dense none --log-level error", rcpd)
	if code != 0 || !strings.Contains(errs, "starting sh… (waiting up to --start-timeout 5m0s") {
		t.Fatalf("slow start: %d %q", code, errs)
	}
	// `go run` compiles first: a fresh build cache under load took more
	// than the 5 minutes a binary gets (the newcomer run of scripts/newcomer.sh).
	goRun := []string{"go", "run", "./cmd/rcpd", "serve", "--stdio"}
	if d := startTimeout(goRun, 0); d != 20*time.Minute {
		t.Errorf("go run: --start-timeout default %v, want 20m", d)
	}
	if d := startTimeout(goRun, time.Minute); d != time.Minute {
		t.Errorf("go run --start-timeout 1m: %v", d)
	}
	code, _, errs = rcpRun("ping", "--start-timeout", "1s", "--", "sh", "-c", "sleep 3")
	if code != 1 || !strings.Contains(errs, "did not answer initialize within --start-timeout 1s") || !strings.Contains(errs, "go run") {
		t.Fatalf("timeout: %d %q", code, errs)
	}
}

// Finding 9: "--timeout 3s takes 8 s". A server that answers initialize
// and then nothing (and ignores EOF) costs the command its --timeout, not
// --timeout plus the 5 s Close grants a healthy server to exit.
func TestTimeoutBoundsTheCommand(t *testing.T) {
	initialized := `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"server":{"name":"mute","version":"0"},"capabilities":{"retrieve":{"modes":["sparse"]}}}}`
	mute := []string{"--", "sh", "-c", `read line; printf '%s\n' "$0"; exec sleep 10`, initialized}
	start := time.Now()
	code, _, errs := rcpRun(append([]string{"query", "--timeout", "1s", "anything"}, mute...)...)
	took := time.Since(start)
	if code != 1 || !strings.Contains(errs, "deadline exceeded") || !strings.Contains(errs, "--timeout") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if took > 3*time.Second {
		t.Fatalf("--timeout 1s took %v", took)
	}
}

// Finding 9: --k above the server's maxK is clamped with a note on stderr.
func TestKAboveMaxKNoted(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.txt": "clamping notes"})
	data := filepath.Join(dir, "data")
	if code, out, errs := rcpRun(append([]string{"index", "add", filepath.Join(dir, "a.txt")}, serverArgs(t, data)...)...); code != 0 {
		t.Fatalf("add: %d %s%s", code, out, errs)
	}
	code, out, errs := rcpRun(append([]string{"query", "--k", "1000000", "clamping"}, serverArgs(t, data)...)...)
	if code != 0 || !strings.Contains(out, "clamping") || !strings.Contains(errs, "note: --k 1000000 is above the server's maxK; asking for 200") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

// Finding 9 and 10: versions with VCS information, usage errors exit 2,
// shell completion for both binaries, NO_COLOR and --json.
func TestVersionCompletionAndConventions(t *testing.T) {
	rcpd := rcpdBinary(t)
	out, err := exec.Command(rcpd, "version").Output()
	if err != nil || strings.Contains(string(out), "rcpd dev") || !strings.Contains(string(out), "go1.") {
		t.Fatalf("rcpd version: %q %v", out, err)
	}
	code, stdout, _ := rcpRun("version", "--json")
	var v struct{ Version, Go string }
	if code != 0 || json.Unmarshal([]byte(stdout), &v) != nil || v.Version == "" || v.Go == "" {
		t.Fatalf("rcp version --json: %d %q", code, stdout)
	}
	for _, args := range [][]string{{"query", "--bogus", "x"}, {"frobnicate"}, {"query", ""}, {"index", "frob"}} {
		if code, _, errs := rcpRun(args...); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errs)
		}
	}
	if code, _, errs := rcpRun("index", "--help"); code != 0 || !strings.Contains(errs, "sync DIR") {
		t.Errorf("index --help: %d %q", code, errs)
	}
	code, script, errs := rcpRun("completion", "bash")
	if code != 0 || !strings.Contains(script, "--verbose") || !strings.Contains(script, "--start-timeout") || !strings.Contains(script, "sync") {
		t.Fatalf("rcp completion bash: %d %s", code, errs)
	}
	for _, shell := range []string{"zsh", "fish"} {
		if code, script, _ := rcpRun("completion", shell); code != 0 || !strings.Contains(script, "rcp") {
			t.Errorf("rcp completion %s: %d", shell, code)
		}
	}
	out, err = exec.Command(rcpd, "completion", "fish").Output()
	if err != nil || !strings.Contains(string(out), "-l field") || !strings.Contains(string(out), "-l registry") {
		t.Fatalf("rcpd completion fish: %v\n%s", err, out)
	}
	env := &Env{Getenv: func(k string) string { return map[string]string{"NO_COLOR": "1"}[k] }}
	if colorOn(env, os.Stdout) {
		t.Error("NO_COLOR=1 still colours")
	}
	data := filepath.Join(t.TempDir(), "d")
	code, stdout, _ = rcpRun(append([]string{"ping", "-n", "1", "--json"}, serverArgs(t, data)...)...)
	if code != 0 || !json.Valid([]byte(stdout)) {
		t.Errorf("ping --json: %d %q", code, stdout)
	}
	code, stdout, _ = rcpRun(append([]string{"feedback", "--json", "--signal", "x:helpful"}, serverArgs(t, data)...)...)
	if code != 0 || !json.Valid([]byte(stdout)) || !strings.Contains(stdout, `"accepted"`) {
		t.Errorf("feedback --json: %d %q", code, stdout)
	}
}

// Finding 8: filters are discoverable: a filter against a server without
// fields says what is advertised and how to enable it, without repeating
// itself; fields are inferred from the metadata of added files; rcpd serve
// --field declares one (and then nothing is inferred).
func TestFilterFieldsDiscoverable(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.md": "# A\n\nalpha text"})
	data := filepath.Join(dir, "data")
	code, out, errs := rcpRun(append([]string{"query", "--filter", "format=markdown", "alpha"}, serverArgs(t, data)...)...)
	if code != 1 || !strings.Contains(errs, "declares no filterable metadata fields") || !strings.Contains(errs, "rcpd serve --field") ||
		strings.Count(errs, "did not advertise filter") != 1 {
		t.Fatalf("filter without fields: %d %q %q", code, out, errs)
	}
	if !strings.Contains(errs, "infers filter fields") {
		t.Fatalf("hint does not mention inference: %q", errs)
	}
	code, out, errs = rcpRun(append([]string{"index", "add", filepath.Join(dir, "a.md")}, serverArgs(t, data)...)...)
	if code != 0 {
		t.Fatalf("add: %d %s%s", code, out, errs)
	}
	code, out, errs = rcpRun(append([]string{"query", "--filter", "format=markdown", "alpha"}, serverArgs(t, data)...)...)
	if code != 0 || !strings.Contains(out, "alpha") {
		t.Fatalf("filter on an inferred field: %d\n%s%s", code, out, errs)
	}
	code, out, errs = rcpRun(append([]string{"query", "--filter", "format=text", "alpha"}, serverArgs(t, data)...)...)
	if code != 0 || !strings.Contains(out, "no hits") {
		t.Fatalf("filter on an inferred field, no match: %d\n%s%s", code, out, errs)
	}
	code, out, errs = rcpRun(append([]string{"query", "--filter", "format==markdown", "alpha"}, serverArgs(t, data, "--field", "format=keyword")...)...)
	if code != 0 || !strings.Contains(out, "alpha") {
		t.Fatalf("filter with --field: %d\n%s%s", code, out, errs)
	}
}

// Issue 31: with one document indexed and LSA configured, `rcp query --mode
// dense` names the real reason — LSA's minimum of documents — not "dense
// needs an encoder".
func TestDenseHintNamesTheRealReason(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.txt": "one lonely document"})
	data := filepath.Join(dir, "data")
	srv := []string{"--", rcpdBinary(t), "serve", "--stdio", "--data", data, "--dense", "lsa", "--log-level", "error"}
	if code, out, errs := rcpRun(append([]string{"index", "add", filepath.Join(dir, "a.txt")}, srv...)...); code != 0 {
		t.Fatalf("add: %d %s%s", code, out, errs)
	}
	code, _, errs := rcpRun(append([]string{"query", "--mode", "dense", "lonely"}, srv...)...)
	if code == 0 || !strings.Contains(errs, "LSA needs ≥ 20 documents; 1 indexed") || strings.Contains(errs, "dense needs an encoder") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
}

// Issue 31, acceptance 2 in miniature: `rcp eval --ingest --modes
// sparse,dense,hybrid-rrf` on a fresh data directory succeeds on its first
// run — eval waits until the engine has derived its dense index (fits and
// refits included) before it measures; before, a dense mode was not
// advertised yet, or a refit replaced the generation mid-run. Then `rcp
// index status --wait` reports every structure settled.
func TestEvalIngestFirstRun(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "topics")
	topics := [][]string{{"ocean", "tide", "wave", "coral", "reef"}, {"engine", "piston", "fuel", "torque", "gear"},
		{"garden", "soil", "seed", "bloom", "compost"}, {"market", "price", "stock", "trade", "bond"}}
	var corpus, queries, qrels strings.Builder
	qrels.WriteString("query-id\tcorpus-id\tscore\n")
	for i := range 200 {
		w := topics[i%4]
		fmt.Fprintf(&corpus, `{"_id":"d%d","title":"","text":"%s %s %s %s"}`+"\n", i, w[i%5], w[(i+1)%5], w[(i+2)%5], w[(i/4)%5])
	}
	for q := range 4 {
		fmt.Fprintf(&queries, `{"_id":"q%d","text":"%s %s"}`+"\n", q, topics[q][0], topics[q][1])
		fmt.Fprintf(&qrels, "q%d\td%d\t1\n", q, q)
	}
	writeFiles(t, ds, map[string]string{"corpus.jsonl": corpus.String(), "queries.jsonl": queries.String(), "qrels/test.tsv": qrels.String()})
	data := filepath.Join(dir, "data")
	srv := []string{"--", rcpdBinary(t), "serve", "--stdio", "--data", data, "--log-level", "error"}
	code, out, errs := rcpRun(append([]string{"eval", "--dataset", ds, "--ingest", "--batch", "20", "--quiet",
		"--modes", "sparse,dense,hybrid-rrf", "--metrics", "ndcg@10", "--json"}, srv...)...)
	if code != 0 {
		t.Fatalf("first run: exit %d\n%s%s", code, out, errs)
	}
	var rep struct{ Modes []struct{ Name string } }
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Modes) != 3 {
		t.Fatalf("%v %s", err, out)
	}
	code, out, errs = rcpRun(append([]string{"index", "status", "--wait", "--json"}, srv...)...)
	var st struct{ Readiness rcp.Readiness }
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || !st.Readiness.Settled() || st.Readiness["dense"].State != rcp.StateReady {
		t.Fatalf("index status --wait: exit %d\n%s%s", code, out, errs)
	}
}
