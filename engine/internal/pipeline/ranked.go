package pipeline

// Kept ranked lists. A sparse list is a deterministic function of the
// request and the index snapshot, so every page of it is computed again at
// the snapshot its cursor names. Dense recall walks the vectors as they are
// now — writes applied since the first page move them — so the pages of a
// list that uses dense recall are slices of the list the first page
// computed, kept here (RunKeeping, Replay): no hit twice, none skipped,
// whatever was written in between.

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"sync"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

// Ranked is one request's ranked list: the candidates as the stages before
// pack left them (fused, reranked, grouped, diversified, with their
// confidence and vectors), and what its pages report.
type Ranked struct {
	cands      []*Candidate
	candidates int
	reranked   int
	version    string
	notes      []string
	hits       []rcp.Hit // a list of finished hits (KeepHits)
	bytes      int64
}

// RunKeeping is Run that also returns the ranked list, for Replay to page
// through later.
func RunKeeping(ctx context.Context, deps *Deps, req *Request) (*Page, *Ranked, error) {
	s := newState(deps, req)
	stages := Stages()
	if err := s.run(ctx, stages[:len(stages)-1]); err != nil {
		return nil, nil, err
	}
	r := &Ranked{cands: slices.Clone(s.Cands), candidates: s.Page.Candidates, reranked: s.Page.Reranked,
		version: s.Page.Version, notes: slices.Clone(s.Page.Notes)}
	for _, c := range s.Cands {
		r.bytes += candidateBytes(c)
	}
	ownPage(s)
	if err := s.run(ctx, stages[len(stages)-1:]); err != nil {
		return nil, nil, err
	}
	return &s.Page, r, nil
}

// ownPage points the candidates of s's page at copies of them: pack loads
// documents into the candidates it packs, and the kept list must stay as
// the stages before pack left it. Only the page is copied (k candidates,
// not the whole list of candidateK).
func ownPage(s *State) {
	start := min(s.Req.Offset, len(s.Cands))
	end := min(start+s.Req.K, len(s.Cands))
	page := make([]Candidate, end-start)
	for i := range page {
		page[i] = *s.Cands[start+i]
		s.Cands[start+i] = &page[i]
	}
}

// candidateBytes estimates what a kept candidate holds.
func candidateBytes(c *Candidate) int64 {
	n := int64(256 + len(c.ID) + 4*len(c.vec))
	if c.Doc != nil {
		n += int64(len(c.Doc.Text) + len(c.Doc.Title))
	}
	return n
}

// Replay packs req's page (Offset, K, TokenBudget, IncludeText, Vectors)
// from r instead of running the stages again. It may run concurrently
// with other replays of r.
func Replay(ctx context.Context, deps *Deps, req *Request, r *Ranked) (*Page, error) {
	s := newState(deps, req)
	s.Cands = slices.Clone(r.cands)
	ownPage(s)
	s.Page.Candidates, s.Page.Reranked, s.Page.Version = r.candidates, r.reranked, r.version
	s.Page.Notes = slices.Clone(r.notes)
	if err := s.run(ctx, Stages()[len(Stages())-1:]); err != nil {
		return nil, err
	}
	return &s.Page, nil
}

// Lists keeps ranked lists for their later pages, within a byte budget
// (least recently used first out) and for a time after their last use.
type Lists struct {
	mu    sync.Mutex
	max   int64
	ttl   time.Duration
	now   func() time.Time
	bytes int64
	items map[string]*list.Element
	lru   list.List // of *keptList, most recently used first
}

type keptList struct {
	key  string
	r    *Ranked
	used time.Time
}

// NewLists returns a store of at most maxBytes of lists, each kept ttl
// after its last use.
func NewLists(maxBytes int64, ttl time.Duration) *Lists {
	return &Lists{max: maxBytes, ttl: ttl, now: time.Now, items: map[string]*list.Element{}}
}

// Put keeps r and returns the key its cursors carry.
func (l *Lists) Put(r *Ranked) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	key := base64.RawURLEncoding.EncodeToString(b[:])
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items[key] = l.lru.PushFront(&keptList{key: key, r: r, used: l.now()})
	l.bytes += r.bytes
	l.evict()
	return key
}

// Get returns the list kept under key; ok is false once it was evicted.
func (l *Lists) Get(key string) (*Ranked, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evict()
	el, ok := l.items[key]
	if !ok {
		return nil, false
	}
	k := el.Value.(*keptList)
	k.used = l.now()
	l.lru.MoveToFront(el)
	return k.r, true
}

// evict drops lists beyond the budget and those unused past the ttl (mu
// held).
func (l *Lists) evict() {
	now := l.now()
	for el := l.lru.Back(); el != nil; el = l.lru.Back() {
		k := el.Value.(*keptList)
		if l.bytes <= l.max && now.Sub(k.used) <= l.ttl {
			return
		}
		l.lru.Remove(el)
		delete(l.items, k.key)
		l.bytes -= k.r.bytes
	}
}

// KeepHits is a ranked list of finished hits (graph units, tree nodes),
// kept for its later pages like a candidate list.
func KeepHits(hits []rcp.Hit) *Ranked {
	r := &Ranked{hits: hits}
	for _, h := range hits {
		r.bytes += 256
		if h.Text != nil {
			r.bytes += int64(len(*h.Text))
		}
	}
	return r
}

// Hits returns the hits of a list kept by KeepHits.
func (r *Ranked) Hits() []rcp.Hit { return r.hits }
