// Package feedback records the client → server signals of RCP §7.16
// durably and turns them into two effects on ranking:
//
//   - Quarantine (§15.2–15.3). A unit reported as poisoned or as an
//     injection carrier by Threshold distinct sessions is quarantined: its
//     hits sink below every other candidate and carry trust.level
//     "untrusted" (and trust.injectionSuspected for injection reports).
//     Reports are advisory: a session counts once per unit, suspicion
//     reports are rate-limited per session, reports without a sessionId
//     are recorded but never count towards quarantine, and at most
//     MaxQuarantinesPerHour units are newly quarantined per hour, so one
//     client cannot quarantine a corpus. Every quarantine is logged.
//   - A ranking prior from helpful / reward / used / cited. Per unit,
//     evidence e = helpful − unhelpful + reward sum + 0.5·used + cited, and
//     the score factor is 1 + PriorWeight·tanh(e/4): bounded to
//     [1−w, 1+w] (w ≤ 0.5, default 0.1) and switched off by a negative
//     PriorWeight.
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
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
)

// Defaults of Options.
const (
	DefaultThreshold             = 3
	DefaultSuspicionsPerMinute   = 10
	DefaultMaxQuarantinesPerHour = 50
	DefaultPriorWeight           = 0.1
	MaxPriorWeight               = 0.5
	// MaxSignals bounds one feedback call.
	MaxSignals = 1000
	// maxReporters bounds the distinct sessions remembered per unit.
	maxReporters = 64
	// maxLimiters bounds the per-session rate limiters kept in memory.
	maxLimiters = 10000
)

// Options configure a Store.
type Options struct {
	Threshold             int              // distinct sessions that quarantine a unit
	SuspicionsPerMinute   int              // suspicion signals accepted per session per minute
	MaxQuarantinesPerHour int              // new quarantines per hour, over all clients
	PriorWeight           float64          // prior strength w; 0 means the default, < 0 disables
	Now                   func() time.Time // the clock
	Logger                *slog.Logger
}

func (o *Options) fill() {
	if o.Threshold <= 0 {
		o.Threshold = DefaultThreshold
	}
	if o.SuspicionsPerMinute <= 0 {
		o.SuspicionsPerMinute = DefaultSuspicionsPerMinute
	}
	if o.MaxQuarantinesPerHour <= 0 {
		o.MaxQuarantinesPerHour = DefaultMaxQuarantinesPerHour
	}
	switch {
	case o.PriorWeight == 0:
		o.PriorWeight = DefaultPriorWeight
	case o.PriorWeight < 0:
		o.PriorWeight = 0
	}
	o.PriorWeight = min(o.PriorWeight, MaxPriorWeight)
	if o.Now == nil {
		o.Now = time.Now
	}
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
	Helpful     int      `json:"h,omitempty"`
	Unhelpful   int      `json:"u,omitempty"`
	Used        int      `json:"used,omitempty"`
	Cited       int      `json:"c,omitempty"`
	Reward      float64  `json:"r,omitempty"`
	Rewards     int      `json:"rn,omitempty"`
	Reporters   []string `json:"rep,omitempty"` // distinct sessions reporting poison/injection
	Injection   bool     `json:"inj,omitempty"`
	Quarantined bool     `json:"q,omitempty"`
	Anonymous   int      `json:"anon,omitempty"` // suspicion reports without a sessionId
}

// Snapshot is an immutable view of the verdicts.
type Snapshot struct {
	verdicts map[string]pipeline.Verdict
}

// Len is the number of units with a verdict.
func (s *Snapshot) Len() int { return len(s.verdicts) }

// Verdict returns the verdict on unit id, or on its document (docID, for a
// chunk) when the unit has none of its own; a quarantined document
// quarantines its chunks.
func (s *Snapshot) Verdict(id, docID string) (pipeline.Verdict, bool) {
	v, ok := s.verdicts[id]
	if docID != "" {
		if d, dok := s.verdicts[docID]; dok && (!ok || d.Quarantined && !v.Quarantined) {
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
	recent []time.Time // quarantine times within the last hour
}

type window struct {
	start time.Time
	n     int
}

// Open loads the store kept in bucket of db (created when missing).
func Open(db *bolt.DB, bucket string, opts Options) (*Store, error) {
	opts.fill()
	s := &Store{db: db, bucket: []byte(bucket), opts: opts, stats: map[string]*Stats{}, limit: map[string]*window{}}
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
	c := *st
	c.Reporters = append([]string(nil), st.Reporters...)
	return c, true
}

// ErrTooMany is returned for more than MaxSignals signals.
var ErrTooMany = errors.New("feedback: too many signals")

// Record stores signals from session sid in one durable transaction and
// returns how many were recorded. A signal carrying a suspicion over the
// session's rate limit is not recorded.
func (s *Store) Record(sid string, signals []Signal) (int, error) {
	if len(signals) > MaxSignals {
		return 0, ErrTooMany
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	changed := map[string]*Stats{}
	accepted := 0
	var quarantined []string
	for _, sg := range signals {
		suspicious := sg.Poison || sg.Injection
		if suspicious && sid != "" && !s.allow(sid, now) {
			continue
		}
		st := changed[sg.HitID]
		if st == nil {
			st = new(Stats)
			if old := s.stats[sg.HitID]; old != nil {
				*st = *old
				st.Reporters = append([]string(nil), old.Reporters...)
			}
			changed[sg.HitID] = st
		}
		apply(st, sg)
		if suspicious {
			if sid == "" {
				st.Anonymous++
			} else if !contains(st.Reporters, sid) && len(st.Reporters) < maxReporters {
				st.Reporters = append(st.Reporters, sid)
			}
			st.Injection = st.Injection || sg.Injection
			if !st.Quarantined && len(st.Reporters) >= s.opts.Threshold && s.quarantineBudget(now) {
				st.Quarantined = true
				s.recent = append(s.recent, now)
				quarantined = append(quarantined, sg.HitID)
			}
		}
		accepted++
	}
	if len(changed) == 0 {
		return accepted, nil
	}
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
		s.recent = s.recent[:len(s.recent)-len(quarantined)]
		return 0, fmt.Errorf("feedback: %w", err)
	}
	for id, st := range changed {
		s.stats[id] = st
	}
	for _, id := range quarantined {
		st := s.stats[id]
		s.opts.Logger.Warn("feedback: unit quarantined on client reports (advisory, §15.3)",
			"id", id, "sessions", len(st.Reporters), "injection", st.Injection)
	}
	s.publish()
	return accepted, nil
}

func apply(st *Stats, sg Signal) {
	if sg.Helpful != nil {
		if *sg.Helpful {
			st.Helpful++
		} else {
			st.Unhelpful++
		}
	}
	if sg.Used {
		st.Used++
	}
	if sg.Cited {
		st.Cited++
	}
	if sg.Reward != nil {
		st.Reward += *sg.Reward
		st.Rewards++
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// allow applies the per-session limit on suspicion signals (a fixed
// one-minute window; at most maxLimiters windows are kept).
func (s *Store) allow(sid string, now time.Time) bool {
	w := s.limit[sid]
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
		s.limit[sid] = w
	}
	if w.n >= s.opts.SuspicionsPerMinute {
		return false
	}
	w.n++
	return true
}

func (s *Store) quarantineBudget(now time.Time) bool {
	i := 0
	for i < len(s.recent) && now.Sub(s.recent[i]) >= time.Hour {
		i++
	}
	s.recent = s.recent[i:]
	return len(s.recent) < s.opts.MaxQuarantinesPerHour
}

// publish rebuilds the snapshot from s.stats (called with mu held).
func (s *Store) publish() {
	v := make(map[string]pipeline.Verdict, len(s.stats))
	for id, st := range s.stats {
		f := Factor(st, s.opts.PriorWeight)
		if f == 1 && !st.Quarantined {
			continue
		}
		v[id] = pipeline.Verdict{Factor: f, Quarantined: st.Quarantined, Injection: st.Quarantined && st.Injection}
	}
	s.snap.Store(&Snapshot{verdicts: v})
}

// Factor is the ranking prior of st under weight w (see the package doc).
func Factor(st *Stats, w float64) float64 {
	e := float64(st.Helpful-st.Unhelpful) + st.Reward + 0.5*float64(st.Used) + float64(st.Cited)
	return 1 + w*math.Tanh(e/4)
}
