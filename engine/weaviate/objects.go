package weaviate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/go-openapi/strfmt"
	"github.com/google/uuid"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
	"github.com/weaviate/weaviate/entities/models"

	"github.com/rcpgo/rcpgo/engine/chunk"
	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/trust"
	"github.com/rcpgo/rcpgo/rcp/filter"
)

// uuidNamespace roots the deterministic object UUIDs: UUIDv5(namespace,
// class + NUL + id). The same id always lands on the same object, so an
// upsert replaces it and a replayed index/add (idempotency key or not)
// writes nothing new, on every rcpd replica.
var uuidNamespace = uuid.MustParse("6f0c5a52-8d1e-4c57-9b39-3f7a8e2c1d40")

func (b *Backend) objectID(id string) strfmt.UUID {
	return strfmt.UUID(uuid.NewSHA1(uuidNamespace, []byte(b.cfg.Class+"\x00"+id)).String())
}

// maxBatch is the number of objects sent in one gRPC batch.
const maxBatch = 200

// Add upserts docs (documents and chunks) with their vectors, then drops
// what an upsert replaced: the chunks a document no longer has (or all of
// them when it is no longer chunked), and the whole document when it is
// now chunked.
func (b *Backend) Add(ctx context.Context, docs []search.Document) ([]string, error) {
	c, err := b.conn()
	if err != nil {
		return nil, err
	}
	var vecs [][]float32
	if b.cfg.Dense != nil {
		if vecs, err = b.embedDocs(ctx, docs); err != nil {
			return nil, err
		}
	}
	ids := make([]string, len(docs))
	objs := make([]*models.Object, len(docs))
	chunksOf := map[string][]string{} // parent → its chunk ids in this write
	plain := map[string]bool{}
	for i := range docs {
		d := &docs[i]
		ids[i] = d.ID
		obj, err := b.object(d)
		if err != nil {
			return nil, err
		}
		if vecs != nil {
			obj.Vector = vecs[i]
		}
		objs[i] = obj
		if d.Chunk != nil {
			chunksOf[d.Chunk.DocID] = append(chunksOf[d.Chunk.DocID], d.ID)
		} else {
			plain[d.ID] = true
		}
	}
	for start := 0; start < len(objs); start += maxBatch {
		batch := objs[start:min(start+maxBatch, len(objs))]
		res, err := c.Batch().ObjectsBatcher().WithObjects(batch...).WithConsistencyLevel(b.cfg.WriteConsistency).Do(ctx)
		if err != nil {
			return nil, classify(ctx, "batch import", err)
		}
		for _, r := range res {
			if r.Result != nil && r.Result.Errors != nil && len(r.Result.Errors.Error) > 0 {
				return nil, classify(ctx, "batch import", fmt.Errorf("object %s: %s", r.ID, r.Result.Errors.Error[0].Message))
			}
		}
	}
	// Replaced shapes: stale chunks of the documents written here.
	var stale []*filters.WhereBuilder
	for parent, keep := range chunksOf {
		stale = append(stale, and(textEq(propChunkDoc, parent), not(textIn(propID, keep))))
		stale = append(stale, textEq(propID, parent)) // was a whole document
	}
	for id := range plain {
		stale = append(stale, textEq(propChunkDoc, id)) // was chunked
	}
	for start := 0; start < len(stale); start += 50 {
		if _, err := b.deleteWhere(ctx, or(stale[start:min(start+50, len(stale))]...)); err != nil {
			return nil, err
		}
	}
	b.stats.Store(nil)
	b.recent.add(ids)
	return ids, nil
}

func (b *Backend) embedDocs(ctx context.Context, docs []search.Document) ([][]float32, error) {
	texts := make([]string, len(docs))
	for i := range docs {
		texts[i] = denseText(&docs[i])
	}
	limit := b.cfg.Dense.BatchLimit()
	if limit <= 0 {
		limit = 256
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += limit {
		v, err := b.cfg.Dense.Embed(ctx, texts[start:min(start+limit, len(texts))], embed.KindDocument)
		if err != nil {
			return nil, fmt.Errorf("weaviate: embedding documents: %w", err)
		}
		out = append(out, v...)
	}
	if len(out) != len(docs) {
		return nil, fmt.Errorf("weaviate: the encoder returned %d vectors for %d documents", len(out), len(docs))
	}
	return out, nil
}

// denseText is what the dense encoder sees of a document (as in the
// embedded engine).
func denseText(d *search.Document) string {
	if d.Title == "" {
		return d.Text
	}
	return d.Title + "\n" + d.Text
}

// object converts a document to its Weaviate object. Index-time facts
// (the injection-screen verdict, lengths) are computed here, once.
func (b *Backend) object(d *search.Document) (*models.Object, error) {
	if d.ID == "" || !utf8.ValidString(d.ID) || strings.IndexByte(d.ID, 0) >= 0 {
		return nil, fmt.Errorf("weaviate: invalid document id %q", d.ID)
	}
	sc := trust.Screen(d.Title + "\n" + d.Text)
	facts := search.Facts{ScreenRules: trust.RulesVersion, ScreenScore: sc.Score, Suspected: sc.Suspected,
		Runes: utf8.RuneCountInString(d.Text), Tokens: chunk.Tokens(d.Text)}
	props := map[string]any{propID: d.ID, propTitle: d.Title, propText: d.Text, propFacts: mustJSON(facts)}
	if d.Meta != nil {
		props[propMeta] = mustJSON(d.Meta)
	}
	if d.Source != nil {
		props[propSource] = mustJSON(d.Source)
	}
	if d.Chunk != nil {
		props[propChunkDoc] = d.Chunk.DocID
		props[propChunk] = mustJSON(d.Chunk)
	}
	present := []string{}
	for _, f := range b.schema.fields {
		raw, ok := filter.Lookup(d.Meta, f.name)
		if !ok {
			continue
		}
		present = append(present, f.prop)
		if vals := f.values(raw); vals != nil {
			props[f.prop] = vals
		}
	}
	props[propPresent] = present
	return &models.Object{Class: b.cfg.Class, ID: b.objectID(d.ID), Tenant: b.cfg.Tenant, Properties: props}, nil
}

func mustJSON(v any) string {
	j, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(j)
}

// values converts a metadata value to the property's typed array. Values
// of another JSON type are not stored: §8 never finds them equal to a
// value of the field's type.
func (f field) values(raw any) any {
	var elems []any
	if a, ok := raw.([]any); ok {
		elems = a
	} else {
		elems = []any{raw}
	}
	switch f.dataType {
	case "text[]":
		var out []string
		for _, e := range elems {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return nilIfEmpty(out)
	case "number[]":
		var out []float64
		for _, e := range elems {
			if x, ok := search.MetaNumber(e); ok && !math.IsNaN(x) && !math.IsInf(x, 0) {
				out = append(out, x)
			}
		}
		return nilIfEmpty(out)
	case "boolean[]":
		var out []bool
		for _, e := range elems {
			if x, ok := e.(bool); ok {
				out = append(out, x)
			}
		}
		return nilIfEmpty(out)
	case "date[]":
		var out []string
		for _, e := range elems {
			if t, ok := search.MetaDate(e); ok {
				out = append(out, t.UTC().Format("2006-01-02T15:04:05.999999999Z07:00"))
			}
		}
		return nilIfEmpty(out)
	}
	return nil
}

func nilIfEmpty[T any](s []T) any {
	if len(s) == 0 {
		return nil
	}
	return s
}

// document converts a search result back to the stored document and its
// facts.
func document(r *graphql.SearchResult) (*search.Document, search.Facts) {
	str := func(k string) string { s, _ := r.Properties[k].(string); return s }
	d := &search.Document{ID: str(propID), Title: str(propTitle), Text: str(propText)}
	var facts search.Facts
	if s := str(propMeta); s != "" {
		dec := json.NewDecoder(strings.NewReader(s))
		var m map[string]any
		if dec.Decode(&m) == nil {
			d.Meta = m
		}
	}
	if s := str(propSource); s != "" {
		var src search.Source
		if json.Unmarshal([]byte(s), &src) == nil {
			d.Source = &src
		}
	}
	if s := str(propChunk); s != "" {
		var cr search.ChunkRef
		if json.Unmarshal([]byte(s), &cr) == nil {
			d.Chunk = &cr
		}
	}
	if s := str(propFacts); s != "" {
		_ = json.Unmarshal([]byte(s), &facts)
	}
	return d, facts
}

// Get returns document (or chunk) id, nil when absent.
func (b *Backend) Get(ctx context.Context, id string) (*search.Document, error) {
	res, err := b.search(ctx, func(s *graphql.Search) { s.WithWhere(textEq(propID, id)).WithLimit(1) })
	if err != nil || len(res) == 0 {
		return nil, err
	}
	d, _ := document(&res[0])
	return d, nil
}

// Delete removes ids (a chunked document's id removes its chunks too) and
// returns how many ids named something.
func (b *Backend) Delete(ctx context.Context, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	seen := map[string]bool{}
	var uniq []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	n := 0
	for start := 0; start < len(uniq); start += 100 {
		part := uniq[start:min(start+100, len(uniq))]
		where := or(textIn(propID, part), textIn(propChunkDoc, part))
		// Which ids name something: objects whose id or parent is listed.
		found := map[string]bool{}
		res, err := b.search(ctx, func(s *graphql.Search) {
			s.WithWhere(where).WithLimit(10000).WithProperties(propID, propChunkDoc)
		})
		if err != nil {
			return 0, err
		}
		for i := range res {
			for _, k := range []string{propID, propChunkDoc} {
				if s, ok := res[i].Properties[k].(string); ok && seen[s] {
					found[s] = true
				}
			}
		}
		if _, err := b.deleteWhere(ctx, where); err != nil {
			return 0, err
		}
		n += len(found)
	}
	b.stats.Store(nil)
	return n, nil
}

// deleteWhere deletes every object matching where (in rounds: one batch
// delete removes at most Weaviate's QUERY_MAXIMUM_RESULTS objects).
func (b *Backend) deleteWhere(ctx context.Context, where *filters.WhereBuilder) (int, error) {
	c, err := b.conn()
	if err != nil {
		return 0, err
	}
	total := 0
	for {
		res, err := c.Batch().ObjectsBatchDeleter().WithClassName(b.cfg.Class).WithTenant(b.cfg.Tenant).
			WithConsistencyLevel(b.cfg.WriteConsistency).WithOutput("minimal").WithWhere(where).Do(ctx)
		if err != nil {
			return total, classify(ctx, "batch delete", err)
		}
		if res == nil || res.Results == nil {
			return total, nil
		}
		total += int(res.Results.Successful)
		if res.Results.Failed > 0 {
			return total, classify(ctx, "batch delete", fmt.Errorf("%d objects could not be deleted", res.Results.Failed))
		}
		if res.Results.Matches < res.Results.Limit || res.Results.Matches == 0 {
			return total, nil
		}
	}
}

// Text filters on the bookkeeping properties.
func textEq(prop, v string) *filters.WhereBuilder {
	return filters.Where().WithPath([]string{prop}).WithOperator(filters.Equal).WithValueText(v)
}

func textIn(prop string, vs []string) *filters.WhereBuilder {
	return filters.Where().WithPath([]string{prop}).WithOperator(filters.ContainsAny).WithValueText(vs...)
}

func and(ws ...*filters.WhereBuilder) *filters.WhereBuilder {
	if len(ws) == 1 {
		return ws[0]
	}
	return filters.Where().WithOperator(filters.And).WithOperands(ws)
}

func or(ws ...*filters.WhereBuilder) *filters.WhereBuilder {
	if len(ws) == 1 {
		return ws[0]
	}
	return filters.Where().WithOperator(filters.Or).WithOperands(ws)
}

func not(w *filters.WhereBuilder) *filters.WhereBuilder {
	return filters.Where().WithOperator(filters.Not).WithOperands([]*filters.WhereBuilder{w})
}
