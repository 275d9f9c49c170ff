package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/internal/auth"
	"github.com/rcpgo/rcpgo/rcp"
)

// Under --token, /metrics needs the token and /healthz shows counts only
// to authorised callers; --metrics-addr serves both without auth on their
// own address (item 3).
func TestHTTPFaceAuth(t *testing.T) {
	eng, err := engine.Open(context.Background(), engine.Config{Dir: t.TempDir(), Dense: engine.DenseNone})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	m := newMetrics(eng)
	srv := rcp.NewServer(m.wrap(eng), nil)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, metricsAddr := range []string{"", "127.0.0.1:0"} {
		errc := make(chan error, 2)
		tokens := auth.Static("test", "tok")
		f, _, err := startHTTP(httpFaceConfig{ln: listen(t, "127.0.0.1:0"), metricsAddr: metricsAddr, opts: &rcp.HTTPOptions{Authenticate: tokens.Authenticate}, tokens: tokens},
			srv, eng, m, log, errc)
		if err != nil {
			t.Fatal(err)
		}
		main := "http://" + f.addrs[0]
		get := func(url, auth string) (int, string) {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			c := &http.Client{Timeout: 5 * time.Second}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		if metricsAddr == "" {
			if code, _ := get(main+"/metrics", ""); code != 401 {
				t.Errorf("/metrics without the token: %d", code)
			}
			if code, body := get(main+"/metrics", "bearer tok"); code != 200 || !strings.Contains(body, "rcpd_index_documents") {
				t.Errorf("/metrics with the token: %d", code)
			}
			if code, body := get(main+"/healthz", ""); code != 200 || strings.Contains(body, "indexVersion") {
				t.Errorf("/healthz without the token: %d %s", code, body)
			}
			if code, body := get(main+"/healthz", "Bearer tok"); code != 200 || !strings.Contains(body, "indexVersion") {
				t.Errorf("/healthz with the token: %d %s", code, body)
			}
		} else {
			side := "http://" + f.addrs[1]
			if code, _ := get(main+"/metrics", "Bearer tok"); code != 404 {
				t.Errorf("/metrics on the main address with --metrics-addr: %d", code)
			}
			if code, _ := get(side+"/metrics", ""); code != 200 {
				t.Errorf("/metrics on --metrics-addr: %d", code)
			}
			if code, body := get(side+"/healthz", ""); code != 200 || !strings.Contains(body, "indexVersion") {
				t.Errorf("/healthz on --metrics-addr: %d %s", code, body)
			}
		}
		f.close()
	}
}

// Finding 9 of issue 16: /healthz counted chunks as "docs". It reports
// documents (as rcp index list counts them) and units (what retrieve
// ranks) under their own names.
func TestHealthzCountsDocuments(t *testing.T) {
	eng, err := engine.Open(context.Background(), engine.Config{Dir: t.TempDir(), Dense: engine.DenseNone})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	long := strings.Repeat("A long document is cut into several chunks by the server. ", 200)
	chunk := true
	for _, p := range []rcp.IndexAddParams{
		{Documents: []rcp.Document{{ID: "long", Text: long}}, Chunk: &chunk},
		{Documents: []rcp.Document{{ID: "short", Text: "a short note"}}},
	} {
		b, _ := json.Marshal(p)
		if _, err := eng.Call(context.Background(), rcp.MethodIndexAdd, b); err != nil {
			t.Fatal(err)
		}
	}
	rec := httptest.NewRecorder()
	healthz(eng, func(*http.Request) bool { return true })(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	var got struct {
		Status           string
		Documents, Units int
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Status != "ok" {
		t.Fatalf("%d %s (%v)", rec.Code, rec.Body, err)
	}
	if got.Documents != 2 || got.Units <= 2 || got.Units != eng.Stats().Docs {
		t.Fatalf("healthz %s: want 2 documents and every chunk as a unit (%d)", rec.Body, eng.Stats().Docs)
	}
}

// listen binds addr for a test (closed with the server, or at the end).
func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}
