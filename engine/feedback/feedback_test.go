package feedback

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func openDB(t *testing.T) (*bolt.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fb.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

func yes() *bool { b := true; return &b }

func TestQuarantineNeedsDistinctCallers(t *testing.T) {
	db, _ := openDB(t)
	s, err := Open(db, "feedback", Options{Threshold: 3})
	if err != nil {
		t.Fatal(err)
	}
	poison := []Signal{{HitID: "d1", Poison: true}}
	for range 5 { // one caller, many reports: no quarantine
		if n, err := s.Record("addr:10.0.0.1", poison); err != nil || n != 1 {
			t.Fatalf("Record = %d, %v", n, err)
		}
	}
	if v, ok := s.Snapshot().Verdict("d1", ""); ok && v.Quarantined {
		t.Fatal("quarantined by one caller")
	}
	s.Record("token:b", poison)
	if v, _ := s.Snapshot().Verdict("d1", ""); v.Quarantined {
		t.Fatal("quarantined by two callers (threshold 3)")
	}
	s.Record("token:c", []Signal{{HitID: "d1", Injection: true}})
	v, ok := s.Snapshot().Verdict("d1", "")
	if !ok || !v.Quarantined || !v.Injection {
		t.Fatalf("after 3 callers: %+v", v)
	}
	// A chunk of a quarantined document is quarantined too.
	if v, _ := s.Snapshot().Verdict("d1#c0", "d1"); !v.Quarantined {
		t.Fatal("chunk of a quarantined document not quarantined")
	}
}

func TestRateLimitAndBudget(t *testing.T) {
	db, _ := openDB(t)
	now := time.Unix(1e9, 0)
	s, _ := Open(db, "feedback", Options{SuspicionsPerMinute: 2, MaxQuarantinesPerHour: 1, Threshold: 1, Now: func() time.Time { return now }})
	n, _ := s.Record("c1", []Signal{{HitID: "a", Poison: true}, {HitID: "b", Poison: true}, {HitID: "c", Poison: true}, {HitID: "c", Used: true}})
	if n != 3 {
		t.Fatalf("accepted %d, want 3 (the third suspicion is over the limit)", n)
	}
	va, _ := s.Snapshot().Verdict("a", "")
	vb, _ := s.Snapshot().Verdict("b", "")
	if !va.Quarantined || vb.Quarantined {
		t.Fatalf("a %+v, b %+v: want only a quarantined (hourly budget 1)", va, vb)
	}
	now = now.Add(time.Hour + time.Minute)
	s.Record("c1", []Signal{{HitID: "b", Poison: true}})
	if v, _ := s.Snapshot().Verdict("b", ""); !v.Quarantined {
		t.Fatal("budget not renewed after an hour")
	}
}

func TestPriorBoundedAndDurable(t *testing.T) {
	db, path := openDB(t)
	s, _ := Open(db, "feedback", Options{})
	r := 1.0
	for i := range 50 {
		s.Record(fmt.Sprintf("token:%d", i), []Signal{{HitID: "good", Helpful: yes(), Reward: &r, Used: true, Cited: true}})
	}
	v, _ := s.Snapshot().Verdict("good", "")
	if v.Factor <= 1 || v.Factor > 1+DefaultPriorWeight+1e-9 {
		t.Fatalf("factor %v outside (1, 1+w]", v.Factor)
	}
	old := s.Snapshot()
	s.Record("token:x", []Signal{{HitID: "other", Helpful: yes()}})
	if _, ok := old.Verdict("other", ""); ok {
		t.Fatal("a published snapshot changed")
	}
	db.Close()
	db2, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	s2, err := Open(db2, "feedback", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := s2.Stats("good"); !ok || st.Helpful != 50 || st.Cited != 50 {
		t.Fatalf("not durable: %+v", st)
	}
	off, _ := Open(db2, "feedback", Options{PriorWeight: -1})
	if off.Snapshot().Len() != 0 {
		t.Fatal("a disabled prior still produces verdicts")
	}
}
