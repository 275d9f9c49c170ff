package mcpbridge

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/internal/auth"
	"github.com/rcpgo/rcpgo/rcp"
)

// TestSessionsAreNotDistinctReporters: a quarantine needs reports from
// three distinct callers, and a client of the MCP face is its token (or
// its address without tokens), not its MCP session. Before, the bridge
// named each MCP session a caller of its own, so one token (or one
// anonymous client) opening three sessions quarantined any unit.
func TestSessionsAreNotDistinctReporters(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tokens *auth.Set
		client *http.Client
	}{
		{"one token", mustTokens(t, "writer read,write w-secret"), &http.Client{Transport: bearerTransport{"w-secret"}}},
		{"one address", nil, http.DefaultClient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := feedbackEngine(t)
			b, err := New(cl, Options{Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			srv := serveHTTP(t, b, HTTPOptions{Tokens: tc.tokens})
			for range 3 {
				cs, _ := connectHTTP(t, srv.URL, tc.client)
				fb := structured[FeedbackOutput](t, callTool(t, cs, ToolFeedback, map[string]any{
					"signals": []map[string]any{{"hitId": "p1", "poisonSuspected": true}}}))
				if fb.Accepted != 1 {
					t.Fatalf("feedback: %+v", fb)
				}
				_ = cs.Close()
			}
			var list rcp.QuarantineListResult
			if err := cl.Call(context.Background(), rcp.MethodRCPGoQuarantineList, map[string]any{}, &list); err != nil {
				t.Fatal(err)
			}
			if len(list.Units) != 0 {
				t.Fatalf("three MCP sessions of one client quarantined %s (reporters %v)", list.Units[0].ID, list.Units[0].Reporters)
			}
		})
	}
}

// TestPeerHeaderIsNotTakenFromTheClient: the address the HTTP face hands
// the tools is the connection's, whatever the client sends under its name.
func TestPeerHeaderIsNotTakenFromTheClient(t *testing.T) {
	var got []string
	h := withPeer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Values(peerHeader) }))
	r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader("{}"))
	r.RemoteAddr = "10.0.0.7:5555"
	r.Header.Add(peerHeader, "forged-1")
	r.Header.Add(peerHeader, "forged-2")
	h.ServeHTTP(nil, r)
	if len(got) != 1 || got[0] != "10.0.0.7" {
		t.Fatalf("peer header %q, want [10.0.0.7]", got)
	}
}

func mustTokens(t *testing.T, lines string) *auth.Set {
	t.Helper()
	s, err := auth.Parse(strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// feedbackEngine is a real engine with feedback on and an in-process RCP
// client of it (a stream peer, which the engine trusts to name the
// callers it relays).
func feedbackEngine(t *testing.T) *rcp.Client {
	t.Helper()
	ctx := context.Background()
	pre := []engine.Preload{{ID: "p1", Text: "The pump moves water from the well to the tank.", Source: "handbook"},
		{ID: "p2", Text: "Check the pump impeller every spring.", Source: "handbook"}}
	eng, err := engine.Open(ctx, engine.Config{Dir: t.TempDir(), Name: "kb", Dense: engine.DenseNone, Logger: discardLogger(),
		WordNetDir: engine.WordNetNone, Preload: pre})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return engineClient(t, eng)
}
