package rcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/rcp/internal/jsonrpc"
	"github.com/rcpgo/rcpgo/rcp/internal/wiretest"
)

// quietLogger discards server diagnostics in tests.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// checkNoLeaks fails t when goroutines started by the test are still alive
// at cleanup (after a grace period).
func checkNoLeaks(t testing.TB) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutine leak: %d before, %d after\n%s", before, n, buf)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// testCaps is the capability set of the test handler.
func testCaps() Capabilities {
	return Capabilities{
		Embed:     &EmbedCap{Dimension: 2, Identity: "test-2", Encodings: []string{EncodingJSON, EncodingF32Base64}},
		Rerank:    &RerankCap{Methods: []string{RerankCrossEncoder}, MaxCandidates: 10},
		Retrieve:  &RetrieveCap{MaxK: 5, Modes: []string{ModeSparse, ModeHybrid}, Fusion: []string{FusionRRF}},
		Streaming: &EmptyCap{},
		Log:       &LogCap{},
		Extra:     map[string]json.RawMessage{"x-acme": json.RawMessage(`{"flavour":"test"}`)},
	}
}

// testHandler serves a few methods with controllable behaviour:
//
//	retrieve: query "block" waits for cancellation; "sleep:<dur>" sleeps
//	ignoring ctx; "progress" emits two progress frames and a log line;
//	"panic" panics; "fail" returns a plain error; "nan" returns a NaN score.
//	embed: returns one 2-d vector per input.
//	rerank: scores = passage lengths.
//	x-acme/echo: returns its params.
type testHandler struct {
	caps      Capabilities
	started   chan string // receives the query of each retrieve as it starts
	cancelled chan error  // receives the cause when a "block" retrieve ends
	describ   int
	mu        sync.Mutex
}

func newTestHandler() *testHandler {
	return &testHandler{caps: testCaps(), started: make(chan string, 1024), cancelled: make(chan error, 16)}
}

func (h *testHandler) Describe(context.Context) Description {
	h.mu.Lock()
	h.describ++
	h.mu.Unlock()
	return Description{Server: PeerInfo{Name: "test", Version: "1"}, Capabilities: h.caps, Conformance: LevelL0,
		Meta: Meta{"x-test": json.RawMessage(`true`)}}
}

func (h *testHandler) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case MethodRetrieve:
		var p RetrieveParams
		if err := DecodeParams(params, &p); err != nil {
			return nil, err
		}
		q := p.Query.String()
		select {
		case h.started <- q:
		default:
		}
		switch {
		case q == "block":
			<-ctx.Done()
			select {
			case h.cancelled <- context.Cause(ctx):
			default:
			}
			return nil, ctx.Err()
		case strings.HasPrefix(q, "sleep:"):
			d, _ := time.ParseDuration(strings.TrimPrefix(q, "sleep:"))
			time.Sleep(d)
		case q == "progress":
			_ = ReportProgress(ctx, ProgressParams{Progress: ptr(0.5), Stage: "recall"})
			Log(ctx, LogInfo, "halfway", map[string]any{"n": 1})
			Log(ctx, LogDebug, "debug detail", nil)
			_ = ReportProgress(ctx, ProgressParams{Progress: ptr(1.0), Stage: "rerank", Partial: &Partial{Hits: []Hit{{ID: StringID("a"), Score: 1}}}})
		case q == "panic":
			panic("boom")
		case q == "fail":
			return nil, errors.New("secret internal detail")
		case q == "nan":
			return &RetrieveResult{Hits: []Hit{{ID: IntID(1), Score: nan()}}}, nil
		case q == "meta":
			return &RetrieveResult{Hits: []Hit{}, Meta: RequestMeta(ctx)}, nil
		}
		k := min(p.K, 5)
		hits := make([]Hit, 0, k)
		for i := range k {
			hits = append(hits, Hit{ID: StringID(fmt.Sprintf("d%d", i)), Score: float64(k - i), Text: ptr("text")})
		}
		return &RetrieveResult{Hits: hits}, nil
	case MethodEmbed:
		var p EmbedParams
		if err := DecodeParams(params, &p); err != nil {
			return nil, err
		}
		vecs := make([][]float64, len(p.AllInputs()))
		for i := range vecs {
			vecs[i] = []float64{1, 0}
		}
		raw, _ := json.Marshal(vecs)
		return &EmbedResult{Vectors: raw, Dimension: 2}, nil
	case MethodRerank:
		var p RerankParams
		if err := DecodeParams(params, &p); err != nil {
			return nil, err
		}
		res := &RerankResult{Scores: []float64{}}
		for _, ps := range p.Passages {
			res.Scores = append(res.Scores, float64(len(ps.Text)))
		}
		return res, nil
	case "x-acme/echo":
		return params, nil
	}
	return nil, NewError(CodeCapabilityMissing, "not served")
}

func nan() float64 { var z float64; return z / z }

// conn drives a server over an in-memory pipe with raw frames.
type conn struct {
	t      testing.TB
	w      *io.PipeWriter
	frames chan []byte
	done   chan error
	cancel context.CancelFunc

	mu      sync.Mutex
	methods map[string]string // id key → method, for schema validation
	timeout time.Duration     // for recv and for the server to stop
}

func newConn(t testing.TB, srv *Server) *conn {
	t.Helper()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{t: t, w: c2sW, frames: make(chan []byte, 4096), done: make(chan error, 1), cancel: cancel, methods: map[string]string{}, timeout: 5 * time.Second}
	go func() {
		err := srv.ServeStdio(ctx, c2sR, s2cW)
		s2cW.Close()
		c.done <- err
	}()
	go func() {
		rd := jsonrpc.NewReader(s2cR, 64<<20)
		for {
			f, err := rd.Next()
			if err != nil {
				close(c.frames)
				return
			}
			c.frames <- bytes.Clone(f)
		}
	}()
	t.Cleanup(func() {
		c.w.Close()
		select {
		case <-c.done:
		case <-time.After(c.timeout):
			t.Error("server did not stop after EOF")
		}
		cancel()
		for range c.frames {
		}
	})
	return c
}

func newTestConn(t testing.TB, opts *ServerOptions) (*conn, *testHandler) {
	t.Helper()
	h := newTestHandler()
	if opts == nil {
		opts = &ServerOptions{}
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	return newConn(t, NewServer(h, opts)), h
}

// send writes one raw frame (a newline is appended).
func (c *conn) send(frame string) {
	c.t.Helper()
	c.track([]byte(frame))
	if _, err := io.WriteString(c.w, frame+"\n"); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

func (c *conn) track(frame []byte) {
	f := jsonrpc.Decode(frame, jsonrpc.Options{})
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range f.Messages {
		if m.Kind == jsonrpc.KindRequest {
			c.methods[jsonrpc.IDKey(m.ID)] = m.Method
		}
	}
}

// recv returns the next frame, validated against the schema (responses of
// known methods also against ResultFor).
func (c *conn) recv() []byte {
	c.t.Helper()
	select {
	case f, ok := <-c.frames:
		if !ok {
			c.t.Fatalf("recv: connection closed")
		}
		c.validate(f)
		return f
	case <-time.After(c.timeout):
		c.t.Fatalf("recv: timed out")
	}
	return nil
}

func (c *conn) validate(f []byte) {
	c.t.Helper()
	wiretest.Message(c.t, f)
	var items []json.RawMessage
	if bytes.HasPrefix(f, []byte("[")) {
		_ = json.Unmarshal(f, &items)
	} else {
		items = []json.RawMessage{f}
	}
	for _, it := range items {
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(it, &r) != nil || r.Result == nil {
			continue
		}
		c.mu.Lock()
		method := c.methods[jsonrpc.IDKey(r.ID)]
		c.mu.Unlock()
		if _, defined := methodCaps[method]; defined {
			wiretest.Result(c.t, method, r.Result)
		}
	}
}

// expectNone asserts nothing arrives within d.
func (c *conn) expectNone(d time.Duration) {
	c.t.Helper()
	select {
	case f, ok := <-c.frames:
		if ok {
			c.t.Fatalf("expected no frame, got %s", f)
		}
	case <-time.After(d):
	}
}

// call sends a frame and returns the next frame.
func (c *conn) call(frame string) []byte {
	c.t.Helper()
	c.send(frame)
	return c.recv()
}

func (c *conn) initialize() {
	c.t.Helper()
	r := c.call(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"client":{"name":"t"},"capabilities":{"log":{}}}}`)
	if code := errCode(r); code != 0 {
		c.t.Fatalf("initialize failed: %s", r)
	}
}

// wire is a decoded response for assertions.
type wire struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Params  json.RawMessage `json:"params"`
	Error   *struct {
		Code    int        `json:"code"`
		Message string     `json:"message"`
		Data    *ErrorData `json:"data"`
	} `json:"error"`
}

func decodeWire(t testing.TB, b []byte) wire {
	t.Helper()
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return w
}

// errCode returns the error code of a single response (0 for a result).
func errCode(b []byte) int {
	var w wire
	if json.Unmarshal(b, &w) != nil || w.Error == nil {
		return 0
	}
	return w.Error.Code
}

func idOfFrame(b []byte) string {
	var w wire
	_ = json.Unmarshal(b, &w)
	return string(w.ID)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func listenLoopback() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
