package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

// TestExtractionsAreCapped: at most MaxExtractions uploads are extracted
// at once (each may be a child process of up to 512 MiB for 10 s); the
// others wait for a slot with their bodies unread, then get 503 with
// Retry-After. Before, every upload started its own extraction: 8 uploads
// of a 117 KB PDF ran 8 children, 1.24 GB together.
func TestExtractionsAreCapped(t *testing.T) {
	defer func(d time.Duration) { extractWait = d }(extractWait)
	extractWait = 200 * time.Millisecond
	release := make(chan struct{})
	var in, most atomic.Int32
	extract := func(ctx context.Context, name string, b []byte) ([]rcp.Document, error) {
		n := in.Add(1)
		defer in.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return []rcp.Document{{ID: name, Text: string(b)}}, nil
	}
	ts := httptest.NewServer(New(Options{Server: rcp.NewServer(nil, &rcp.ServerOptions{Logger: quietLogger()}),
		Logger: quietLogger(), Extract: extract}))
	t.Cleanup(ts.Close)
	var wg sync.WaitGroup
	var busy, ok atomic.Int32
	for range 5 {
		wg.Go(func() {
			req := extractRequest(ts, "a.txt", "some text")
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
			if err != nil {
				return
			}
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
				busy.Add(1)
			case resp.StatusCode == http.StatusOK:
				ok.Add(1)
			}
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for busy.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	wg.Wait()
	if m := most.Load(); m > 2 {
		t.Fatalf("%d extractions ran at once; the default cap is 2", m)
	}
	if busy.Load() != 3 || ok.Load() != 2 {
		t.Fatalf("%d extracted, %d refused busy; want 2 and 3", ok.Load(), busy.Load())
	}
}
