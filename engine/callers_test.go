package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// callers returns n clients of e connected in process: n distinct callers
// (each connection is one, as n authenticated clients would be).
func callers(t testing.TB, e *Engine, n int) []*rcp.Client {
	t.Helper()
	srv := rcp.NewServer(e, &rcp.ServerOptions{Logger: e.log})
	out := make([]*rcp.Client, n)
	for i := range out {
		c, err := rcp.ConnectInProcess(context.Background(), srv, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		out[i] = c
	}
	return out
}

// reportAs sends feedback params as each of cs.
func reportAs(t testing.TB, cs []*rcp.Client, params map[string]any) {
	t.Helper()
	for i, c := range cs {
		var res rcp.FeedbackResult
		if err := c.Call(context.Background(), rcp.MethodFeedback, params, &res); err != nil || res.Accepted == 0 {
			t.Fatalf("caller %d: feedback accepted %d: %v", i, res.Accepted, err)
		}
	}
}

// httpEngine serves e over HTTP the way rcpd does (stateful sessions, the
// Authorization header naming the principal when there is one) and
// returns a function posting one request as a client with that header.
func httpEngine(t *testing.T, e *Engine) func(auth, method string, params any) (json.RawMessage, *rcp.Error) {
	t.Helper()
	authn := func(r *http.Request) (string, bool) {
		tok, _ := rcp.BearerToken(r.Header.Get("Authorization"))
		return tok, true
	}
	hh := rcp.NewServer(e, &rcp.ServerOptions{Logger: e.log}).HTTPHandler(&rcp.HTTPOptions{Sessions: rcp.SessionStateful, Authenticate: authn})
	ts := httptest.NewServer(hh)
	t.Cleanup(func() { ts.Close(); _ = hh.Close() })
	return func(auth, method string, params any) (json.RawMessage, *rcp.Error) {
		p, _ := json.Marshal(params)
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/rcp", strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, p)))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out struct {
			Result json.RawMessage `json:"result"`
			Error  *rcp.Error      `json:"error"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: %s", method, b)
		}
		return out.Result, out.Error
	}
}

func hitsOf(t *testing.T, raw json.RawMessage) wireResult {
	t.Helper()
	var r wireResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// Issue 33 item 5: three feedback calls from one client with sessionIds
// forged-1..3 quarantined a unit for every other client. Reports now count
// by caller: one client address is one reporter however many sessionIds it
// sends.
func TestForgedSessionIDsQuarantineNothing(t *testing.T) {
	e := newEngine(t, nil)
	post := httpEngine(t, e)
	q := map[string]any{"query": "inverted index postings", "k": 5}
	raw, rerr := post("", rcp.MethodRetrieve, q)
	if rerr != nil {
		t.Fatal(rerr)
	}
	before := hitsOf(t, raw)
	top := before.Hits[0].ID
	for i := 1; i <= 3; i++ {
		if _, rerr := post("", rcp.MethodFeedback, map[string]any{"sessionId": fmt.Sprintf("forged-%d", i),
			"signals": []map[string]any{{"hitId": top, "injectionSuspected": true}}}); rerr != nil {
			t.Fatal(rerr)
		}
	}
	raw, _ = post("", rcp.MethodRetrieve, q)
	after := hitsOf(t, raw)
	if after.Hits[0].ID != top || after.Hits[0].Trust != nil && after.Hits[0].Trust.Level == rcp.TrustUntrusted {
		t.Fatalf("one client's forged session ids quarantined %s: %q, trust %+v", top, ids(after), after.Hits[0].Trust)
	}
	// Three authenticated callers do quarantine it.
	for _, who := range []string{"alice", "bob", "carol"} {
		post(who, rcp.MethodFeedback, map[string]any{"signals": []map[string]any{{"hitId": top, "injectionSuspected": true}}})
	}
	raw, _ = post("", rcp.MethodRetrieve, q)
	if got := hitsOf(t, raw); got.Hits[0].ID == top {
		t.Fatalf("three callers' reports did not quarantine %s: %q", top, ids(got))
	}
	list, rerr := post("ops", rcp.MethodRCPGoQuarantineList, map[string]any{})
	var l rcp.QuarantineListResult
	if rerr != nil || json.Unmarshal(list, &l) != nil || len(l.Units) != 1 || l.Units[0].ID != top ||
		!slices.Equal(l.Units[0].Reporters, []string{"addr:127.0.0.1", "token:alice", "token:bob", "token:carol"}) {
		t.Fatalf("quarantine list: %s %v", list, rerr)
	}
	lifted, rerr := post("ops", rcp.MethodRCPGoQuarantineLift, map[string]any{"ids": []string{top, "nope"}})
	if rerr != nil || !strings.Contains(string(lifted), top) {
		t.Fatalf("lift: %s %v", lifted, rerr)
	}
	raw, _ = post("", rcp.MethodRetrieve, q)
	if got := hitsOf(t, raw); got.Hits[0].ID != top {
		t.Fatalf("after the lift: %q, want %s first again", ids(got), top)
	}
}

// Issue 33 item 9: a second client reusing sessionId "alice" suppressed
// alice's hits and learnt from the note how many she had seen. A
// sessionId is now scoped by its caller.
func TestSessionIDsAreScopedByCaller(t *testing.T) {
	e := newEngine(t, nil)
	post := httpEngine(t, e)
	q := map[string]any{"query": "inverted index postings", "k": 3, "sessionId": "alice"}
	var seen [][]string
	for _, who := range []string{"alice", "alice", "mallory"} {
		raw, rerr := post(who, rcp.MethodRetrieve, q)
		if rerr != nil {
			t.Fatal(rerr)
		}
		r := hitsOf(t, raw)
		if who == "mallory" && slices.ContainsFunc(r.Usage.Notes, func(n string) bool { return strings.Contains(n, "already returned") }) {
			t.Errorf("mallory learnt about alice's session: %q", r.Usage.Notes)
		}
		seen = append(seen, ids(r))
	}
	if slices.ContainsFunc(seen[1], func(id string) bool { return slices.Contains(seen[0], id) }) {
		t.Fatalf("alice's own session did not dedup: %q then %q", seen[0], seen[1])
	}
	if !slices.Equal(seen[2], seen[0]) {
		t.Fatalf("mallory's \"alice\" was alice's session: got %q, want the fresh top %q", seen[2], seen[0])
	}
	// Alice's session is intact after mallory's calls.
	raw, _ := post("alice", rcp.MethodRetrieve, q)
	for _, id := range ids(hitsOf(t, raw)) {
		if slices.Contains(seen[0], id) || slices.Contains(seen[1], id) {
			t.Fatalf("alice's session lost what it had seen: %s again", id)
		}
	}
}
