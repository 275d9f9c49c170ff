package rcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// holdingHandler keeps every retrieve (and so its request body) until
// release is closed, counting how many it holds at once.
type holdingHandler struct {
	*testHandler
	release chan struct{}
	in, max atomic.Int32
}

func (h *holdingHandler) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method != MethodRetrieve {
		return h.testHandler.Call(ctx, method, params)
	}
	n := h.in.Add(1)
	defer h.in.Add(-1)
	for m := h.max.Load(); n > m && !h.max.CompareAndSwap(m, n); m = h.max.Load() {
	}
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return &RetrieveResult{Hits: []Hit{}}, nil
}

func bigRetrieve(size int) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"%s","k":1}}`, strings.Repeat("a", size))
}

// Large request bodies held at once are bounded by MaxBodyBytesInFlight:
// 32 concurrent 16 MiB requests took rcpd to 1.29 GB (each body read whole
// before anything looked at it). Here, with a 2.5 MiB budget, at most two
// 1 MiB requests are in the handler at once; the others wait, then get 503
// and -32011 (retryable) with their bodies unread; a small request is
// served throughout.
func TestHTTPBodyBudget(t *testing.T) {
	defer func(d time.Duration) { bodyBudgetWait = d }(bodyBudgetWait)
	bodyBudgetWait = 300 * time.Millisecond
	h := &holdingHandler{testHandler: newTestHandler(), release: make(chan struct{})}
	base, _ := serveLimited(t, h, &HTTPOptions{Limits: HTTPLimits{MaxBodyBytesInFlight: 5 << 19}})
	c := &http.Client{Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	var busy, served atomic.Int32
	errs := make(chan error, 6)
	for range 6 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, base+"/rcp", bytes.NewReader(bigRetrieve(1<<20)))
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.Do(req)
			if err != nil {
				errs <- err
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusServiceUnavailable && errCode(b) == int(CodeRateLimited) && resp.Header.Get("Retry-After") != "":
				busy.Add(1)
			case resp.StatusCode == http.StatusOK:
				served.Add(1)
			default:
				errs <- fmt.Errorf("status %d: %s", resp.StatusCode, b)
			}
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for busy.Load() < 4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	pingOK(t, base) // a small body never waits
	close(h.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m := h.max.Load(); m > 2 {
		t.Fatalf("%d large bodies held at once; the budget fits 2", m)
	}
	if busy.Load() != 4 || served.Load() != 2 {
		t.Fatalf("%d served, %d refused as busy; want 2 and 4", served.Load(), busy.Load())
	}
}

// A body of unknown length (chunked) takes budget as it is read: with the
// budget held by another request, it is refused -32011 instead of being
// read whole.
func TestHTTPBodyBudgetChunked(t *testing.T) {
	defer func(d time.Duration) { bodyBudgetWait = d }(bodyBudgetWait)
	bodyBudgetWait = 300 * time.Millisecond
	h := &holdingHandler{testHandler: newTestHandler(), release: make(chan struct{})}
	base, _ := serveLimited(t, h, &HTTPOptions{Limits: HTTPLimits{MaxBodyBytesInFlight: 1 << 20}})
	first := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, base+"/rcp", bytes.NewReader(bigRetrieve(900<<10)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	deadline := time.Now().Add(5 * time.Second)
	for h.in.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if h.in.Load() == 0 {
		t.Fatal("the first request never reached the handler")
	}
	body := io.MultiReader(bytes.NewReader(bigRetrieve(900 << 10))) // no length: sent chunked
	req, _ := http.NewRequest(http.MethodPost, base+"/rcp", body)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || errCode(b) != int(CodeRateLimited) {
		t.Fatalf("chunked body beyond the budget: %d %s", resp.StatusCode, b)
	}
	close(h.release)
	select {
	case code := <-first:
		if code != http.StatusOK {
			t.Fatalf("the first request: %d", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first request did not end")
	}
}
