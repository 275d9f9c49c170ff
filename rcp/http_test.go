package rcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/rcp/internal/wiretest"
)

func newHTTPServer(t *testing.T, h Handler, opts *HTTPOptions) (*httptest.Server, *HTTPHandler) {
	t.Helper()
	srv := NewServer(h, &ServerOptions{Logger: quietLogger(), MaxFrameBytes: 1 << 20})
	hh := srv.HTTPHandler(opts)
	ts := httptest.NewServer(hh)
	t.Cleanup(func() {
		ts.Close()
		hh.Close()
	})
	return ts, hh
}

type httpResult struct {
	status int
	header http.Header
	body   []byte
}

func post(t *testing.T, url, body string, hdr map[string]string) httpResult {
	t.Helper()
	r, err := tryPost(t, url, body, hdr)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryPost is post for any goroutine: it returns its failure, and reports
// schema violations with t.Errorf only.
func tryPost(t *testing.T, url, body string, hdr map[string]string) (httpResult, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return httpResult{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return httpResult{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && len(b) > 0 && strings.Contains(body, `"jsonrpc"`) {
		wiretest.Message(t, b)
		var req struct {
			Method string `json:"method"`
		}
		if json.Unmarshal([]byte(body), &req) == nil && req.Method != "" {
			if _, known := methodCaps[req.Method]; known {
				wiretest.Response(t, req.Method, b)
			}
		}
	}
	return httpResult{resp.StatusCode, resp.Header, b}, nil
}

func TestHTTPStatusTable(t *testing.T) {
	checkNoLeaks(t)
	ts, _ := newHTTPServer(t, newTestHandler(), &HTTPOptions{Sessions: SessionStateless, CORSOrigin: "*"})
	base := ts.URL + "/rcp"
	tests := []struct {
		name, path, body string
		status, code     int
		check            string
	}{
		{"ping", "/ping", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"nonce":"n"}}`, 200, 0, `"nonce":"n"`},
		{"stateless retrieve without initialize", "/retrieve", `{"jsonrpc":"2.0","id":2,"method":"retrieve","params":{"query":"q","k":2}}`, 200, 0, `"hits"`},
		{"stateless initialize is idempotent", "/initialize", `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1}}`, 200, 0, `"protocolVersion":1`},
		{"again", "/initialize", `{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":1}}`, 200, 0, `"protocolVersion":1`},
		{"unadvertised is still -32003", "/index/add", `{"jsonrpc":"2.0","id":5,"method":"index/add","params":{"documents":[]}}`, 200, -32003, ""},
		{"unknown is -32004", "/nope", `{"jsonrpc":"2.0","id":6,"method":"nope","params":{}}`, 200, -32004, ""},
		{"path/body mismatch is -32600", "/ping", `{"jsonrpc":"2.0","id":7,"method":"info","params":{}}`, 200, -32600, ""},
		{"JSON-RPC errors are 200", "/retrieve", `{"jsonrpc":"2.0","id":8,"method":"retrieve","params":{"query":"q","k":"x"}}`, 200, -32602, ""},
		{"invalid JSON is 400", "/ping", `{"jsonrpc":`, 400, -32700, ""},
		{"not a request is 400", "/ping", `{"hello":1}`, 400, -32600, ""},
		{"empty body is 400", "/ping", ``, 400, -32700, ""},
		{"notification is 204", "/ping", `{"jsonrpc":"2.0","method":"ping"}`, 204, 0, ""},
		{"cancel notification is 204", "/notifications/cancel", `{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":1}}`, 204, 0, ""},
		{"compact envelope", "/ping", `{"method":"ping","params":{"nonce":5}}`, 200, 0, `{"result":{"nonce":5}}`},
		{"compact envelope error", "/nope", `{"method":"nope","params":{}}`, 200, -32004, `{"error":{"code":-32004`},
		{"batch at the base path", "", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"info"}]`, 200, 0, `"id":2`},
		{"all-notification batch is 204", "", `[{"jsonrpc":"2.0","method":"ping"}]`, 204, 0, ""},
		{"empty batch is 400", "", `[]`, 400, -32600, ""},
		{"batch at a method path is 400", "/ping", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, 400, -32600, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, base+tc.path, tc.body, nil)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status == 204 {
				if len(r.body) != 0 {
					t.Fatalf("204 with a body: %s", r.body)
				}
				return
			}
			if got := errCode(r.body); got != tc.code && !strings.HasPrefix(string(r.body), "[") {
				t.Fatalf("code %d, want %d: %s", got, tc.code, r.body)
			}
			if tc.check != "" && !strings.Contains(string(r.body), tc.check) {
				t.Fatalf("%s lacks %s", r.body, tc.check)
			}
			if r.header.Get("Access-Control-Allow-Origin") != "*" {
				t.Fatal("CORS header missing")
			}
		})
	}

	t.Run("404 outside the base path", func(t *testing.T) {
		if r := post(t, ts.URL+"/other/ping", `{}`, nil); r.status != 404 {
			t.Fatalf("status %d", r.status)
		}
	})
	t.Run("405 for GET", func(t *testing.T) {
		resp, err := http.Get(base + "/ping")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("OPTIONS preflight", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodOptions, base+"/retrieve", nil)
		req.Header.Set("Origin", "http://example.test")
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 204 || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), HeaderSession) {
			t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
		}
	})
	t.Run("body cap is 413 and -32013", func(t *testing.T) {
		r := post(t, base+"/ping", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"nonce":"`+strings.Repeat("a", 2<<20)+`"}}`, nil)
		if r.status != 413 || errCode(r.body) != -32013 {
			t.Fatalf("status %d %s", r.status, r.body)
		}
	})
}

func TestHTTPStatefulSessions(t *testing.T) {
	checkNoLeaks(t)
	ts, hh := newHTTPServer(t, newTestHandler(), &HTTPOptions{Sessions: SessionStateful})
	base := ts.URL + "/rcp"
	// without a token a request is served statelessly, at the advertised
	// capabilities; unadvertised methods are still gated
	if r := post(t, base+"/retrieve", `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","k":1}}`, nil); errCode(r.body) != 0 {
		t.Fatalf("no session: %s", r.body)
	}
	if r := post(t, base+"/graph", `{"jsonrpc":"2.0","id":1,"method":"graph","params":{"op":"local"}}`, nil); errCode(r.body) != -32003 {
		t.Fatalf("no session, unadvertised: %s", r.body)
	}
	// a failed negotiation issues (and keeps) no session
	if r := post(t, base+"/initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":0}}`, nil); errCode(r.body) != -32002 || strings.Contains(string(r.body), "session") {
		t.Fatalf("v0: %s", r.body)
	}
	hh.mu.Lock()
	kept := len(hh.sessions)
	hh.mu.Unlock()
	if kept != 0 {
		t.Fatalf("%d sessions kept after a failed initialize", kept)
	}
	r := post(t, base+"/initialize", `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`, nil)
	var res struct {
		Result InitializeResult `json:"result"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatal(err)
	}
	var tok string
	if !res.Result.Meta.Get(MetaSession, &tok) || tok == "" {
		t.Fatalf("no session token: %s", r.body)
	}
	hdr := map[string]string{HeaderSession: tok}
	if r := post(t, base+"/retrieve", `{"jsonrpc":"2.0","id":3,"method":"retrieve","params":{"query":"q","k":1}}`, hdr); errCode(r.body) != 0 {
		t.Fatalf("with session: %s", r.body)
	}
	if r := post(t, base+"/initialize", `{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":1}}`, hdr); errCode(r.body) != -32600 {
		t.Fatalf("re-initialize: %s", r.body)
	}
	if r := post(t, base+"/retrieve", `{"jsonrpc":"2.0","id":5,"method":"retrieve","params":{"query":"q","k":1}}`, map[string]string{HeaderSession: "bogus"}); errCode(r.body) != -32001 {
		t.Fatalf("bogus session: %s", r.body)
	}
	// shutdown ends the session
	if r := post(t, base+"/shutdown", `{"jsonrpc":"2.0","id":6,"method":"shutdown"}`, hdr); errCode(r.body) != 0 {
		t.Fatalf("shutdown: %s", r.body)
	}
	if r := post(t, base+"/retrieve", `{"jsonrpc":"2.0","id":7,"method":"retrieve","params":{"query":"q","k":1}}`, hdr); errCode(r.body) != -32001 {
		t.Fatalf("after shutdown: %s", r.body)
	}
}

func TestHTTPSingleSession(t *testing.T) {
	ts, _ := newHTTPServer(t, newTestHandler(), &HTTPOptions{Sessions: SessionSingle})
	base := ts.URL + "/rcp"
	steps := []struct {
		method, body string
		code         int
	}{
		{"retrieve", `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","k":1}}`, -32001},
		{"initialize", `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":0}}`, -32002},
		{"retrieve", `{"jsonrpc":"2.0","id":3,"method":"retrieve","params":{"query":"q","k":1}}`, -32001},
		{"initialize", `{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":1}}`, 0},
		{"initialize", `{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":1}}`, -32600},
		{"retrieve", `{"jsonrpc":"2.0","id":6,"method":"retrieve","params":{"query":"q","k":1}}`, 0},
		{"shutdown", `{"jsonrpc":"2.0","id":7,"method":"shutdown"}`, 0},
		{"retrieve", `{"jsonrpc":"2.0","id":8,"method":"retrieve","params":{"query":"q","k":1}}`, -32001},
	}
	for i, s := range steps {
		if r := post(t, base+"/"+s.method, s.body, nil); errCode(r.body) != s.code {
			t.Fatalf("step %d: %s, want %d", i, r.body, s.code)
		}
	}
}

func TestHTTPSSE(t *testing.T) {
	checkNoLeaks(t)
	ts, _ := newHTTPServer(t, newTestHandler(), &HTTPOptions{})
	url := ts.URL + "/rcp/retrieve"
	body := `{"jsonrpc":"2.0","id":9,"method":"retrieve","params":{"query":"progress","k":1,"_meta":{"progressToken":"t","logLevel":"debug"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || resp.StatusCode != 200 {
		t.Fatalf("status %d content type %q", resp.StatusCode, ct)
	}
	var frames []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "data: ") {
			frames = append(frames, strings.TrimPrefix(line, "data: "))
		}
	}
	if len(frames) < 3 {
		t.Fatalf("frames %v", frames)
	}
	final := frames[len(frames)-1]
	if idOfFrame([]byte(final)) != "9" || errCode([]byte(final)) != 0 {
		t.Fatalf("final frame %s", final)
	}
	progress := 0
	for _, f := range frames[:len(frames)-1] {
		wiretest.Message(t, []byte(f))
		if strings.Contains(f, NotifyProgress) {
			progress++
			if !strings.Contains(f, `"progressToken":"t"`) {
				t.Fatalf("token not echoed: %s", f)
			}
		}
	}
	if progress != 2 {
		t.Fatalf("progress frames %d", progress)
	}
	wiretest.Response(t, MethodRetrieve, []byte(final))

	// without Accept: one buffered JSON body
	r := post(t, url, body, nil)
	if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") || idOfFrame(r.body) != "9" {
		t.Fatalf("buffered: %v %s", r.header, r.body)
	}
	// streaming not advertised: buffered even when asked
	h := newTestHandler()
	h.caps.Streaming = nil
	ts2, _ := newHTTPServer(t, h, nil)
	r = post(t, ts2.URL+"/rcp/retrieve", body, map[string]string{"Accept": "text/event-stream"})
	if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Fatalf("not buffered: %v", r.header)
	}
}

func TestHTTPAuthAndRateLimit(t *testing.T) {
	checkNoLeaks(t)
	ts, _ := newHTTPServer(t, newTestHandler(), &HTTPOptions{Sessions: SessionStateful, BearerTokens: []string{"s3cret"},
		RateLimit: &RateLimit{RequestsPerSecond: 0.5, Burst: 3}})
	base := ts.URL + "/rcp"
	// auth is checked before initialize and before gating, uniformly
	var bodies []string
	for _, path := range []string{"/initialize", "/retrieve", "/nope", "/index/add"} {
		r := post(t, base+path, `{"jsonrpc":"2.0","id":1,"method":"`+strings.TrimPrefix(path, "/")+`","params":{}}`, map[string]string{"Authorization": "Bearer wrong"})
		if r.status != 401 || errCode(r.body) != -32012 {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
		bodies = append(bodies, string(r.body))
	}
	for _, b := range bodies[1:] {
		if b != bodies[0] {
			t.Fatalf("401 bodies differ: %v", bodies)
		}
	}
	// credentials in params are never accepted
	r := post(t, base+"/initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"_meta":{"authorization":"Bearer s3cret"},"token":"s3cret"}}`, nil)
	if r.status != 401 {
		t.Fatalf("params credentials accepted: %d", r.status)
	}
	// 401s did not consume the budget; now 3 allowed then 429
	ok := map[string]string{"Authorization": "Bearer s3cret"}
	for i := range 3 {
		if r := post(t, base+"/ping", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, ok); r.status != 200 {
			t.Fatalf("request %d: %d", i, r.status)
		}
	}
	r = post(t, base+"/ping", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, ok)
	if r.status != 429 || r.header.Get("Retry-After") == "" || errCode(r.body) != -32011 {
		t.Fatalf("rate limit: %d %v %s", r.status, r.header, r.body)
	}
	var w wire
	_ = json.Unmarshal(r.body, &w)
	if w.Error.Data == nil || w.Error.Data.RetryAfterMs == nil || *w.Error.Data.RetryAfterMs <= 0 {
		t.Fatalf("no retryAfterMs: %s", r.body)
	}
}

func TestHTTPGracefulShutdown(t *testing.T) {
	checkNoLeaks(t)
	h := newTestHandler()
	srv := NewServer(h, &ServerOptions{Logger: quietLogger()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.ServeListener(ctx, ln, &HTTPOptions{}) }()
	url := "http://" + ln.Addr().String() + "/rcp/retrieve"
	got := make(chan httpResult, 1)
	go func() {
		resp, err := http.Post(url, "application/json", bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"sleep:200ms","k":1}}`)))
		if err != nil {
			got <- httpResult{status: -1}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- httpResult{status: resp.StatusCode, body: b}
	}()
	<-h.started
	cancel() // SIGINT/SIGTERM in a real binary
	r := <-got
	if r.status != 200 || errCode(r.body) != 0 {
		t.Fatalf("in-flight request not finished: %d %s", r.status, r.body)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("server did not stop")
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestHTTPClosedHandlerIs503(t *testing.T) {
	ts, hh := newHTTPServer(t, newTestHandler(), nil)
	_ = hh.Close()
	r := post(t, ts.URL+"/rcp/ping", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("status %d", r.status)
	}
}
