package rcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/rcp/internal/jsonrpc"
	"github.com/rcpgo/rcpgo/rcp/internal/wiretest"
)

// TestMain lets the test binary act as a stdio RCP server for ConnectStdio
// tests (RCPGO_TEST_HELPER=1).
func TestMain(m *testing.M) {
	if os.Getenv("RCPGO_TEST_HELPER") == "1" {
		runHelperServer()
		return
	}
	os.Exit(m.Run())
}

// runHelperServer serves the test handler on stdio, plus x-acme/env (reports
// the environment) and x-acme/die (exits abruptly: transport death).
func runHelperServer() {
	h := newTestHandler()
	r := NewRouter(h.Describe)
	for _, m := range []string{MethodRetrieve, MethodEmbed, MethodRerank, "x-acme/echo"} {
		r.HandleFunc(m, func(ctx context.Context, p json.RawMessage) (any, error) { return h.Call(ctx, m, p) })
	}
	r.HandleFunc("x-acme/env", func(context.Context, json.RawMessage) (any, error) {
		return map[string]any{"env": os.Environ()}, nil
	})
	r.HandleFunc("x-acme/die", func(context.Context, json.RawMessage) (any, error) {
		os.Exit(3)
		return nil, nil
	})
	if dir := os.Getenv("RCPGO_TEST_GENDIR"); dir != "" {
		r.HandleFunc(MethodRetrieve, helperGeneration(dir))
	}
	srv := NewServer(r, &ServerOptions{Logger: quietLogger()})
	if err := srv.ServeStdio(context.Background(), os.Stdin, os.Stdout); err != nil {
		os.Exit(1)
	}
}

// helperGeneration makes the helper process number n, the count of
// processes started in dir before it; its retrieves answer "proc-n", or
// the capabilities-changed error once dir/advance holds a number above n.
func helperGeneration(dir string) MethodFunc {
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "proc-") {
			n++
		}
	}
	_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("proc-%d", n)), nil, 0o644)
	return func(context.Context, json.RawMessage) (any, error) {
		var adv int
		if b, err := os.ReadFile(filepath.Join(dir, "advance")); err == nil {
			fmt.Sscanf(string(b), "%d", &adv)
		}
		if adv > n {
			return nil, CapabilitiesChanged("process %d is behind %d", n, adv)
		}
		return &RetrieveResult{Hits: []Hit{{ID: StringID(fmt.Sprintf("proc-%d", n)), Score: 1}}}, nil
	}
}

// inProcess connects a client to h over in-memory pipes whose traffic is
// checked (package wiretest; against the schema under the root module's
// TestSDKWireMatchesSchema): every frame the server writes is a valid
// Message, and every result validates against its method's definition.
func inProcess(t *testing.T, h Handler, opts *ClientOptions) *Client {
	t.Helper()
	srv := NewServer(h, &ServerOptions{Logger: quietLogger()})
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	v := &validator{t: t, methods: map[string]string{}}
	served := make(chan error, 1)
	go func() {
		err := srv.ServeStdio(context.Background(), c2sR, &lineTee{fn: v.response, w: s2cW})
		_ = s2cW.Close()
		served <- err
	}()
	tr := newStreamTransport(s2cR, &lineTee{fn: v.request, w: c2sW}, c2sW.Close, opts)
	tr.afterClose = func(time.Duration) error { return <-served }
	c, err := newClient(context.Background(), tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// lineTee passes bytes through and hands every complete line to fn.
type lineTee struct {
	mu  sync.Mutex
	buf []byte
	fn  func([]byte)
	w   io.Writer
}

func (l *lineTee) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.fn(bytes.Clone(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	l.mu.Unlock()
	return l.w.Write(p)
}

type validator struct {
	t       *testing.T
	mu      sync.Mutex
	methods map[string]string
}

func (v *validator) request(line []byte) {
	f := jsonrpc.Decode(line, jsonrpc.Options{})
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, m := range f.Messages {
		if m.Kind == jsonrpc.KindRequest {
			v.methods[jsonrpc.IDKey(m.ID)] = m.Method
		}
	}
}

func (v *validator) response(line []byte) {
	wiretest.Message(v.t, line)
	f := jsonrpc.Decode(line, jsonrpc.Options{MaxDepth: 10000})
	for _, m := range f.Messages {
		if m.Kind != jsonrpc.KindResponse || m.Result == nil {
			continue
		}
		v.mu.Lock()
		method := v.methods[jsonrpc.IDKey(m.ID)]
		v.mu.Unlock()
		if _, known := methodCaps[method]; known {
			wiretest.Result(v.t, method, m.Result)
		}
	}
}

func wantCode(t *testing.T, err error, code Code) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error %v, want code %d", err, code)
	}
}

func TestClientTypedMethods(t *testing.T) {
	checkNoLeaks(t)
	c := inProcess(t, newTestHandler(), nil)
	ctx := context.Background()
	if !c.Supports(CapRetrieve) || c.Supports(CapIndex) || !c.Supports("x-acme") || c.Conformance() != LevelL0 {
		t.Fatalf("capabilities: %+v", c.InitializeResult())
	}
	res, err := c.Retrieve(ctx, &RetrieveParams{Query: TextQuery("q"), K: 3})
	if err != nil || len(res.Hits) != 3 || res.Hits[0].ID.String() != "d0" {
		t.Fatalf("retrieve: %v %+v", err, res)
	}
	emb, err := c.Embed(ctx, &EmbedParams{Inputs: TextInputs("a", "b")})
	if err != nil || string(emb.Vectors) != "[[1,0],[1,0]]" {
		t.Fatalf("embed: %v %+v", err, emb)
	}
	rr, err := c.Rerank(ctx, &RerankParams{Query: TextQuery("q"), Passages: TextInputs("a", "bb")})
	if err != nil || len(rr.Scores) != 2 {
		t.Fatalf("rerank: %v %+v", err, rr)
	}
	for _, nonce := range []any{"n", 42} {
		p, err := c.Ping(ctx, nonce)
		want, _ := json.Marshal(nonce)
		if err != nil || string(p.Nonce) != string(want) {
			t.Fatalf("ping: %v %s", err, p.Nonce)
		}
	}
	info, err := c.Info(ctx)
	if err != nil || info.Server.Name != "test" {
		t.Fatalf("info: %v %+v", err, info)
	}
	var echo map[string]int
	if err := c.Call(ctx, "x-acme/echo", map[string]int{"a": 1}, &echo); err != nil || echo["a"] != 1 {
		t.Fatalf("vendor: %v %v", err, echo)
	}
	var raw json.RawMessage
	err = c.Call(ctx, MethodRetrieve, json.RawMessage(`{"query":"q","k":"x"}`), &raw)
	wantCode(t, err, CodeInvalidParams)
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// recordingTransport fails the test on any I/O and records what was sent.
type recordingTransport struct {
	mu     sync.Mutex
	sent   []string
	params []json.RawMessage
}

func (r *recordingTransport) roundTrip(_ context.Context, _ int64, method string, params json.RawMessage, _ string, _ func(ProgressParams)) (*response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, method)
	r.params = append(r.params, params)
	return &response{result: json.RawMessage(`{"hits":[],"scores":[]}`)}, nil
}
func (r *recordingTransport) notify(context.Context, string, json.RawMessage) error { return nil }
func (r *recordingTransport) setSession(string)                                     {}
func (r *recordingTransport) close(time.Duration) error                             { return nil }

func TestClientGating(t *testing.T) {
	rt := &recordingTransport{}
	c := &Client{log: quietLogger()}
	cc := &clientConn{tr: rt, init: InitializeResult{ProtocolVersion: 1, Capabilities: testCaps()}}
	cc.init.Capabilities.Retrieve.MaxK = 5
	c.cur.Store(cc)
	ctx := context.Background()
	f := false
	tests := []struct {
		name string
		do   func() error
		code Code // 0: sent
	}{
		{"unadvertised method", func() error { _, err := c.IndexAdd(ctx, &IndexAddParams{}); return err }, CodeCapabilityMissing},
		{"unadvertised via raw Call", func() error { return c.Call(ctx, MethodGraph, nil, nil) }, CodeCapabilityMissing},
		{"undefined via raw Call", func() error { return c.Call(ctx, "no/such", nil, nil) }, CodeUnknownMethod},
		{"unadvertised vendor", func() error { return c.Call(ctx, "x-other/m", nil, nil) }, CodeCapabilityMissing},
		{"unadvertised mode", func() error {
			_, err := c.Retrieve(ctx, &RetrieveParams{Query: TextQuery("q"), K: 1, Mode: ModeDense})
			return err
		}, CodeOptionUnsupported},
		{"unadvertised mode with strict:false is sent", func() error {
			_, err := c.Retrieve(ctx, &RetrieveParams{Query: TextQuery("q"), K: 1, Mode: ModeDense, Strict: &f})
			return err
		}, 0},
		{"unadvertised fusion", func() error {
			_, err := c.Retrieve(ctx, &RetrieveParams{Query: TextQuery("q"), K: 1, Fusion: &FusionOptions{Method: FusionConvex}})
			return err
		}, CodeOptionUnsupported},
		{"built-in rerank not advertised", func() error {
			_, err := c.Retrieve(ctx, &RetrieveParams{Query: TextQuery("q"), K: 1, Rerank: &RerankOptions{Method: RerankCrossEncoder}})
			return err
		}, CodeOptionUnsupported},
		{"rerank:false is fine", func() error {
			_, err := c.Retrieve(ctx, &RetrieveParams{Query: TextQuery("q"), K: 1, Rerank: &RerankOptions{Disabled: true}})
			return err
		}, 0},
		{"unadvertised unit", func() error {
			_, err := c.Retrieve(ctx, &RetrieveParams{Query: TextQuery("q"), K: 1, Unit: UnitDocument})
			return err
		}, CodeOptionUnsupported},
		{"unadvertised hit encoding", func() error {
			_, err := c.Retrieve(ctx, &RetrieveParams{Query: TextQuery("q"), K: 1, Encoding: EncodingF32Base64})
			return err
		}, CodeOptionUnsupported},
		{"unadvertised rerank method", func() error {
			_, err := c.Rerank(ctx, &RerankParams{Query: TextQuery("q"), Method: RerankColBERT})
			return err
		}, CodeOptionUnsupported},
		{"advertised embed encoding", func() error {
			_, err := c.Embed(ctx, &EmbedParams{Inputs: TextInputs("a"), Encoding: EncodingF32Base64})
			return err
		}, 0},
		{"unadvertised embed encoding", func() error {
			_, err := c.Embed(ctx, &EmbedParams{Inputs: TextInputs("a"), Encoding: "f16-base64"})
			return err
		}, CodeOptionUnsupported},
		{"unadvertised filter", func() error {
			_, err := c.Retrieve(ctx, &RetrieveParams{Query: TextQuery("q"), K: 1, Filter: json.RawMessage(`{"field":"a"}`)})
			return err
		}, CodeOptionUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt.mu.Lock()
			before := len(rt.sent)
			rt.mu.Unlock()
			err := tc.do()
			rt.mu.Lock()
			sent := len(rt.sent) - before
			rt.mu.Unlock()
			if tc.code == 0 {
				if err != nil || sent != 1 {
					t.Fatalf("err %v, sent %d", err, sent)
				}
				return
			}
			wantCode(t, err, tc.code)
			if sent != 0 {
				t.Fatal("gated call reached the transport")
			}
		})
	}
	t.Run("pre-clamp to advertised bounds without touching the caller's params", func(t *testing.T) {
		p := &RetrieveParams{Query: TextQuery("q"), K: 100, CandidateK: ptr(500)}
		if _, err := c.Retrieve(ctx, p); err != nil {
			t.Fatal(err)
		}
		var sent RetrieveParams
		_ = json.Unmarshal(rt.params[len(rt.params)-1], &sent)
		if sent.K != 5 || *sent.CandidateK != 5 || p.K != 100 || *p.CandidateK != 500 {
			t.Fatalf("sent k=%d candidateK=%d; caller k=%d", sent.K, *sent.CandidateK, p.K)
		}
		rp := &RerankParams{Query: TextQuery("q"), TopN: ptr(50)}
		if _, err := c.Rerank(ctx, rp); err != nil {
			t.Fatal(err)
		}
		var rs RerankParams
		_ = json.Unmarshal(rt.params[len(rt.params)-1], &rs)
		if *rs.TopN != 10 || *rp.TopN != 50 {
			t.Fatalf("topN %d", *rs.TopN)
		}
	})
}

func TestClientPipelining(t *testing.T) {
	checkNoLeaks(t)
	c := inProcess(t, newTestHandler(), nil)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := i%5 + 1
			res, err := c.Retrieve(context.Background(), &RetrieveParams{Query: TextQuery("q"), K: k})
			if err != nil {
				errs <- err
				return
			}
			if len(res.Hits) != k {
				errs <- fmt.Errorf("k=%d got %d hits: responses crossed", k, len(res.Hits))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestClientCancelAndDeadline(t *testing.T) {
	checkNoLeaks(t)
	h := newTestHandler()
	c := inProcess(t, h, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Retrieve(ctx, &RetrieveParams{Query: TextQuery("block"), K: 1})
		errc <- err
	}()
	<-h.started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	select {
	case cause := <-h.cancelled: // the server saw notifications/cancel
		if !errors.Is(cause, errCancelled) {
			t.Fatalf("server cause %v", cause)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("server never saw the cancel")
	}

	// A local deadline fails the call; the late -32006/-32014 is discarded
	// and the connection stays healthy. deadlineMs is propagated.
	dctx, dcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer dcancel()
	_, err := c.Retrieve(dctx, &RetrieveParams{Query: TextQuery("block"), K: 1})
	// Either the local deadline fires, or the server's copy of the budget
	// (_meta.deadlineMs) answers -32014 first.
	if e := (*Error)(nil); !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &e) && e.Code == CodeTimeout) {
		t.Fatalf("err %v", err)
	}
	<-h.cancelled
	mctx, mcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer mcancel()
	res, err := c.Retrieve(mctx, &RetrieveParams{Query: TextQuery("meta"), K: 1})
	if err != nil {
		t.Fatal(err)
	}
	var ms int64
	if !res.Meta.Get(MetaDeadlineMs, &ms) || ms <= 0 || ms > 10000 {
		t.Fatalf("deadlineMs not propagated: %v", res.Meta)
	}
}

func TestClientProgressAndLog(t *testing.T) {
	checkNoLeaks(t)
	var logs atomic.Int32
	c := inProcess(t, newTestHandler(), &ClientOptions{Capabilities: Capabilities{Log: &LogCap{}, Streaming: &EmptyCap{}},
		LogLevel: LogInfo, OnLog: func(p LogParams) { logs.Add(1) }})
	var got []ProgressParams
	var mu sync.Mutex
	ctx := WithProgress(context.Background(), func(p ProgressParams) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	})
	if _, err := c.Retrieve(ctx, &RetrieveParams{Query: TextQuery("progress"), K: 1}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[1].Stage != "rerank" || got[1].Partial == nil || len(got[1].Partial.Hits) != 1 {
		t.Fatalf("progress %+v", got)
	}
	if logs.Load() != 1 {
		t.Fatalf("logs %d (info only), want 1", logs.Load())
	}
}

func TestClientStdioAndTransportDeath(t *testing.T) {
	checkNoLeaks(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("RCPGO_SECRET_FOR_TEST", "do-not-leak")
	c, err := ConnectStdio(context.Background(), []string{exe}, &ClientOptions{Env: []string{"RCPGO_TEST_HELPER=1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var env struct{ Env []string }
	if err := c.Call(context.Background(), "x-acme/env", nil, &env); err != nil {
		t.Fatal(err)
	}
	for _, kv := range env.Env {
		if strings.HasPrefix(kv, "RCPGO_SECRET_FOR_TEST") {
			t.Fatal("parent environment leaked to the child")
		}
	}
	// A command the user typed inherits the whole environment.
	inherit, err := ConnectStdio(context.Background(), []string{exe}, &ClientOptions{Env: []string{"RCPGO_TEST_HELPER=1"}, InheritEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := inherit.Call(context.Background(), "x-acme/env", nil, &env); err != nil || !slices.Contains(env.Env, "RCPGO_SECRET_FOR_TEST=do-not-leak") {
		t.Fatalf("InheritEnv: child environment %q (%v)", env.Env, err)
	}
	inherit.Close()
	// several calls in flight when the server dies: all fail with ErrClosed
	errc := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := c.Retrieve(context.Background(), &RetrieveParams{Query: TextQuery("sleep:5s"), K: 1})
			errc <- err
		}()
	}
	time.Sleep(100 * time.Millisecond)
	go func() { _ = c.Call(context.Background(), "x-acme/die", nil, nil) }()
	for range 3 {
		select {
		case err := <-errc:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("in-flight call: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("in-flight call not failed on transport death")
		}
	}
	if _, err := c.Ping(context.Background(), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after death: %v", err)
	}
}

// A deadline bounds the whole call, Close included (issue 16 finding 9:
// "--timeout 3s takes 8 s"): once a call is abandoned at its deadline, or the
// server never answered initialize, Close does not wait the 5 s grace for
// the server, and a grandchild holding the child's stdout does not keep it
// waiting either.
func TestClientStdioDeadlineBoundsClose(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const bound = 2 * time.Second // well under the 5 s grace of a healthy server
	c, err := ConnectStdio(context.Background(), []string{exe}, &ClientOptions{Env: []string{"RCPGO_TEST_HELPER=1"}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// "sleep:" ignores cancellation, and the server drains on EOF: it would
	// keep running for 30 s. The deadline travels with the request, so the
	// server's own -32014 may arrive just before the client gives up.
	var re *Error
	if _, err := c.Retrieve(ctx, &RetrieveParams{Query: TextQuery("sleep:30s"), K: 1}); !errors.Is(err, context.DeadlineExceeded) &&
		(!errors.As(err, &re) || re.Code != CodeTimeout) {
		t.Fatalf("retrieve: %v", err)
	}
	_ = c.Close()
	if d := time.Since(start); d > bound {
		t.Errorf("abandoned call then Close took %v, want < %v", d, bound)
	}

	for name, argv := range map[string][]string{
		"silent child":      {"sleep", "8"},
		"silent grandchild": {"sh", "-c", "sleep 8; exit 0"}, // sh forks sleep, which holds stdout
	} {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		// stderr is a pipe of ours, not the test binary's (go test would
		// wait for the orphaned sleep to close it).
		_, err := ConnectStdio(ctx, argv, &ClientOptions{Stderr: io.Discard})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: %v", name, err)
		}
		if d := time.Since(start); d > bound {
			t.Errorf("%s: initialize timeout took %v, want < %v", name, d, bound)
		}
	}
}

// flaky answers rate-limited twice, then succeeds; it counts attempts.
type flaky struct {
	attempts atomic.Int32
	failures int32
	code     Code
}

func (f *flaky) Describe(context.Context) Description {
	return Description{Server: PeerInfo{Name: "flaky"}, Capabilities: Capabilities{
		Retrieve: &RetrieveCap{}, Index: &IndexCap{Writable: true}}}
}

func (f *flaky) Call(ctx context.Context, method string, p json.RawMessage) (any, error) {
	if f.attempts.Add(1) <= f.failures {
		return nil, &Error{Code: f.code, Message: "busy", Data: &ErrorData{RetryAfterMs: ptr(int64(5))}}
	}
	if method == MethodIndexAdd {
		return &IndexAddResult{IDs: []string{"x"}}, nil
	}
	return &RetrieveResult{Hits: []Hit{}}, nil
}

func TestClientRetryPolicy(t *testing.T) {
	checkNoLeaks(t)
	pol := &RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond}
	tests := []struct {
		name     string
		code     Code
		failures int32
		do       func(*Client) error
		attempts int32
		ok       bool
	}{
		{"rate limited then ok", CodeRateLimited, 2, func(c *Client) error {
			_, err := c.Retrieve(context.Background(), &RetrieveParams{Query: TextQuery("q"), K: 1})
			return err
		}, 3, true},
		{"backend unavailable exhausts attempts", CodeBackendUnavailable, 10, func(c *Client) error {
			_, err := c.Retrieve(context.Background(), &RetrieveParams{Query: TextQuery("q"), K: 1})
			return err
		}, 4, false},
		{"invalid params never retried", CodeInvalidParams, 10, func(c *Client) error {
			_, err := c.Retrieve(context.Background(), &RetrieveParams{Query: TextQuery("q"), K: 1})
			return err
		}, 1, false},
		{"internal error retried once", CodeInternalError, 10, func(c *Client) error {
			_, err := c.Retrieve(context.Background(), &RetrieveParams{Query: TextQuery("q"), K: 1})
			return err
		}, 2, false},
		{"index/add without ids is not retried", CodeRateLimited, 1, func(c *Client) error {
			_, err := c.IndexAdd(context.Background(), &IndexAddParams{Documents: []Document{{Text: "t"}}})
			return err
		}, 1, false},
		{"index/add with ids is an upsert: retried", CodeRateLimited, 1, func(c *Client) error {
			_, err := c.IndexAdd(context.Background(), &IndexAddParams{Documents: []Document{{ID: "a", Text: "t"}}})
			return err
		}, 2, true},
		{"index/add with an idempotency key: retried", CodeRateLimited, 1, func(c *Client) error {
			_, err := c.IndexAdd(context.Background(), &IndexAddParams{Documents: []Document{{Text: "t"}}, Meta: Meta{}.Set(MetaIdempotencyKey, "k1")})
			return err
		}, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &flaky{failures: tc.failures, code: tc.code}
			c := inProcess(t, f, &ClientOptions{Retry: pol})
			f.attempts.Store(0)
			err := tc.do(c)
			if (err == nil) != tc.ok {
				t.Fatalf("err %v", err)
			}
			if got := f.attempts.Load(); got != tc.attempts {
				t.Fatalf("attempts %d, want %d", got, tc.attempts)
			}
		})
	}
}

// oldServer negotiates RCP/1 for a client that needs RCP/2.
func TestClientAbortsBelowMinimumVersion(t *testing.T) {
	checkNoLeaks(t)
	_, err := ConnectInProcess(context.Background(), NewServer(newTestHandler(), &ServerOptions{Logger: quietLogger()}), &ClientOptions{MinProtocolVersion: 2})
	wantCode(t, err, CodeVersionMismatch)
}

func TestProxy(t *testing.T) {
	checkNoLeaks(t)
	h := newTestHandler()
	down := inProcess(t, h, nil)
	up := inProcess(t, NewProxy(down), &ClientOptions{})
	if up.InitializeResult().Server.Name != "test" || !up.Supports("x-acme") || up.Conformance() != LevelL0 {
		t.Fatalf("proxy describe: %+v", up.InitializeResult())
	}
	res, err := up.Retrieve(context.Background(), &RetrieveParams{Query: TextQuery("q"), K: 2})
	if err != nil || len(res.Hits) != 2 {
		t.Fatalf("%v %+v", err, res)
	}
	var raw json.RawMessage
	wantCode(t, up.Call(context.Background(), MethodRetrieve, json.RawMessage(`{"query":"q","k":"bad"}`), &raw), CodeInvalidParams)
	var n int
	ctx := WithProgress(context.Background(), func(ProgressParams) { n++ })
	if _, err := up.Retrieve(ctx, &RetrieveParams{Query: TextQuery("progress"), K: 1}); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("relayed progress frames %d, want 2", n)
	}
	// the downstream dies: -32010
	_ = down.Close()
	_, err = up.Retrieve(context.Background(), &RetrieveParams{Query: TextQuery("q"), K: 1})
	wantCode(t, err, CodeBackendUnavailable)
}

// TestClientFailsUncorrelatedAnswer: a request nested deeper than the
// server's depth limit is answered with a parse error whose id is null
// (the server could not read the id). The call must fail with that error,
// not wait for an answer that never comes; the connection stays usable.
func TestClientFailsUncorrelatedAnswer(t *testing.T) {
	srv := NewServer(newTestHandler(), &ServerOptions{Logger: quietLogger(), MaxDepth: 64})
	c, err := ConnectInProcess(context.Background(), srv, &ClientOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deep := strings.Repeat(`{"and":[`, 100) + `{"field":"a","op":"eq","value":1}` + strings.Repeat(`]}`, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = c.Call(ctx, MethodRetrieve, json.RawMessage(`{"query":{"text":"q"},"filter":`+deep+`}`), nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeParseError {
		t.Fatalf("deep request: got %v, want a -32700 error (ctx: %v)", err, ctx.Err())
	}
	if _, err := c.Retrieve(ctx, &RetrieveParams{Query: TextQuery("q"), K: 1}); err != nil {
		t.Fatalf("after the uncorrelated answer: %v", err)
	}
}
