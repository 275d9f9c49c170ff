package federation_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/rcp"
)

// rcpdEngines opens n engines (rcpd's, in process) with corpora of their
// own and returns them as gateway engine handles.
func rcpdEngines(t *testing.T, n int) ([]*engine.Engine, []*federation.Engine) {
	t.Helper()
	var engs []*engine.Engine
	var handles []*federation.Engine
	for i := range n {
		e, err := engine.Open(context.Background(), engine.Config{Dir: t.TempDir(), Dense: engine.DenseNone,
			Fields: map[string]string{"corpus": "keyword"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		var docs []rcp.Document
		for j := range 30 {
			docs = append(docs, rcp.Document{ID: fmt.Sprintf("e%d-%02d", i, j), Text: fmt.Sprintf("federated paging test document %d of engine %d", j, i),
				Meta: map[string]any{"corpus": fmt.Sprintf("c%d", i)}})
		}
		if _, err := e.Call(context.Background(), rcp.MethodIndexAdd, mustRaw(t, rcp.IndexAddParams{Documents: docs})); err != nil {
			t.Fatal(err)
		}
		srv := rcp.NewServer(e, &rcp.ServerOptions{Logger: quiet})
		engs = append(engs, e)
		handles = append(handles, federation.NewEngineFunc(federation.EngineSpec{ID: fmt.Sprintf("e%d", i)}, func(ctx context.Context) (*rcp.Client, error) {
			return rcp.ConnectInProcess(ctx, srv, clientOpts())
		}))
	}
	return engs, handles
}

func mustRaw(t *testing.T, v any) []byte { t.Helper(); return mustJSON(t, v) }

// Issue 31: the gateway advertises what a call through it gets — its
// engines' common defaultMode (it said hybrid while its engines ran
// sparse), filter, pagination, session and index (writes go to the first
// writable engine), and a level that reflects its reachable engines (L2
// with every engine down).
func TestGatewayCapabilitiesTellTheTruth(t *testing.T) {
	_, handles := rcpdEngines(t, 2)
	gw := federation.NewGatewayEngines(handles, &federation.GatewayOptions{Federation: federation.Options{Logger: quiet}})
	defer gw.Close()
	ctx := ctxT(t, 30*time.Second)
	if err := gw.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	d := gw.Describe(ctx)
	c := d.Capabilities
	if c.Retrieve.DefaultMode != rcp.ModeSparse {
		t.Errorf("defaultMode %q, want the engines' sparse", c.Retrieve.DefaultMode)
	}
	if c.Filter == nil || c.Filter.FieldTypes()["corpus"] != "keyword" {
		t.Errorf("filter %+v, want the engines' common field corpus", c.Filter)
	}
	if c.Pagination == nil || c.Session == nil || c.Index == nil || !c.Index.Writable {
		t.Errorf("pagination %v session %v index %v", c.Pagination, c.Session, c.Index)
	}
	if d.Conformance != rcp.LevelL2 {
		t.Errorf("level %s with both engines up", d.Conformance)
	}
	// Writes are routed to one engine, and found through the gateway.
	srv := rcp.NewServer(gw, &rcp.ServerOptions{Logger: quiet})
	cl, err := rcp.ConnectInProcess(ctx, srv, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.IndexAdd(ctx, &rcp.IndexAddParams{Documents: []rcp.Document{{ID: "routed", Text: "zanzibar routed write"}}}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("zanzibar"), K: 3})
	if err != nil || len(res.Hits) == 0 || res.Hits[0].ID.String() != "routed" {
		t.Fatalf("the routed write through the gateway: %v %+v", err, res)
	}
	if _, err := cl.IndexDelete(ctx, &rcp.IndexDeleteParams{IDs: []string{"routed"}}); err != nil {
		t.Fatal(err)
	}

	// Every engine down: L0.
	down := federation.NewGatewayEngines([]*federation.Engine{federation.NewEngineFunc(federation.EngineSpec{ID: "gone"},
		func(context.Context) (*rcp.Client, error) { return nil, fmt.Errorf("connection refused") })},
		&federation.GatewayOptions{Federation: federation.Options{Logger: quiet}})
	defer down.Close()
	_ = down.Connect(ctx)
	if l := down.Describe(ctx).Conformance; l != rcp.LevelL0 {
		t.Errorf("level %s with every engine down, want L0", l)
	}
}

// Issue 31: the gateway pages its fused list — no hit twice, none skipped,
// the pages are the list one deep request gets, also when the engines'
// indexes change between pages. Before, it refused a cursor.
func TestGatewayPages(t *testing.T) {
	engs, handles := rcpdEngines(t, 2)
	gw := federation.NewGatewayEngines(handles, &federation.GatewayOptions{Federation: federation.Options{Logger: quiet}})
	defer gw.Close()
	ctx := ctxT(t, 30*time.Second)
	if err := gw.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	cl, err := rcp.ConnectInProcess(ctx, rcp.NewServer(gw, &rcp.ServerOptions{Logger: quiet}), clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	q := &rcp.RetrieveParams{Query: rcp.TextQuery("federated paging document"), K: 20}
	full, err := cl.Retrieve(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, h := range full.Hits {
		want = append(want, h.ID.String())
	}
	q = &rcp.RetrieveParams{Query: rcp.TextQuery("federated paging document"), K: 3}
	for page := 0; ; page++ {
		res, err := cl.Retrieve(ctx, q)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		for _, h := range res.Hits {
			got = append(got, h.ID.String())
		}
		if res.NextCursor == "" {
			break
		}
		q.Cursor = res.NextCursor
		// the engines change under the pages
		if _, err := engs[0].Call(ctx, rcp.MethodIndexDelete, mustRaw(t, rcp.IndexDeleteParams{IDs: []string{fmt.Sprintf("e0-%02d", page)}})); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages %v\nwant  %v", got, want)
	}
}
