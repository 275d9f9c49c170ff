package index

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/chunk"
	"github.com/rcpgo/rcpgo/engine/internal/store"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/trust"
)

// FieldType says how a metadata field is indexed for filtering.
type FieldType int

const (
	// FieldAuto infers from the JSON type: strings are keywords, numbers
	// numeric, bools keywords "true"/"false", arrays per element, objects
	// flattened with dotted paths.
	FieldAuto FieldType = iota
	FieldKeyword
	FieldText // strings not indexed: filters on them read stored documents
	FieldInt
	FieldFloat
	FieldBool
	// FieldDate indexes RFC 3339 strings or epoch-millisecond numbers as
	// numeric epoch milliseconds (strings also stay keywords).
	FieldDate
)

// ParentField is the keyword field holding a chunk's parent document id.
const ParentField = "_docId"

// timeMillis is t as (fractional) milliseconds since the Unix epoch.
func timeMillis(t time.Time) float64 {
	return float64(t.Unix())*1000 + float64(t.Nanosecond())/1e6
}

// prepScratch is per-goroutine scratch space for prepare.
type prepScratch struct {
	toks []analysis.Token
	idx  map[string]int
	tfs  []termFreq
}

// prepare analyses d into a docInput (seq and id are filled at commit).
//
// Metadata is indexed as it reads back from the store (JSON, numbers as
// json.Number), so indexing at Add and at crash replay agree, and so do the
// index and the rcp/filter evaluator.
func prepare(an *analysis.Analyzer, fields map[string]FieldType, d *search.Document, sc *prepScratch) (*docInput, error) {
	in := &docInput{}
	meta, err := normalizeMeta(d.Meta)
	if err != nil {
		return nil, fmt.Errorf("index: metadata of %q: %w", d.ID, err)
	}
	if sc.idx == nil {
		sc.idx = map[string]int{}
	}
	clear(sc.idx)
	sc.tfs = sc.tfs[:0]
	for f, text := range [numFields]string{fieldTitle: d.Title, fieldBody: d.Text} {
		sc.toks = an.AppendTokens(sc.toks[:0], text)
		in.lens[f] = uint32(len(sc.toks))
		in.toks = slices.Grow(in.toks, 1+2*len(sc.toks))
		in.toks = append(in.toks, uint32(len(sc.toks)))
		for _, t := range sc.toks {
			j, ok := sc.idx[t.Term]
			if !ok {
				j = len(sc.tfs)
				sc.idx[t.Term] = j
				sc.tfs = append(sc.tfs, termFreq{term: t.Term})
			}
			sc.tfs[j].tf[f]++
			in.toks = append(in.toks, uint32(j), uint32(t.Position))
		}
	}
	in.terms = slices.Clone(sc.tfs)

	kw := map[string]struct{}{}
	if d.Chunk != nil && d.Chunk.DocID != "" {
		kw[scalarKey(ParentField, d.Chunk.DocID)] = struct{}{}
		kw[existsKey(ParentField)] = struct{}{}
	}
	// Metadata follows the rcp/filter evaluator's model: null is absent,
	// arrays hold scalars (nested arrays and objects inside arrays are
	// ignored), objects are reached by dotted paths.
	//lint:ignore S1021 the closure calls itself, so it is declared before it is assigned
	var scalar func(path string, v any, elem bool)
	scalar = func(path string, v any, elem bool) {
		switch x := v.(type) {
		case string:
			ft := fields[path]
			if ft == FieldDate {
				if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
					in.nums = append(in.nums, numValue{path, timeMillis(t)})
				}
			}
			if ft != FieldText {
				if elem {
					kw[elemKey(path, x)] = struct{}{}
				} else {
					kw[scalarKey(path, x)] = struct{}{}
				}
			}
		case bool:
			kw[boolKey(path, x)] = struct{}{}
		case time.Time:
			in.nums = append(in.nums, numValue{path, timeMillis(x)})
		default:
			if f, ok := search.MetaNumber(x); ok && !math.IsNaN(f) {
				in.nums = append(in.nums, numValue{path, f})
			}
		}
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		if v == nil {
			return
		}
		kw[existsKey(path)] = struct{}{}
		switch x := v.(type) {
		case map[string]any:
			for k, sub := range x {
				walk(path+"."+k, sub)
			}
		case []any:
			for _, e := range x {
				scalar(path, e, true)
			}
		case []string:
			for _, e := range x {
				scalar(path, e, true)
			}
		case []float64:
			for _, e := range x {
				scalar(path, e, true)
			}
		case []int:
			for _, e := range x {
				scalar(path, e, true)
			}
		default:
			scalar(path, x, false)
		}
	}
	for k, v := range meta {
		walk(k, v)
	}
	in.kw = make([]string, 0, len(kw))
	for k := range kw {
		in.kw = append(in.kw, k)
	}
	slices.Sort(in.kw)
	slices.SortStableFunc(in.nums, func(a, b numValue) int { return strings.Compare(a.field, b.field) })
	return in, nil
}

// normalizeMeta returns m as it decodes from its JSON encoding.
func normalizeMeta(m map[string]any) (map[string]any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// prepareAll analyses docs in parallel.
func prepareAll(ctx context.Context, an *analysis.Analyzer, fields map[string]FieldType, st *store.Store, docs []search.Document) ([]*docInput, error) {
	out := make([]*docInput, len(docs))
	workers := min(runtime.GOMAXPROCS(0), (len(docs)+63)/64)
	if workers <= 1 {
		var sc prepScratch
		for i := range docs {
			if i%256 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			var err error
			if out[i], err = prepareRecord(an, fields, st, &docs[i], &sc); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	next := make(chan int, workers)
	go func() {
		defer close(next)
		for i := 0; i < len(docs); i += 64 {
			if ctx.Err() != nil {
				return
			}
			next <- i
		}
	}()
	for range workers {
		wg.Go(func() {
			var sc prepScratch
			for lo := range next {
				for i := lo; i < min(lo+64, len(docs)); i++ {
					var err error
					if out[i], err = prepareRecord(an, fields, st, &docs[i], &sc); err != nil {
						errOnce.Do(func() { firstErr = err })
						continue
					}
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// prepareRecord is prepare plus what Add stores with the record: its
// facts and, when the document already has its id, its encoding in st
// (zstd compression is the costly part of a commit; doing it here keeps
// it out of the write lock).
func prepareRecord(an *analysis.Analyzer, fields map[string]FieldType, st *store.Store, d *search.Document, sc *prepScratch) (*docInput, error) {
	in, err := prepare(an, fields, d, sc)
	if err != nil {
		return nil, err
	}
	in.facts = factsOf(d)
	if d.ID != "" {
		if in.enc, err = st.EncodeDoc(d, in.facts); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// factsOf derives what queries need from every hit and would otherwise
// recompute per hit: the injection-screen verdict under the current rules
// (screened once, at index time), and the text's characters and tokens.
func factsOf(d *search.Document) search.Facts {
	sc := trust.Screen(d.Title + "\n" + d.Text)
	return search.Facts{ScreenRules: trust.RulesVersion, ScreenScore: sc.Score, Suspected: sc.Suspected,
		Runes: utf8.RuneCountInString(d.Text), Tokens: chunk.Tokens(d.Text)}
}

func validateDoc(d *search.Document) error {
	if strings.IndexByte(d.ID, 0) >= 0 || len(d.ID) > 1024 {
		return fmt.Errorf("index: invalid document id %q", d.ID)
	}
	if d.Chunk != nil && (strings.IndexByte(d.Chunk.DocID, 0) >= 0 || d.Chunk.Start < 0 || d.Chunk.End < d.Chunk.Start) {
		return fmt.Errorf("index: invalid chunk reference on %q", d.ID)
	}
	return nil
}
