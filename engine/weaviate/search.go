package weaviate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
	"github.com/weaviate/weaviate/entities/models"

	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/query"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp/filter"
)

// bm25Props are the searched properties: the title counts twice, as in
// the embedded index's BM25F.
var bm25Props = []string{propTitle + "^2", propText}

// search runs one gRPC search on the collection: build sets its query,
// limit and filter (the stored properties are requested unless it sets
// others). Not connected, or a transport failure: -32010.
func (b *Backend) search(ctx context.Context, build func(*graphql.Search)) ([]graphql.SearchResult, error) {
	c, err := b.conn()
	if err != nil {
		return nil, err
	}
	s := c.Experimental().Search().WithCollection(b.cfg.Class).WithTenant(b.cfg.Tenant).
		WithConsistencyLevel(b.cfg.ReadConsistency).WithProperties(storedProps...)
	build(s)
	res, err := s.Do(ctx)
	if err != nil {
		return nil, classify(ctx, "search", err)
	}
	return res, nil
}

func (b *Backend) checkVersion(v string) error {
	if v != "" && v != b.Version() {
		return search.ErrSnapshotGone
	}
	return nil
}

// Search implements search.Searcher: BM25 over title (×2) and text, ties
// by id, with the compiled filter in Weaviate and the exact §8 check on
// every hit, and quoted phrases checked on the candidates' texts. An empty
// Text browses the filter's matches in id order. Hits carry their
// documents (one round trip; SkipDocs is ignored).
func (b *Backend) Search(ctx context.Context, q search.Query) (*search.Result, error) {
	if err := b.checkVersion(q.Version); err != nil {
		return nil, err
	}
	if q.K <= 0 {
		q.K = 10
	}
	f, err := asFilter(q.Filter)
	if err != nil {
		return nil, err
	}
	limit := q.K
	phrases := query.Matcher(b.an, q.Text)
	if phrases != nil {
		limit = min(max(phraseDepthPerK*q.K, phraseDepthMin), phraseDepthMax)
	}
	run := func(where *filters.WhereBuilder, limit int, props ...string) ([]graphql.SearchResult, error) {
		return b.search(ctx, func(s *graphql.Search) {
			s.WithLimit(limit).WithMetadata(&graphql.Metadata{Score: true})
			if len(props) > 0 {
				s.WithProperties(props...)
			}
			if where != nil {
				s.WithWhere(where)
			}
			if strings.TrimSpace(q.Text) != "" {
				s.WithBM25((&graphql.BM25ArgumentBuilder{}).WithQuery(query.RankText(q.Text)).WithProperties(bm25Props...))
			} else {
				s.WithSort(graphql.Sort{Path: []string{propID}})
			}
		})
	}
	var where *filters.WhereBuilder
	if f != nil {
		where = f.Where
	}
	res, err := run(where, limit)
	if err != nil {
		return nil, err
	}
	out := &search.Result{Version: b.Version(), Scored: len(res)}
	if strings.TrimSpace(q.Text) != "" {
		if res, err = b.withRecent(res, where, limit, run, out); err != nil {
			return nil, err
		}
	}
	for i := range res {
		d, facts := document(&res[i])
		if f != nil && !f.Exact && !f.Node.Match(d.Meta) {
			continue
		}
		if phrases != nil && !phrases(d) {
			continue
		}
		if q.NoText {
			d.Text = ""
		}
		out.Hits = append(out.Hits, search.Hit{ID: d.ID, Score: float64(res[i].Metadata.Score), Doc: d, Facts: facts})
	}
	slices.SortStableFunc(out.Hits, func(a, c search.Hit) int {
		if x := cmp.Compare(c.Score, a.Score); x != 0 {
			return x
		}
		return strings.Compare(a.ID, c.ID)
	})
	out.Hits = out.Hits[:min(len(out.Hits), q.K)]
	return out, nil
}

// Weaviate's BM25 has no positions: a query quoting phrases fetches
// phraseDepthPerK candidates per hit asked for (at least phraseDepthMin, at
// most phraseDepthMax) and keeps those whose analysed title or text holds
// every phrase (query.Matcher). A phrase found only below that depth
// is missed.
const (
	phraseDepthPerK = 8
	phraseDepthMin  = 100
	phraseDepthMax  = 1000
)

func asFilter(f search.Filter) (*Filter, error) {
	if f == nil {
		return nil, nil
	}
	wf, ok := f.(*Filter)
	if !ok {
		return nil, fmt.Errorf("weaviate: filter %T was not compiled by this backend", f)
	}
	return wf, nil
}

// Load implements search.Searcher. Search returns documents with its hits,
// so the pipeline never asks for document numbers.
func (b *Backend) Load(context.Context, []search.DocNum, bool) ([]*search.Document, []search.Facts, error) {
	return nil, nil, errors.New("weaviate: documents come with the hits; there are no document numbers to load")
}

// WordMax implements search.Searcher: the top BM25 score of word alone
// (the confidence normaliser), cached for a minute per word.
func (b *Backend) WordMax(ctx context.Context, version, word string) (float64, error) {
	if err := b.checkVersion(version); err != nil {
		return 0, err
	}
	if v, ok := b.words.GetIfPresent(word); ok {
		return v, nil
	}
	res, err := b.search(ctx, func(s *graphql.Search) {
		s.WithLimit(1).WithProperties(propID).WithMetadata(&graphql.Metadata{Score: true}).
			WithBM25((&graphql.BM25ArgumentBuilder{}).WithQuery(word).WithProperties(bm25Props...))
	})
	if err != nil {
		return 0, err
	}
	best := 0.0
	if len(res) > 0 {
		best = float64(res[0].Metadata.Score)
	}
	b.words.Set(word, best)
	return best, nil
}

// Provider is the dense encoder (nil: sparse only).
func (b *Backend) Provider() embed.Provider { return b.cfg.Dense }

// DenseRecall returns up to k units nearest to query by cosine similarity
// (strictly positive), restricted by the compiled filter f (nil: none),
// best first, ties by id.
func (b *Backend) DenseRecall(ctx context.Context, text string, k int, f *filter.Node) ([]search.Hit, error) {
	if b.cfg.Dense == nil {
		return nil, errors.New("weaviate: no dense encoder configured")
	}
	qv, err := b.cfg.Dense.Embed(ctx, []string{text}, embed.KindQuery)
	if err != nil {
		return nil, fmt.Errorf("weaviate: embedding the query: %w", err)
	}
	if len(qv) != 1 || allZero(qv[0]) {
		return nil, nil
	}
	var cf *Filter
	if f != nil {
		cf = b.schema.compile(f)
	}
	res, err := b.search(ctx, func(s *graphql.Search) {
		s.WithLimit(k).WithMetadata(&graphql.Metadata{Distance: true}).
			WithNearVector((&graphql.NearVectorArgumentBuilder{}).WithVector(qv[0]))
		if cf != nil && cf.Where != nil {
			s.WithWhere(cf.Where)
		}
	})
	if err != nil {
		return nil, err
	}
	var out []search.Hit
	for i := range res {
		d, _ := document(&res[i])
		sim := 1 - float64(res[i].Metadata.Distance) // cosine distance
		if sim <= 0 || (cf != nil && !cf.Exact && !f.Match(d.Meta)) {
			continue
		}
		out = append(out, search.Hit{ID: d.ID, Doc: d, Score: sim})
	}
	slices.SortStableFunc(out, func(a, c search.Hit) int {
		if x := cmp.Compare(c.Score, a.Score); x != 0 {
			return x
		}
		return strings.Compare(a.ID, c.ID)
	})
	return out, nil
}

func allZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// Vectors returns the stored vectors of ids (zero vectors for unknown
// ids).
func (b *Backend) Vectors(ctx context.Context, ids []string) ([][]float32, error) {
	out := make([][]float32, len(ids))
	at := map[string][]int{}
	for i, id := range ids {
		at[id] = append(at[id], i)
	}
	uniq := make([]string, 0, len(at))
	for id := range at {
		uniq = append(uniq, id)
	}
	for start := 0; start < len(uniq); start += 100 {
		part := uniq[start:min(start+100, len(uniq))]
		res, err := b.search(ctx, func(s *graphql.Search) {
			s.WithWhere(textIn(propID, part)).WithLimit(len(part)).WithProperties(propID).
				WithMetadata(&graphql.Metadata{Vector: true})
		})
		if err != nil {
			return nil, err
		}
		for i := range res {
			id, _ := res[i].Properties[propID].(string)
			for _, j := range at[id] {
				out[j] = res[i].Vector
			}
		}
	}
	for i := range out {
		if out[i] == nil && b.cfg.Dense != nil {
			out[i] = make([]float32, b.cfg.Dense.Dimension())
		}
	}
	return out, nil
}

type cachedStats struct {
	at    time.Time
	stats search.Stats
}

// Stats reports the number of objects (refreshed at most every 5 s;
// other fields describe the embedded index and stay zero).
func (b *Backend) Stats() search.Stats {
	if c := b.stats.Load(); c != nil && time.Since(c.at) < 5*time.Second {
		return c.stats
	}
	st := search.Stats{Version: b.Version()}
	if c, err := b.conn(); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		agg := c.GraphQL().Aggregate().WithClassName(b.cfg.Class).
			WithFields(graphql.Field{Name: "meta", Fields: []graphql.Field{{Name: "count"}}})
		if b.cfg.Tenant != "" {
			agg = agg.WithTenant(b.cfg.Tenant)
		}
		if r, err := agg.Do(ctx); err == nil && len(r.Errors) == 0 {
			st.Docs = aggregateCount(r.Data, b.cfg.Class)
		}
	}
	b.stats.Store(&cachedStats{at: time.Now(), stats: st})
	return st
}

func aggregateCount(data map[string]models.JSONObject, class string) int {
	agg, _ := data["Aggregate"].(map[string]any)
	if agg == nil {
		return 0
	}
	rows, _ := agg[class].([]any)
	if len(rows) == 0 {
		return 0
	}
	row, _ := rows[0].(map[string]any)
	meta, _ := row["meta"].(map[string]any)
	n, _ := meta["count"].(float64)
	return int(n)
}
