package console

import (
	"net/http"
	"strings"
	"testing"
)

// Issue 33 item 10: the console refused "Authorization: bearer …" (lower
// case) with 401 while /rcp accepted it: two bearer parsers. Every route
// now reads the header with rcp.BearerToken (the scheme is
// case-insensitive, RFC 7235 §2.1).
func TestConsoleBearerSchemeCaseInsensitive(t *testing.T) {
	ts := newServer(t, "")
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		req := extractRequest(ts, "notes.md", "# Title\n\nwords")
		req.Header.Set("Authorization", scheme+" s3cret")
		if resp, body := do(t, req); resp.StatusCode != http.StatusOK {
			t.Errorf("console with %q: %d %s", scheme, resp.StatusCode, body)
		}
		rreq, _ := http.NewRequest("POST", ts.URL+"/rcp/info", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"info"}`))
		rreq.Header.Set("Content-Type", "application/json")
		rreq.Header.Set("Authorization", scheme+" s3cret")
		if resp, body := do(t, rreq); resp.StatusCode != http.StatusOK {
			t.Errorf("/rcp with %q: %d %s", scheme, resp.StatusCode, body)
		}
	}
}
