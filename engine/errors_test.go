package engine

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine/internal/readiness"
	"github.com/rcpgo/rcpgo/rcp"
)

// The error table gives a structure that is not built yet the -32010 its
// layer means: retryable with this occurrence's retryAfterMs while it is
// building, not retryable while it waits for data, the detail kept (the
// readiness package returns sentinels; the client sees these).
func TestErrorTableTranslatesReadiness(t *testing.T) {
	e := &Engine{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, tc := range []struct {
		name      string
		state     rcp.DerivedState
		retryable bool
		after     int64 // 0: no retryAfterMs
		detail    string
	}{
		{"building", rcp.DerivedState{State: rcp.StateBuilding, Phase: "embed", ETAMs: 4000, Done: 1, Total: 4, Unit: "units"}, true, 4000, "1/4 units"},
		{"waiting", rcp.DerivedState{State: rcp.StateWaiting, Detail: "LSA needs ≥ 20 documents; 1 indexed"}, false, 0, "1 indexed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.rpcError(context.Background(), rcp.MethodRetrieve, readiness.NotReady("the dense index", tc.state))
			re, ok := rcp.AsError(err)
			if !ok || re.Code != rcp.CodeBackendUnavailable || re.Retryable() != tc.retryable || !strings.Contains(re.Data.Detail, tc.detail) {
				t.Fatalf("%v (data %+v)", err, re.Data)
			}
			var got int64 // 0: none
			if re.Data.RetryAfterMs != nil {
				got = *re.Data.RetryAfterMs
			}
			if got != tc.after {
				t.Fatalf("retryAfterMs %d, want %d (0: none)", got, tc.after)
			}
		})
	}
}
