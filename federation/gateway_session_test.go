package federation_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/rcp"
)

// Issue 33 item 9 behind a gateway: every engine sees the gateway as one
// caller, so the gateway forwards a sessionId derived from its own caller
// and the id: two clients of the gateway using "alice" never share a
// trajectory on an engine, and one client keeps its own across calls.
func TestGatewayScopesSessionIDsByCaller(t *testing.T) {
	eng, es := httpEngine(t, "beta", nil)
	reg := &federation.Registry{Engines: []federation.EngineSpec{{ID: "beta", Transport: federation.TransportHTTP, URL: es.URL}}}
	gw := federation.NewGateway(reg, &federation.GatewayOptions{Federation: federation.Options{Client: clientOpts(), Logger: quiet}})
	authn := func(r *http.Request) (string, bool) {
		tok, ok := rcp.BearerToken(r.Header.Get("Authorization"))
		return tok, ok
	}
	srv := serveGateway(t, gw, &rcp.HTTPOptions{Sessions: rcp.SessionStateless, Authenticate: authn})
	if err := gw.Connect(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"alice", "alice", "mallory"} {
		c := dial(t, srv.URL, &rcp.ClientOptions{Logger: quiet, BearerToken: who})
		if _, err := c.Retrieve(ctxT(t, 10*time.Second), &rcp.RetrieveParams{Query: rcp.TextQuery("federated"), K: 3, SessionID: "alice"}); err != nil {
			t.Fatal(err)
		}
	}
	got := eng.SessionIDs()
	if len(got) != 3 || got[0] != got[1] || got[0] == got[2] || slices.Contains(got, "alice") || !strings.HasPrefix(got[2], "gw-") {
		t.Fatalf("the engine received sessionIds %q: want one id per caller, never the client's", got)
	}
}
