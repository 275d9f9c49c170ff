package mcpbridge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

// TestHTTPCancelledRequestIsNotAnswered: over streamable HTTP, a tools/call
// the client cancels (notifications/cancelled in another POST; string and
// numeric ids) gets no answer — its SSE stream ends without one — and the
// engine call behind it is cancelled; the session keeps serving.
func TestHTTPCancelledRequestIsNotAnswered(t *testing.T) {
	e := newTestEngine(fullCaps())
	entered, stopped := make(chan struct{}, 1), make(chan struct{}, 1)
	r := e.router()
	rcp.Handle(r, rcp.MethodRetrieve, func(ctx context.Context, _ *rcp.RetrieveParams) (*rcp.RetrieveResult, error) {
		entered <- struct{}{}
		<-ctx.Done()
		stopped <- struct{}{}
		return nil, ctx.Err()
	})
	srv, sid := httpSessionOver(t, r)

	for _, id := range []string{`"slow"`, `7`} {
		cancelInFlight(t, srv.URL, sid, id, entered, stopped)
	}
	if _, m := postRaw(t, srv.URL, sid, `{"jsonrpc":"2.0","id":"p","method":"ping"}`); m["result"] == nil {
		t.Fatalf("ping after the cancellation: %v", m)
	}
}

// cancelInFlight posts a search with id that the engine never finishes,
// cancels it and checks that its stream ends without an answer and that
// the engine call was cancelled.
func cancelInFlight(t *testing.T, url, sid, id string, entered, stopped chan struct{}) {
	t.Helper()
	body := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(
			`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"search","arguments":{"query":"never ends"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", ProtocolVersion)
		req.Header.Set("Mcp-Session-Id", sid)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			body <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			body <- string(raw) + "\nerror: " + err.Error()
			return
		}
		body <- string(raw)
	}()
	wait(t, entered, "the engine call")
	if resp, _ := postRaw(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`,"reason":"user gave up"}}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: HTTP %d", resp.StatusCode)
	}
	wait(t, stopped, "the engine call to be cancelled")
	got := wait(t, body, "the cancelled request's stream to end")
	var want any
	_ = json.Unmarshal([]byte(id), &want)
	for _, line := range strings.Split(got, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(data), &m) == nil && m["id"] == want {
			t.Errorf("the cancelled request %s was answered: %s", id, data)
		}
	}
	if strings.Contains(got, "error: ") {
		t.Errorf("the stream of %s did not end cleanly: %s", id, got)
	}
}

// httpSessionOver serves a bridge over the engine router r on streamable
// HTTP and opens an initialized session on it.
func httpSessionOver(t *testing.T, r *rcp.Router) (*httptest.Server, string) {
	t.Helper()
	c, err := rcp.ConnectInProcess(context.Background(), rcp.NewServer(r, &rcp.ServerOptions{Logger: discardLogger()}), &rcp.ClientOptions{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	b, err := New(c, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveHTTP(t, b, HTTPOptions{})
	sid, _ := rawInitialize(t, srv.URL)
	postRaw(t, srv.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return srv, sid
}
