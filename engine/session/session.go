// Package session keeps the trajectory state of RCP §7.7.3: for each
// client-chosen sessionId, the hits already returned (by id and by content
// hash, for dedup) and cached transform plans, with a time-to-live and a
// memory bound.
//
// Memory is bounded three ways, so a flood of session ids cannot exhaust
// it: at most MaxSessions sessions (least recently used evicted first), at
// most MaxSeen remembered hits per session (oldest forgotten first) and at
// most MaxEntries remembered hits over all sessions (least recently used
// sessions evicted until under). A remembered hit is two 64-bit hashes, so
// the hit state costs about 40 bytes per entry in Go maps; see
// docs/rcpd.md for the measured bound.
package session

import (
	"container/list"
	"hash/maphash"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/rcpgo/rcpgo/internal/defaults"
)

// Defaults of Options.
const (
	DefaultTTL         = 30 * time.Minute
	DefaultMaxSessions = 10000
	DefaultMaxSeen     = 2000
	DefaultMaxEntries  = 500000
	// MaxIDBytes bounds a sessionId (longer ids are rejected by the engine).
	MaxIDBytes = 256
	maxPlans   = 16
)

// Options configure a Store.
type Options struct {
	TTL         time.Duration    // idle time after which a session is forgotten
	MaxSessions int              // sessions kept
	MaxSeen     int              // remembered hits per session
	MaxEntries  int              // remembered hits over all sessions
	Now         func() time.Time // the clock (tests pass a fake one)
}

func (o *Options) fill() {
	defaults.Positive(&o.TTL, DefaultTTL)
	defaults.Positive(&o.MaxSessions, DefaultMaxSessions)
	defaults.Positive(&o.MaxSeen, DefaultMaxSeen)
	defaults.Positive(&o.MaxEntries, DefaultMaxEntries)
	defaults.Clock(&o.Now)
}

// Store holds the sessions. Safe for concurrent use.
type Store struct {
	opts    Options
	seed    maphash.Seed
	mu      sync.Mutex
	lru     *list.List // of *state, most recently used at the front
	byID    map[string]*list.Element
	entries int
}

type state struct {
	id      string
	used    time.Time
	ids     map[uint64]struct{}
	hashes  map[uint64]struct{}
	order   []seenHit // FIFO, for the per-session bound
	plans   map[string][]string
	planKey []string // FIFO of plans keys
}

type seenHit struct{ id, hash uint64 }

// New returns an empty Store.
func New(opts Options) *Store {
	opts.fill()
	return &Store{opts: opts, seed: maphash.MakeSeed(), lru: list.New(), byID: map[string]*list.Element{}}
}

// TTL is the idle time-to-live.
func (s *Store) TTL() time.Duration { return s.opts.TTL }

// Len is the number of live sessions (expired ones are dropped first).
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(s.opts.Now())
	return s.lru.Len()
}

// Entries is the number of remembered hits over all sessions.
func (s *Store) Entries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries
}

// ContentHash identifies a hit's text up to case and spacing.
func (s *Store) ContentHash(text string) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	for _, f := range strings.FieldsFunc(text, unicode.IsSpace) {
		h.WriteString(strings.ToLower(f))
		h.WriteByte(' ')
	}
	return h.Sum64()
}

// IDHash is the remembered form of a hit id.
func (s *Store) IDHash(id string) uint64 { return maphash.String(s.seed, id) }

// Remembered is the number of hits session sid remembers (0 for an
// unknown or expired session).
func (s *Store) Remembered(sid string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.getLocked(sid, s.opts.Now()); st != nil {
		return len(st.order)
	}
	return 0
}

// Seen reports, for each hit (id hash, content hash; a zero content hash
// matches nothing), whether session sid returned it earlier. An unknown or
// expired session has seen nothing.
func (s *Store) Seen(sid string, ids, hashes []uint64) []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]bool, len(ids))
	st := s.getLocked(sid, s.opts.Now())
	if st == nil {
		return out
	}
	for i, id := range ids {
		_, out[i] = st.ids[id]
		if !out[i] && i < len(hashes) && hashes[i] != 0 {
			_, out[i] = st.hashes[hashes[i]]
		}
	}
	return out
}

// Record remembers returned hits in session sid, creating it when needed.
func (s *Store) Record(sid string, ids, hashes []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	st := s.touchLocked(sid, now)
	for i, id := range ids {
		var h uint64
		if i < len(hashes) {
			h = hashes[i]
		}
		if _, dup := st.ids[id]; dup {
			continue
		}
		st.ids[id] = struct{}{}
		if h != 0 {
			st.hashes[h] = struct{}{}
		}
		st.order = append(st.order, seenHit{id, h})
		s.entries++
		if len(st.order) > s.opts.MaxSeen {
			s.forgetOldest(st)
		}
	}
	s.trimLocked(st)
}

func (s *Store) forgetOldest(st *state) {
	old := st.order[0]
	st.order = st.order[1:]
	delete(st.ids, old.id)
	delete(st.hashes, old.hash)
	s.entries--
}

// Plan returns a cached transform plan of session sid.
func (s *Store) Plan(sid, key string) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.getLocked(sid, s.opts.Now())
	if st == nil {
		return nil, false
	}
	qs, ok := st.plans[key]
	return qs, ok
}

// SetPlan caches a transform plan in session sid (at most 16 per session,
// oldest evicted).
func (s *Store) SetPlan(sid, key string, queries []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.touchLocked(sid, s.opts.Now())
	if _, ok := st.plans[key]; !ok {
		st.planKey = append(st.planKey, key)
		if len(st.planKey) > maxPlans {
			delete(st.plans, st.planKey[0])
			st.planKey = st.planKey[1:]
		}
	}
	st.plans[key] = queries
	s.trimLocked(st)
}

// getLocked returns the live session sid (marking it used), or nil.
func (s *Store) getLocked(sid string, now time.Time) *state {
	s.expireLocked(now)
	el, ok := s.byID[sid]
	if !ok {
		return nil
	}
	st := el.Value.(*state)
	st.used = now
	s.lru.MoveToFront(el)
	return st
}

func (s *Store) touchLocked(sid string, now time.Time) *state {
	if st := s.getLocked(sid, now); st != nil {
		return st
	}
	st := &state{id: sid, used: now, ids: map[uint64]struct{}{}, hashes: map[uint64]struct{}{}, plans: map[string][]string{}}
	s.byID[sid] = s.lru.PushFront(st)
	return st
}

// expireLocked drops sessions idle for longer than the TTL: they sit at the
// back of the LRU list, so this costs O(expired).
func (s *Store) expireLocked(now time.Time) {
	for el := s.lru.Back(); el != nil; el = s.lru.Back() {
		if now.Sub(el.Value.(*state).used) <= s.opts.TTL {
			return
		}
		s.removeLocked(el)
	}
}

// trimLocked evicts least recently used sessions (never keep) until the
// session and entry bounds hold.
func (s *Store) trimLocked(keep *state) {
	for s.lru.Len() > s.opts.MaxSessions || s.entries > s.opts.MaxEntries {
		el := s.lru.Back()
		if el == nil || el.Value.(*state) == keep {
			for s.entries > s.opts.MaxEntries && len(keep.order) > 0 {
				s.forgetOldest(keep)
			}
			return
		}
		s.removeLocked(el)
	}
}

func (s *Store) removeLocked(el *list.Element) {
	st := el.Value.(*state)
	s.lru.Remove(el)
	delete(s.byID, st.id)
	s.entries -= len(st.order)
}
