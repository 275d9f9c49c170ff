package rcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func serveLimited(t *testing.T, h Handler, opts *HTTPOptions) (string, *HTTPServer) {
	t.Helper()
	srv := NewServer(h, &ServerOptions{Logger: quietLogger()})
	hh := srv.HTTPHandler(opts)
	hs := NewHTTPServer(hh, opts.Limits)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		_ = hs.Close()
		_ = hh.Close()
	})
	return "http://" + ln.Addr().String(), hs
}

func pingOK(t *testing.T, base string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	req, _ := http.NewRequest(http.MethodPost, base+"/rcp/ping", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("a normal client was not served: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a normal client got %d", resp.StatusCode)
	}
}

// Idle keep-alive connections and silent connections are evicted to admit
// new clients once MaxConns is reached (item 4: 2 000 idle keep-alives and
// ~20 000 connections locked new clients out).
func TestHTTPConnectionCap(t *testing.T) {
	base, hs := serveLimited(t, newTestHandler(), &HTTPOptions{Limits: HTTPLimits{MaxConns: 8}})
	addr := strings.TrimPrefix(base, "http://")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// 10 idle keep-alive connections, each after one request.
	for range 10 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
		fmt.Fprintf(c, "POST /rcp/ping HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	// 10 connections that never send a byte.
	for range 10 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	pingOK(t, base)
	if n := hs.Conns(); n > 8 {
		t.Errorf("%d connections open, cap 8", n)
	}
}

// A slow body is cut off by ReadTimeout instead of holding its connection
// (item 4: 1 000 slow-body connections outlived the request timeout).
func TestHTTPSlowBodyTimesOut(t *testing.T) {
	base, _ := serveLimited(t, newTestHandler(), &HTTPOptions{Limits: HTTPLimits{ReadTimeout: 300 * time.Millisecond}})
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /rcp/ping HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.Copy(io.Discard, c) // returns when the server gives up
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("a stalled body held its connection %v", d)
	}
}

// floodHandler emits many large progress frames before answering.
type floodHandler struct {
	*testHandler
	done atomic.Int64 // unix nanos when Call returned
}

func (h *floodHandler) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method != MethodRetrieve {
		return h.testHandler.Call(ctx, method, params)
	}
	msg := strings.Repeat("x", 16<<10)
	for range 2000 { // 32 MB of progress
		if ctx.Err() != nil {
			break
		}
		_ = ReportProgress(ctx, ProgressParams{Progress: ptr(0.5), Stage: "recall", Message: msg})
	}
	h.done.Store(time.Now().UnixNano())
	return &RetrieveResult{Hits: []Hit{}}, nil
}

// A client that never reads its SSE stream cannot block the handler or
// make the server buffer its stream (item 4: 30 non-reading SSE clients
// pinned 1.24 GB).
func TestSSENonReadingClient(t *testing.T) {
	h := &floodHandler{testHandler: newTestHandler()}
	base, _ := serveLimited(t, h, &HTTPOptions{})
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","k":1,"_meta":{"progressToken":"t"}}}`
	start := time.Now()
	fmt.Fprintf(c, "POST /rcp/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	deadline := time.Now().Add(slowdown * 5 * time.Second)
	for h.done.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if h.done.Load() == 0 {
		t.Fatal("the handler is blocked behind a client that does not read")
	}
	if d := time.Unix(0, h.done.Load()).Sub(start); d > slowdown*3*time.Second {
		t.Errorf("the handler took %v", d)
	}
	pingOK(t, base)
}
