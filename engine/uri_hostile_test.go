package engine

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// Every network-side failure reads the same (item 14: refused, no route
// and HTTP status were told apart, a port-scan oracle).
func TestFetchFailuresAreUniform(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/500":
			w.WriteHeader(500)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	open := newEngine(t, func(c *Config) {
		c.Dense = DenseNone
		c.URIPolicy = URIPolicy{AllowPrivate: true}
	})
	var msgs []string
	for _, tc := range []struct {
		e   *Engine
		uri string
	}{{open, srv.URL + "/404"}, {open, srv.URL + "/500"}, {open, "http://" + closed + "/x"}, {open, "http://nonexistent.invalid/x"}} {
		_, rerr := call(t, tc.e, rcp.MethodRetrieve, `{"query":[{"type":"text","uri":"`+tc.uri+`"}],"k":1}`)
		if rerr == nil || rerr.Code != rcp.CodeInvalidParams {
			t.Fatalf("%s: %+v", tc.uri, rerr)
		}
		msgs = append(msgs, strings.ReplaceAll(rerr.Message, tc.uri, "URI"))
	}
	for _, m := range msgs[1:] {
		if m != msgs[0] {
			t.Errorf("failures differ: %q vs %q", m, msgs[0])
		}
	}
}

// uri blocks are bounded in number, in total bytes and in concurrent
// fetches (item 2: 200 blocks of 1 MiB took RSS to 8.8 GB).
func TestURIBlockBounds(t *testing.T) {
	var inflight, peak atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("bm25 ", 1000)) // 5 KB
	}))
	defer srv.Close()
	e := newEngine(t, func(c *Config) {
		c.Dense = DenseNone
		c.URIPolicy = URIPolicy{AllowPrivate: true, MaxTotalBytes: 12 << 10}
	})
	blocks := func(n int) string {
		var b []string
		for i := range n {
			b = append(b, fmt.Sprintf(`{"type":"text","uri":"%s/%d"}`, srv.URL, i))
		}
		return `{"query":[` + strings.Join(b, ",") + `],"k":1}`
	}
	if _, rerr := call(t, e, rcp.MethodRetrieve, blocks(2)); rerr != nil {
		t.Fatalf("2 blocks: %v", rerr)
	}
	if _, rerr := call(t, e, rcp.MethodRetrieve, blocks(3)); rerr == nil || rerr.Data.Field != "query[2].uri" {
		t.Fatalf("3 blocks of 5 KB over a 12 KB budget: %+v", rerr)
	}
	if _, rerr := call(t, e, rcp.MethodRetrieve, blocks(200)); rerr == nil || rerr.Code != rcp.CodeInvalidParams {
		t.Fatalf("200 blocks: %+v", rerr)
	}
	if peak.Load() > int64(e.cfg.URIPolicy.MaxConcurrent) {
		t.Errorf("%d fetches at once", peak.Load())
	}
}
