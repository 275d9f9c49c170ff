package derive

import (
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/internal/gate"
)

func TestRefitWait(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	published := &Generation{}
	for _, tc := range []struct {
		name      string
		dense     string
		gen       *Generation
		lastWrite time.Time
		dueSince  time.Time // zero: the refit becomes due now
		queued    int64     // writes waiting in the commit queue
		want      time.Duration
	}{
		{"first fit", lsaKind, nil, now, time.Time{}, 0, 0},
		{"external encoder", "openai", published, now, time.Time{}, 0, 0},
		{"writes just now", lsaKind, published, now, time.Time{}, 0, 2 * time.Second},
		{"last write 1.5 s ago", lsaKind, published, now.Add(-1500 * time.Millisecond), time.Time{}, 0, 500 * time.Millisecond},
		{"writes paused", lsaKind, published, now.Add(-3 * time.Second), time.Time{}, 0, 0},
		{"last commit 3 s ago, a write queued behind a stalled commit", lsaKind, published, now.Add(-3 * time.Second), time.Time{}, 1, 2 * time.Second},
		{"steady writes, due for 4m59s", lsaKind, published, now, now.Add(-refitMaxLag + time.Second), 0, time.Second},
		{"steady writes, due for the max lag", lsaKind, published, now, now.Add(-refitMaxLag), 0, 0},
		{"a write queued, due for the max lag", lsaKind, published, now.Add(-3 * time.Second), now.Add(-refitMaxLag), 1, 0},
	} {
		d := &Dense{cfg: Options{Dense: tc.dense, RefitQuiet: 2 * time.Second}, gate: gate.New(0, 2)}
		d.lastWrite.Store(tc.lastWrite.UnixNano())
		d.gate.Queue(tc.queued)
		dv := &deriver{d: d, refitSince: tc.dueSince}
		if got := dv.refitWait(tc.gen, now); got != tc.want {
			t.Errorf("%s: wait %v, want %v", tc.name, got, tc.want)
		}
	}
}
