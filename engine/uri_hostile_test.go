package engine

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// The dial-time check covers the whole special-purpose registry and this
// host's own addresses (item 14: 0.0.0.0/8, 198.18.0.0/15, 240.0.0.0/4,
// [::127.0.0.1], 64:ff9b::/96 and public interface addresses were dialled).
func TestBlockedAddresses(t *testing.T) {
	for _, s := range []string{
		"0.1.2.3", "10.0.0.1", "100.64.0.1", "127.0.0.1", "169.254.169.254", "172.16.0.1", "192.0.0.8",
		"192.0.2.1", "192.88.99.1", "192.168.1.1", "198.18.0.1", "198.19.255.255", "198.51.100.1", "203.0.113.1",
		"224.0.0.1", "240.0.0.1", "255.255.255.255", "::", "::1", "::127.0.0.1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
		"64:ff9b::7f00:1", "64:ff9b:1::1", "100::1", "2001::1", "2001:db8::1", "2002:7f00:1::", "fc00::1", "fd12::1",
		"fe80::1", "fec0::1", "ff02::1", "3fff::1",
	} {
		if !blockedAddr(netip.MustParseAddr(s)) {
			t.Errorf("%s is dialled", s)
		}
	}
	for _, s := range []string{"93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"} {
		if blockedAddr(netip.MustParseAddr(s)) && !ownAddr(netip.MustParseAddr(s)) {
			t.Errorf("%s is refused", s)
		}
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if pn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(pn.IP); ok && !blockedAddr(ip.Unmap()) {
				t.Errorf("this host's address %s is dialled", ip)
			}
		}
	}
	if _, err := (URIPolicy{}.withDefaults()).check("http://[::127.0.0.1]/x"); err == nil {
		t.Error("[::127.0.0.1] passes the literal check")
	}
}

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
