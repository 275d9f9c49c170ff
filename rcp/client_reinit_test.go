package rcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// generations is a handler whose sessions negotiate the current
// "generation" (embed.identity gen-N); a retrieve in a session of an
// older generation than keep allows fails with the capabilities-changed
// error, like rcpd's dense calls once their generation is dropped.
type generations struct {
	mu        sync.Mutex
	cur, keep int // sessions of generations below keep are refused
	describes int
	always    bool // refuse every retrieve (a server that never recovers)
}

func (g *generations) Describe(context.Context) Description {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.describes++
	caps := testCaps()
	caps.Embed = &EmbedCap{Dimension: 2, Identity: fmt.Sprintf("gen-%d", g.cur)}
	return Description{Server: PeerInfo{Name: "gens", Version: "1"}, Capabilities: caps}
}

func (g *generations) Call(ctx context.Context, method string, _ json.RawMessage) (any, error) {
	s, _ := SessionInfo(ctx)
	var n int
	fmt.Sscanf(s.Capabilities.Embed.Identity, "gen-%d", &n)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.always || n < g.keep {
		return nil, CapabilitiesChanged("embed.identity %q is no longer served; the server serves %q", s.Capabilities.Embed.Identity, fmt.Sprintf("gen-%d", g.cur))
	}
	return &RetrieveResult{Hits: []Hit{{ID: StringID(s.Capabilities.Embed.Identity), Score: 1}}}, nil
}

func (g *generations) advance() {
	g.mu.Lock()
	g.cur++
	g.keep = g.cur
	g.mu.Unlock()
}

func TestCapabilitiesChangedError(t *testing.T) {
	e := CapabilitiesChanged("embed.identity %q was replaced", "lsa-1")
	if !e.CapabilitiesChanged() || !e.Retryable() || e.Code != CodeBackendUnavailable {
		t.Fatalf("%+v", e)
	}
	b, _ := json.Marshal(e)
	var back Error
	if err := json.Unmarshal(b, &back); err != nil || !back.CapabilitiesChanged() {
		t.Fatalf("round trip %s: %v %+v", b, err, back)
	}
	other := &Error{Code: CodeBackendUnavailable, Message: "down", Data: &ErrorData{Retryable: ptr(true)}}
	if other.CapabilitiesChanged() {
		t.Fatal("a plain -32010 is not capabilities-changed")
	}
}

// The Client re-initializes and retries once on exactly the
// capabilities-changed error, over every transport that can open another
// session; NoReinitialize returns the error instead.
func TestClientReinitializes(t *testing.T) {
	checkNoLeaks(t)
	dials := map[string]func(t *testing.T, h Handler, opts *ClientOptions) *Client{
		"in-process": func(t *testing.T, h Handler, opts *ClientOptions) *Client {
			c, err := ConnectInProcess(context.Background(), NewServer(h, &ServerOptions{Logger: quietLogger()}), opts)
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		"http": func(t *testing.T, h Handler, opts *ClientOptions) *Client {
			ts, _ := newHTTPServer(t, h, &HTTPOptions{Sessions: SessionStateful})
			hc := &http.Client{Transport: &http.Transport{}}
			t.Cleanup(hc.CloseIdleConnections)
			o := *opts
			o.HTTPClient = hc
			c, err := ConnectHTTP(context.Background(), ts.URL+"/rcp", &o)
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
	}
	ctx := context.Background()
	q := &RetrieveParams{Query: TextQuery("q"), K: 1}
	for name, dial := range dials {
		t.Run(name, func(t *testing.T) {
			g := &generations{}
			c := dial(t, g, &ClientOptions{Logger: quietLogger()})
			defer c.Close()
			if id := c.Capabilities().Embed.Identity; id != "gen-0" {
				t.Fatalf("negotiated %s", id)
			}
			g.advance()
			res, err := c.Retrieve(ctx, q)
			if err != nil {
				t.Fatalf("retrieve after the change: %v", err)
			}
			if got := res.Hits[0].ID.String(); got != "gen-1" {
				t.Fatalf("served by %s, want the new session's gen-1", got)
			}
			if id := c.Capabilities().Embed.Identity; id != "gen-1" {
				t.Fatalf("capabilities after re-initializing: %s", id)
			}
			// Concurrent calls that fail together re-initialize once.
			g.advance()
			before := g.describes
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := c.Retrieve(ctx, q); err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("concurrent retrieve: %v", err)
			}
			if n := g.describes - before; n != 1 {
				t.Errorf("%d new sessions for one change, want 1", n)
			}
			// Only once: a server that refuses the new session too gets
			// its error back after one re-initialization.
			g.mu.Lock()
			g.always = true
			g.mu.Unlock()
			before = g.describes
			_, err = c.Retrieve(ctx, q)
			var e *Error
			if !errors.As(err, &e) || !e.CapabilitiesChanged() {
				t.Fatalf("want the capabilities-changed error, got %v", err)
			}
			if n := g.describes - before; n != 1 {
				t.Errorf("%d new sessions, want exactly one retry", n)
			}
		})
		t.Run(name+"/NoReinitialize", func(t *testing.T) {
			g := &generations{}
			c := dial(t, g, &ClientOptions{Logger: quietLogger(), NoReinitialize: true})
			defer c.Close()
			g.advance()
			_, err := c.Retrieve(ctx, q)
			var e *Error
			if !errors.As(err, &e) || !e.CapabilitiesChanged() {
				t.Fatalf("want the capabilities-changed error, got %v", err)
			}
			if g.describes != 1 {
				t.Fatalf("%d sessions, want 1", g.describes)
			}
		})
	}
}

// Other -32010 errors are not a reason to re-initialize.
func TestClientDoesNotReinitializeOnOtherErrors(t *testing.T) {
	g := &countingDown{}
	c, err := ConnectInProcess(context.Background(), NewServer(g, &ServerOptions{Logger: quietLogger()}), &ClientOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Retrieve(context.Background(), &RetrieveParams{Query: TextQuery("q"), K: 1})
	wantCode(t, err, CodeBackendUnavailable)
	if g.describes != 1 {
		t.Fatalf("%d sessions, want 1", g.describes)
	}
}

type countingDown struct{ describes int }

func (h *countingDown) Describe(context.Context) Description {
	h.describes++
	return Description{Capabilities: testCaps()}
}

func (h *countingDown) Call(context.Context, string, json.RawMessage) (any, error) {
	return nil, &Error{Code: CodeBackendUnavailable, Message: "index not built", Data: &ErrorData{Retryable: ptr(true)}}
}

// Stateless HTTP requests are each implicitly initialized (§5.2): they
// see the handler's current capabilities, not those of the first one.
func TestStatelessRequestsSeeCurrentCapabilities(t *testing.T) {
	g := &generations{}
	ts, _ := newHTTPServer(t, g, &HTTPOptions{Sessions: SessionStateless})
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	c, err := ConnectHTTP(context.Background(), ts.URL+"/rcp", &ClientOptions{HTTPClient: hc, NoReinitialize: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g.advance()
	res, err := c.Retrieve(context.Background(), &RetrieveParams{Query: TextQuery("q"), K: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Hits[0].ID.String(); got != "gen-1" {
		t.Fatalf("a stateless request saw %s, want the current gen-1", got)
	}
}

type liveMeta struct {
	*testHandler
	n int
}

func (h *liveMeta) LiveMeta(context.Context) Meta {
	h.n++
	return Meta{}.Set("x-test/live", h.n)
}

// LiveMeta entries are read at every initialize and info answer.
func TestLiveMeta(t *testing.T) {
	h := &liveMeta{testHandler: newTestHandler()}
	c, err := ConnectInProcess(context.Background(), NewServer(h, &ServerOptions{Logger: quietLogger()}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var first, second int
	c.InitializeResult().Meta.Get("x-test/live", &first)
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	info.Meta.Get("x-test/live", &second)
	if first != 1 || second != 2 {
		t.Fatalf("live meta %d then %d, want 1 then 2", first, second)
	}
	var x bool
	if !info.Meta.Get("x-test", &x) || !x {
		t.Fatal("the description's meta is kept")
	}
}

// Over stdio a new session is a new process of the command: the old one is
// ended first (rcpd holds its data directory), then the call is retried in
// the new one.
func TestClientReinitializesStdio(t *testing.T) {
	checkNoLeaks(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c, err := ConnectStdio(context.Background(), []string{exe}, &ClientOptions{Logger: quietLogger(),
		Env: []string{"RCPGO_TEST_HELPER=1", "RCPGO_TEST_GENDIR=" + dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q := &RetrieveParams{Query: TextQuery("q"), K: 1}
	res, err := c.Retrieve(context.Background(), q)
	if err != nil || res.Hits[0].ID.String() != "proc-0" {
		t.Fatalf("%v %+v", err, res)
	}
	if err := os.WriteFile(filepath.Join(dir, "advance"), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = c.Retrieve(context.Background(), q)
	if err != nil || res.Hits[0].ID.String() != "proc-1" {
		t.Fatalf("after the change: %v %+v", err, res)
	}
}

// A call that picks the session up just as a concurrent re-initialization
// retires it is sent on the new session, never failed with "connection
// closed" (the retiring session's close could run before the late call
// registered itself: TestClientReinitializes failed 1 run in 8).
func TestCallsRacingARetirementUseTheNewSession(t *testing.T) {
	checkNoLeaks(t)
	g := &generations{}
	c, err := ConnectInProcess(context.Background(), NewServer(g, &ServerOptions{Logger: quietLogger()}),
		&ClientOptions{Logger: quietLogger(), Timeout: 10 * time.Second}) // every call, so every wait, is bounded
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q := &RetrieveParams{Query: TextQuery("q"), K: 1}
	for round := 0; round < 100; round++ {
		g.advance()
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(i*i) * 5 * time.Microsecond) // staggered: some start during the swap
				if _, err := c.Retrieve(context.Background(), q); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}
