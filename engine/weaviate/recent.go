package weaviate

// Read-your-writes in BM25 ranking (issue 31). An object Weaviate has
// acknowledged is searchable at once, but until its memtable is flushed to
// a segment (after PERSISTENCE_MEMTABLES_FLUSH_IDLE_AFTER_SECONDS of quiet,
// 60 s by default, or when it fills) Weaviate's BlockMax WAND bounds a
// memtable posting's score by the term's idf alone — below what the term
// can score with its BM25 saturation and the title's boost — and prunes
// such documents from a top k they belong in. Measured on Cranfield over
// one node: nDCG@10 0.19 right after the ingest, 0.35 a minute later; the
// same queries with a limit above the matching documents (no pruning) rank
// exactly at once.
//
// So the backend remembers the documents it wrote within RecentWindow; a
// BM25 search made meanwhile also runs the query restricted to them with
// a limit that covers them all (no pruning among them, exact scores) and
// merges the two lists: the top k is then Weaviate's exact BM25 for every
// document this rcpd wrote, acknowledged or not yet flushed. Writes by
// other rcpd replicas are not known here (their documents may rank low
// for a minute: docs/rcpd.md); past RecentMax recent documents the second
// query would be too large and the answer says so in usage.notes.

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"

	"github.com/rcpgo/rcpgo/engine/search"
)

// Defaults of Config.RecentWindow and Config.RecentMax.
const (
	DefaultRecentWindow = 75 * time.Second // Weaviate's 60 s idle flush, and a margin
	DefaultRecentMax    = 5000
)

// recentWrites holds the ids written within the window.
type recentWrites struct {
	mu     sync.Mutex
	window time.Duration
	max    int
	at     map[string]time.Time // id → its last write
	order  []written            // writes, oldest first (an id once per write)
	now    func() time.Time
}

type written struct {
	id string
	at time.Time
}

func newRecentWrites(window time.Duration, max int) *recentWrites {
	return &recentWrites{window: window, max: max, at: map[string]time.Time{}, now: time.Now}
}

// add records ids as written now.
func (r *recentWrites) add(ids []string) {
	if r.window <= 0 {
		return
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		r.at[id] = now
		r.order = append(r.order, written{id, now})
	}
	r.prune(now)
}

// live returns the ids written within the window; overflow reports more
// than max of them (ids is then nil).
func (r *recentWrites) live() (ids []string, overflow int) {
	if r.window <= 0 {
		return nil, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prune(r.now())
	if len(r.at) > r.max {
		return nil, len(r.at)
	}
	ids = make([]string, 0, len(r.at))
	for id := range r.at {
		ids = append(ids, id)
	}
	return ids, 0
}

// prune forgets the writes older than the window (mu held).
func (r *recentWrites) prune(now time.Time) {
	n := 0
	for ; n < len(r.order) && now.Sub(r.order[n].at) > r.window; n++ {
		if w := r.order[n]; r.at[w.id] == w.at {
			delete(r.at, w.id)
		}
	}
	if n > 0 {
		r.order = append(r.order[:0:0], r.order[n:]...)
	}
}

// withRecent gives a BM25 answer res (of limit) the exact scores of the
// documents this backend wrote within the window: it searches them again
// among themselves with a limit that covers them all (no pruning) and
// only their ids, keeps each document's exact score, and fetches the
// documents of those that enter the top limit without having been in res.
// With more recent documents than RecentMax it notes that the ranking may
// miss them.
func (b *Backend) withRecent(res []graphql.SearchResult, where *filters.WhereBuilder, limit int,
	run func(*filters.WhereBuilder, int, ...string) ([]graphql.SearchResult, error), out *search.Result) ([]graphql.SearchResult, error) {
	ids, overflow := b.recent.live()
	if overflow > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("weaviate: %d documents written in the last %v may not be flushed yet, and Weaviate's BM25 "+
			"ranks unflushed documents too low; the ranking settles once Weaviate flushes them", overflow, b.cfg.RecentWindow))
		return res, nil
	}
	if len(ids) == 0 {
		return res, nil
	}
	recent := textIn(propID, ids)
	if where != nil {
		recent = and(where, recent)
	}
	exact, err := run(recent, len(ids), propID)
	if err != nil {
		return nil, err
	}
	out.Scored += len(exact)
	at := make(map[string]int, len(res))
	for i := range res {
		if id, ok := res[i].Properties[propID].(string); ok {
			at[id] = i
		}
	}
	var extra []graphql.SearchResult // recent documents res lacks, ids only
	for _, r := range exact {
		id, _ := r.Properties[propID].(string)
		if i, ok := at[id]; ok {
			res[i].Metadata.Score = r.Metadata.Score // the exact score
			continue
		}
		extra = append(extra, r)
	}
	return b.admit(res, extra, limit, where, run)
}

// admit adds to res the documents of extra (ids and exact scores) that
// rank within the top limit of the two, fetching their stored properties.
func (b *Backend) admit(res, extra []graphql.SearchResult, limit int, where *filters.WhereBuilder,
	run func(*filters.WhereBuilder, int, ...string) ([]graphql.SearchResult, error)) ([]graphql.SearchResult, error) {
	scores := make([]float32, 0, len(res)+len(extra))
	for _, r := range res {
		scores = append(scores, r.Metadata.Score)
	}
	for _, r := range extra {
		scores = append(scores, r.Metadata.Score)
	}
	slices.SortFunc(scores, func(a, c float32) int { return cmp.Compare(c, a) })
	cut := float32(0)
	if len(scores) > limit {
		cut = scores[limit-1]
	}
	var want []string
	score := map[string]float32{}
	for _, r := range extra {
		if r.Metadata.Score >= cut {
			id, _ := r.Properties[propID].(string)
			want, score[id] = append(want, id), r.Metadata.Score
		}
	}
	if len(want) == 0 {
		return res, nil
	}
	w := textIn(propID, want)
	if where != nil {
		w = and(where, w)
	}
	docs, err := run(w, len(want))
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		id, _ := d.Properties[propID].(string)
		if s, ok := score[id]; ok {
			d.Metadata.Score = s // the exact score (this search ranked them among themselves)
			res = append(res, d)
		}
	}
	return res, nil
}
