package rcp

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// callerHandler answers x-acme/whoami with the request's Caller.
func callerHandler() Handler {
	r := NewRouter(func(context.Context) Description {
		caps := Capabilities{Extra: map[string]json.RawMessage{"x-acme": json.RawMessage(`{}`)}}
		return Description{Server: PeerInfo{Name: "who", Version: "1"}, Capabilities: caps, Conformance: LevelL0}
	})
	r.HandleFunc("x-acme/whoami", func(ctx context.Context, _ json.RawMessage) (any, error) {
		c := CallerOf(ctx)
		return map[string]string{"transport": c.Transport, "principal": c.Principal, "addr": c.Addr, "session": c.Session,
			"id": c.ID(), "scope": c.Scope()}, nil
	})
	return r
}

func whoami(t *testing.T, url string, hdr map[string]string) map[string]string {
	t.Helper()
	res := post(t, url+"/rcp/x-acme/whoami", `{"jsonrpc":"2.0","id":1,"method":"x-acme/whoami"}`, hdr)
	var out struct {
		Result map[string]string `json:"result"`
	}
	if err := json.Unmarshal(res.body, &out); err != nil || out.Result == nil {
		t.Fatalf("whoami: %d %s", res.status, res.body)
	}
	return out.Result
}

// The transport tells a handler who called: the principal Authenticate
// found, the client address, and the RCP session (a stateful HTTP session
// or a stream connection), so state a client names (sessionId) can be
// scoped by caller (issue 33 items 5 and 9).
func TestCallerOf(t *testing.T) {
	auth := func(r *http.Request) (string, bool) {
		tok, ok := BearerToken(r.Header.Get("Authorization"))
		if !ok {
			return "", true // anonymous callers are served too
		}
		name, known := map[string]string{"t1": "alice", "t2": "bob"}[tok]
		return name, known
	}
	ts, _ := newHTTPServer(t, callerHandler(), &HTTPOptions{Sessions: SessionStateful, Authenticate: auth})
	anon := whoami(t, ts.URL, nil)
	if anon["transport"] != "http" || anon["addr"] != "127.0.0.1" || anon["principal"] != "" || anon["session"] != "" || anon["id"] != "addr:127.0.0.1" {
		t.Errorf("anonymous stateless caller: %v", anon)
	}
	alice := whoami(t, ts.URL, map[string]string{"Authorization": "bearer t1"})
	if alice["principal"] != "alice" || alice["id"] != "token:alice" || alice["scope"] != "token:alice" {
		t.Errorf("alice: %v", alice)
	}
	if res := post(t, ts.URL+"/rcp/x-acme/whoami", `{"jsonrpc":"2.0","id":1,"method":"x-acme/whoami"}`, map[string]string{"Authorization": "Bearer nope"}); res.status != http.StatusUnauthorized {
		t.Errorf("unknown token: %d %s", res.status, res.body)
	}
	// Two stateful sessions of the same token share its ID, not its scope.
	var scopes []string
	for range 2 {
		init := post(t, ts.URL+"/rcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`, map[string]string{"Authorization": "Bearer t2"})
		var ir struct {
			Result struct {
				Meta struct {
					Session string `json:"session"`
				} `json:"_meta"`
			} `json:"result"`
		}
		_ = json.Unmarshal(init.body, &ir)
		tok := ir.Result.Meta.Session
		if tok == "" {
			t.Fatalf("no session: %s", init.body)
		}
		bob := whoami(t, ts.URL, map[string]string{"Authorization": "Bearer t2", HeaderSession: tok})
		if bob["id"] != "token:bob" || bob["session"] == "" || !strings.HasPrefix(bob["scope"], "token:bob/session:") || strings.Contains(bob["scope"], tok) {
			t.Errorf("bob in a session: %v", bob)
		}
		scopes = append(scopes, bob["scope"])
	}
	if scopes[0] == scopes[1] {
		t.Errorf("two sessions share scope %q", scopes[0])
	}
	// A stream connection is its own caller.
	c := inProcess(t, callerHandler(), nil)
	var got map[string]string
	if err := c.Call(context.Background(), "x-acme/whoami", nil, &got); err != nil {
		t.Fatal(err)
	}
	if got["transport"] != "stream" || got["session"] == "" || got["id"] != "stream:"+got["session"] {
		t.Errorf("stream caller: %v", got)
	}
	if (CallerOf(context.Background()) != Caller{}) {
		t.Error("a context outside a request has a caller")
	}
}
