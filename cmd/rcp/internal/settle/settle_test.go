package settle

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

// states serves one readiness per info call, the last one forever.
func states(rs ...rcp.Readiness) (Info, *int) {
	n := 0
	return func(context.Context) (rcp.Meta, error) {
		r := rs[min(n, len(rs)-1)]
		n++
		return rcp.Meta{}.Set(rcp.MetaRCPGoReadiness, r), nil
	}, &n
}

func TestWaitUntilSettled(t *testing.T) {
	building := rcp.Readiness{"dense": {State: rcp.StateBuilding, Phase: "embed", Done: 10, Total: 40, Unit: "units"},
		"graph": {State: rcp.StateReady}}
	stale := rcp.Readiness{"dense": {State: rcp.StateStale, Phase: "refit"}, "graph": {State: rcp.StateReady}}
	done := rcp.Readiness{"dense": {State: rcp.StateReady}, "graph": {State: rcp.StateReady}, "tree": {State: rcp.StateWaiting, Detail: "x"}}
	info, calls := states(building, stale, done)
	var out bytes.Buffer
	r, err := Wait(context.Background(), info, &out, time.Millisecond)
	if err != nil || !r.Settled() || *calls != 3 {
		t.Fatalf("%v %v after %d calls", err, r, *calls)
	}
	if s := out.String(); !strings.Contains(s, "dense building (embed)") || !strings.Contains(s, "dense stale (refit)") {
		t.Fatalf("progress %q", s)
	}
	// A server that reports no readiness is settled at once.
	none := func(context.Context) (rcp.Meta, error) { return nil, nil }
	if _, err := Wait(context.Background(), none, nil, time.Hour); err != nil {
		t.Fatal(err)
	}
}

func TestWaitTimesOut(t *testing.T) {
	info, _ := states(rcp.Readiness{"graph": {State: rcp.StateStale}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := Wait(ctx, info, nil, 5*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "graph stale") {
		t.Fatalf("%v", err)
	}
}
