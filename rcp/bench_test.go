package rcp

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
)

// benchHandler is the test handler without instrumentation channels.
func benchClientInProcess(b *testing.B) *Client {
	b.Helper()
	c, err := ConnectInProcess(context.Background(), NewServer(newTestHandler(), &ServerOptions{Logger: quietLogger()}), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

func benchClientSubprocess(b *testing.B) *Client {
	b.Helper()
	argv := strings.Fields(os.Getenv("RCPGO_BENCH_SERVER"))
	var env []string
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		argv, env = []string{exe}, []string{"RCPGO_TEST_HELPER=1"}
	}
	c, err := ConnectStdio(context.Background(), argv, &ClientOptions{Env: env})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// BenchmarkStdioPingRoundTrip: one ping at a time over a real child
// process's stdio (the test binary as server, or $RCPGO_BENCH_SERVER).
func BenchmarkStdioPingRoundTrip(b *testing.B) {
	c := benchClientSubprocess(b)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if _, err := c.Ping(ctx, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdioPipelined: 64 concurrent callers on one stdio connection.
func BenchmarkStdioPipelined(b *testing.B) {
	c := benchClientSubprocess(b)
	benchPipelined(b, c)
}

// BenchmarkInProcessPipelined: the same over an in-memory pipe.
func BenchmarkInProcessPipelined(b *testing.B) {
	benchPipelined(b, benchClientInProcess(b))
}

func benchPipelined(b *testing.B, c *Client) {
	ctx := context.Background()
	b.SetParallelism(32) // 2 cores × 32 = 64 callers
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Ping(ctx, 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkHTTPRetrieve: parallel retrieve calls over loopback HTTP.
func BenchmarkHTTPRetrieve(b *testing.B) {
	h := newTestHandler()
	h.started = make(chan string) // unbuffered: the handler's non-blocking send drops
	srv := NewServer(h, &ServerOptions{Logger: quietLogger()})
	hh := srv.HTTPHandler(&HTTPOptions{})
	var ts = newLoopbackServer(b, hh)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	defer hc.CloseIdleConnections()
	c, err := ConnectHTTP(context.Background(), ts+"/rcp", &ClientOptions{HTTPClient: hc})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Retrieve(ctx, &RetrieveParams{Query: TextQuery("eiffel tower"), K: 5}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func newLoopbackServer(b *testing.B, h http.Handler) string {
	b.Helper()
	ts := &http.Server{Handler: h}
	ln, err := listenLoopback()
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = ts.Serve(ln) }()
	b.Cleanup(func() { _ = ts.Close(); wg.Wait() })
	return "http://" + ln.Addr().String()
}
