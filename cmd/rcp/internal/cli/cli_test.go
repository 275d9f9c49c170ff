package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

func TestBuildFilter(t *testing.T) {
	types := map[string]string{"year": "int", "score": "float", "ok": "bool", "lang": "keyword", "format": "keyword"}
	tests := []struct {
		exprs []string
		want  string
	}{
		{[]string{"lang=en"}, `{"field":"lang","op":"eq","value":"en"}`},
		{[]string{"year>=2020"}, `{"field":"year","op":"gte","value":2020}`},
		{[]string{"year!=2020", "score<0.5"}, `{"and":[{"field":"year","op":"ne","value":2020},{"field":"score","op":"lt","value":0.5}]}`},
		{[]string{"ok=true", "year>7"}, `{"and":[{"field":"ok","op":"eq","value":true},{"field":"year","op":"gt","value":7}]}`},
		{[]string{"year=abc"}, `{"field":"year","op":"eq","value":"abc"}`},        // left for the server to reject with -32602
		{[]string{"format==html"}, `{"field":"format","op":"eq","value":"html"}`}, // finding 9: == is equality, not "=html"
	}
	for _, tt := range tests {
		got, err := buildFilter(tt.exprs, types)
		if err != nil {
			t.Fatalf("%v: %v", tt.exprs, err)
		}
		var a, b any
		_ = json.Unmarshal(got, &a)
		_ = json.Unmarshal([]byte(tt.want), &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%v = %s, want %s", tt.exprs, got, tt.want)
		}
	}
	if _, err := buildFilter([]string{"novalue"}, types); err == nil {
		t.Error("expression without operator: want an error")
	}
	// Issue 34, finding 10: a misspelt field gets a suggestion; an unknown
	// one the advertised list; a server that advertises none decides.
	if _, err := buildFilter([]string{"yaer>=2020"}, types); err == nil || !strings.Contains(err.Error(), `no filter field "yaer"; did you mean "year"?`) {
		t.Errorf("misspelt field: %v", err)
	}
	if _, err := buildFilter([]string{"colour=red"}, types); err == nil || !strings.Contains(err.Error(), "it advertises format, lang, ok, score, year") {
		t.Errorf("unknown field: %v", err)
	}
	if _, err := buildFilter([]string{"colour=red"}, nil); err != nil {
		t.Errorf("no advertised fields: %v", err)
	}
}

func TestTargetArgsAndModes(t *testing.T) {
	got := targetArgs([]string{"--dataset", "d", "--http", "http://h/rcp", "-k", "5"})
	if want := []string{"--dataset", "d", "-target", "http://h/rcp", "-k", "5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("http: %q", got)
	}
	got = targetArgs([]string{"--ingest", "--", "rcpd", "serve", "--stdio"})
	if want := []string{"--ingest", "-target", "stdio:rcpd serve --stdio"}; !reflect.DeepEqual(got, want) {
		t.Errorf("stdio: %q", got)
	}
	got = targetArgs([]string{"--registry", "rcp.json", "--engine", "docs"})
	if want := []string{"-target", "rcp.json#docs"}; !reflect.DeepEqual(got, want) {
		t.Errorf("registry: %q", got)
	}
	modes, err := expandModes([]string{"--modes", "sparse,hybrid-convex"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"-mode", `sparse={"mode":"sparse"}`, "-mode", `hybrid-convex={"mode":"hybrid","fusion":{"method":"convex"}}`}; !reflect.DeepEqual(modes, want) {
		t.Errorf("modes: %q", modes)
	}
	if _, err := expandModes([]string{"--modes", "bogus"}); err == nil {
		t.Error("unknown mode: want an error")
	}
}

func TestSnippetHighlight(t *testing.T) {
	terms := queryTerms("Index compression!")
	text := strings.Repeat("filler words here. ", 20) + "Posting lists of an inverted index are compressed with varint codes. " + strings.Repeat("more filler. ", 20)
	s := snippet(text, terms, 80)
	if !strings.Contains(s, "index") || len(s) > 120 {
		t.Fatalf("snippet %q", s)
	}
	h := highlight("an inverted index is compressed", terms, "", "")
	if h != "an inverted **index** is **compressed**" {
		t.Fatalf("highlight %q", h)
	}
}

// TestEvalAgainstRcpd runs `rcp eval --ingest` against a real rcpd over
// stdio on a five-document fixture whose BM25 ranking is known, and checks
// the metrics exactly (values worked out in the comments).
func TestEvalAgainstRcpd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs rcp eval against a spawned rcpd; skipped with -short")
	}
	rcpd := rcpdBinary(t)
	dir := t.TempDir()
	ds := filepath.Join(dir, "tiny")
	write := func(name, body string) {
		p := filepath.Join(ds, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("corpus.jsonl", `{"_id":"d1","title":"","text":"apple banana"}
{"_id":"d2","title":"","text":"apple cherry"}
{"_id":"d3","title":"","text":"grape melon"}
{"_id":"d4","title":"","text":"kiwi lemon"}
{"_id":"d5","title":"","text":"banana split"}
`)
	write("queries.jsonl", `{"_id":"q1","text":"grape"}
{"_id":"q2","text":"kiwi"}
{"_id":"q3","text":"lemon banana"}
`)
	write("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td3\t1\nq2\td4\t2\nq2\td1\t1\nq3\td5\t1\n")
	var stdout, stderr bytes.Buffer
	// A bare --json (finding 10) puts the JSON report on stdout.
	code := Main([]string{"eval", "--dataset", ds, "--ingest", "--quiet", "--modes", "sparse",
		"--metrics", "ndcg@10,recall@10,mrr@10", "--json", "--runs", filepath.Join(dir, "runs"),
		"--", rcpd, "serve", "--stdio", "--data", filepath.Join(dir, "data"), "--log-level", "error"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	var rep struct {
		Modes []struct {
			Name   string
			Scores struct{ Mean map[string]float64 }
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || len(rep.Modes) != 1 {
		t.Fatalf("report on stdout: %v\n%s", err, stdout.String())
	}
	// q1 "grape": d3 alone matches, rank 1 → nDCG 1, recall 1, RR 1.
	// q2 "kiwi": d4 (gain 2) at rank 1, d1 (gain 1) never retrieved →
	//   nDCG = 2 / (2 + 1/log2 3), recall 1/2, RR 1.
	// q3 "lemon banana": d4 (rarer term) first, then d1 and d5 tie on
	//   "banana" and the tie goes to the smaller id → d5 at rank 3:
	//   nDCG = 1/log2 4 = 0.5, recall 1, RR 1/3.
	want := map[string]float64{
		"ndcg@10":   (1 + 2/(2+1/math.Log2(3)) + 0.5) / 3,
		"recall@10": (1 + 0.5 + 1) / 3,
		"mrr@10":    (1 + 1 + 1.0/3) / 3,
	}
	for m, w := range want {
		if got := rep.Modes[0].Scores.Mean[m]; math.Abs(got-w) > 1e-9 {
			t.Errorf("%s = %.6f, want %.6f", m, got, w)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", "tiny.sparse.run")); err != nil {
		t.Errorf("run file: %v", err)
	}
}

// Finding 9: an --http URL without the /rcp base path gets a hint to add
// it; one with a path does not.
func TestHTTPBasePathHint(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	code, _, errs := rcpRun("ping", "--http", srv.URL)
	if code != 1 || !strings.Contains(errs, "hint: "+srv.URL+" has no path") || !strings.Contains(errs, srv.URL+"/rcp") {
		t.Fatalf("no path: exit %d %q", code, errs)
	}
	code, _, errs = rcpRun("ping", "--http", srv.URL+"/")
	if code != 1 || !strings.Contains(errs, "e.g. "+srv.URL+"/rcp") {
		t.Fatalf("trailing slash: exit %d %q", code, errs)
	}
	code, _, errs = rcpRun("ping", "--http", srv.URL+"/rcp")
	if code != 1 || strings.Contains(errs, "hint") {
		t.Fatalf("with a path: exit %d %q", code, errs)
	}
}

// A target nobody listens at is named, with what to do about it.
func TestConnectionRefusedHint(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/rcp"
	l.Close()
	code, _, errs := rcpRun("ping", "--http", url)
	if code != 1 || !strings.Contains(errs, "no server listens at "+url) || !strings.Contains(errs, "hint: start one (rcpd serve --demo") {
		t.Fatalf("exit %d %q", code, errs)
	}
}

// A mistyped command gets the nearest name; a word far from every name
// gets none.
func TestUnknownCommandSuggests(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"querry", `did you mean "query"?`}, {"idnex", `did you mean "index"?`}, {"conformence", `did you mean "conformance"?`}, {"xyzzy", ""},
	} {
		code, _, errs := rcpRun(tc.arg)
		if code != 2 || !strings.Contains(errs, fmt.Sprintf("unknown command %q", tc.arg)) {
			t.Fatalf("%s: exit %d %q", tc.arg, code, errs)
		}
		if got := strings.Contains(errs, "did you mean"); got != (tc.want != "") || tc.want != "" && !strings.Contains(errs, tc.want) {
			t.Errorf("%s: %q, want %q", tc.arg, errs, tc.want)
		}
	}
}

// Finding 9: rcp eval -h describes --modes as the README uses it (a comma
// list of presets), and every preset it names is one eval knows; -h exits
// 0 for the measuring commands too.
func TestEvalHelpDescribesModes(t *testing.T) {
	for _, cmd := range []string{"score", "bench", "gen", "completion"} {
		if code, _, errs := rcpRun(cmd, "-h"); code != 0 || !strings.Contains(strings.ToLower(errs), "usage") {
			t.Errorf("%s -h: exit %d %q", cmd, code, errs)
		}
	}
	code, _, errs := rcpRun("eval", "-h")
	if code != 0 {
		t.Fatalf("eval -h: exit %d", code)
	}
	line := ""
	for _, l := range strings.Split(errs, "\n") {
		if strings.Contains(l, "comma list of presets") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("eval -h does not describe -modes as a comma list:\n%s", errs)
	}
	for name := range modePresets {
		if !strings.Contains(line, name) {
			t.Errorf("eval -h does not name preset %q: %s", name, line)
		}
	}
}

// Finding 10: the measuring commands take --json like every other command:
// bare (last, or before another flag) it prints the JSON report on stdout
// instead of the table; --json PATH still writes a file.
func TestMeasuringCommandsJSON(t *testing.T) {
	for _, tt := range []struct{ in, want []string }{
		{[]string{"--qrels", "q", "--json"}, []string{"--qrels", "q", "--json", "-"}},
		{[]string{"--json", "--qrels", "q"}, []string{"--json", "-", "--qrels", "q"}},
		{[]string{"--json", "out.json"}, []string{"--json", "out.json"}},
		{[]string{"-json", "-"}, []string{"-json", "-"}},
		{[]string{"--json", "-", "--", "rcpd", "--json"}, []string{"--json", "-", "--", "rcpd", "--json"}},
	} {
		if got := bareJSON(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("bareJSON(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	dir := t.TempDir()
	qrels := filepath.Join(dir, "qrels.tsv")
	run := filepath.Join(dir, "bm25.run")
	if err := os.WriteFile(qrels, []byte("query-id\tcorpus-id\tscore\nq1\td1\t1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(run, []byte("q1 Q0 d1 1 2.0 bm25\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := rcpRun("score", "--json", "--qrels", qrels, "--run", run, "--metrics", "ndcg@10")
	var rep struct {
		Modes []struct {
			Scores struct{ Mean map[string]float64 }
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Modes) != 1 || rep.Modes[0].Scores.Mean["ndcg@10"] != 1 {
		t.Fatalf("score --json: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = rcpRun("score", "--qrels", qrels, "--run", run, "--metrics", "ndcg@10", "--json", filepath.Join(dir, "r.json"))
	if b, err := os.ReadFile(filepath.Join(dir, "r.json")); code != 0 || err != nil || !json.Valid(b) || !strings.Contains(out, "| bm25 |") {
		t.Fatalf("score --json FILE: exit %d %v\n%s%s", code, err, out, errs)
	}
}

// Finding 10: every command that prints results offers --json (info and
// gen print nothing else; completion prints a script, not results).
func TestEveryResultCommandHasJSON(t *testing.T) {
	alwaysJSON := map[string]bool{"info": true, "gen": true, "completion": true}
	for name := range commands {
		var help []string
		subs := map[string][]string{"index": {"add", "sync", "list", "delete"}, "graph": graphOps, "memory": {"build", "recall"}}
		if len(subs[name]) > 0 {
			for _, sub := range subs[name] {
				_, _, errs := rcpRun(name, sub, "-h")
				help = append(help, errs)
			}
		} else {
			_, _, errs := rcpRun(name, "-h")
			help = append(help, errs)
		}
		for _, h := range help {
			if !alwaysJSON[name] && !strings.Contains(h, "-json") {
				t.Errorf("rcp %s has no --json:\n%s", name, h)
			}
		}
	}
}

func TestDenseHint(t *testing.T) {
	meta := func(s rcp.DerivedState) rcp.Meta {
		return rcp.Meta{}.Set(rcp.MetaRCPGoReadiness, rcp.Readiness{"dense": s})
	}
	for _, tc := range []struct {
		meta rcp.Meta
		want string
	}{
		{nil, "dense needs an encoder: rcpd serve --dense"},
		{meta(rcp.DerivedState{State: rcp.StateWaiting, Detail: "LSA needs ≥ 20 documents; 1 indexed"}), "not available yet: LSA needs ≥ 20 documents; 1 indexed"},
		{meta(rcp.DerivedState{State: rcp.StateBuilding, Phase: "embed", Done: 3, Total: 9, Unit: "units"}), "being built (embed: 3/9 units)"},
	} {
		if got := denseHint(tc.meta); !strings.Contains(got, tc.want) {
			t.Errorf("%q, want %q in it", got, tc.want)
		}
	}
}
