// Package feedback records the client → server signals of RCP §7.16
// durably and turns them into two effects on ranking:
//
//   - Quarantine (§15.2–15.3). A unit reported as poisoned or as an
//     injection carrier by Threshold distinct callers is quarantined for
//     QuarantineTTL: its hits sink below every other candidate and carry
//     trust.level "untrusted" (and trust.injectionSuspected for injection
//     reports). A caller is what the transport authenticated (rcp.Caller.ID:
//     a token, else a client address, else a connection), never the
//     client-chosen sessionId, so one client cannot pose as several.
//     Reports are advisory and bounded: a caller counts once per unit,
//     reports older than QuarantineTTL stop counting, suspicion reports are
//     rate-limited per caller, each caller's reports may help quarantine at
//     most CallerQuarantinesPerHour units per hour and at most
//     MaxQuarantinesPerHour units are newly quarantined per hour in all, so
//     no caller can spend the budget of the others. Every quarantine and
//     every lift is logged; an operator lists them (List) and lifts them
//     (Lift).
//   - A ranking prior from helpful / reward / used / cited. Per unit and
//     caller, the caller's evidence is helpful − unhelpful + reward sum +
//     0.5·used + cited, counted within [−1, 1]; the unit's evidence e sums
//     those of at most maxVoters callers, and the score factor is
//     1 + PriorWeight·tanh(e/4): bounded to [1−w, 1+w] (w ≤ 0.5, default
//     0.1) and switched off by a negative PriorWeight. One caller moves a
//     unit by at most w·tanh(1/4) (≈ 2.4 % at the default).
//
// The state used by retrieve is an immutable snapshot swapped atomically
// after each durable write: a retrieve reads one snapshot at its start, so
// feedback never alters a retrieve already in flight.
package feedback

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
	"github.com/rcpgo/rcpgo/internal/defaults"
)

// Defaults of Options.
const (
	DefaultThreshold                = 3
	DefaultSuspicionsPerMinute      = 10
	DefaultMaxQuarantinesPerHour    = 50
	DefaultCallerQuarantinesPerHour = 10
	DefaultQuarantineTTL            = 24 * time.Hour
	DefaultPriorWeight              = 0.1
	MaxPriorWeight                  = 0.5
	// MaxSignals bounds one feedback call.
	MaxSignals = 1000
	// maxReporters bounds the distinct callers remembered per unit.
	maxReporters = 64
	// maxVoters bounds the callers whose prior evidence a unit keeps.
	maxVoters = 64
	// maxLimiters bounds the per-caller rate limiters and budgets kept in
	// memory.
	maxLimiters = 10000
	// legacyVoter holds the prior evidence of a unit recorded before
	// evidence was kept per caller.
	legacyVoter = "legacy"
)

// Options configure a Store.
type Options struct {
	Threshold                int           // distinct callers that quarantine a unit
	SuspicionsPerMinute      int           // suspicion signals accepted per caller per minute
	MaxQuarantinesPerHour    int           // new quarantines per hour, over all callers
	CallerQuarantinesPerHour int           // new quarantines one caller's reports may help cause per hour
	QuarantineTTL            time.Duration // how long a quarantine lasts and a report counts
	PriorWeight              float64       // prior strength w; 0 means the default, < 0 disables
	// TrustedRelays are callers (rcp.Caller.ID, e.g. "token:gateway")
	// whose feedback may name the caller it relays (rcp.MetaRCPGoCaller);
	// stream peers (stdio, in-process) are always trusted.
	TrustedRelays []string
	Now           func() time.Time // the clock
	Logger        *slog.Logger
}

func (o *Options) fill() {
	defaults.Positive(&o.Threshold, DefaultThreshold)
	defaults.Positive(&o.SuspicionsPerMinute, DefaultSuspicionsPerMinute)
	defaults.Positive(&o.MaxQuarantinesPerHour, DefaultMaxQuarantinesPerHour)
	defaults.Positive(&o.CallerQuarantinesPerHour, DefaultCallerQuarantinesPerHour)
	defaults.Positive(&o.QuarantineTTL, DefaultQuarantineTTL)
	switch {
	case o.PriorWeight == 0:
		o.PriorWeight = DefaultPriorWeight
	case o.PriorWeight < 0:
		o.PriorWeight = 0
	}
	o.PriorWeight = min(o.PriorWeight, MaxPriorWeight)
	defaults.Clock(&o.Now)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Signal is one validated feedback signal.
type Signal struct {
	HitID             string
	Used, Cited       bool
	Helpful           *bool
	Reward            *float64 // in [-1, 1]
	Poison, Injection bool
}

// Stats is what is stored per unit (JSON in the bucket).
type Stats struct {
	Helpful   int     `json:"h,omitempty"`
	Unhelpful int     `json:"u,omitempty"`
	Used      int     `json:"used,omitempty"`
	Cited     int     `json:"c,omitempty"`
	Reward    float64 `json:"r,omitempty"`
	Rewards   int     `json:"rn,omitempty"`
	// Votes is each caller's prior evidence (counted within ±1).
	Votes map[string]float64 `json:"v,omitempty"`
	// Reporters are the distinct callers reporting poison/injection and
	// ReportedAt when (unix seconds), in the same order.
	Reporters  []string `json:"rep,omitempty"`
	ReportedAt []int64  `json:"repAt,omitempty"`
	Injection  bool     `json:"inj,omitempty"`
	// QuarantinedAt and Until bound the quarantine (unix seconds; zero:
	// not quarantined). Quarantined is the older, unbounded form, read
	// only to migrate it.
	QuarantinedAt int64 `json:"qAt,omitempty"`
	Until         int64 `json:"qUntil,omitempty"`
	Quarantined   bool  `json:"q,omitempty"`
	// Lifted is when an operator last lifted a quarantine of the unit.
	Lifted int64 `json:"lifted,omitempty"`
}

// quarantined reports whether the quarantine holds at unix time now.
func (st *Stats) quarantined(now int64) bool { return st.QuarantinedAt > 0 && now < st.Until }

func (st *Stats) clone() *Stats {
	c := *st
	c.Reporters = slices.Clone(st.Reporters)
	c.ReportedAt = slices.Clone(st.ReportedAt)
	if st.Votes != nil {
		c.Votes = make(map[string]float64, len(st.Votes))
		for k, v := range st.Votes {
			c.Votes[k] = v
		}
	}
	return &c
}

// verdict is a unit's verdict with the end of its quarantine.
type verdict struct {
	pipeline.Verdict
	until int64 // unix seconds; 0 when not quarantined
}

// Snapshot is an immutable view of the verdicts.
type Snapshot struct {
	verdicts map[string]verdict
	now      func() time.Time
}

// Len is the number of units with a verdict.
func (s *Snapshot) Len() int { return len(s.verdicts) }

// Verdict returns the verdict on unit id, or on its document (docID, for a
// chunk) when the unit has none of its own; a quarantined document
// quarantines its chunks. A quarantine that expired since the snapshot was
// taken no longer holds.
func (s *Snapshot) Verdict(id, docID string) (pipeline.Verdict, bool) {
	now := s.now().Unix()
	at := func(k string) (pipeline.Verdict, bool) {
		v, ok := s.verdicts[k]
		if ok && v.Quarantined && now >= v.until {
			v.Quarantined, v.Injection = false, false
		}
		return v.Verdict, ok
	}
	v, ok := at(id)
	if docID != "" {
		if d, dok := at(docID); dok && (!ok || d.Quarantined && !v.Quarantined) {
			return d, true
		}
	}
	return v, ok
}

// Store is the durable feedback store. Safe for concurrent use.
type Store struct {
	db     *bolt.DB
	bucket []byte
	opts   Options
	mu     sync.Mutex // serialises writers
	snap   atomic.Pointer[Snapshot]
	stats  map[string]*Stats // the source of snap, guarded by mu
	limit  map[string]*window
	budget map[string][]time.Time // per caller: quarantines its reports helped cause within the hour
	recent []time.Time            // quarantine times within the last hour
}

type window struct {
	start time.Time
	n     int
}

// Open loads the store kept in bucket of db (created when missing).
// Records written before reports were bound to callers are migrated: their
// reporters (client-chosen session ids) no longer count, their prior
// evidence counts as one caller's, and a quarantine without an end ends
// QuarantineTTL after the store is opened.
func Open(db *bolt.DB, bucket string, opts Options) (*Store, error) {
	opts.fill()
	s := &Store{db: db, bucket: []byte(bucket), opts: opts, stats: map[string]*Stats{}, limit: map[string]*window{},
		budget: map[string][]time.Time{}}
	now := opts.Now()
	err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(s.bucket)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			st := new(Stats)
			if err := json.Unmarshal(v, st); err != nil {
				return fmt.Errorf("feedback record %q: %w", k, err)
			}
			migrate(st, now, opts.QuarantineTTL)
			s.stats[string(k)] = st
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("feedback: %w", err)
	}
	s.publish()
	return s, nil
}

// migrate brings a record of an older version to the current form.
func migrate(st *Stats, now time.Time, ttl time.Duration) {
	if len(st.ReportedAt) != len(st.Reporters) {
		st.Reporters, st.ReportedAt = nil, nil // session ids chosen by clients: they never counted for a caller
	}
	if st.Quarantined && st.QuarantinedAt == 0 {
		st.QuarantinedAt, st.Until = now.Unix(), now.Add(ttl).Unix()
	}
	st.Quarantined = false
	if st.Votes == nil {
		if e := legacyEvidence(st); e != 0 {
			st.Votes = map[string]float64{legacyVoter: e}
		}
	}
}

func legacyEvidence(st *Stats) float64 {
	return float64(st.Helpful-st.Unhelpful) + st.Reward + 0.5*float64(st.Used) + float64(st.Cited)
}

// Snapshot returns the current verdicts.
func (s *Store) Snapshot() *Snapshot { return s.snap.Load() }

// Stats returns a copy of the stored stats of unit id.
func (s *Store) Stats(id string) (Stats, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.stats[id]
	if !ok {
		return Stats{}, false
	}
	return *st.clone(), true
}

// ErrTooMany is returned for more than MaxSignals signals.
var ErrTooMany = errors.New("feedback: too many signals")

// Record stores signals from caller (rcp.Caller.ID; "" for an in-process
// caller) in one durable transaction and returns how many were recorded.
// A signal carrying a suspicion over the caller's rate limit is not
// recorded.
func (s *Store) Record(caller string, signals []Signal) (int, error) {
	if len(signals) > MaxSignals {
		return 0, ErrTooMany
	}
	if caller == "" {
		caller = "local"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	changed := map[string]*Stats{}
	accepted := 0
	var quarantined []string
	for _, sg := range signals {
		suspicious := sg.Poison || sg.Injection
		if suspicious && !s.allow(caller, now) {
			continue
		}
		st := changed[sg.HitID]
		if st == nil {
			st = new(Stats)
			if old := s.stats[sg.HitID]; old != nil {
				st = old.clone()
			}
			changed[sg.HitID] = st
		}
		s.vote(st, caller, sg)
		if suspicious && s.report(st, caller, sg, now) {
			quarantined = append(quarantined, sg.HitID)
		}
		accepted++
	}
	if len(changed) == 0 {
		return accepted, nil
	}
	if err := s.write(changed); err != nil {
		s.recent = s.recent[:len(s.recent)-len(quarantined)]
		return 0, err
	}
	for id, st := range changed {
		s.stats[id] = st
	}
	for _, id := range quarantined {
		st := s.stats[id]
		s.opts.Logger.Warn("feedback: unit quarantined on client reports (advisory, §15.3)",
			"id", id, "callers", st.Reporters, "injection", st.Injection, "until", time.Unix(st.Until, 0).UTC())
	}
	s.publish()
	return accepted, nil
}

// vote adds sg to the counters and to caller's prior evidence.
func (s *Store) vote(st *Stats, caller string, sg Signal) {
	e := 0.0
	if sg.Helpful != nil {
		if *sg.Helpful {
			st.Helpful++
			e++
		} else {
			st.Unhelpful++
			e--
		}
	}
	if sg.Used {
		st.Used++
		e += 0.5
	}
	if sg.Cited {
		st.Cited++
		e++
	}
	if sg.Reward != nil {
		st.Reward += *sg.Reward
		st.Rewards++
		e += *sg.Reward
	}
	if e == 0 {
		return
	}
	if st.Votes == nil {
		st.Votes = map[string]float64{}
	}
	if _, ok := st.Votes[caller]; ok || len(st.Votes) < maxVoters {
		st.Votes[caller] += e
	}
}

// report records caller's suspicion on st and reports whether it
// quarantined the unit.
func (s *Store) report(st *Stats, caller string, sg Signal, now time.Time) bool {
	st.Injection = st.Injection || sg.Injection
	cut := now.Add(-s.opts.QuarantineTTL).Unix()
	if st.Lifted > cut {
		cut = st.Lifted // reports before a lift do not count again
	}
	for i := 0; i < len(st.Reporters); { // reports that expired
		if st.ReportedAt[i] < cut {
			st.Reporters = slices.Delete(st.Reporters, i, i+1)
			st.ReportedAt = slices.Delete(st.ReportedAt, i, i+1)
			continue
		}
		i++
	}
	if i := slices.Index(st.Reporters, caller); i >= 0 {
		st.ReportedAt[i] = now.Unix()
	} else if len(st.Reporters) < maxReporters && s.callerBudget(caller, now) {
		st.Reporters = append(st.Reporters, caller)
		st.ReportedAt = append(st.ReportedAt, now.Unix())
	}
	if st.quarantined(now.Unix()) || len(st.Reporters) < s.opts.Threshold || !s.quarantineBudget(now) {
		return false
	}
	st.QuarantinedAt, st.Until = now.Unix(), now.Add(s.opts.QuarantineTTL).Unix()
	s.recent = append(s.recent, now)
	for _, c := range st.Reporters {
		s.budget[c] = append(s.budget[c], now)
	}
	return true
}

func (s *Store) write(changed map[string]*Stats) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(s.bucket)
		for id, st := range changed {
			v, err := json.Marshal(st)
			if err != nil {
				return err
			}
			if err := b.Put([]byte(id), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("feedback: %w", err)
	}
	return nil
}

// allow applies the per-caller limit on suspicion signals (a fixed
// one-minute window; at most maxLimiters windows are kept).
func (s *Store) allow(caller string, now time.Time) bool {
	w := s.limit[caller]
	if w == nil || now.Sub(w.start) >= time.Minute {
		if w == nil && len(s.limit) >= maxLimiters {
			for k, old := range s.limit {
				if now.Sub(old.start) >= time.Minute {
					delete(s.limit, k)
				}
			}
			if len(s.limit) >= maxLimiters {
				return false // every window is live: refuse rather than grow
			}
		}
		w = &window{start: now}
		s.limit[caller] = w
	}
	if w.n >= s.opts.SuspicionsPerMinute {
		return false
	}
	w.n++
	return true
}

// callerBudget reports whether caller's reports may still help quarantine
// a unit this hour (at most maxLimiters callers are tracked).
func (s *Store) callerBudget(caller string, now time.Time) bool {
	times := s.budget[caller]
	i := 0
	for i < len(times) && now.Sub(times[i]) >= time.Hour {
		i++
	}
	if times = times[i:]; len(times) == 0 {
		delete(s.budget, caller)
		if len(s.budget) >= maxLimiters {
			for k, ts := range s.budget {
				if now.Sub(ts[len(ts)-1]) >= time.Hour {
					delete(s.budget, k)
				}
			}
		}
		return len(s.budget) < maxLimiters
	}
	s.budget[caller] = times
	return len(times) < s.opts.CallerQuarantinesPerHour
}

func (s *Store) quarantineBudget(now time.Time) bool {
	i := 0
	for i < len(s.recent) && now.Sub(s.recent[i]) >= time.Hour {
		i++
	}
	s.recent = s.recent[i:]
	return len(s.recent) < s.opts.MaxQuarantinesPerHour
}

// Quarantine is one unit under quarantine (List).
type Quarantine struct {
	ID        string    `json:"id"`
	Injection bool      `json:"injection"`
	Reporters []string  `json:"reporters"`
	Since     time.Time `json:"since"`
	Until     time.Time `json:"until"`
}

// List returns the units under quarantine, most recent first.
func (s *Store) List() []Quarantine {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now().Unix()
	var out []Quarantine
	for id, st := range s.stats {
		if st.quarantined(now) {
			out = append(out, Quarantine{ID: id, Injection: st.Injection, Reporters: slices.Clone(st.Reporters),
				Since: time.Unix(st.QuarantinedAt, 0).UTC(), Until: time.Unix(st.Until, 0).UTC()})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.After(out[j].Since)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Lift ends the quarantine of the given units (by names who, for the log)
// and forgets the reports that caused it; it returns the units lifted
// (those under quarantine). The lift is durable and logged.
func (s *Store) Lift(ids []string, by string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	changed := map[string]*Stats{}
	var lifted []string
	for _, id := range ids {
		st, ok := s.stats[id]
		if !ok || !st.quarantined(now.Unix()) || changed[id] != nil {
			continue
		}
		c := st.clone()
		c.QuarantinedAt, c.Until, c.Injection, c.Lifted = 0, 0, false, now.Unix()
		c.Reporters, c.ReportedAt = nil, nil
		changed[id] = c
		lifted = append(lifted, id)
	}
	if len(changed) == 0 {
		return nil, nil
	}
	if err := s.write(changed); err != nil {
		return nil, err
	}
	for id, st := range changed {
		s.stats[id] = st
	}
	s.opts.Logger.Warn("feedback: quarantine lifted by an operator", "ids", lifted, "by", by)
	s.publish()
	return lifted, nil
}

// publish rebuilds the snapshot from s.stats (called with mu held).
func (s *Store) publish() {
	now := s.opts.Now().Unix()
	v := make(map[string]verdict, len(s.stats))
	for id, st := range s.stats {
		f := Factor(st, s.opts.PriorWeight)
		q := st.quarantined(now)
		if f == 1 && !q {
			continue
		}
		vd := verdict{Verdict: pipeline.Verdict{Factor: f}}
		if q {
			vd.Quarantined, vd.Injection, vd.until = true, st.Injection, st.Until
		}
		v[id] = vd
	}
	s.snap.Store(&Snapshot{verdicts: v, now: s.opts.Now})
}

// Factor is the ranking prior of st under weight w (see the package doc).
func Factor(st *Stats, w float64) float64 {
	e := 0.0
	for _, v := range st.Votes {
		e += max(-1, min(1, v))
	}
	return 1 + w*math.Tanh(e/4)
}
