package federation_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/testutil/fedtest"
	"github.com/rcpgo/rcpgo/internal/testutil/gobuild"
	"github.com/rcpgo/rcpgo/rcp"
)

func TestSelector(t *testing.T) {
	_, beta := httpEngine(t, "beta", nil)
	_, gamma := httpEngine(t, "gamma", nil)
	dead := listen(t) // a port nobody serves once closed
	deadURL := "http://" + dead.Addr().String() + "/rcp"
	_ = dead.Close()
	reg := &federation.Registry{Engines: []federation.EngineSpec{
		{ID: "gamma", URL: gamma.URL, Priority: 1},
		{ID: "primary", URL: deadURL, Priority: 10},
		{ID: "beta", URL: beta.URL, Priority: 5},
	}}
	sel := federation.NewSelector(reg, &federation.SelectorOptions{Client: clientOpts(), PingTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = sel.Close() })
	ctx := ctxT(t, 20*time.Second)

	tests := []struct {
		name   string
		pick   func() (*federation.Engine, error)
		wantID string
		code   rcp.Code
	}{
		{"by id", func() (*federation.Engine, error) { return sel.Select(ctx, "gamma") }, "gamma", 0},
		{"unknown id", func() (*federation.Engine, error) { return sel.Select(ctx, "nope") }, "", rcp.CodeInvalidParams},
		{"dead id", func() (*federation.Engine, error) { return sel.Select(ctx, "primary") }, "", rcp.CodeBackendUnavailable},
		{"primary falls back by priority", func() (*federation.Engine, error) { return sel.SelectPrimary(ctx) }, "beta", 0},
		{"by capability", func() (*federation.Engine, error) { return sel.SelectCapable(ctx, rcp.CapGraph) }, "gamma", 0},
		{"capability of the first live", func() (*federation.Engine, error) { return sel.SelectCapable(ctx, rcp.CapRerank) }, "beta", 0},
		{"nobody has it", func() (*federation.Engine, error) { return sel.SelectCapable(ctx, rcp.CapMemory) }, "", rcp.CodeBackendUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := tc.pick()
			if tc.code != 0 {
				if codeOf(err) != tc.code {
					t.Fatalf("got %v, want code %d", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.ID() != tc.wantID {
				t.Fatalf("selected %s, want %s", e.ID(), tc.wantID)
			}
			c, err := e.Client(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Ping(ctx, "n"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The selected engine dies and comes back: the next selection pings,
// notices, falls back, and later reconnects to the restarted engine.
func TestSelectorReconnects(t *testing.T) {
	e := fedtest.New("beta", features("beta"))
	srv, err := fedtest.ServeHTTP(e.Router(), "127.0.0.1:0", &rcp.HTTPOptions{Sessions: rcp.SessionStateful}, &rcp.ServerOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Kill)
	_, gamma := httpEngine(t, "gamma", nil)
	reg := &federation.Registry{Engines: []federation.EngineSpec{
		{ID: "beta", URL: srv.URL, Priority: 2},
		{ID: "gamma", URL: gamma.URL, Priority: 1},
	}}
	sel := federation.NewSelector(reg, &federation.SelectorOptions{Client: clientOpts(), PingTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = sel.Close() })
	ctx := ctxT(t, 20*time.Second)

	first, err := sel.SelectPrimary(ctx)
	if err != nil || first.ID() != "beta" {
		t.Fatalf("%v %v", first, err)
	}
	srv.Kill()
	next, err := sel.SelectPrimary(ctx)
	if err != nil || next.ID() != "gamma" {
		t.Fatalf("after beta died: %v %v", next, err)
	}
	// A call through the dead engine's handle fails as transport death and
	// the handle drops the connection.
	err = first.Do(ctx, func(c *rcp.Client) error { _, err := c.Ping(ctx, nil); return err })
	if err == nil || !errors.Is(err, rcp.ErrClosed) && codeOf(err) != rcp.CodeBackendUnavailable {
		t.Fatalf("call on the dead engine: %v", err)
	}
	// beta restarts on the same port.
	srv2, err := fedtest.ServeHTTP(e.Router(), srv.Addr, &rcp.HTTPOptions{Sessions: rcp.SessionStateful}, &rcp.ServerOptions{Logger: quiet})
	if err != nil {
		t.Skipf("cannot rebind %s: %v", srv.Addr, err)
	}
	t.Cleanup(srv2.Kill)
	// The handle redials: transport death was noticed above.
	if err := first.Do(ctx, func(c *rcp.Client) error { _, err := c.Ping(ctx, nil); return err }); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	// beta restarts again behind our back: the old session token is
	// unknown (-32001), so the handle redials and retries transparently.
	srv2.Kill()
	srv3, err := fedtest.ServeHTTP(e.Router(), srv.Addr, &rcp.HTTPOptions{Sessions: rcp.SessionStateful}, &rcp.ServerOptions{Logger: quiet})
	if err != nil {
		t.Skipf("cannot rebind %s: %v", srv.Addr, err)
	}
	t.Cleanup(srv3.Kill)
	call := func() error {
		return first.Do(ctx, func(c *rcp.Client) error {
			_, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("dense"), K: 1})
			return err
		})
	}
	// The first call may die on a pooled connection to the old process
	// (transport death: not retried, §13.1); then the handle redials.
	if err := call(); err != nil && !errors.Is(err, rcp.ErrClosed) {
		t.Fatalf("after a silent restart: %v", err)
	}
	if err := call(); err != nil {
		t.Fatalf("second call after a silent restart: %v", err)
	}
	back, err := sel.SelectPrimary(ctx)
	if err != nil || back.ID() != "beta" {
		t.Fatalf("after restart: %v %v", back, err)
	}
	c, _ := back.Client(ctx)
	if _, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("dense"), K: 1}); err != nil {
		t.Fatal(err)
	}
}

// The example memserver binary works as a stdio engine behind the Selector
// and the gateway.
func TestMemserverEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := gobuild.Binary(t, t.TempDir(), "github.com/rcpgo/rcpgo/examples/memserver")
	_, gamma := httpEngine(t, "gamma", nil)
	reg := &federation.Registry{Engines: []federation.EngineSpec{
		{ID: "mem", Command: []string{bin}},
		{ID: "gamma", URL: gamma.URL},
	}}
	sel := federation.NewSelector(reg, &federation.SelectorOptions{Client: clientOpts()})
	t.Cleanup(func() { _ = sel.Close() })
	ctx := ctxT(t, 30*time.Second)
	e, err := sel.SelectCapable(ctx, rcp.CapEmbed)
	if err != nil || e.ID() != "mem" {
		t.Fatalf("%v %v", e, err)
	}

	_, s := gatewayOver(t, reg, nil)
	c := dial(t, s.URL, nil)
	from, _ := hitOrigins(ctx, t, c, "eiffel tower paris seine", 5)
	if from["mem"] == 0 || from["gamma"] == 0 {
		t.Errorf("origins = %v", from)
	}
	if c.Capabilities().Embed == nil || c.Capabilities().Embed.Identity != "memserver-hashed-bow-64" {
		t.Errorf("embed not routed to memserver: %+v", c.Capabilities().Embed)
	}
	emb, err := c.Embed(ctx, &rcp.EmbedParams{Inputs: rcp.TextInputs("paris")})
	if err != nil || emb.Dimension != 64 {
		t.Fatalf("embed: %v %+v", err, emb)
	}
	cat, err := c.CatalogList(ctx)
	if err != nil || len(cat.Engines) != 2 || cat.Engines[0].Server.Name != "rcpgo-memserver" {
		t.Fatalf("catalog: %v %+v", err, cat)
	}
}
