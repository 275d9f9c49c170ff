package conformancecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/rcp"
)

// serveEngine serves a fresh engine over loopback HTTP at /rcp.
func serveEngine(t *testing.T) string {
	_, url := serveEngineHandle(t)
	return url
}

func serveEngineHandle(t *testing.T) (*engine.Engine, string) {
	t.Helper()
	eng, err := engine.Open(context.Background(), engine.Config{Dir: t.TempDir(), Dense: engine.DenseNone})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	h := rcp.NewServer(eng, nil).HTTPHandler(&rcp.HTTPOptions{Sessions: rcp.SessionStateful})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return eng, ts.URL + "/rcp"
}

// Issue 16 finding 4: against a server at a URL the write checks run only
// with --allow-writes, and then every document they add is deleted again.
func TestConformanceLeavesNoDocuments(t *testing.T) {
	eng, url := serveEngineHandle(t)
	only := "index.add-positional,index.idempotency-key,index.upsert,index.delete-counts"
	run := func(extra ...string) map[string]string {
		t.Helper()
		var out, errb bytes.Buffer
		args := append([]string{"--json", "--quiet", "60ms", "--call-timeout", "2s", "--only", only, "--http", url}, extra...)
		if code := Main(args, &out, &errb); code == 2 {
			t.Fatalf("exit 2: %s", errb.String())
		}
		var rep struct {
			Checks []struct{ ID, Status, Detail string }
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		st := map[string]string{}
		for _, c := range rep.Checks {
			st[c.ID] = c.Status + " " + c.Detail
		}
		return st
	}
	for id, st := range run() {
		if !strings.HasPrefix(st, "skip") || !strings.Contains(st, "--allow-writes") {
			t.Errorf("without --allow-writes %s: %s", id, st)
		}
	}
	for id, st := range run("--allow-writes") {
		if !strings.HasPrefix(st, "pass") {
			t.Errorf("with --allow-writes %s: %s", id, st)
		}
	}
	if n := eng.Stats().Docs; n != 0 {
		t.Fatalf("the run left %d documents in the index", n)
	}
}

func TestMainJSONAndExitCodes(t *testing.T) {
	url := serveEngine(t)
	var out, errb bytes.Buffer
	only := "preinit.info,preinit.ping,preinit.ping-nonce-string"
	code := Main([]string{"--json", "--quiet", "60ms", "--call-timeout", "2s", "--level", "L0", "--only", only, "--http", url}, &out, &errb)
	if code != 0 { // the reason is in the report on stdout (level notes), not on stderr
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	var rep struct {
		CertifiedLevel *string `json:"certifiedLevel"`
		Checks         []struct{ ID, Status string }
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out.String())
	}
	if rep.CertifiedLevel == nil || *rep.CertifiedLevel != "L0" || len(rep.Checks) != 3 {
		t.Errorf("report %+v", rep)
	}

	// A server that answers nothing useful fails its MUSTs: exit 1, and the
	// text report carries no colour off a terminal.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	defer bad.Close()
	out.Reset()
	if code := Main([]string{"--quiet", "60ms", "--call-timeout", "1s", "--level", "L0", "--only", only, "--http", bad.URL + "/rcp"}, &out, &errb); code != 1 {
		t.Errorf("exit %d for failed MUSTs, want 1\n%s", code, out.String())
	}
	if s := out.String(); !strings.Contains(s, "FAIL") || !strings.Contains(s, "CERTIFIED LEVEL") || strings.Contains(s, "\x1b[") {
		t.Errorf("text report wrong:\n%s", s)
	}
	for _, args := range [][]string{{}, {"--level", "L9", "--", "x"}, {"--http", "http://x", "--", "cmd"}, {"--token", "t", "--", "cmd"}} {
		if code := Main(args, &out, &errb); code != 2 {
			t.Errorf("Main(%q) = %d, want 2", args, code)
		}
	}
	out.Reset()
	if code := Main([]string{"--list"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "checks:") {
		t.Errorf("--list: %d %s", code, out.String())
	}
}
