package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/internal/gate"
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
	for e.gen.Load().applied.Load() < e.opSeq.Load() {
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
	e.lastWrite.Store(time.Now().Add(-2 * time.Hour).UnixNano())
	settle(t, e)
	if got := e.DenseIdentity(); got == first || !strings.HasPrefix(got, "lsa-") {
		t.Fatalf("no refit once writes paused: identity %q", got)
	}
}

func TestRefitWait(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	published := &generation{}
	for _, tc := range []struct {
		name      string
		dense     string
		gen       *generation
		lastWrite time.Time
		dueSince  time.Time // zero: the refit becomes due now
		queued    int64     // writes waiting in the commit queue
		want      time.Duration
	}{
		{"first fit", DenseLSA, nil, now, time.Time{}, 0, 0},
		{"external encoder", DenseOpenAI, published, now, time.Time{}, 0, 0},
		{"writes just now", DenseLSA, published, now, time.Time{}, 0, 2 * time.Second},
		{"last write 1.5 s ago", DenseLSA, published, now.Add(-1500 * time.Millisecond), time.Time{}, 0, 500 * time.Millisecond},
		{"writes paused", DenseLSA, published, now.Add(-3 * time.Second), time.Time{}, 0, 0},
		{"last commit 3 s ago, a write queued behind a stalled commit", DenseLSA, published, now.Add(-3 * time.Second), time.Time{}, 1, 2 * time.Second},
		{"steady writes, due for 4m59s", DenseLSA, published, now, now.Add(-refitMaxLag + time.Second), 0, time.Second},
		{"steady writes, due for the max lag", DenseLSA, published, now, now.Add(-refitMaxLag), 0, 0},
		{"a write queued, due for the max lag", DenseLSA, published, now.Add(-3 * time.Second), now.Add(-refitMaxLag), 1, 0},
	} {
		e := &Engine{cfg: Config{Dense: tc.dense, refitQuiet: 2 * time.Second}, gate: gate.New(0, 2)}
		e.lastWrite.Store(tc.lastWrite.UnixNano())
		e.gate.Queue(tc.queued)
		dv := &deriver{e: e, refitSince: tc.dueSince}
		if got := dv.refitWait(tc.gen, now); got != tc.want {
			t.Errorf("%s: wait %v, want %v", tc.name, got, tc.want)
		}
	}
}
