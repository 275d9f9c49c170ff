package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/retain"
	"github.com/rcpgo/rcpgo/rcp"
)

// connectWith is connect with client options.
func connectWith(t *testing.T, e *Engine, opts *rcp.ClientOptions) *rcp.Client {
	t.Helper()
	c, err := rcp.ConnectInProcess(context.Background(), rcp.NewServer(e, nil), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// refit doubles the corpus (new documents prefixed p) and waits until the
// deriver has published a generation under a new identity.
func refit(t *testing.T, e *Engine, c *rcp.Client, p string, n int, seed uint64) string {
	t.Helper()
	before := e.DenseIdentity()
	if _, err := c.IndexAdd(context.Background(), &rcp.IndexAddParams{Documents: topicDocs(p, n, seed)}); err != nil {
		t.Fatal(err)
	}
	settle(t, e)
	after := e.DenseIdentity()
	if after == before || !strings.HasPrefix(after, "lsa-") {
		t.Fatalf("no refit: identity %q before, %q after", before, after)
	}
	return after
}

// Issue 31, acceptance 1: refits during a 225-query dense run in one
// session break none of its calls — the session keeps the generation it
// negotiated (and the writes made meanwhile are applied to it), new
// sessions get the newest. The client does not re-initialize here
// (NoReinitialize): the server alone keeps the session working. Before,
// every dense call after the first refit failed with -32010.
func TestRefitsDuringDenseRun(t *testing.T) {
	ctx := context.Background()
	e := quietEngine(t, Config{MinFitDocs: 20, refitQuiet: time.Millisecond})
	writer := connect(t, e)
	if _, err := writer.IndexAdd(ctx, &rcp.IndexAddParams{Documents: topicDocs("a", 40, 1)}); err != nil {
		t.Fatal(err)
	}
	settle(t, e)
	s := connectWith(t, e, &rcp.ClientOptions{NoReinitialize: true})
	negotiated := identity(s)
	if negotiated != e.DenseIdentity() || negotiated == "" {
		t.Fatalf("session negotiated %q, published %q", negotiated, e.DenseIdentity())
	}
	words := []string{"coral reef", "piston torque", "compost soil", "bond yield", "tide wave", "gear crank"}
	corpus, identities := 40, map[string]bool{negotiated: true}
	errs := 0
	for i := range 225 {
		if i > 0 && i%75 == 0 {
			identities[refit(t, e, writer, fmt.Sprintf("r%d-", i), corpus, uint64(i))] = true
			corpus *= 2
		}
		mode := rcp.ModeDense
		if i%5 == 4 {
			mode = rcp.ModeHybrid
		}
		res, err := s.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery(words[i%len(words)]), K: 5, Mode: mode})
		if err != nil {
			errs++
			if errs <= 3 {
				t.Errorf("query %d (%s) after %d refits: %v", i, mode, len(identities)-1, err)
			}
			continue
		}
		if len(res.Hits) == 0 {
			t.Errorf("query %d: no hits", i)
		}
	}
	if errs > 0 {
		t.Fatalf("%d of 225 queries failed", errs)
	}
	if len(identities) != 3 {
		t.Fatalf("%d generations, want 3 (two refits)", len(identities))
	}
	if identity(s) != negotiated {
		t.Fatal("the session's capabilities changed")
	}
	// A new session gets the newest generation.
	if late := connect(t, e); identity(late) != e.DenseIdentity() {
		t.Fatalf("a new session negotiated %q, published %q", identity(late), e.DenseIdentity())
	}
	// The kept generations received every write (read-your-writes in
	// their sessions too).
	for _, g := range e.dense.Kept() {
		if g.Applied() != e.dense.Seq() {
			t.Errorf("kept generation %d applied %d of %d ops", g.N(), g.Applied(), e.dense.Seq())
		}
	}
}

// Past the bounds a session's generation is dropped: its dense calls get
// the capabilities-changed error, and the Go client re-initializes and
// retries once (with NoReinitialize the caller sees the error).
func TestDroppedGenerationReinitializes(t *testing.T) {
	ctx := context.Background()
	e := quietEngine(t, Config{MinFitDocs: 20, refitQuiet: time.Millisecond, DenseRetain: retain.Options{Max: -1}})
	writer := connect(t, e)
	if _, err := writer.IndexAdd(ctx, &rcp.IndexAddParams{Documents: topicDocs("a", 40, 1)}); err != nil {
		t.Fatal(err)
	}
	settle(t, e)
	plain := connectWith(t, e, &rcp.ClientOptions{NoReinitialize: true})
	auto := connect(t, e)
	first := identity(auto)
	second := refit(t, e, writer, "b", 40, 2)
	q := &rcp.RetrieveParams{Query: rcp.TextQuery("coral reef"), K: 3, Mode: rcp.ModeDense}
	_, err := plain.Retrieve(ctx, q)
	var re *rcp.Error
	if !asRCP(err, &re) || !re.CapabilitiesChanged() || !re.Retryable() || !strings.Contains(re.Data.Detail, second) {
		t.Fatalf("dense call on a dropped generation: %v, want the capabilities-changed error naming %q", err, second)
	}
	if res, err := plain.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("coral"), K: 3}); err != nil || len(res.Hits) == 0 {
		t.Fatalf("sparse is unaffected: %v", err)
	}
	res, err := auto.Retrieve(ctx, q)
	if err != nil || len(res.Hits) == 0 {
		t.Fatalf("the client did not re-initialize: %v", err)
	}
	if identity(auto) == first || identity(auto) != second {
		t.Fatalf("after re-initializing the client negotiated %q, want %q", identity(auto), second)
	}
}

func asRCP(err error, re **rcp.Error) bool {
	e, ok := rcp.AsError(err)
	if !ok || e == nil {
		return false
	}
	*re = e
	return true
}
