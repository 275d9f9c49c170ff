package feedback

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Issue 33 item 5: three feedback calls with sessionIds forged-1..3 from
// one client quarantined a unit for everyone, forever; 15 calls spent the
// global hourly budget; one anonymous call of 1 000 negative signals
// applied the full −10 % prior. Reports now count per caller (what the
// transport authenticated), the budget is per caller too, and one caller
// moves the prior by at most w·tanh(1/4).
func TestOneCallerCannotQuarantineOrSpendTheBudget(t *testing.T) {
	db, _ := openDB(t)
	now := time.Unix(2e9, 0)
	s, _ := Open(db, "feedback", Options{Now: func() time.Time { return now }})
	attacker := "addr:203.0.113.9"
	for i := range 200 { // one caller, any number of units and calls
		s.Record(attacker, []Signal{{HitID: fmt.Sprintf("u%d", i%20), Injection: true}})
		now = now.Add(7 * time.Second) // under the per-minute limit
	}
	if l := s.List(); len(l) != 0 {
		t.Fatalf("one caller quarantined %d units", len(l))
	}
	// Three colluding callers quarantine at most CallerQuarantinesPerHour
	// units an hour, leaving the rest of the global budget.
	colluders := []string{"addr:203.0.113.1", "addr:203.0.113.2", "addr:203.0.113.3"}
	for i := range 40 {
		for _, c := range colluders {
			s.Record(c, []Signal{{HitID: fmt.Sprintf("x%d", i), Poison: true}})
		}
		now = now.Add(20 * time.Second)
	}
	if n := len(s.List()); n != DefaultCallerQuarantinesPerHour {
		t.Fatalf("three colluding callers quarantined %d units, want %d", n, DefaultCallerQuarantinesPerHour)
	}
	for _, c := range []string{"token:alice", "token:bob", "token:carol"} {
		s.Record(c, []Signal{{HitID: "really-poisoned", Poison: true}})
	}
	if v, _ := s.Snapshot().Verdict("really-poisoned", ""); !v.Quarantined {
		t.Fatal("genuine reports from three callers quarantined nothing after the attack")
	}
	// The prior: 1 000 negative signals from one anonymous caller.
	neg, f := -1.0, false
	sigs := make([]Signal, MaxSignals)
	for i := range sigs {
		sigs[i] = Signal{HitID: "knowledge-graph", Helpful: &f, Reward: &neg}
	}
	s.Record(attacker, sigs)
	v, _ := s.Snapshot().Verdict("knowledge-graph", "")
	if floor := 1 - DefaultPriorWeight*math.Tanh(0.25); v.Factor < floor-1e-9 {
		t.Fatalf("one caller's 1 000 signals: factor %.4f, below %.4f", v.Factor, floor)
	}
}

// Quarantines end after QuarantineTTL, reports older than it stop
// counting, and an operator lists and lifts them, durably.
func TestQuarantineExpiresListsAndLifts(t *testing.T) {
	db, path := openDB(t)
	now := time.Unix(2e9, 0)
	clock := func() time.Time { return now }
	s, _ := Open(db, "feedback", Options{Now: clock, QuarantineTTL: time.Hour})
	report := func(id string, callers ...string) {
		for _, c := range callers {
			s.Record(c, []Signal{{HitID: id, Injection: true}})
		}
	}
	report("a", "c1", "c2")
	now = now.Add(61 * time.Minute) // c1 and c2 expired
	report("a", "c3")
	if len(s.List()) != 0 {
		t.Fatal("expired reports quarantined a unit")
	}
	report("a", "c4", "c5")
	report("b", "c1", "c2", "c3")
	l := s.List()
	if len(l) != 2 || !slices.Contains(l[0].Reporters, "c3") || !l[0].Until.Equal(now.Add(time.Hour).UTC()) {
		t.Fatalf("List = %+v", l)
	}
	lifted, err := s.Lift([]string{"b", "nope"}, "token:ops")
	if err != nil || !slices.Equal(lifted, []string{"b"}) {
		t.Fatalf("Lift = %q, %v", lifted, err)
	}
	if v, _ := s.Snapshot().Verdict("b", ""); v.Quarantined {
		t.Fatal("a lifted unit is still quarantined")
	}
	report("b", "c6") // reports from before the lift do not count again
	if v, _ := s.Snapshot().Verdict("b", ""); v.Quarantined {
		t.Fatal("re-quarantined by reports made before the lift")
	}
	// Durable: reopen.
	db.Close()
	db2, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	s2, _ := Open(db2, "feedback", Options{Now: clock, QuarantineTTL: time.Hour})
	if l := s2.List(); len(l) != 1 || l[0].ID != "a" {
		t.Fatalf("after reopening: %+v", l)
	}
	now = now.Add(time.Hour)
	if v, _ := s2.Snapshot().Verdict("a", ""); v.Quarantined || len(s2.List()) != 0 {
		t.Fatal("a quarantine outlived its TTL")
	}
}

// A quarantine recorded by an older version (no end, reporters that were
// client-chosen session ids) ends QuarantineTTL after the upgrade, and its
// forged reporters no longer count.
func TestLegacyQuarantineMigrates(t *testing.T) {
	db, path := openDB(t)
	legacy, _ := json.Marshal(map[string]any{"rep": []string{"forged-1", "forged-2", "forged-3"}, "inj": true, "q": true, "h": 0, "u": 1000, "r": -1000.0, "rn": 1000})
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("feedback"))
		if err != nil {
			return err
		}
		return b.Put([]byte("knowledge-graph"), legacy)
	}); err != nil {
		t.Fatal(err)
	}
	_ = path
	now := time.Unix(2e9, 0)
	s, _ := Open(db, "feedback", Options{Now: func() time.Time { return now }, QuarantineTTL: time.Hour})
	v, _ := s.Snapshot().Verdict("knowledge-graph", "")
	if !v.Quarantined || v.Factor < 1-DefaultPriorWeight*math.Tanh(0.25)-1e-9 {
		t.Fatalf("migrated verdict %+v: want quarantined with a one-caller prior", v)
	}
	if st, _ := s.Stats("knowledge-graph"); len(st.Reporters) != 0 {
		t.Fatalf("forged reporters kept: %q", st.Reporters)
	}
	now = now.Add(time.Hour)
	if v, _ := s.Snapshot().Verdict("knowledge-graph", ""); v.Quarantined {
		t.Fatal("a legacy quarantine never ends")
	}
}
