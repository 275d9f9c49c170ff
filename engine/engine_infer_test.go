package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// filterFields is what a new session sees advertised (nil: no filter).
func filterFields(e *Engine) map[string]string {
	return e.Describe(context.Background()).Capabilities.Filter.FieldTypes()
}

func addMeta(t *testing.T, e *Engine, docs ...map[string]any) {
	t.Helper()
	if _, rerr := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": docs}); rerr != nil {
		t.Fatal(rerr)
	}
}

// Issue 16 finding 8: with no field declared, the filter fields are
// inferred from the metadata: a key whose values share one type is
// advertised with that type, any other is not; the set follows writes and
// deletions, survives a restart, and declared fields take precedence.
func TestInferredFilterFields(t *testing.T) {
	dir := t.TempDir()
	open := func(fields map[string]string) *Engine {
		t.Helper()
		cfg := Config{Dir: dir, Dense: DenseNone, Fields: fields}
		cfg.IndexOpts.NoBackground = true
		e, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := open(nil)
	if f := filterFields(e); f != nil {
		t.Fatalf("empty index advertises %v", f)
	}
	addMeta(t, e,
		map[string]any{"id": "a", "text": "garden notes", "meta": map[string]any{
			"format": "markdown", "year": 2020, "score": 0.5, "draft": true, "tags": []any{"home", "plants"},
			"nested": map[string]any{"x": 1}, "mixed": "text", "_private": "x", "a.b": "c", "ratio": 1}},
		map[string]any{"id": "b", "text": "garden plans", "meta": map[string]any{
			"format": "text", "year": 2024, "score": 2, "draft": false, "mixed": 3, "ratio": 0.25}},
	)
	want := map[string]string{"format": "keyword", "year": "int", "score": "float", "draft": "bool", "tags": "keyword", "ratio": "float"}
	if got := filterFields(e); !maps.Equal(got, want) {
		t.Fatalf("inferred %v, want %v", got, want)
	}
	for _, tt := range []struct {
		filter map[string]any
		want   []string
	}{
		{map[string]any{"field": "year", "op": "gte", "value": 2021}, []string{"b"}},
		{map[string]any{"field": "format", "op": "eq", "value": "markdown"}, []string{"a"}},
		{map[string]any{"field": "draft", "op": "eq", "value": false}, []string{"b"}},
		{map[string]any{"field": "tags", "op": "in", "value": []string{"plants"}}, []string{"a"}},
		{map[string]any{"field": "score", "op": "lt", "value": 1}, []string{"a"}},
	} {
		got := ids(retrieve(t, e, map[string]any{"query": "garden", "k": 5, "filter": tt.filter}))
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("filter %v: hits %v, want %v", tt.filter, got, tt.want)
		}
	}
	if _, rerr := call(t, e, rcp.MethodRetrieve, map[string]any{"query": "garden", "k": 5,
		"filter": map[string]any{"field": "mixed", "op": "eq", "value": 3}}); rerr == nil || rerr.Code != rcp.CodeInvalidParams {
		t.Fatalf("filter on a key of mixed types: %v, want -32602", rerr)
	}

	// Deleting the document with the string value leaves "mixed" an int.
	if _, rerr := call(t, e, rcp.MethodIndexDelete, map[string]any{"ids": []string{"a"}}); rerr != nil {
		t.Fatal(rerr)
	}
	want = map[string]string{"format": "keyword", "year": "int", "score": "int", "draft": "bool", "mixed": "int", "ratio": "float"}
	if got := filterFields(e); !maps.Equal(got, want) {
		t.Fatalf("after the delete: %v, want %v", got, want)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open(nil)
	if got := filterFields(e); !maps.Equal(got, want) {
		t.Fatalf("after a restart: %v, want %v", got, want)
	}
	e.Close()

	// Declared fields win: nothing is inferred beside them.
	e = open(map[string]string{"format": "keyword"})
	if got := filterFields(e); !maps.Equal(got, map[string]string{"format": "keyword"}) {
		t.Fatalf("declared: %v", got)
	}
	e.Close()

	// At most 32 keys (the catalog's bound), those carried by the most documents.
	e = open(nil)
	defer e.Close()
	many := map[string]any{}
	for i := range 32 + 8 {
		many[fmt.Sprintf("k%02d", i)] = "v"
	}
	many["year"] = 2025 // now on two documents: first; ties go by name
	addMeta(t, e, map[string]any{"id": "c", "text": "many keys", "meta": many})
	got := filterFields(e)
	if len(got) != 32 || got["year"] != "int" || got["draft"] != "bool" || got["k00"] != "keyword" || got["score"] != "" {
		t.Fatalf("capped set (%d): %v", len(got), got)
	}
}

// A session keeps the fields it started with (§13.2); a new session sees
// the fields inferred since.
func TestInferredFieldsNewSession(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), Dense: DenseNone}
	cfg.IndexOpts.NoBackground = true
	e, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	srv := rcp.NewServer(e, nil)
	ctx := context.Background()
	before, err := rcp.ConnectInProcess(ctx, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	if _, err := before.IndexAdd(ctx, &rcp.IndexAddParams{Documents: []rcp.Document{{ID: "x", Text: "lang note", Meta: map[string]any{"lang": "en"}}}}); err != nil {
		t.Fatal(err)
	}
	after, err := rcp.ConnectInProcess(ctx, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if before.Supports(rcp.CapFilter) || after.Capabilities().Filter.FieldTypes()["lang"] != "keyword" {
		t.Fatalf("before %+v, after %+v", before.Capabilities().Filter, after.Capabilities().Filter)
	}
	res, err := after.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("note"), K: 3,
		Filter: []byte(`{"field":"lang","op":"eq","value":"en"}`)})
	if err != nil || len(res.Hits) != 1 {
		t.Fatalf("filtered retrieve in the new session: %v %+v", err, res)
	}
}
