package index

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp/filter"
)

// TestCompileFilterMatchesEvaluator checks compiled filters against the
// reference evaluator filter.Node.Match on random metadata and random trees.
func TestCompileFilterMatchesEvaluator(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(17, 4))
	schema := map[string]string{"lang": filter.TypeKeyword, "year": filter.TypeInt, "score": filter.TypeFloat,
		"open": filter.TypeBool, "at": filter.TypeDate, "tags": filter.TypeKeyword, "title": filter.TypeText, "nums": "",
		"loose": "", "author.name": filter.TypeKeyword}
	ix := openTest(t, "", Options{NoBackground: true, Fields: map[string]FieldType{"at": FieldDate, "title": FieldText}})
	langs := []string{"en", "de", "fr", "EN", ""}
	dates := []any{"2020-01-01T00:00:00Z", "2021-06-15T12:30:00.5+02:00", 1672531200000, "not a date"}
	pick := func(xs []any) any { return xs[r.IntN(len(xs))] }
	var docs []search.Document
	for i := range 300 {
		m := map[string]any{}
		if r.IntN(5) > 0 {
			m["lang"] = langs[r.IntN(len(langs))]
		}
		if r.IntN(4) > 0 {
			m["year"] = 1990 + r.IntN(40)
		}
		if r.IntN(3) == 0 {
			m["score"] = float64(r.IntN(100)) / 10
		}
		if r.IntN(3) == 0 {
			m["open"] = r.IntN(2) == 0
		}
		if r.IntN(3) == 0 {
			m["at"] = pick(dates)
		}
		if r.IntN(3) == 0 {
			var tags []any
			for range r.IntN(3) {
				tags = append(tags, pick([]any{"aero", "engine", "noise", nil, 3}))
			}
			m["tags"] = tags
		}
		if r.IntN(3) == 0 {
			m["title"] = pick([]any{"Boundary layers", "jet noise study", "layered flow"})
		}
		if r.IntN(4) == 0 {
			m["loose"] = pick([]any{"x", 2, true, nil, "y"})
		}
		if r.IntN(4) == 0 {
			m["author"] = map[string]any{"name": pick([]any{"Ada", "Bo"})}
		}
		docs = append(docs, search.Document{ID: fmt.Sprintf("d%03d", i), Text: "common words", Meta: m})
	}
	mustAdd(t, ix, docs[:150]...)
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, ix, docs[150:]...)

	leaves := []*filter.Node{
		filter.Eq("lang", "en"), filter.Ne("lang", "en"), filter.Eq("lang", nil), filter.In("lang", []any{"de", "fr", nil}),
		filter.Nin("lang", []any{"en", ""}), filter.Exists("lang", true), filter.Exists("lang", false),
		filter.Gte("year", 2000), filter.Lt("year", 1995), filter.Eq("year", 2001), filter.In("year", []any{1999, 2010}),
		filter.Gt("score", 4.5), filter.Lte("score", 0.3), filter.Eq("open", true), filter.Ne("open", false),
		filter.Gt("at", "2020-06-01T00:00:00Z"), filter.Eq("at", 1577836800000), filter.Lte("at", 1672531200000),
		filter.Contains("tags", "noise"), filter.Eq("tags", "aero"), filter.Exists("tags", true),
		filter.Contains("title", "layer"), filter.Eq("title", "jet noise study"),
		filter.Eq("loose", "x"), filter.Eq("loose", 2), filter.Eq("loose", true), filter.Gt("loose", "w"), filter.Exists("loose", true),
		filter.Eq("author.name", "Ada"),
	}
	var trees []*filter.Node
	trees = append(trees, leaves...)
	for range 200 {
		a, b, c := leaves[r.IntN(len(leaves))], leaves[r.IntN(len(leaves))], leaves[r.IntN(len(leaves))]
		switch r.IntN(4) {
		case 0:
			trees = append(trees, filter.And(a, filter.Or(b, c)))
		case 1:
			trees = append(trees, filter.Or(filter.Not(a), b))
		case 2:
			trees = append(trees, filter.Not(filter.And(a, b)))
		default:
			trees = append(trees, filter.And(a, b, filter.Not(c)))
		}
	}
	// The evaluator sees metadata as it round-trips through JSON.
	metas := make([]map[string]any, len(docs))
	for i, d := range docs {
		b, _ := json.Marshal(d.Meta)
		dec := json.NewDecoder(bytesReader(b))
		dec.UseNumber()
		dec.Decode(&metas[i])
	}
	for _, tree := range trees {
		n, err := filter.Validate(tree, schema, nil)
		if err != nil {
			t.Fatalf("validate %s: %v", tree, err)
		}
		f, err := ix.CompileFilter(n)
		if err != nil {
			t.Fatalf("compile %s: %v", n, err)
		}
		res := mustSearch(t, ix, search.Query{Text: "common", K: 1000, Filter: f, SkipDocs: true})
		got := hitIDs(res)
		slices.Sort(got)
		var want []string
		for i, d := range docs {
			if n.Match(metas[i]) {
				want = append(want, d.ID)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("filter %s: %d hits, evaluator %d\n got %q\nwant %q", n, len(got), len(want), got, want)
		}
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
