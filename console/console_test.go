package console

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/eval"
	"github.com/rcpgo/rcpgo/internal/auth"
	"github.com/rcpgo/rcpgo/internal/wording"
	"github.com/rcpgo/rcpgo/rcp"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newServer serves the console and the RCP endpoint of an empty engine the
// way rcpd does, with bearer token "s3cret".
func newServer(t *testing.T, datasets string) *httptest.Server {
	t.Helper()
	eng, err := engine.Open(context.Background(), engine.Config{Dir: t.TempDir(), Dense: engine.DenseNone, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	srv := rcp.NewServer(eng, &rcp.ServerOptions{Logger: quietLogger()})
	tokens := auth.Static("test", "s3cret")
	rh := srv.HTTPHandler(&rcp.HTTPOptions{Authenticate: tokens.Authenticate})
	t.Cleanup(func() { _ = rh.Close() })
	mux := http.NewServeMux()
	mux.Handle("/rcp/", rh)
	mux.Handle("/", New(Options{Server: srv, Tokens: tokens, Datasets: datasets, Version: "test", Logger: quietLogger(), MaxUploadBytes: 1 << 16}))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestPageAndAssets(t *testing.T) {
	ts := newServer(t, "")
	req, _ := http.NewRequest("GET", ts.URL+"/", nil)
	resp, body := do(t, req)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("page: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(body, "<script>") || strings.Contains(body, " style=") || strings.Contains(body, "http://") || strings.Contains(body, "https://") {
		t.Error("the page must load nothing external and hold no inline script or style")
	}
	if !strings.Contains(body, `data-rcp-base="/rcp"`) || !strings.Contains(body, `data-eval=""`) {
		t.Errorf("page data attributes missing")
	}
	for _, name := range []string{"console.js", "console.css"} {
		req, _ := http.NewRequest("GET", ts.URL+"/console/assets/"+name, nil)
		resp, body := do(t, req)
		if resp.StatusCode != 200 || len(body) < 1000 || resp.Header.Get("ETag") == "" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("%s: %d, %d bytes, etag %q", name, resp.StatusCode, len(body), resp.Header.Get("ETag"))
		}
		req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
		if resp, _ := do(t, req); resp.StatusCode != http.StatusNotModified {
			t.Errorf("%s revalidation: %d", name, resp.StatusCode)
		}
	}
	for _, path := range []string{"/console/assets/index.html.tmpl", "/console/assets/../console.go", "/nope", "/console/api/nope"} {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		if resp, _ := do(t, req); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
	// The RCP endpoint keeps its own routes and auth next to the console.
	req, _ = http.NewRequest("POST", ts.URL+"/rcp/ping", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, _ := do(t, req); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unauthenticated ping: %d", resp.StatusCode)
	}
}

func extractRequest(ts *httptest.Server, name, body string) *http.Request {
	req, _ := http.NewRequest("POST", ts.URL+"/console/api/extract?name="+name, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Authorization", "Bearer s3cret")
	return req
}

func TestExtract(t *testing.T) {
	ts := newServer(t, "")
	resp, body := do(t, extractRequest(ts, "notes.md", "# Title here\n\nSome words."))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var res struct {
		Documents []rcp.Document `json:"documents"`
	}
	if err := json.Unmarshal([]byte(body), &res); err != nil || len(res.Documents) != 1 {
		t.Fatalf("%s: %v", body, err)
	}
	if d := res.Documents[0]; !strings.HasPrefix(d.ID, "sha256:") || d.Meta["title"] != "Title here" || d.Meta["filename"] != "notes.md" {
		t.Errorf("%+v", d)
	}

	tests := []struct {
		name   string
		mutate func(*http.Request)
		file   string
		body   string
		status int
		errSub string
	}{
		{name: "no token", mutate: func(r *http.Request) { r.Header.Del("Authorization") }, status: 401, errSub: "unauthorized"},
		{name: "wrong token", mutate: func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, status: 401},
		{name: "cross-site fetch", mutate: func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, status: 403},
		{name: "same-site fetch", mutate: func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-site") }, status: 403},
		{name: "foreign origin", mutate: func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }, status: 403},
		{name: "null origin", mutate: func(r *http.Request) { r.Header.Set("Origin", "null") }, status: 403},
		{name: "form post", mutate: func(r *http.Request) { r.Header.Set("Content-Type", "multipart/form-data; boundary=x") }, status: 415},
		{name: "text/plain post", mutate: func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, status: 415},
		{name: "same origin", mutate: func(r *http.Request) { r.Header.Set("Origin", ts.URL); r.Header.Set("Sec-Fetch-Site", "same-origin") }, status: 200},
		{name: "rebinding host", mutate: func(r *http.Request) { r.Host = "attacker.example:80" }, status: 403, errSub: "DNS rebinding"},
		{name: "localhost", mutate: func(r *http.Request) { r.Host = "localhost" }, status: 200},
		{name: "unsupported type", file: "x.exe", status: 422, errSub: "unsupported file type"},
		{name: "no name", file: "", status: 400, errSub: "name"},
		{name: "too large", body: strings.Repeat("a", 1<<16+1), status: 413, errSub: "exceeds"},
		{name: "broken pdf", file: "x.pdf", body: "%PDF-1.4 junk", status: 422, errSub: "x.pdf"},
		{name: "empty text", file: "blank.txt", body: "  \n", status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file, body := "a.txt", "hello"
			if tt.file != "" || tt.name == "no name" {
				file = tt.file
			}
			if tt.body != "" {
				body = tt.body
			}
			req := extractRequest(ts, file, body)
			if tt.mutate != nil {
				tt.mutate(req)
			}
			resp, got := do(t, req)
			if resp.StatusCode != tt.status || !strings.Contains(got, tt.errSub) {
				t.Fatalf("%d %s; want %d containing %q", resp.StatusCode, got, tt.status, tt.errSub)
			}
			if tt.name == "empty text" && !strings.Contains(got, `"documents":[]`) {
				t.Errorf("empty file: %s", got)
			}
		})
	}
}

// readEvents reads the SSE data frames of an eval answer.
func readEvents(t *testing.T, r io.Reader) []evalEvent {
	t.Helper()
	var out []evalEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev evalEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("bad event %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

func evalRequestOf(ts *httptest.Server, body string) *http.Request {
	req, _ := http.NewRequest("POST", ts.URL+"/console/api/eval", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer s3cret")
	return req
}

func TestEvaluate(t *testing.T) {
	root, err := filepath.Abs("testdata/datasets")
	if err != nil {
		t.Fatal(err)
	}
	ts := newServer(t, root)
	req, _ := http.NewRequest("GET", ts.URL+"/console/api/datasets", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, body := do(t, req)
	if resp.StatusCode != 200 || body != `{"datasets":[{"name":"tiny","splits":["test"]}],"enabled":true}` {
		t.Fatalf("datasets: %d %s", resp.StatusCode, body)
	}

	resp, err = http.DefaultClient.Do(evalRequestOf(ts, `{"dataset":"tiny","ingest":true,"metrics":"ndcg@10,recall@10",
		"modes":[{"name":"bm25","options":{"mode":"sparse"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("eval: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := readEvents(t, resp.Body)
	if len(events) < 3 {
		t.Fatalf("%d events: %+v", len(events), events)
	}
	last := events[len(events)-1]
	if last.Type != "report" || last.Report == nil || len(last.Report.Modes) != 1 || last.Chart == nil || !strings.Contains(last.Markdown, "bm25") {
		t.Fatalf("last event %+v", last)
	}
	var sawIngest, sawQuery bool
	for _, ev := range events[:len(events)-1] {
		sawIngest = sawIngest || ev.Phase == "ingest" && ev.Done == 4
		sawQuery = sawQuery || ev.Phase == "query" && ev.Mode == "bm25" && ev.Done == 3 && ev.Total == 3
	}
	if !sawIngest || !sawQuery {
		t.Errorf("progress events %+v", events)
	}
	// BM25 finds every judged document of this corpus at rank 1.
	if m := last.Report.Modes[0].Scores.Mean; m["ndcg@10"] != 1 || m["recall@10"] != 1 {
		t.Errorf("scores %v, want 1 and 1", m)
	}

	// The report's chart is data the page draws: the headline metrics,
	// each mode's values and recall curve.
	if c := last.Chart; strings.Join(c.Metrics, ",") != "ndcg@10,recall@10" || len(c.Modes) != 1 || c.Modes[0].Name != "bm25" ||
		len(c.Modes[0].Values) != 2 || c.Modes[0].Values[0] != 1 || len(c.Modes[0].Curve) == 0 || c.Modes[0].Color == "" {
		t.Errorf("chart %+v", c)
	}

	// The chart endpoint answers the chart of a stored report.
	b, _ := json.Marshal(last.Report)
	creq, _ := http.NewRequest("POST", ts.URL+"/console/api/chart", strings.NewReader(string(b)))
	creq.Header.Set("Content-Type", "application/json")
	creq.Header.Set("Authorization", "Bearer s3cret")
	resp, body = do(t, creq)
	var stored eval.Chart
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &stored) != nil || !reflect.DeepEqual(&stored, last.Chart) {
		t.Errorf("chart: %d %.200s; want %+v", resp.StatusCode, body, last.Chart)
	}
}

func TestEvaluateRejects(t *testing.T) {
	root, _ := filepath.Abs("testdata/datasets")
	ts := newServer(t, root)
	tests := []struct{ name, body, errSub string }{
		{"another directory", `{"dataset":"../datasets/tiny"}`, "not one of the datasets"},
		{"not a dataset", `{"dataset":"notbeir"}`, "not one of the datasets"},
		{"absolute path", `{"dataset":"` + root + `/tiny"}`, "not one of the datasets"},
		{"unknown split", `{"dataset":"tiny","split":"dev"}`, "no split"},
		{"bad metric", `{"dataset":"tiny","metrics":"ndcg@x"}`, "ndcg@x"},
		{"nameless mode", `{"dataset":"tiny","modes":[{"options":{}}]}`, "modes[0]"},
		{"negative", `{"dataset":"tiny","maxQueries":-1}`, "negative"},
		{"unknown field", `{"dataset":"tiny","path":"/etc"}`, "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, evalRequestOf(ts, tt.body))
			if resp.StatusCode/100 != 4 || !strings.Contains(body, tt.errSub) {
				t.Fatalf("%d %s; want 4xx with %q", resp.StatusCode, body, tt.errSub)
			}
		})
	}
	// Without a datasets directory, running is off but reports still chart.
	off := newServer(t, "")
	resp, body := do(t, evalRequestOf(off, `{"dataset":"tiny"}`))
	if resp.StatusCode != 404 || !strings.Contains(body, "--ui-datasets") {
		t.Errorf("disabled eval: %d %s", resp.StatusCode, body)
	}
	creq, _ := http.NewRequest("POST", off.URL+"/console/api/chart", strings.NewReader(`{"dataset":"x","modes":[]}`))
	creq.Header.Set("Content-Type", "application/json")
	creq.Header.Set("Authorization", "Bearer s3cret")
	if resp, body := do(t, creq); resp.StatusCode != 422 || !strings.Contains(body, "no modes") {
		t.Errorf("empty report: %d %s", resp.StatusCode, body)
	}
}

// TestEvalReportRoundTrip guards the field names the page reads from a
// report (mode.name, scores.mean, latency.p50Ms, queriesPerSecond).
func TestEvalReportRoundTrip(t *testing.T) {
	rep := eval.Report{Dataset: "d", Metrics: []string{"ndcg@10"}, Modes: []*eval.ModeResult{{
		Mode: eval.Mode{Name: "m"}, Scores: &eval.Scores{Mean: map[string]float64{"ndcg@10": 0.5}}, Latency: eval.Latency{P50Ms: 2}, QPS: 3}}}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile("assets/console.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"name":"m"`, `"mean":{"ndcg@10":0.5}`, `"p50Ms":2`, `"queriesPerSecond":3`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("report JSON lacks %s: %s", key, b)
		}
	}
	for _, use := range []string{"m.mode.name", "m.scores.mean[k]", "m.latency.p50Ms", "m.queriesPerSecond"} {
		if !strings.Contains(string(js), use) {
			t.Errorf("console.js no longer reads %s", use)
		}
	}
}

// FuzzEvalPlan feeds arbitrary bodies through the eval request decoder and
// planner: they answer a plan or an error, never panic, and a plan only
// ever names a dataset under the root.
func FuzzEvalPlan(f *testing.F) {
	for _, seed := range []string{
		`{"dataset":"tiny"}`, `{"dataset":"tiny","split":"test","maxQueries":2,"metrics":"ndcg@10,recall@5","modes":[{"name":"a","options":{"mode":"sparse"}}]}`,
		`{"dataset":"../tiny"}`, `{"dataset":"tiny","k":-1}`, `{"dataset":"tiny"} {}`, `[]`, `{"modes":[{}]}`, ``, `{"dataset":"tiny","metrics":"p@0"}`,
	} {
		f.Add([]byte(seed))
	}
	root, err := filepath.Abs("testdata/datasets")
	if err != nil {
		f.Fatal(err)
	}
	h := New(Options{Datasets: root, Logger: quietLogger()})
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeEvalRequest(strings.NewReader(string(body)))
		if err != nil {
			return
		}
		p, err := h.plan(req)
		if err != nil {
			return
		}
		if p.ds.Name != "tiny" || filepath.Dir(p.ds.Dir) != root || len(p.modes) == 0 || len(p.ds.Queries) == 0 || len(p.ds.Queries) != len(p.ds.Qrels) {
			t.Fatalf("plan %+v from %q", p, body)
		}
	})
}

func TestHostAllowed(t *testing.T) {
	h := New(Options{AllowedHosts: []string{"rcp.example", "intra:8443"}, Logger: quietLogger()})
	for host, want := range map[string]bool{
		"127.0.0.1:7700": true, "[::1]:7700": true, "localhost:7700": true, "app.localhost": true, "10.0.0.5": true,
		"rcp.example": true, "RCP.example:7700": true, "intra:8443": true,
		"intra:9000": false, "attacker.example": false, "rcp.example.attacker.example": false, "": false,
	} {
		if got := h.hostAllowed(host); got != want {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
	if !New(Options{AllowedHosts: []string{"*"}, Logger: quietLogger()}).hostAllowed("anything.example") {
		t.Error(`"*" must allow any host`)
	}
}

// TestOneEmptyResultWording (issue 34, finding 10): the console says of an
// empty search what rcp and the MCP face say (internal/wording).
func TestOneEmptyResultWording(t *testing.T) {
	js, err := assets.ReadFile("assets/console.js")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"`+wording.NoHitsSentence+`"`) {
		t.Errorf("console.js does not say %q of an empty search", wording.NoHitsSentence)
	}
}
