package rcp

import (
	"net/http"
	"strings"
	"testing"
)

// TestHTTPRequestGuard replays the CSRF / DNS-rebinding requests of issue
// 19 item 9: a text/plain index/add from evil.example, a form-encoded
// delete, a rebinding Host; and checks that legitimate JSON clients,
// same-origin browser requests and configured exceptions still pass.
func TestHTTPRequestGuard(t *testing.T) {
	const body = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	cases := []struct {
		name   string
		opts   HTTPOptions
		host   string
		hdr    map[string]string
		status int
	}{
		{"json client", HTTPOptions{}, "", map[string]string{"Content-Type": "application/json"}, 200},
		{"json with charset", HTTPOptions{}, "", map[string]string{"Content-Type": "application/json; charset=utf-8"}, 200},
		{"localhost host", HTTPOptions{}, "localhost:7700", map[string]string{"Content-Type": "application/json"}, 200},
		{"text/plain simple request", HTTPOptions{}, "", map[string]string{"Content-Type": "text/plain"}, 415},
		{"form post", HTTPOptions{}, "", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
		{"no content type", HTTPOptions{}, "", map[string]string{"Content-Type": ""}, 415},
		{"rebinding host", HTTPOptions{}, "evil.example", map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}, 403},
		{"rebinding host text/plain", HTTPOptions{}, "evil.example:7700", map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example:7700"}, 403},
		{"cross-site origin", HTTPOptions{}, "", map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}, 403},
		{"cross-site fetch metadata", HTTPOptions{}, "", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403},
		{"same-origin fetch metadata", HTTPOptions{}, "", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-origin"}, 200},
		{"allowed host", HTTPOptions{AllowedHosts: []string{"rcp.example"}}, "rcp.example", map[string]string{"Content-Type": "application/json"}, 200},
		{"any host", HTTPOptions{AllowedHosts: []string{"*"}}, "whatever.example", map[string]string{"Content-Type": "application/json"}, 200},
		{"trusted origin", HTTPOptions{TrustedOrigins: []string{"https://app.example"}}, "", map[string]string{"Content-Type": "application/json", "Origin": "https://app.example"}, 200},
		{"cors origin trusted", HTTPOptions{CORSOrigin: "https://app.example"}, "", map[string]string{"Content-Type": "application/json", "Origin": "https://app.example"}, 200},
		{"cors any origin", HTTPOptions{CORSOrigin: "*"}, "", map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts, _ := newHTTPServer(t, newTestHandler(), &tc.opts)
			req, err := http.NewRequest(http.MethodPost, ts.URL+"/rcp/ping", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			for k, v := range tc.hdr {
				if v == "" {
					req.Header.Del(k)
					continue
				}
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}

// The bearer scheme name is case-insensitive (RFC 7235 §2.1).
func TestBearerSchemeCaseInsensitive(t *testing.T) {
	ts, _ := newHTTPServer(t, newTestHandler(), &HTTPOptions{BearerTokens: []string{"s3cret"}})
	for _, auth := range []string{"Bearer s3cret", "bearer s3cret", "BEARER s3cret"} {
		r := post(t, ts.URL+"/rcp/ping", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Authorization": auth})
		if r.status != 200 {
			t.Errorf("%q: status %d", auth, r.status)
		}
	}
	for _, auth := range []string{"Bearer wrong", "Basic s3cret", "s3cret", ""} {
		r := post(t, ts.URL+"/rcp/ping", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Authorization": auth})
		if r.status != 401 {
			t.Errorf("%q: status %d, want 401", auth, r.status)
		}
	}
}
