package federation_test

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/testutil/fedtest"
	"github.com/rcpgo/rcpgo/internal/testutil/gobuild"
	"github.com/rcpgo/rcpgo/rcp"
)

// buildRcpd builds cmd/rcpd into a temporary directory (skipped with -short:
// the build is the slow part).
func buildRcpd(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds cmd/rcpd; skipped with -short")
	}
	return gobuild.Binary(t, t.TempDir(), "github.com/rcpgo/rcpgo/cmd/rcpd")
}

// hitOrigins retrieves k hits for query through the gateway client c and
// counts them by the engine they came from.
func hitOrigins(ctx context.Context, t *testing.T, c *rcp.Client, query string, k int) (map[string]int, *rcp.RetrieveResult) {
	t.Helper()
	res, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery(query), K: k})
	if err != nil {
		t.Fatal(err)
	}
	from := map[string]int{}
	for _, h := range res.Hits {
		from[h.Meta["engine"].(string)]++
	}
	return from, res
}

func docsOf(name string) []rcp.Document {
	var docs []rcp.Document
	for _, d := range fedtest.Corpora[name] {
		docs = append(docs, rcp.Document{ID: d.ID, Text: d.Text, Meta: map[string]any{"corpus": name}})
	}
	return docs
}

// The real engine behind the gateway: rcpd over stdio and over HTTP, each
// with its own corpus, next to an in-process engine.
func TestRcpdEngines(t *testing.T) {
	if testing.Short() {
		t.Skip("federates spawned rcpd engines; skipped with -short")
	}
	bin := buildRcpd(t)
	ctx := ctxT(t, 60*time.Second)
	stdioData, httpData := t.TempDir(), t.TempDir()

	// Load alpha's corpus into the stdio engine's data directory.
	c, err := rcp.ConnectStdio(ctx, []string{bin, "serve", "--stdio", "--data", stdioData, "--log-level", "error"}, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.IndexAdd(ctx, &rcp.IndexAddParams{Documents: docsOf("alpha")}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// The HTTP engine holds beta's corpus.
	ln := listen(t)
	addr := ln.Addr().String() // a free port for rcpd
	_ = ln.Close()
	var stderr bytes.Buffer
	proc := exec.Command(bin, "serve", "--http", addr, "--data", httpData, "--http-sessions", "stateless", "--log-level", "error")
	proc.Stderr = &stderr
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Process.Kill(); _ = proc.Wait() })
	url := "http://" + addr + "/rcp"
	var hc *rcp.Client
	for deadline := time.Now().Add(20 * time.Second); ; {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		hc, err = rcp.ConnectHTTP(actx, url, clientOpts())
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rcpd --http did not come up: %v\n%s", err, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := hc.IndexAdd(ctx, &rcp.IndexAddParams{Documents: docsOf("beta")}); err != nil {
		t.Fatal(err)
	}
	_ = hc.Close()

	_, gamma := httpEngine(t, "gamma", nil)
	reg := &federation.Registry{Engines: []federation.EngineSpec{
		{ID: "rcpd-stdio", Command: []string{bin, "serve", "--stdio", "--data", stdioData, "--log-level", "error"}},
		{ID: "rcpd-http", URL: url},
		{ID: "gamma", URL: gamma.URL},
	}}
	_, s := gatewayOver(t, reg, nil)
	gc := dial(t, s.URL, nil)
	from, res := hitOrigins(ctx, t, gc, "federated search fusion ranked results", 6)
	t.Logf("origins %v, notes %q", from, res.Usage.Notes)
	if from["rcpd-stdio"] == 0 || from["rcpd-http"] == 0 {
		t.Errorf("origins = %v", from)
	}
	if len(degraded(t, res)) != 0 {
		t.Errorf("degraded: %+v", degraded(t, res))
	}
	cat, err := gc.CatalogList(ctx)
	if err != nil || len(cat.Engines) != 3 || cat.Engines[0].Server.Name != "rcpd" || cat.Engines[1].Endpoint == nil {
		t.Fatalf("catalog: %v %+v", err, cat)
	}
	// rcpd advertises sparse, the toy engine does not: the gateway serves
	// mode sparse from the rcpd engines only (the toy one is skipped).
	res, err = gc.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("fusion ranked"), K: 3, Mode: rcp.ModeSparse})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range res.Hits {
		if !strings.HasPrefix(h.Meta["engine"].(string), "rcpd") {
			t.Errorf("sparse hit from %v", h.Meta["engine"])
		}
	}
	if len(res.Hits) == 0 || len(degraded(t, res)) != 0 {
		t.Errorf("mode sparse: %+v", res)
	}
	t.Logf("gateway capabilities: retrieve %+v, embed %+v", gc.Capabilities().Retrieve, gc.Capabilities().Embed)
}
