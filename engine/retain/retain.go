// Package retain keeps the superseded generations of a derived structure
// for the sessions that negotiated them.
//
// A session freezes its capabilities at initialize (RCP §13.2); when they
// name one generation of a structure — rcpd's dense index, whose
// embed.identity changes at every LSA refit — replacing that generation
// would break the session. A Set keeps the current generation and, besides
// it, the previous ones that sessions still use: a generation is kept until
// no session has used it for the grace period, within two bounds — at most
// Max kept generations and at most Budget bytes of them. Only past those
// bounds is a generation dropped while a session may still use it; that
// session's calls then fail (and it re-initializes).
//
// Sessions are not tracked one by one: a generation's last use is the
// latest session start (Touch) or call (Get) that named its key, so a
// generation whose sessions all ended is dropped a grace period after
// their last call.
package retain

import (
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultMax    = 2
	DefaultBudget = 1 << 30
	DefaultGrace  = 10 * time.Minute
)

// Options bound a Set. Zero values take the defaults; a negative Max keeps
// nothing besides the current generation.
type Options struct {
	// Max is the most generations kept besides the current one.
	Max int
	// Budget bounds the bytes of the generations kept besides the current
	// one (as the caller estimates them).
	Budget int64
	// Grace: a kept generation that no session used for this long is
	// dropped.
	Grace time.Duration
}

func (o Options) withDefaults() Options {
	if o.Max == 0 {
		o.Max = DefaultMax
	}
	if o.Max < 0 {
		o.Max = 0
	}
	if o.Budget <= 0 {
		o.Budget = DefaultBudget
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	return o
}

// Set holds the current generation and the kept ones. Its methods are
// safe for concurrent use. G is usually a pointer.
type Set[G comparable] struct {
	mu   sync.Mutex
	opts Options
	now  func() time.Time
	cur  *entry[G]   // nil: none published (or withdrawn)
	kept []*entry[G] // oldest first
}

type entry[G comparable] struct {
	key   string
	g     G
	bytes int64
	used  time.Time
}

// New returns an empty Set.
func New[G comparable](o Options) *Set[G] {
	return &Set[G]{opts: o.withDefaults(), now: time.Now}
}

// Options returns the bounds in force.
func (s *Set[G]) Options() Options { return s.opts }

// Publish makes g, identified by key, the current generation. The previous
// one is kept if a session used it within the grace period (and the
// bounds allow); a kept generation with the same key is replaced by g.
// dropped lists the generations no longer held, for the caller to release.
func (s *Set[G]) Publish(key string, g G, bytes int64) (dropped []G) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	prev := s.cur
	s.cur = &entry[G]{key: key, g: g, bytes: bytes, used: now}
	if prev != nil && prev.g != g {
		if prev.key == key {
			dropped = append(dropped, prev.g)
		} else {
			s.kept = append(s.kept, prev)
		}
	}
	kept := make([]*entry[G], 0, len(s.kept))
	for _, e := range s.kept {
		if e.key == key {
			dropped = append(dropped, e.g)
			continue
		}
		kept = append(kept, e)
	}
	s.kept = kept
	return append(dropped, s.enforce(now)...)
}

// enforce drops kept generations idle past the grace period, then the
// oldest until the bounds hold (mu held).
func (s *Set[G]) enforce(now time.Time) (dropped []G) {
	kept := make([]*entry[G], 0, len(s.kept)) // (not in place: no dropped generation stays referenced)
	var total int64
	for _, e := range s.kept {
		if now.Sub(e.used) > s.opts.Grace {
			dropped = append(dropped, e.g)
			continue
		}
		kept = append(kept, e)
		total += e.bytes
	}
	for len(kept) > 0 && (len(kept) > s.opts.Max || total > s.opts.Budget) {
		dropped = append(dropped, kept[0].g)
		total -= kept[0].bytes
		kept = kept[1:]
	}
	s.kept = kept
	return dropped
}

// Get returns the generation identified by key — the current one or a
// kept one — and marks it used; ok is false when it is not held.
func (s *Set[G]) Get(key string) (g G, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.find(key); e != nil {
		e.used = s.now()
		return e.g, true
	}
	return g, false
}

// Touch marks key used (a session negotiated it) and reports whether it
// is held.
func (s *Set[G]) Touch(key string) bool {
	_, ok := s.Get(key)
	return ok
}

func (s *Set[G]) find(key string) *entry[G] {
	if s.cur != nil && s.cur.key == key {
		return s.cur
	}
	for _, e := range s.kept {
		if e.key == key {
			return e
		}
	}
	return nil
}

// Current returns the current generation; ok is false when none is.
func (s *Set[G]) Current() (g G, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return g, false
	}
	return s.cur.g, true
}

// Kept returns the kept generations, oldest first (not the current one).
func (s *Set[G]) Kept() []G {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]G, len(s.kept))
	for i, e := range s.kept {
		out[i] = e.g
	}
	return out
}

// Resize records a new size estimate of g (a kept generation grows with
// the writes applied to it); the bounds are enforced again.
func (s *Set[G]) Resize(g G, bytes int64) (dropped []G) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil && s.cur.g == g {
		s.cur.bytes = bytes
		return nil
	}
	for _, e := range s.kept {
		if e.g == g {
			e.bytes = bytes
		}
	}
	return s.enforce(s.now())
}

// Sweep drops the kept generations no session used within the grace
// period (and any beyond the bounds); the caller runs it from time to time.
func (s *Set[G]) Sweep() (dropped []G) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enforce(s.now())
}

// Withdraw removes g wherever it is held (it was found damaged): when it
// is the current generation, none is current until the next Publish. It
// reports whether g was held.
func (s *Set[G]) Withdraw(g G) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil && s.cur.g == g {
		s.cur = nil
		return true
	}
	for i, e := range s.kept {
		if e.g == g {
			s.kept = append(s.kept[:i:i], s.kept[i+1:]...)
			return true
		}
	}
	return false
}

// Stats describe what a Set holds besides the current generation.
type Stats struct {
	Kept  int   // generations kept
	Bytes int64 // their estimated bytes
}

// Stats returns what is kept besides the current generation.
func (s *Set[G]) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Kept: len(s.kept)}
	for _, e := range s.kept {
		st.Bytes += e.bytes
	}
	return st
}
