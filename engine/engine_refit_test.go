package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

// A refit of the LSA basis waits until writes pause (so it does not take
// the CPU from adds being acknowledged); new units are embedded with the
// published basis meanwhile, and the refit runs once writes have paused.
func TestRefitWaitsForWritesToPause(t *testing.T) {
	ctx := context.Background()
	e := quietEngine(t, Config{MinFitDocs: 40, refitQuiet: time.Hour})
	c := connect(t, e)
	if _, err := c.IndexAdd(ctx, &rcp.IndexAddParams{Documents: topicDocs("a", 60, 1)}); err != nil {
		t.Fatal(err)
	}
	settle(t, e) // the first fit does not wait
	first := e.DenseIdentity()
	if !strings.HasPrefix(first, "lsa-") {
		t.Fatalf("no first fit: %q", first)
	}

	// Doubling the corpus makes a refit due; the writes are recent (within
	// refitQuiet), so the new units go into the published generation.
	if _, err := c.IndexAdd(ctx, &rcp.IndexAddParams{Documents: topicDocs("b", 80, 2)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // a hang guard, not a timing bound
	for e.published().Applied() < e.dense.Seq() {
		if time.Now().After(deadline) {
			t.Fatal("the new units were not embedded within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := e.DenseIdentity(); got != first {
		t.Fatalf("refit while writes were recent: identity %q, want %q", got, first)
	}
	res, err := connect(t, e).Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("piston torque"), K: 10, Mode: rcp.ModeDense})
	if err != nil {
		t.Fatal(err)
	}
	newUnits := 0
	for _, h := range res.Hits {
		if strings.HasPrefix(h.ID.String(), "b") {
			newUnits++
		}
	}
	if newUnits == 0 {
		t.Fatalf("no new unit found by dense retrieve under the published basis: %+v", res.Hits)
	}

	// Writes have paused: the refit runs.
	e.dense.Backdate(time.Now().Add(-2 * time.Hour))
	settle(t, e)
	if got := e.DenseIdentity(); got == first || !strings.HasPrefix(got, "lsa-") {
		t.Fatalf("no refit once writes paused: identity %q", got)
	}
}
