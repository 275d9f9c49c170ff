package federation_test

import (
	"context"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/rcp"
)

// realEngine serves an rcpd engine over docs in-process.
func realEngine(t *testing.T, id string, docs map[string]string) (*federation.Engine, *rcp.Client) {
	t.Helper()
	var pre []engine.Preload
	for did, text := range docs {
		pre = append(pre, engine.Preload{ID: did, Text: text, Source: "wiki"})
	}
	eng, err := engine.Open(context.Background(), engine.Config{Dir: t.TempDir(), Name: id, Dense: engine.DenseNone,
		WordNetDir: engine.WordNetNone, Logger: quiet, Preload: pre, TrustedSources: map[string]string{"wiki": rcp.TrustCommunity}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	srv := rcp.NewServer(eng, &rcp.ServerOptions{Logger: quiet})
	h := federation.NewEngineFunc(federation.EngineSpec{ID: id}, func(ctx context.Context) (*rcp.Client, error) {
		return rcp.ConnectInProcess(ctx, srv, clientOpts())
	})
	t.Cleanup(func() { _ = h.Close() })
	direct, err := rcp.ConnectInProcess(context.Background(), srv, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	return h, direct
}

// TestGatewayFeedbackRoutedByEngine sends feedback through the gateway and
// checks each signal reached the engine that produced its hit: reports
// from three callers of the gateway quarantine a hit on its own engine
// only.
func TestGatewayFeedbackRoutedByEngine(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	a, aDirect := realEngine(t, "alpha", map[string]string{"a1": "volcano eruption lava", "a2": "volcano ash cloud"})
	b, bDirect := realEngine(t, "beta", map[string]string{"b1": "volcano monitoring seismic", "b2": "glacier melt"})
	g := federation.NewGatewayEngines([]*federation.Engine{a, b}, &federation.GatewayOptions{Federation: federation.Options{Logger: quiet}})
	if err := g.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if g.Describe(ctx).Capabilities.Feedback == nil {
		t.Fatal("the gateway does not advertise feedback over engines that serve it")
	}
	gc, err := rcp.ConnectInProcess(ctx, rcp.NewServer(g, &rcp.ServerOptions{Logger: quiet}), clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	res, err := gc.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("volcano"), K: 10})
	if err != nil {
		t.Fatal(err)
	}
	origin := map[string]string{}
	for _, h := range res.Hits {
		origin[h.ID.String()], _ = h.Meta["engine"].(string)
	}
	if origin["a1"] != "alpha" || origin["b1"] != "beta" {
		t.Fatalf("origins %v", origin)
	}
	yes := true
	// Three callers of the gateway (each connection is one): the engine
	// trusts its in-process peer, the gateway, to name them.
	gsrv := rcp.NewServer(g, &rcp.ServerOptions{Logger: quiet})
	for _, s := range []string{"s1", "s2", "s3"} {
		gc, err := rcp.ConnectInProcess(ctx, gsrv, clientOpts())
		if err != nil {
			t.Fatal(err)
		}
		defer gc.Close()
		fr, err := gc.Feedback(ctx, &rcp.FeedbackParams{SessionID: s, Signals: []rcp.FeedbackSignal{
			{HitID: rcp.StringID("a1"), PoisonSuspected: &yes},
			{HitID: rcp.StringID("never-returned"), PoisonSuspected: &yes}}})
		if err != nil || fr.Accepted != 1 {
			t.Fatalf("feedback via gateway: %+v, %v (the unknown hit is not forwarded)", fr, err)
		}
	}
	trustOf := func(c *rcp.Client, id string) string {
		r, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("volcano"), K: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range r.Hits {
			if h.ID.String() == id && h.Trust != nil {
				return h.Trust.Level
			}
		}
		return ""
	}
	if got := trustOf(aDirect, "a1"); got != rcp.TrustUntrusted {
		t.Fatalf("alpha's a1 trust = %q, want untrusted after three callers' reports", got)
	}
	if got := trustOf(bDirect, "b1"); got != rcp.TrustCommunity {
		t.Fatalf("beta's b1 trust = %q: reports about alpha's hit reached beta", got)
	}
}
