package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

func TestParseTokenFile(t *testing.T) {
	file := "# rcpd tokens\n\nreader read plain-secret\n" +
		Line("ingest", []Scope{Read, Write}, "ingest-secret") + "\n" +
		"ops   read,write,admin,admin   " + Hash("ops-secret") + "  \n"
	s, err := Parse(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Names(), []string{"reader", "ingest", "ops"}) {
		t.Fatalf("names %q", s.Names())
	}
	for _, c := range []struct {
		secret, name string
		has          []Scope
		lacks        []Scope
	}{
		{"plain-secret", "reader", []Scope{Read}, []Scope{Write, Admin}},
		{"ingest-secret", "ingest", []Scope{Read, Write}, []Scope{Admin}},
		{"ops-secret", "ops", []Scope{Read, Write, Admin}, nil},
	} {
		tok, ok := s.Lookup(c.secret)
		if !ok || tok.Name != c.name {
			t.Fatalf("Lookup(%q) = %v, %v", c.secret, tok, ok)
		}
		for _, sc := range c.has {
			if !tok.Has(sc) {
				t.Errorf("%s lacks %s", c.name, sc)
			}
		}
		for _, sc := range c.lacks {
			if tok.Has(sc) {
				t.Errorf("%s has %s", c.name, sc)
			}
		}
	}
	if _, ok := s.Lookup(Hash("ops-secret")); ok {
		t.Error("the stored hash itself was accepted as a token")
	}
	if _, ok := s.Lookup("nope"); ok {
		t.Error("an unknown token was accepted")
	}
	// A file holding one word is the legacy one-token file.
	legacy, err := Parse(strings.NewReader("  s3cret\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tok, ok := legacy.Lookup("s3cret"); !ok || !tok.Has(Admin) || !tok.Has(Write) {
		t.Errorf("legacy file: %v %v", tok, ok)
	}
	for _, bad := range []string{
		"", "# only a comment\n", "reader read\n", "reader reed secret\n", "a read x\na write y\n",
		"a read sha256:1234\n", "a read sha256:" + strings.Repeat("zz", 32) + "\n",
	} {
		if _, err := Parse(strings.NewReader(bad)); !errors.Is(err, ErrFormat) {
			t.Errorf("Parse(%q) = %v, want ErrFormat", bad, err)
		}
	}
}

func TestConfigure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("reader read r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Configure(path, "legacy", "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Names(), []string{"reader", "token"}) {
		t.Fatalf("names %q", s.Names())
	}
	if none, err := Configure("", "", " "); none != nil || err != nil || none.Enabled() {
		t.Fatalf("no tokens: %v %v", none, err)
	}
	if _, err := Configure(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing token file was accepted")
	}
}

// Every route reads the header with rcp.BearerToken: any case of the
// scheme (issue 33 item 10), 401 without a valid token, 403 naming the
// scope a valid token lacks.
func TestRequire(t *testing.T) {
	s, _ := Parse(strings.NewReader("reader read r\nops read,admin o\n"))
	h := s.Require(Admin, "test", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for _, c := range []struct {
		header string
		want   int
	}{
		{"", 401}, {"Bearer nope", 401}, {"Basic o", 401},
		{"Bearer r", 403}, {"bearer o", 418}, {"BEARER o", 418}, {"Bearer  o ", 418},
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if c.header != "" {
			req.Header.Set("Authorization", c.header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%q: %d, want %d", c.header, rec.Code, c.want)
		}
		if rec.Code == 403 && !strings.Contains(rec.Body.String(), `"scope":"admin"`) {
			t.Errorf("403 body %s does not name the scope", rec.Body)
		}
	}
	var open *Set
	if status, ok := open.Allows(httptest.NewRequest(http.MethodGet, "/", nil), Admin); !ok || status != 200 {
		t.Error("a face without tokens refused a request")
	}
}

type recorder struct{ calls []string }

func (r *recorder) Describe(context.Context) rcp.Description {
	return rcp.Description{Server: rcp.PeerInfo{Name: "rec", Version: "1"}, Conformance: rcp.LevelL0,
		Capabilities: rcp.Capabilities{Retrieve: &rcp.RetrieveCap{Modes: []string{rcp.ModeSparse}}, Index: &rcp.IndexCap{Writable: true}}}
}

func (r *recorder) Call(_ context.Context, method string, _ json.RawMessage) (any, error) {
	r.calls = append(r.calls, method)
	return map[string]any{}, nil
}

// Guard answers an HTTP caller whose token lacks a method's scope with
// -32012 and error.data.scope; stream callers pass.
func TestGuard(t *testing.T) {
	s, _ := Parse(strings.NewReader("reader read r\nwriter write w\n"))
	rec := &recorder{}
	srv := rcp.NewServer(s.Guard(rec), nil)
	hh := srv.HTTPHandler(&rcp.HTTPOptions{Authenticate: s.Authenticate})
	defer hh.Close()
	ts := httptest.NewServer(hh)
	defer ts.Close()
	call := func(tok, method, params string) map[string]any {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/rcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return out
	}
	out := call("r", "index/add", `{"documents":[{"id":"x","text":"y"}]}`)
	e, _ := out["error"].(map[string]any)
	data, _ := e["data"].(map[string]any)
	if e["code"] != float64(-32012) || data["scope"] != "write" || !strings.Contains(data["detail"].(string), "reader") {
		t.Errorf("reader index/add: %v", out)
	}
	if out := call("r", "retrieve", `{"query":"x"}`); out["result"] == nil {
		t.Errorf("reader retrieve: %v", out)
	}
	if out := call("w", "retrieve", `{"query":"x"}`); out["error"] == nil {
		t.Errorf("a write-only token retrieved: %v", out)
	}
	if out := call("w", "index/add", `{"documents":[{"id":"x","text":"y"}]}`); out["result"] == nil {
		t.Errorf("writer index/add: %v", out)
	}
	if !slices.Equal(rec.calls, []string{"retrieve", "index/add"}) {
		t.Errorf("the handler saw %q", rec.calls)
	}
	if MethodScope("x-acme/new") != Admin || MethodScope(rcp.MethodInitialize) != none {
		t.Error("unlisted methods must need admin; the handshake none")
	}
}

// Token files written carelessly (red team of issue 33's tokens): each
// case was accepted before, with a token other than the one meant.
func TestTokenFileEdgeCases(t *testing.T) {
	// Two tokens with one secret: the scopes a request got depended on
	// the order of the lines (the last one won).
	for _, f := range []string{"ops read,write,admin same\nreader read same\n", "reader read same\nops read,write,admin " + Hash("same") + "\n"} {
		if _, err := Parse(strings.NewReader(f)); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "same secret") {
			t.Errorf("Parse(%q) = %v, want the same-secret refusal", f, err)
		}
	}
	if _, err := Merge(mustParse(t, "reader read same\n"), Static("token", "same")); err == nil {
		t.Error("--token with a token file's secret was accepted")
	}
	// Longer than 4 MiB: the file was cut at 4 MiB, and the cut line's
	// plain-text secret "longsecretvalue" became "lo", with every scope.
	line := "#" + strings.Repeat("x", 1022) + "\n"
	pre := strings.Repeat(line, 4095) + "#" + strings.Repeat("x", 1024-2-len("ops admin,read,write lo")) + "\n"
	if _, err := Parse(strings.NewReader(pre + "ops admin,read,write longsecretvalue\n")); !errors.Is(err, ErrFormat) {
		t.Errorf("a 4 MiB + 37 B token file: %v, want ErrFormat", err)
	}
	// A one-word file holding a hash is that hash: the word was taken as
	// the token, so whoever saw the hash held every scope.
	s := mustParse(t, Hash("s3cret")+"\n")
	if _, ok := s.Lookup(Hash("s3cret")); ok {
		t.Error("the hash in a one-word file was accepted as the token")
	}
	if tok, ok := s.Lookup("s3cret"); !ok || !tok.Has(Admin) {
		t.Errorf("one-word hashed file: %v %v", tok, ok)
	}
	// A byte order mark (Notepad) was part of the first name, or of the
	// one-word file's token (which then matched nothing).
	if tok, ok := mustParse(t, "\uFEFFreader read r\r\n").Lookup("r"); !ok || tok.Name != "reader" {
		t.Errorf("BOM: %v %v", tok, ok)
	}
	if _, ok := mustParse(t, "\uFEFFs3cret\r\n").Lookup("s3cret"); !ok {
		t.Error("BOM: the one-word file's token is not accepted")
	}
}

func mustParse(t *testing.T, text string) *Set {
	t.Helper()
	s, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
