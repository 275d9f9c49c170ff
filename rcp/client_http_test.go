package rcp

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"
)

func TestClientHTTP(t *testing.T) {
	checkNoLeaks(t)
	for _, mode := range []SessionMode{SessionStateless, SessionStateful, SessionSingle} {
		t.Run(fmtMode(mode), func(t *testing.T) {
			h := newTestHandler()
			ts, _ := newHTTPServer(t, h, &HTTPOptions{Sessions: mode, BearerTokens: []string{"tok"}})
			hc := &http.Client{Transport: &http.Transport{}}
			defer hc.CloseIdleConnections()
			if _, err := ConnectHTTP(context.Background(), ts.URL+"/rcp", &ClientOptions{HTTPClient: hc, BearerToken: "bad"}); err == nil {
				t.Fatal("connected with a bad token")
			} else {
				wantCode(t, err, CodeUnauthorized)
			}
			c, err := ConnectHTTP(context.Background(), ts.URL+"/rcp", &ClientOptions{HTTPClient: hc, BearerToken: "tok"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			res, err := c.Retrieve(context.Background(), &RetrieveParams{Query: TextQuery("q"), K: 2})
			if err != nil || len(res.Hits) != 2 {
				t.Fatalf("%v %+v", err, res)
			}
			var mu sync.Mutex
			var stages []string
			ctx := WithProgress(context.Background(), func(p ProgressParams) {
				mu.Lock()
				stages = append(stages, p.Stage)
				mu.Unlock()
			})
			if _, err := c.Retrieve(ctx, &RetrieveParams{Query: TextQuery("progress"), K: 1}); err != nil {
				t.Fatal(err)
			}
			if len(stages) != 2 {
				t.Fatalf("SSE progress stages %v", stages)
			}
			_, err = c.Rerank(context.Background(), &RerankParams{Query: TextQuery("q"), Method: RerankLLM})
			wantCode(t, err, CodeOptionUnsupported)
			// cancel over HTTP: the request is abandoned, the handler's
			// context ends
			cctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := c.Retrieve(cctx, &RetrieveParams{Query: TextQuery("block"), K: 1})
				errc <- err
			}()
			<-h.started // "q"
			<-h.started // "progress"
			<-h.started // "block"
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v", err)
			}
			select {
			case <-h.cancelled:
			case <-time.After(2 * time.Second):
				t.Fatal("handler not cancelled")
			}
		})
	}
}

func fmtMode(m SessionMode) string {
	return [...]string{"stateless", "stateful", "single"}[m]
}

func TestClientHTTPRetryAfter(t *testing.T) {
	checkNoLeaks(t)
	ts, _ := newHTTPServer(t, newTestHandler(), &HTTPOptions{RateLimit: &RateLimit{RequestsPerSecond: 50, Burst: 1}})
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	c, err := ConnectHTTP(context.Background(), ts.URL+"/rcp", &ClientOptions{HTTPClient: hc,
		Retry: &RetryPolicy{MaxAttempts: 5, BaseDelay: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// the bucket is empty after initialize: the next call gets 429 and is
	// retried after Retry-After
	start := time.Now()
	if _, err := c.Ping(context.Background(), 1); err != nil {
		t.Fatalf("ping: %v", err)
	}
	if el := time.Since(start); el < 500*time.Millisecond {
		t.Fatalf("Retry-After (1 s) not honoured: retried after %v", el)
	}
}

func TestClientHTTPTransportFault(t *testing.T) {
	checkNoLeaks(t)
	ts, _ := newHTTPServer(t, newTestHandler(), nil)
	hc := &http.Client{Transport: &http.Transport{}}
	c, err := ConnectHTTP(context.Background(), ts.URL+"/rcp", &ClientOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ts.Close()
	hc.CloseIdleConnections()
	if _, err := c.Ping(context.Background(), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("err %v", err)
	}
}
