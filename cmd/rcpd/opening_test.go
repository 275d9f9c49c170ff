package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/internal/testutil/within"
	"github.com/rcpgo/rcpgo/rcp"
)

// TestServesWhileOpening (issue 15, acceptance 1): rcpd listens while the
// engine opens. A bare ping is answered at once and /healthz says
// "starting"; a session's initialize waits for the engine (so it is never
// offered a provisional capability set) and a request whose deadline
// passes first fails with it; once the engine is open, the waiting
// session is served exactly as the engine serves.
func TestServesWhileOpening(t *testing.T) {
	ctx := context.Background()
	eng, err := engine.Open(ctx, engine.Config{Dir: t.TempDir(), Dense: engine.DenseNone})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	add, _ := json.Marshal(rcp.IndexAddParams{Documents: []rcp.Document{
		{ID: "reef", Text: "coral reefs grow in warm shallow water"},
		{ID: "engine", Text: "a piston engine burns fuel"},
	}})
	if _, err := eng.Call(ctx, rcp.MethodIndexAdd, add); err != nil {
		t.Fatal(err)
	}

	o := &openingEngine{ready: make(chan struct{})} // the open is held until ready closes
	srv := rcp.NewServer(newMetrics(o).wrap(o), nil)
	mux := http.NewServeMux()
	rh := srv.HTTPHandler(nil)
	defer rh.Close()
	mux.Handle("/rcp", rh)
	mux.Handle("/rcp/", rh)
	hs := httptest.NewServer(mux)
	defer hs.Close()
	url := hs.URL + "/rcp"

	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"result"`) {
		t.Fatalf("bare ping while opening: %s %s", resp.Status, body)
	}
	rec := httptest.NewRecorder()
	healthz(o, func(*http.Request) bool { return true })(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "starting") {
		t.Fatalf("/healthz while opening: %d %s", rec.Code, rec.Body)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := o.Call(short, rcp.MethodRetrieve, json.RawMessage(`{"query":"coral"}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("retrieve whose deadline passes while opening: %v", err)
	}

	type session struct {
		c   *rcp.Client
		err error
	}
	connected := make(chan session, 1)
	go func() {
		c, err := rcp.ConnectHTTP(ctx, url, nil)
		connected <- session{c, err}
	}()
	select {
	case s := <-connected:
		t.Fatalf("initialize answered before the engine was open: %v", s.err)
	case <-time.After(50 * time.Millisecond):
	}
	o.eng = eng
	close(o.ready)
	s := within.Recv(t, connected, "the client's connection once the engine opened")
	if s.err != nil {
		t.Fatal(s.err)
	}
	defer s.c.Close()
	want := eng.Describe(ctx).Capabilities.Retrieve.Modes
	if got := s.c.Capabilities().Retrieve.Modes; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("session that waited for the open offered modes %v, want %v", got, want)
	}
	res, err := s.c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("coral reef"), K: 3})
	if err != nil || len(res.Hits) == 0 || res.Hits[0].ID.String() != "reef" {
		t.Fatalf("retrieve after the open: %v %+v", err, res)
	}
	rec = httptest.NewRecorder()
	healthz(o, func(*http.Request) bool { return true })(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/healthz once open: %d %s", rec.Code, rec.Body)
	}
}

// TestFailedOpenEndsServe: an open that fails is reported on the error
// channel (rcpd exits with it) and by /healthz.
func TestFailedOpenEndsServe(t *testing.T) {
	o := &openingEngine{ready: make(chan struct{}), err: errors.New("engine: locked")}
	close(o.ready)
	errc := make(chan error, 1)
	o.failed(errc)
	if err := within.Recv(t, errc, "the failed open to be reported"); err != o.err {
		t.Fatalf("failed open reported %v", err)
	}
	if err := o.Health(); err != o.err {
		t.Fatalf("health of a failed open: %v", err)
	}
	if err := o.close(); err != nil {
		t.Fatal(err)
	}
}
