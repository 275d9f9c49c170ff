package federation_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/testutil/fedtest"
	"github.com/rcpgo/rcpgo/rcp"
)

// inProcess returns an engine handle over a fedtest engine served through
// rcp.ConnectInProcess.
func inProcess(t *testing.T, e *fedtest.Engine, spec federation.EngineSpec) *federation.Engine {
	t.Helper()
	srv := rcp.NewServer(e.Router(), &rcp.ServerOptions{Logger: quiet})
	h := federation.NewEngineFunc(spec, func(ctx context.Context) (*rcp.Client, error) {
		return rcp.ConnectInProcess(ctx, srv, clientOpts())
	})
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func floor(f float64) *float64 { return &f }

func TestFederationRetrieve(t *testing.T) {
	alpha := fedtest.New("alpha", fedtest.Features{ScoreFloor: floor(0)})
	beta := fedtest.New("beta", fedtest.Features{ScoreFloor: floor(0), Modes: []string{rcp.ModeHybrid, rcp.ModeDense}})
	gamma := fedtest.New("gamma", fedtest.Features{})
	w2 := 2.0
	engines := []*federation.Engine{
		inProcess(t, alpha, federation.EngineSpec{ID: "alpha"}),
		inProcess(t, beta, federation.EngineSpec{ID: "beta", Weight: &w2}),
	}
	ctx := ctxT(t, 20*time.Second)
	q := rcp.TextQuery("federated search fusion ranked results")

	tests := []struct {
		name       string
		opts       federation.Options
		params     rcp.RetrieveParams
		wantFusion string
		wantTop    string
	}{
		{"rrf by default", federation.Options{}, rcp.RetrieveParams{Query: q, K: 4}, rcp.FusionRRF, "shared-1"},
		{"auto picks convex when every engine has a floor", federation.Options{Fusion: federation.FusionAuto}, rcp.RetrieveParams{Query: q, K: 4}, rcp.FusionConvex, "shared-1"},
		{"request's fusion wins", federation.Options{}, rcp.RetrieveParams{Query: q, K: 4, Fusion: &rcp.FusionOptions{Method: rcp.FusionWeighted}}, rcp.FusionWeighted, "shared-1"},
		{"dedup by citation uri", federation.Options{Dedup: federation.DedupCitationURI}, rcp.RetrieveParams{Query: q, K: 4}, rcp.FusionRRF, "shared-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Logger = quiet
			f := federation.NewFromEngines(engines, &tc.opts)
			res, err := f.Retrieve(ctx, &tc.params)
			if err != nil {
				t.Fatal(err)
			}
			var fm struct{ Method string }
			res.Meta.Get("fusion", &fm)
			if fm.Method != tc.wantFusion {
				t.Errorf("fusion = %q, want %q", fm.Method, tc.wantFusion)
			}
			if len(res.Hits) == 0 || res.Hits[0].ID.String() != tc.wantTop {
				t.Fatalf("hits = %+v", res.Hits)
			}
			if len(res.Hits) > tc.params.K {
				t.Errorf("%d hits for k=%d", len(res.Hits), tc.params.K)
			}
			for _, h := range res.Hits {
				if h.Meta["engine"] == nil || h.Meta["engineRank"] == nil {
					t.Errorf("hit %s lacks its origin: %v", h.ID, h.Meta)
				}
			}
		})
	}

	// Mode filtering: only beta advertises dense; alpha is skipped, not failed.
	f := federation.NewFromEngines(engines, &federation.Options{Logger: quiet})
	res, err := f.Retrieve(ctx, &rcp.RetrieveParams{Query: q, K: 4, Mode: rcp.ModeDense})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range res.Hits {
		if h.Meta["engine"] != "beta" {
			t.Errorf("dense hit from %v", h.Meta["engine"])
		}
	}
	if len(degraded(t, res)) != 0 {
		t.Errorf("a skipped engine was reported degraded: %+v", degraded(t, res))
	}
	// The originating hop budget is depth 3, path [].
	hop, ok := federation.HopOf(beta.Metas()[len(beta.Metas())-1])
	if !ok || hop.Depth != federation.DefaultDepth || len(hop.Path) != 0 {
		t.Errorf("originated hop = %+v", hop)
	}

	// Convex falls back to RRF (noted) once an engine lacks scoreFloor.
	f3 := federation.NewFromEngines(append(engines, inProcess(t, gamma, federation.EngineSpec{ID: "gamma"})), &federation.Options{Logger: quiet, Fusion: rcp.FusionConvex})
	res, err = f3.Retrieve(ctx, &rcp.RetrieveParams{Query: q, K: 4})
	if err != nil || !notesContain(res, "fell back to rrf") {
		t.Fatalf("%v %+v", err, res)
	}
	// Effective vs guaranteed.
	if eff, guar := f3.Effective(), f3.Guaranteed(); eff.Retrieve == nil || len(eff.Retrieve.Modes) != 2 || len(guar.Retrieve.Modes) != 1 {
		t.Errorf("effective %+v guaranteed %+v", eff.Retrieve, guar.Retrieve)
	}
}

func TestFederationNoEngine(t *testing.T) {
	f := federation.NewFromEngines(nil, &federation.Options{Logger: quiet})
	_, err := f.Retrieve(ctxT(t, 5*time.Second), &rcp.RetrieveParams{Query: rcp.TextQuery("x"), K: 1})
	if codeOf(err) != rcp.CodeBackendUnavailable {
		t.Fatalf("got %v", err)
	}
}

// A rewrite method one engine serves goes to that engine; the others get
// the query as asked, and say so, instead of failing the method (-32005).
func TestFederationRewritePerEngine(t *testing.T) {
	alpha := fedtest.New("alpha", fedtest.Features{Rewrites: []string{"multi-query"}})
	beta := fedtest.New("beta", fedtest.Features{})
	f := federation.NewFromEngines([]*federation.Engine{
		inProcess(t, alpha, federation.EngineSpec{ID: "alpha"}),
		inProcess(t, beta, federation.EngineSpec{ID: "beta"}),
	}, &federation.Options{Logger: quiet})
	m := rcp.Rewrite("multi-query")
	res, err := f.Retrieve(ctxT(t, 20*time.Second), &rcp.RetrieveParams{Query: rcp.TextQuery("federated search fusion"), K: 4, Rewrite: &m})
	if err != nil {
		t.Fatal(err)
	}
	var engines []federation.EngineStatus
	res.Meta.Get(federation.MetaEngines, &engines)
	for _, e := range engines {
		if e.Status != "ok" {
			t.Errorf("engine %s: %s %s", e.ID, e.Status, e.Message)
		}
	}
	for _, want := range []string{`alpha: query rewrite "multi-query" applied`, `beta: query rewrite "multi-query" is not advertised by this engine; its query was sent as is`} {
		if !slices.Contains(res.Usage.Notes, want) {
			t.Errorf("notes %q lack %q", res.Usage.Notes, want)
		}
	}
}
