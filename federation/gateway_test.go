package federation_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/testutil/within"
	"github.com/rcpgo/rcpgo/rcp"
)

func retrieve(t *testing.T, c *rcp.Client, query string, k int, meta rcp.Meta) (*rcp.RetrieveResult, error) {
	t.Helper()
	return c.Retrieve(ctxT(t, 20*time.Second), &rcp.RetrieveParams{Query: rcp.TextQuery(query), K: k, Meta: meta})
}

func notesContain(res *rcp.RetrieveResult, sub string) bool {
	if res.Usage == nil {
		return false
	}
	for _, n := range res.Usage.Notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

func degraded(t *testing.T, res *rcp.RetrieveResult) []federation.Degraded {
	t.Helper()
	var d []federation.Degraded
	res.Meta.Get(rcp.MetaDegraded, &d)
	return d
}

func hitsJSON(t *testing.T, hits []rcp.Hit) string {
	t.Helper()
	b, err := json.Marshal(hits)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Acceptance 1: fused results carry origins and are deterministic across
// runs and across gateways.
func TestGatewayFusedOriginsDeterministic(t *testing.T) {
	tr := trio(t)
	_, s := gatewayOver(t, tr.reg, nil)
	c := dial(t, s.URL, nil)
	const q = "federated search fusion of ranked results in Paris"
	res, err := retrieve(t, c, q, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 {
		t.Fatal("no hits")
	}
	engines := map[string]bool{}
	ids := map[string]bool{}
	for _, h := range res.Hits {
		eng, _ := h.Meta["engine"].(string)
		if !slices.Contains([]string{"alpha", "beta", "gamma"}, eng) {
			t.Errorf("hit %s: meta.engine = %v", h.ID, h.Meta["engine"])
		}
		engines[eng] = true
		if r, _ := h.Meta["engineRank"].(float64); r < 1 {
			t.Errorf("hit %s: meta.engineRank = %v", h.ID, h.Meta["engineRank"])
		}
		if _, ok := h.Meta["engineScore"].(float64); !ok {
			t.Errorf("hit %s: meta.engineScore missing", h.ID)
		}
		if ids[h.ID.String()] {
			t.Errorf("duplicate id %s after dedup", h.ID)
		}
		ids[h.ID.String()] = true
	}
	if len(engines) != 3 {
		t.Errorf("hits come from %v, want all three engines", engines)
	}
	// shared-1 is in alpha and beta: fused once, ranked first (two votes),
	// keeping beta's richer text.
	if top := res.Hits[0]; top.ID.String() != "shared-1" || top.Meta["engine"] != "beta" {
		t.Errorf("top hit = %s from %v, want shared-1 from beta", top.ID, top.Meta["engine"])
	}
	want := hitsJSON(t, res.Hits)
	for i := range 3 {
		again, err := retrieve(t, c, q, 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := hitsJSON(t, again.Hits); got != want {
			t.Fatalf("run %d differs:\n got %s\nwant %s", i, got, want)
		}
	}
	// A second gateway over the same engines answers identically.
	_, s2 := gatewayOver(t, tr.reg, nil)
	other, err := retrieve(t, dial(t, s2.URL, nil), q, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := hitsJSON(t, other.Hits); got != want {
		t.Fatalf("second gateway differs:\n got %s\nwant %s", got, want)
	}
	var statuses []federation.EngineStatus
	res.Meta.Get(federation.MetaEngines, &statuses)
	if len(statuses) != 3 {
		t.Errorf("_meta.engines = %+v", statuses)
	}
}

func TestGatewayCatalogList(t *testing.T) {
	tr := trio(t)
	gw, s := gatewayOver(t, tr.reg, nil)
	c := dial(t, s.URL, nil)
	if !c.Supports(rcp.CapCatalog) || c.Capabilities().Catalog.Engines != 3 {
		t.Fatalf("catalog capability = %+v", c.Capabilities().Catalog)
	}
	res, err := c.CatalogList(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Engines) != 3 {
		t.Fatalf("engines = %+v", res.Engines)
	}
	for i, want := range []string{"alpha", "beta", "gamma"} {
		e := res.Engines[i]
		if e.ID != want || e.Server.Name != "fedtest-"+want || e.Capabilities.Retrieve == nil {
			t.Errorf("engine %d = %+v", i, e)
		}
		switch want {
		case "alpha": // stdio: a command line is not an endpoint for remote clients
			if e.Endpoint != nil {
				t.Errorf("alpha exposes %+v", e.Endpoint)
			}
		default:
			if e.Endpoint == nil || e.Endpoint.Transport != "http" || !strings.HasPrefix(e.Endpoint.URL, "http://127.0.0.1:") {
				t.Errorf("%s endpoint = %+v", want, e.Endpoint)
			}
		}
	}
	if !res.Engines[0].Capabilities.Has(rcp.CapEmbed) || res.Engines[2].Capabilities.Graph == nil {
		t.Error("catalog lost engine capabilities")
	}
	// Effective = union, guaranteed = intersection (§16.4).
	eff, guar := gw.Federation().Effective(), gw.Federation().Guaranteed()
	for _, k := range []string{rcp.CapRetrieve, rcp.CapEmbed, rcp.CapRerank, rcp.CapGraph, rcp.CapCitations} {
		if !eff.Has(k) {
			t.Errorf("effective lacks %s", k)
		}
	}
	if !guar.Has(rcp.CapRetrieve) || guar.Has(rcp.CapEmbed) || guar.Has(rcp.CapRerank) || guar.Has(rcp.CapGraph) {
		t.Errorf("guaranteed = %+v", guar)
	}
	// The gateway advertises what it can route.
	caps := c.Capabilities()
	if caps.Embed == nil || caps.Embed.Identity != "alpha-hash-8" || caps.Rerank == nil || caps.Graph == nil || !slices.Contains(caps.Graph.Ops, "local") {
		t.Errorf("gateway capabilities = %+v", caps)
	}
	// Hidden endpoints.
	_, s2 := gatewayOver(t, tr.reg, &federation.GatewayOptions{HideEndpoints: true})
	res2, err := dial(t, s2.URL, nil).CatalogList(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res2.Engines {
		if e.Endpoint != nil {
			t.Errorf("%s endpoint exposed despite HideEndpoints", e.ID)
		}
	}
}

// Acceptance 1: an engine killed mid-query gives a degraded success.
func TestGatewayEngineKilledMidQuery(t *testing.T) {
	tr := trio(t)
	_, s := gatewayOver(t, tr.reg, nil)
	c := dial(t, s.URL, nil)
	type answer struct {
		res *rcp.RetrieveResult
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := c.Retrieve(context.Background(), &rcp.RetrieveParams{Query: rcp.TextQuery("federated search ranked xhangbeta"), K: 5})
		got <- answer{res, err}
	}()
	select {
	case <-tr.beta.Started:
	case <-time.After(10 * time.Second):
		t.Fatal("beta never received the query")
	}
	tr.betaSrv.Kill()
	a := within.Recv(t, got, "the gateway's answer after beta was killed")
	if a.err != nil {
		t.Fatalf("want degraded success, got %v", a.err)
	}
	for _, h := range a.res.Hits {
		if h.Meta["engine"] == "beta" {
			t.Errorf("hit %s from the killed engine", h.ID)
		}
	}
	if len(a.res.Hits) == 0 || !notesContain(a.res, "engine beta failed") {
		t.Errorf("hits %d, notes %v", len(a.res.Hits), a.res.Usage.Notes)
	}
	d := degraded(t, a.res)
	if len(d) != 1 || d[0].Engine != "beta" || d[0].Code != rcp.CodeBackendUnavailable {
		t.Errorf("_meta.degraded = %+v", d)
	}
	// Capabilities stay frozen; the next call still works without beta.
	res, err := retrieve(t, c, "federated search", 5, nil)
	if err != nil || len(degraded(t, res)) != 1 {
		t.Fatalf("after the kill: %v %+v", err, res)
	}
	if !c.Supports(rcp.CapRerank) {
		t.Error("rerank vanished")
	}
	// rerank was pinned to beta: it now fails with -32010 rather than moving.
	_, err = c.Rerank(ctxT(t, 10*time.Second), &rcp.RerankParams{Query: rcp.TextQuery("x"), Passages: rcp.TextInputs("a")})
	if codeOf(err) != rcp.CodeBackendUnavailable {
		t.Errorf("rerank on a dead engine: %v", err)
	}
}

// Acceptance 1: a required engine killed fails the call with its error; a
// required engine refusing us fails it with -32012.
func TestGatewayRequiredEngineFails(t *testing.T) {
	tr := trio(t)
	tr.reg.Engines[1].Required = true // beta
	_, s := gatewayOver(t, tr.reg, nil)
	c := dial(t, s.URL, nil)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Retrieve(context.Background(), &rcp.RetrieveParams{Query: rcp.TextQuery("federated xhangbeta"), K: 5})
		errc <- err
	}()
	within.Recv(t, tr.beta.Started, "beta to receive the query")
	tr.betaSrv.Kill()
	err := within.Recv(t, errc, "the gateway's answer after beta was killed")
	var re *rcp.Error
	if !errors.As(err, &re) || re.Code != rcp.CodeBackendUnavailable || !strings.Contains(re.Message, "required engine beta") {
		t.Fatalf("got %v", err)
	}

	// A required engine that rejects our credentials: its code surfaces.
	_, locked := httpEngine(t, "gamma", &rcp.HTTPOptions{Sessions: rcp.SessionStateful, BearerTokens: []string{"s3cret"}})
	reg := &federation.Registry{Engines: []federation.EngineSpec{
		tr.reg.Engines[0],
		{ID: "locked", URL: locked.URL, Required: true},
	}}
	_, s2 := gatewayOver(t, reg, nil)
	_, err = retrieve(t, dial(t, s2.URL, nil), "federated", 5, nil)
	if codeOf(err) != rcp.CodeUnauthorized {
		t.Fatalf("required engine refusing us: %v", err)
	}
	// Not required: skipped and noted.
	reg.Engines[1].Required = false
	_, s3 := gatewayOver(t, reg, nil)
	res, err := retrieve(t, dial(t, s3.URL, nil), "federated", 5, nil)
	if err != nil || !notesContain(res, "engine locked failed (-32012") {
		t.Fatalf("optional engine refusing us: %v %+v", err, res)
	}
}

// Acceptance 1: every engine killed → -32010.
func TestGatewayAllEnginesKilled(t *testing.T) {
	tr := trio(t)
	_, s := gatewayOver(t, tr.reg, nil)
	c := dial(t, s.URL, nil)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Retrieve(context.Background(), &rcp.RetrieveParams{Query: rcp.TextQuery("federated xhangall"), K: 5})
		errc <- err
	}()
	within.Recv(t, tr.beta.Started, "beta to receive the query")
	within.Recv(t, tr.gamma.Started, "gamma to receive the query")
	time.Sleep(100 * time.Millisecond) // alpha (a child process) has the query by now
	tr.killAlpha()
	tr.betaSrv.Kill()
	tr.gammaSrv.Kill()
	err := <-errc
	var re *rcp.Error
	if !errors.As(err, &re) || re.Code != rcp.CodeBackendUnavailable {
		t.Fatalf("got %v", err)
	}
	for _, id := range []string{"alpha", "beta", "gamma"} {
		if re.Data == nil || !strings.Contains(re.Data.Detail, "engine "+id+" failed") {
			t.Errorf("error detail does not name %s: %+v", id, re.Data)
		}
	}
}

// Acceptance 1: a slow engine is cut at its deadline.
func TestGatewaySlowEngineCut(t *testing.T) {
	tr := trio(t)
	_, s := gatewayOver(t, tr.reg, &federation.GatewayOptions{Federation: federation.Options{EngineTimeout: time.Second}})
	c := dial(t, s.URL, nil)
	start := time.Now()
	res, err := retrieve(t, c, "federated search seine xslowgamma", 5, nil)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if took > 4*time.Second {
		t.Errorf("took %v: the slow engine (5 s) was waited for", took)
	}
	if d := gammaTimedOut(degraded(t, res)); !d {
		t.Errorf("_meta.degraded = %+v", degraded(t, res))
	}
	if !notesContain(res, "engine gamma failed (-32014") || len(res.Hits) == 0 {
		t.Errorf("hits %d, notes = %v", len(res.Hits), res.Usage.Notes)
	}
	// The caller's own deadline also bounds the engines: a 1.5 s budget
	// with a 10 s engine timeout still answers in time.
	_, s2 := gatewayOver(t, tr.reg, nil)
	start = time.Now()
	res, err = retrieve(t, dial(t, s2.URL, nil), "federated search xslowgamma", 5, rcp.Meta{}.Set(rcp.MetaDeadlineMs, 1500))
	if err != nil || time.Since(start) > 4*time.Second {
		t.Fatalf("deadlineMs 1500: %v after %v", err, time.Since(start))
	}
	if !gammaTimedOut(degraded(t, res)) {
		t.Errorf("_meta.degraded = %+v", degraded(t, res))
	}
}

// gammaTimedOut reports whether gamma is listed as timed out (other engines
// may be too on a loaded machine; they are not the point).
func gammaTimedOut(d []federation.Degraded) bool {
	for _, x := range d {
		if x.Engine == "gamma" && x.Code == rcp.CodeTimeout {
			return true
		}
	}
	return false
}

// §16.2: deadlineMs is forwarded strictly smaller and the hop budget is
// decremented with the gateway appended to the path.
func TestGatewayPropagatesBudgetAndHop(t *testing.T) {
	tr := trio(t)
	gw, s := gatewayOver(t, tr.reg, &federation.GatewayOptions{Identity: "gw-main"})
	c := dial(t, s.URL, nil)
	meta := rcp.Meta{}.Set(rcp.MetaDeadlineMs, 4000).Set(rcp.MetaFederation, federation.Hop{Depth: 3, Path: []string{"client-agg"}})
	if _, err := retrieve(t, c, "federated", 3, meta); err != nil {
		t.Fatal(err)
	}
	if _, err := retrieve(t, c, "federated", 3, nil); err != nil {
		t.Fatal(err)
	}
	metas := tr.beta.Metas()
	if len(metas) != 2 {
		t.Fatalf("beta saw %d retrieves", len(metas))
	}
	var ms float64
	if !metas[0].Get(rcp.MetaDeadlineMs, &ms) || ms >= 4000 || ms <= 0 {
		t.Errorf("forwarded deadlineMs = %v, want 0 < d < 4000", ms)
	}
	hop, ok := federation.HopOf(metas[0])
	if !ok || hop.Depth != 2 || !slices.Equal(hop.Path, []string{"client-agg", "gw-main"}) {
		t.Errorf("forwarded hop = %+v", hop)
	}
	hop, _ = federation.HopOf(metas[1])
	if hop.Depth != federation.DefaultDepth-1 || !slices.Equal(hop.Path, []string{gw.Identity()}) {
		t.Errorf("originated hop = %+v", hop)
	}
	if metas[0][rcp.MetaProgressToken] != nil {
		t.Error("the caller's progress token leaked downstream")
	}
}

// Acceptance 1: a gateway listing itself, directly or through a second
// gateway, terminates with the cycle noted; depth 0 answers from nothing.
func TestGatewayCycles(t *testing.T) {
	tr := trio(t)
	t.Run("self", func(t *testing.T) {
		ln := listen(t)
		reg := &federation.Registry{Engines: []federation.EngineSpec{
			{ID: "beta", URL: tr.betaSrv.URL},
			{ID: "me", URL: "http://" + ln.Addr().String() + "/rcp"},
		}}
		gw := federation.NewGateway(reg, &federation.GatewayOptions{Identity: "gw-self", Federation: federation.Options{Client: clientOpts(), Logger: quiet}})
		s := serveOn(t, gw, ln)
		if err := gw.Connect(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		res, err := retrieve(t, dial(t, s.URL, nil), "federated search", 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("self-listing gateway: %d hits, notes %q", len(res.Hits), res.Usage.Notes)
		if !notesContain(res, "federation cycle") || len(res.Hits) == 0 {
			t.Errorf("hits %d notes %v", len(res.Hits), res.Usage.Notes)
		}
	})
	t.Run("through a second gateway", func(t *testing.T) {
		ln1, ln2 := listen(t), listen(t)
		reg1 := &federation.Registry{Engines: []federation.EngineSpec{
			{ID: "beta", URL: tr.betaSrv.URL},
			{ID: "g2", URL: "http://" + ln2.Addr().String() + "/rcp"},
		}}
		reg2 := &federation.Registry{Engines: []federation.EngineSpec{
			{ID: "gamma", URL: tr.gammaSrv.URL},
			{ID: "g1", URL: "http://" + ln1.Addr().String() + "/rcp"},
		}}
		o := func(id string) *federation.GatewayOptions {
			return &federation.GatewayOptions{Identity: id, Federation: federation.Options{Client: clientOpts(), Logger: quiet}}
		}
		g1, g2 := federation.NewGateway(reg1, o("g1")), federation.NewGateway(reg2, o("g2"))
		s1 := serveOn(t, g1, ln1)
		serveOn(t, g2, ln2)
		for _, g := range []*federation.Gateway{g1, g2} {
			if err := g.Connect(ctxT(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		res, err := retrieve(t, dial(t, s1.URL, nil), "federated search seine", 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("g1 -> g2 -> g1: %d hits, notes %q", len(res.Hits), res.Usage.Notes)
		if !notesContain(res, "g2: federation cycle") {
			t.Errorf("notes = %v", res.Usage.Notes)
		}
		from := map[string]bool{}
		for _, h := range res.Hits {
			from[h.Meta["engine"].(string)] = true
		}
		// gamma's hits reach g1 through g2 (the inner origin survives).
		if !from["beta"] || !from["gamma"] {
			t.Errorf("hit origins = %v", from)
		}
		// A request that already passed g1 is refused by g1 itself.
		c := dial(t, s1.URL, nil)
		res, err = retrieve(t, c, "federated", 5, rcp.Meta{}.Set(rcp.MetaFederation, federation.Hop{Depth: 2, Path: []string{"x", "g1"}}))
		if err != nil || len(res.Hits) != 0 || !notesContain(res, `gateway "g1" is already in path`) {
			t.Errorf("own id in path: %v %+v", err, res)
		}
		// Depth 0: no forwarding at all.
		res, err = retrieve(t, c, "federated", 5, rcp.Meta{}.Set(rcp.MetaFederation, federation.Hop{Depth: 0, Path: []string{}}))
		if err != nil || len(res.Hits) != 0 || !notesContain(res, "hop budget exhausted") {
			t.Errorf("depth 0: %v %+v", err, res)
		}
		// Routed methods obey the same rules.
		_, err = c.Embed(ctxT(t, 5*time.Second), &rcp.EmbedParams{Inputs: rcp.TextInputs("x"), Meta: rcp.Meta{}.Set(rcp.MetaFederation, federation.Hop{Depth: 0})})
		if codeOf(err) != rcp.CodeBackendUnavailable {
			t.Errorf("embed at depth 0: %v", err)
		}
	})
}

// embed, rerank and graph are routed to one fixed engine each.
func TestGatewayRouting(t *testing.T) {
	tr := trio(t)
	_, s := gatewayOver(t, tr.reg, nil)
	c := dial(t, s.URL, nil)
	ctx := ctxT(t, 20*time.Second)
	for range 3 {
		res, err := c.Embed(ctx, &rcp.EmbedParams{Inputs: rcp.TextInputs("paris", "seine")})
		if err != nil {
			t.Fatal(err)
		}
		var eng string
		if res.Meta.Get("engine", &eng); eng != "alpha" {
			t.Fatalf("embed served by %q, want alpha (first by priority)", eng)
		}
	}
	rr, err := c.Rerank(ctx, &rcp.RerankParams{Query: rcp.TextQuery("paris seine"), Passages: rcp.TextInputs("the seine", "paris seine")})
	if err != nil || len(rr.Scores) != 2 || rr.Scores[1] != 1 {
		t.Fatalf("rerank: %v %+v", err, rr)
	}
	g, err := c.Graph(ctx, &rcp.GraphParams{Op: "local", Query: "seine"})
	if err != nil || len(g.Hits) == 0 || g.Hits[0].Meta["engine"] != "gamma" {
		t.Fatalf("graph: %v %+v", err, g)
	}
	// An op nobody serves: the client gates it as -32005 before any I/O;
	// sent raw, the gateway answers the same.
	var raw json.RawMessage
	err = c.Call(ctx, rcp.MethodGraph, map[string]any{"op": "global"}, &raw)
	if codeOf(err) != rcp.CodeOptionUnsupported {
		t.Errorf("unserved op: %v", err)
	}
	// Engine errors pass through with their code.
	err = c.Call(ctx, rcp.MethodEmbed, map[string]any{"inputs": []string{}}, &raw)
	if codeOf(err) != rcp.CodeInvalidParams {
		t.Errorf("engine -32602 not passed through: %v", err)
	}
	// The embed engine dies: -32010, never another engine's vector space.
	tr.killAlpha()
	time.Sleep(100 * time.Millisecond)
	_, err = c.Embed(ctx, &rcp.EmbedParams{Inputs: rcp.TextInputs("paris")})
	if codeOf(err) != rcp.CodeBackendUnavailable {
		t.Errorf("embed after its engine died: %v", err)
	}
}

// Progress from engines is forwarded as the gateway's own notifications.
func TestGatewayForwardsProgress(t *testing.T) {
	tr := trio(t)
	_, s := gatewayOver(t, tr.reg, nil)
	c := dial(t, s.URL, nil)
	var mu sync.Mutex
	var frames []rcp.ProgressParams
	ctx := rcp.WithProgress(ctxT(t, 10*time.Second), func(p rcp.ProgressParams) {
		mu.Lock()
		frames = append(frames, p)
		mu.Unlock()
	})
	if _, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("federated"), K: 3}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var fanout, fromEngine int
	for _, f := range frames {
		switch {
		case f.Stage == "fanout":
			fanout++
		case strings.HasPrefix(f.Message, "engine ") && f.Stage == "recall":
			fromEngine++
		}
	}
	if fanout != 3 || fromEngine < 2 {
		t.Errorf("fanout frames %d, engine frames %d: %+v", fanout, fromEngine, frames)
	}
}

// The gateway applies its own option rules (§7.7 strict).
func TestGatewayRetrieveOptions(t *testing.T) {
	tr := trio(t)
	_, s := gatewayOver(t, tr.reg, nil)
	c := dial(t, s.URL, nil)
	ctx := ctxT(t, 10*time.Second)
	var raw json.RawMessage
	cases := []struct {
		params map[string]any
		code   rcp.Code
	}{
		{map[string]any{"query": "x", "k": 0}, rcp.CodeInvalidParams},
		{map[string]any{"k": 3}, rcp.CodeInvalidParams},
		{map[string]any{"query": "x", "k": 3, "mode": "dense"}, rcp.CodeOptionUnsupported},
		{map[string]any{"query": "x", "k": 3, "mmr": map[string]any{}}, rcp.CodeOptionUnsupported},
		{map[string]any{"query": "x", "k": 3, "cursor": "abc"}, rcp.CodeInvalidParams}, // the gateway pages (gateway_pages.go): a foreign cursor is malformed
		{map[string]any{"query": "x", "k": 3, "fusion": map[string]any{"method": "bogus"}}, rcp.CodeOptionUnsupported},
		{map[string]any{"query": "x", "k": 3, "rewrite": "step-back"}, rcp.CodeOptionUnsupported}, // no engine advertises transform
		{map[string]any{"query": "federated", "k": 3, "rewrite": false}, 0},
		{map[string]any{"query": "federated", "k": 3, "mode": "dense", "strict": false}, 0},
		{map[string]any{"query": "federated", "k": 500}, 0},
		{map[string]any{"query": "federated", "k": 3, "fusion": map[string]any{"method": "convex"}}, 0},
	}
	for _, tc := range cases {
		err := c.Call(ctx, rcp.MethodRetrieve, json.RawMessage(mustJSON(t, tc.params)), &raw)
		if tc.code == 0 && err != nil || tc.code != 0 && codeOf(err) != tc.code {
			t.Errorf("%v: got %v, want code %d", tc.params, err, tc.code)
		}
	}
	// convex without scoreFloor everywhere falls back to RRF, noted.
	var res rcp.RetrieveResult
	if err := c.Call(ctx, rcp.MethodRetrieve, map[string]any{"query": "federated", "k": 3, "fusion": map[string]any{"method": "convex"}}, &res); err != nil {
		t.Fatal(err)
	}
	if !notesContain(&res, "fell back to rrf") {
		t.Errorf("notes = %v", res.Usage.Notes)
	}
	// strict:false drops an un-advertised rewrite and says so.
	res = rcp.RetrieveResult{}
	if err := c.Call(ctx, rcp.MethodRetrieve, map[string]any{"query": "federated", "k": 3, "rewrite": "step-back", "strict": false}, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 || !notesContain(&res, `query rewrite "step-back" is not advertised; ignored`) {
		t.Errorf("hits %d, notes %v", len(res.Hits), res.Usage.Notes)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
