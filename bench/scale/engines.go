package main

import (
	"context"
	"fmt"
	"os"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"

	"github.com/rcpgo/rcpgo/bench/gen"
	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/search"
)

// ---------------------------------------------------------------- ours

// ours is engine/index as rcpd uses it: BM25F over title and body with the
// default analyzer (Unicode words, folding, English stop words, Snowball
// stemming) and the default metadata indexing of every meta field.
type ours struct {
	ix      *index.Index
	pending int // docs added since the last Flush
}

// flushEvery is how many documents the bulk load buffers per segment.
const flushEvery = 100_000

func openOurs(ctx context.Context, dir string, create bool) (engine, error) {
	if !create {
		if _, err := os.Stat(dir); err != nil {
			return nil, err
		}
	}
	// The bulk load drives flushing and merging itself; queries run on a
	// quiescent index either way.
	ix, err := index.Open(ctx, dir, index.Options{NoBackground: true, FlushDocs: flushEvery})
	if err != nil {
		return nil, err
	}
	return &ours{ix: ix}, nil
}

func (o *ours) add(ctx context.Context, docs []gen.Doc) error {
	in := make([]search.Document, len(docs))
	for i, d := range docs {
		in[i] = search.Document{ID: d.ID, Title: d.Title, Text: d.Text, Meta: d.Meta.MetaMap()}
	}
	if _, err := o.ix.Add(ctx, in); err != nil {
		return err
	}
	o.pending += len(docs)
	if o.pending >= flushEvery {
		o.pending = 0
		return o.ix.Flush(ctx)
	}
	return nil
}

func (o *ours) finish(ctx context.Context) error {
	if err := o.ix.Flush(ctx); err != nil {
		return err
	}
	return o.ix.Merge(ctx) // down to MergeFactor (8) segments, as the background merger would
}

func (o *ours) search(ctx context.Context, q string, k int) ([]string, error) {
	r, err := o.ix.Search(ctx, search.Query{Text: q, K: k, SkipDocs: true})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(r.Hits))
	for i, h := range r.Hits {
		ids[i] = h.ID
	}
	return ids, nil
}

func (o *ours) describe() string {
	st := o.ix.Stats()
	return fmt.Sprintf("engine/index: BM25F k1=1.2 b=0.75 title×2, default analyzer, %d segments (%d terms), NoBackground bulk load with Flush every %d docs then Merge; Add fsyncs (bbolt) per batch; queries SkipDocs",
		st.Segments, st.Terms, flushEvery)
}

func (o *ours) close() error { return o.ix.Close() }

// ---------------------------------------------------------------- bleve

// bleveEngine is bleve v2 with its default index type (scorch), the "en"
// analyzer on title and text, BM25 scoring (IndexMapping.ScoringModel, new in
// bleve 2.5) and the metadata mapped to the closest bleve field types.
type bleveEngine struct {
	idx bleve.Index
}

func bleveMapping() *mapping.IndexMappingImpl {
	text := func() *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Analyzer = en.AnalyzerName
		f.IncludeInAll = false
		return f
	}
	notAll := func(f *mapping.FieldMapping) *mapping.FieldMapping { f.IncludeInAll = false; return f }
	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt("title", text())
	doc.AddFieldMappingsAt("text", text())
	doc.AddFieldMappingsAt("lang", notAll(bleve.NewKeywordFieldMapping()))
	doc.AddFieldMappingsAt("year", notAll(bleve.NewNumericFieldMapping()))
	doc.AddFieldMappingsAt("score", notAll(bleve.NewNumericFieldMapping()))
	doc.AddFieldMappingsAt("published", notAll(bleve.NewBooleanFieldMapping()))
	doc.AddFieldMappingsAt("date", notAll(bleve.NewDateTimeFieldMapping()))
	im := bleve.NewIndexMapping()
	im.DefaultMapping = doc
	im.DefaultAnalyzer = en.AnalyzerName
	im.ScoringModel = bindex.BM25Scoring
	return im
}

func openBleve(_ context.Context, dir string, create bool) (engine, error) {
	var idx bleve.Index
	var err error
	if create {
		idx, err = bleve.New(dir, bleveMapping()) // scorch; Batch waits for persistence
	} else {
		idx, err = bleve.Open(dir)
	}
	if err != nil {
		return nil, err
	}
	return &bleveEngine{idx: idx}, nil
}

func (b *bleveEngine) add(_ context.Context, docs []gen.Doc) error {
	batch := b.idx.NewBatch()
	for _, d := range docs {
		m := d.Meta.MetaMap()
		m["title"], m["text"] = d.Title, d.Text
		if err := batch.Index(d.ID, m); err != nil {
			return err
		}
	}
	return b.idx.Batch(batch)
}

func (b *bleveEngine) finish(context.Context) error { return nil }

// search is a disjunction of match queries over title (boost 2, as our
// title weight) and text: any query term may match, like our BM25F.
func (b *bleveEngine) search(ctx context.Context, q string, k int) ([]string, error) {
	title := bleve.NewMatchQuery(q)
	title.SetField("title")
	title.SetBoost(2)
	text := bleve.NewMatchQuery(q)
	text.SetField("text")
	req := bleve.NewSearchRequestOptions(query.NewDisjunctionQuery([]query.Query{title, text}), k, 0, false)
	res, err := b.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	return ids, nil
}

func (b *bleveEngine) describe() string {
	return "bleve v2.6.3: scorch (default), \"en\" analyzer on title and text, ScoringModel bm25 (k1=1.2 b=0.75), meta as keyword/numeric/bool/datetime fields, _all off; query = disjunction of match(title)^2 and match(text), no stored fields loaded"
}

func (b *bleveEngine) close() error { return b.idx.Close() }
