package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/rcp"
)

func TestDispatch(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), nil, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "serve") {
		t.Fatalf("no args: %d %q", code, errb.String())
	}
	errb.Reset()
	if code := dispatch(context.Background(), []string{"frobnicate"}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "unknown command") || strings.Contains(errb.String(), "did you mean") {
		t.Fatalf("unknown: %d %q", code, errb.String())
	}
	errb.Reset()
	if code := dispatch(context.Background(), []string{"sevre"}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown command "sevre"; did you mean "serve"?`) {
		t.Fatalf("typo: %d %q", code, errb.String())
	}
	if code := dispatch(context.Background(), []string{"version"}, nil, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "rcpd ") {
		t.Fatalf("version: %d %q", code, out.String())
	}
	if code := dispatch(context.Background(), []string{"serve", "--bogus"}, nil, &out, &errb); code != 2 {
		t.Fatalf("bad flag: %d", code)
	}
}

func TestDemoCorpus(t *testing.T) {
	docs, err := demoCorpus()
	if err != nil || len(docs) != 40 {
		t.Fatalf("%d docs, %v", len(docs), err)
	}
	for _, d := range docs {
		if d.ID == "" || d.Text == "" || d.Title == "" || d.Meta["topic"] == nil || d.Source != "demo" {
			t.Fatalf("%+v", d)
		}
	}
}

func TestSessionModeAndDataDir(t *testing.T) {
	for s, want := range map[string]rcp.SessionMode{"single": rcp.SessionSingle, "Stateful": rcp.SessionStateful, "stateless": rcp.SessionStateless} {
		if m, err := sessionMode(s); err != nil || m != want {
			t.Errorf("%s: %v %v", s, m, err)
		}
	}
	if _, err := sessionMode("x"); err == nil {
		t.Error("bad mode accepted")
	}
	t.Setenv("XDG_DATA_HOME", "/xdg")
	if d := defaultDataDir(); d != filepath.Join("/xdg", "rcpd") {
		t.Errorf("data dir %s", d)
	}
}

// TestServeStdioDemo runs `rcpd serve --stdio --demo` over pipes, twice on
// one directory (the demo load is idempotent), with a config file.
func TestServeStdioDemo(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(t.TempDir(), "rcpd.json")
	if err := os.WriteFile(cfgPath, []byte(`{"maxK": 50, "fields": {"source": "keyword"}, "chunk": {"size": 100, "overlap": 20}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- serve(context.Background(), serveFlags{stdio: true, demo: true, data: dir, config: cfgPath}, inR, outW, io.Discard)
			outW.Close()
		}()
		rd := bufio.NewReader(outR)
		send := func(s string) map[string]any {
			if _, err := io.WriteString(inW, s+"\n"); err != nil {
				t.Fatal(err)
			}
			line, err := rd.ReadBytes('\n')
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
		init := send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
		caps := init["result"].(map[string]any)["capabilities"].(map[string]any)
		if caps["retrieve"].(map[string]any)["maxK"].(float64) != 50 || caps["filter"] == nil {
			t.Fatalf("capabilities %v", caps)
		}
		r := send(`{"jsonrpc":"2.0","id":2,"method":"retrieve","params":{"query":"BM25 term frequency saturation","k":3,"filter":{"field":"topic","op":"eq","value":"ranking"}}}`)
		hits := r["result"].(map[string]any)["hits"].([]any)
		if len(hits) == 0 || hits[0].(map[string]any)["id"] != "bm25" {
			t.Fatalf("round %d: %v", round, r)
		}
		send(`{"jsonrpc":"2.0","id":3,"method":"shutdown","params":{}}`)
		inW.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not return after shutdown")
		}
	}
}

func TestMetrics(t *testing.T) {
	eng, err := engine.Open(context.Background(), engine.Config{Dir: t.TempDir(), Dense: engine.DenseNone})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	m := newMetrics(eng)
	h := m.wrap(eng)
	h.Call(context.Background(), "retrieve", json.RawMessage(`{"query":"x","k":1}`))
	h.Call(context.Background(), "retrieve", json.RawMessage(`{"query":"x","k":-1}`))
	h.Call(context.Background(), "x-rcpgo/"+strings.Repeat("z", 20000), json.RawMessage(`{}`))
	rec := httptest.NewRecorder()
	m.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{`rcpd_requests_total{code="0",method="retrieve"} 1`, `rcpd_requests_total{code="-32602",method="retrieve"} 1`,
		"rcpd_index_documents 0", "rcpd_dense_build_units_total 0", "rcpd_request_duration_seconds_bucket", `rcpd_requests_total{code="-32004",method="other"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(body, "zzzz") {
		t.Error("an unknown method name became a metric label")
	}
}

// Finding 3 of issue 16: the demo corpus stays out of the user's own data
// directory unless --data names one.
func TestDemoUsesItsOwnDataDir(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_DATA_HOME", xdg)
	t.Setenv("RCPD_DATA", "")
	t.Setenv("RCPD_CONFIG", "")
	serveEOF := func(args ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		args = append([]string{"serve", "--stdio", "--demo", "--dense", "none", "--log-level", "error"}, args...)
		if code := dispatch(context.Background(), args, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errb.String())
		}
	}
	serveEOF()
	if _, err := os.Stat(filepath.Join(xdg, "rcpd-demo")); err != nil {
		t.Fatalf("demo data dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(xdg, "rcpd")); !os.IsNotExist(err) {
		t.Fatalf("--demo wrote into the default data dir (%v)", err)
	}
	explicit := filepath.Join(t.TempDir(), "mine")
	serveEOF("--data", explicit)
	if _, err := os.Stat(explicit); err != nil {
		t.Fatalf("--demo --data: %v", err)
	}
}

func TestFieldFlag(t *testing.T) {
	var f fieldFlags
	for _, ok := range []string{"lang=keyword", " year = int "} {
		if err := f.Set(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	if len(f) != 2 || f[1].name != "year" || f[1].typ != "int" {
		t.Fatalf("%+v", f)
	}
	for _, bad := range []string{"lang", "=keyword", "lang=string"} {
		if err := f.Set(bad); err == nil || !strings.Contains(err.Error(), "keyword, text, int, float, bool, date") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
