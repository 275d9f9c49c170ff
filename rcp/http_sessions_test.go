package rcp

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func openSession(t *testing.T, base string) (string, []byte) {
	t.Helper()
	r := post(t, base+"/initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`, nil)
	var res struct {
		Result *InitializeResult `json:"result"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil || res.Result == nil {
		return "", r.body
	}
	var tok string
	res.Result.Meta.Get(MetaSession, &tok)
	return tok, r.body
}

// A flood of initialize calls evicts the least recently used idle sessions
// instead of locking new clients out (item 5: 10 000 initialize calls shut
// everyone out for 30 minutes with retryAfterMs 1000).
func TestHTTPSessionLRUEviction(t *testing.T) {
	ts, hh := newHTTPServer(t, newTestHandler(), &HTTPOptions{Sessions: SessionStateful, MaxSessions: 4})
	base := ts.URL + "/rcp"
	var toks []string
	for i := range 10 {
		tok, body := openSession(t, base)
		if tok == "" {
			t.Fatalf("initialize %d refused: %s", i, body)
		}
		toks = append(toks, tok)
	}
	hh.mu.Lock()
	n := len(hh.sessions)
	hh.mu.Unlock()
	if n != 4 {
		t.Fatalf("%d sessions, cap 4", n)
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if r := post(t, base+"/ping", ping, map[string]string{HeaderSession: toks[9]}); errCode(r.body) != 0 {
		t.Fatalf("newest session: %s", r.body)
	}
	if r := post(t, base+"/ping", ping, map[string]string{HeaderSession: toks[0]}); errCode(r.body) != int(CodeNotInitialized) {
		t.Fatalf("evicted session: %s", r.body)
	}
}

// When every session is busy, initialize is shed with a retry hint bounded
// by the busy requests' deadline, not a made-up second.
func TestHTTPSessionsAllBusy(t *testing.T) {
	h := newTestHandler()
	srv := NewServer(h, &ServerOptions{Logger: quietLogger(), RequestTimeout: 3 * time.Second})
	hh := srv.HTTPHandler(&HTTPOptions{Sessions: SessionStateful, MaxSessions: 2})
	ts := newTestServer(t, hh)
	base := ts.URL + "/rcp"
	var wg sync.WaitGroup
	for range 2 {
		tok, body := openSession(t, base)
		if tok == "" {
			t.Fatalf("initialize: %s", body)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := tryPost(t, base+"/retrieve", `{"jsonrpc":"2.0","id":3,"method":"retrieve","params":{"query":"block","k":1}}`, map[string]string{HeaderSession: tok}); err != nil {
				t.Error(err)
			}
		}()
		select {
		case <-h.started:
		case <-time.After(time.Minute):
			t.Fatal("the session's retrieve did not start within a minute")
		}
	}
	_, body := openSession(t, base)
	var w struct {
		Error *Error `json:"error"`
	}
	if err := json.Unmarshal(body, &w); err != nil || w.Error == nil || w.Error.Code != CodeRateLimited {
		t.Fatalf("initialize with every session busy: %s", body)
	}
	if ms := *w.Error.Data.RetryAfterMs; ms < 1000 || ms > 3000 {
		t.Errorf("retryAfterMs %d, want the busy requests' remaining deadline (≤ 3000)", ms)
	}
	waitGroup(t, &wg, "the busy sessions' retrieves")
}

// initialize params are bounded: a session keeps the client info.
func TestInitializeParamsBounded(t *testing.T) {
	ts, _ := newHTTPServer(t, newTestHandler(), &HTTPOptions{Sessions: SessionStateful})
	big := strings.Repeat("x", MaxInitializeBytes)
	r := post(t, ts.URL+"/rcp/initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"client":{"name":"`+big+`"}}}`, nil)
	if errCode(r.body) != int(CodeInvalidParams) {
		t.Fatalf("oversized clientInfo: %s", r.body)
	}
}

func newTestServer(t *testing.T, hh *HTTPHandler) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(hh)
	t.Cleanup(func() {
		ts.Close()
		hh.Close()
	})
	return ts
}

// waitGroup waits for wg, failing t when it is not done within a minute.
func waitGroup(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("waited a minute for %s", what)
	}
}
