package index

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rcpgo/rcpgo/engine/analysis"
)

// FieldType says how a metadata field is indexed for filtering.
type FieldType int

const (
	// FieldAuto infers from the JSON type: strings are keywords, numbers
	// numeric, bools keywords "true"/"false", arrays per element, objects
	// flattened with dotted paths.
	FieldAuto FieldType = iota
	FieldKeyword
	FieldText // not indexed: Contains reads stored documents
	FieldInt
	FieldFloat
	FieldBool
	// FieldDate indexes RFC 3339 strings or epoch-millisecond numbers as
	// numeric epoch milliseconds (and RFC 3339 strings also as keywords).
	FieldDate
)

// ParentField is the keyword field holding a chunk's parent document id.
const ParentField = "_docId"

// prepare analyses d into a docInput (seq and id are filled at commit).
func prepare(an *analysis.Analyzer, fields map[string]FieldType, d *Document, scratch []analysis.Token) (*docInput, []analysis.Token) {
	in := &docInput{}
	tfs := map[string]*[numFields]uint32{}
	for f, text := range [numFields]string{FieldTitle: d.Title, FieldBody: d.Text} {
		scratch = an.AppendTokens(scratch[:0], text)
		in.lens[f] = uint32(len(scratch))
		for _, t := range scratch {
			c := tfs[t.Term]
			if c == nil {
				c = new([numFields]uint32)
				tfs[t.Term] = c
			}
			c[f]++
		}
	}
	in.terms = make([]termFreq, 0, len(tfs))
	for t, c := range tfs {
		in.terms = append(in.terms, termFreq{term: t, tf: *c})
	}
	slices.SortFunc(in.terms, func(a, b termFreq) int { return strings.Compare(a.term, b.term) })

	kw := map[string]struct{}{}
	if d.Chunk != nil && d.Chunk.DocID != "" {
		kw[kwKey(ParentField, d.Chunk.DocID)] = struct{}{}
		kw[existsKey(ParentField)] = struct{}{}
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		kw[existsKey(path)] = struct{}{}
		ft := fields[path]
		switch x := v.(type) {
		case nil:
		case map[string]any:
			for k, sub := range x {
				walk(path+"."+k, sub)
			}
		case []any:
			for _, e := range x {
				if _, nested := e.([]any); !nested {
					walk(path, e)
				}
			}
		case []string:
			for _, e := range x {
				walk(path, e)
			}
		case string:
			switch ft {
			case FieldText:
			case FieldDate:
				if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
					in.nums = append(in.nums, numValue{path, float64(t.UnixMilli())})
				}
				kw[kwKey(path, x)] = struct{}{}
			case FieldInt, FieldFloat:
				if f, err := strconv.ParseFloat(x, 64); err == nil {
					in.nums = append(in.nums, numValue{path, f})
				}
			default:
				kw[kwKey(path, x)] = struct{}{}
			}
		case bool:
			kw[kwKey(path, strconv.FormatBool(x))] = struct{}{}
		case time.Time:
			in.nums = append(in.nums, numValue{path, float64(x.UnixMilli())})
		default:
			if f, ok := toFloat(x); ok && !math.IsNaN(f) {
				in.nums = append(in.nums, numValue{path, f})
				if ft == FieldKeyword {
					kw[kwKey(path, strconv.FormatFloat(f, 'f', -1, 64))] = struct{}{}
				}
			}
		}
	}
	for k, v := range d.Meta {
		walk(k, v)
	}
	in.kw = make([]string, 0, len(kw))
	for k := range kw {
		in.kw = append(in.kw, k)
	}
	slices.Sort(in.kw)
	slices.SortStableFunc(in.nums, func(a, b numValue) int { return strings.Compare(a.field, b.field) })
	return in, scratch
}

// prepareAll analyses docs in parallel.
func prepareAll(ctx context.Context, an *analysis.Analyzer, fields map[string]FieldType, docs []Document) ([]*docInput, error) {
	out := make([]*docInput, len(docs))
	workers := min(runtime.GOMAXPROCS(0), (len(docs)+63)/64)
	if workers <= 1 {
		var scratch []analysis.Token
		for i := range docs {
			if i%256 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			out[i], scratch = prepare(an, fields, &docs[i], scratch)
		}
		return out, nil
	}
	var wg sync.WaitGroup
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
			var scratch []analysis.Token
			for lo := range next {
				for i := lo; i < min(lo+64, len(docs)); i++ {
					out[i], scratch = prepare(an, fields, &docs[i], scratch)
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func validateDoc(d *Document) error {
	if strings.IndexByte(d.ID, 0) >= 0 || len(d.ID) > 1024 {
		return fmt.Errorf("index: invalid document id %q", d.ID)
	}
	if d.Chunk != nil && (strings.IndexByte(d.Chunk.DocID, 0) >= 0 || d.Chunk.Start < 0 || d.Chunk.End < d.Chunk.Start) {
		return fmt.Errorf("index: invalid chunk reference on %q", d.ID)
	}
	return nil
}
