package weaviate

import (
	"math"
	"strings"
	"time"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"

	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp/filter"
)

// Filters: a validated RCP filter tree (rcp/filter) is compiled to a
// Weaviate where-filter built from typed values (WithValueText,
// WithValueNumber, ...): no query text is ever assembled from strings
// (§15.4). Each leaf maps to one Weaviate operator:
//
//	eq v            ContainsAny(prop, [v])        (arrays: any element, as §8)
//	eq null         not ContainsAny(present, [prop])
//	ne, nin         Not(eq), Not(in)              (absent fields match, as §8)
//	in [..]         ContainsAny(prop, [..]) [or absent, for a null element]
//	gt gte lt lte   GreaterThan ... LessThanEqual (numbers and dates)
//	contains s      Like(prop, "*s*") on text; ContainsAny for other values
//	exists b        ContainsAny(present, [prop]) (or its Not)
//
// A leaf Weaviate cannot decide exactly (a range on text, a value of
// another type than the field's, wildcard characters in a contains, a
// keyword with surrounding whitespace, which Weaviate's field tokenizer
// trims) compiles to a superset, and so does every combinator over one,
// except that Not of an inexact child is dropped (the negation of a
// superset is not one). The engine re-checks every hit with the exact §8
// evaluator, so a compiled filter may admit more, never less.

// Filter is a compiled filter (search.Query.Filter).
type Filter struct {
	// Where is the Weaviate filter (nil: no restriction in Weaviate).
	Where *filters.WhereBuilder
	// Exact reports that Where matches exactly what the RCP tree does.
	Exact bool
	// Node is the RCP tree, checked against every hit.
	Node *filter.Node
}

// CompileFilter implements search.Backend.
func (b *Backend) CompileFilter(n *filter.Node) (search.Filter, error) {
	return b.schema.compile(n), nil
}

func (s *schema) compile(n *filter.Node) *Filter {
	c := s.node(n)
	return &Filter{Where: c.where, Exact: c.exact, Node: n}
}

// compiled is one compiled subtree; where nil means "true".
type compiled struct {
	where *filters.WhereBuilder
	exact bool
}

var (
	alwaysFalse = compiled{filters.Where().WithPath([]string{propPresent}).WithOperator(filters.ContainsAny).WithValueText(absentToken), true}
	superset    = compiled{nil, false}
)

func (s *schema) node(n *filter.Node) compiled {
	switch n.Kind {
	case filter.KindAnd:
		out := compiled{exact: true}
		var ws []*filters.WhereBuilder
		for _, ch := range n.Children {
			c := s.node(ch)
			out.exact = out.exact && c.exact
			if c.where != nil {
				ws = append(ws, c.where)
			}
		}
		if len(ws) > 0 {
			out.where = and(ws...)
		}
		return out
	case filter.KindOr:
		out := compiled{exact: true}
		var ws []*filters.WhereBuilder
		for _, ch := range n.Children {
			c := s.node(ch)
			if c.where == nil {
				return compiled{nil, c.exact} // true (or a superset of everything)
			}
			out.exact = out.exact && c.exact
			ws = append(ws, c.where)
		}
		out.where = or(ws...)
		return out
	case filter.KindNot:
		c := s.node(n.Children[0])
		switch {
		case !c.exact:
			return superset
		case c.where == nil:
			return alwaysFalse
		}
		return compiled{not(c.where), true}
	}
	return s.leaf(n)
}

func (s *schema) leaf(n *filter.Node) compiled {
	f, ok := s.fields[n.Field]
	if !ok {
		return superset // validation admits only declared fields
	}
	switch n.Op {
	case filter.OpExists:
		want, _ := n.Value.Bool()
		if want {
			return s.present(f)
		}
		return compiled{not(s.present(f).where), true}
	case filter.OpEq:
		if n.Value.IsNull() {
			return compiled{not(s.present(f).where), true}
		}
		return f.anyOf([]filter.Value{n.Value})
	case filter.OpNe:
		return s.node(&filter.Node{Kind: filter.KindNot, Children: []*filter.Node{{Kind: filter.KindLeaf, Field: n.Field, Op: filter.OpEq, Value: n.Value, Type: n.Type}}})
	case filter.OpIn:
		var vals []filter.Value
		null := false
		for _, e := range n.Value.Elems() {
			if e.IsNull() {
				null = true
			} else {
				vals = append(vals, e)
			}
		}
		c := alwaysFalse
		if len(vals) > 0 {
			c = f.anyOf(vals)
		}
		if null {
			absent := not(s.present(f).where)
			if c.where == nil {
				return compiled{nil, c.exact}
			}
			c = compiled{or(c.where, absent), c.exact}
		}
		return c
	case filter.OpNin:
		inner := &filter.Node{Kind: filter.KindLeaf, Field: n.Field, Op: filter.OpIn, Value: n.Value, Type: n.Type}
		return s.node(&filter.Node{Kind: filter.KindNot, Children: []*filter.Node{inner}})
	case filter.OpContains:
		if str, ok := n.Value.Str(); ok && f.dataType == "text[]" {
			if strings.ContainsAny(str, "*?") {
				return superset // Like has no escape for its wildcards
			}
			return compiled{filters.Where().WithPath([]string{f.prop}).WithOperator(filters.Like).WithValueText("*" + str + "*"), true}
		}
		return f.anyOf([]filter.Value{n.Value})
	case filter.OpGt, filter.OpGte, filter.OpLt, filter.OpLte:
		return f.rangeOf(n.Op, n.Value)
	}
	return superset
}

// present matches objects whose field is present (not null).
func (s *schema) present(f field) compiled {
	return compiled{filters.Where().WithPath([]string{propPresent}).WithOperator(filters.ContainsAny).WithValueText(f.prop), true}
}

// anyOf matches objects with an element equal to one of vals.
func (f field) anyOf(vals []filter.Value) compiled {
	w := filters.Where().WithPath([]string{f.prop}).WithOperator(filters.ContainsAny)
	ok := false
	switch f.dataType {
	case "text[]":
		var ss []string
		if ss, ok = each(vals, exactText); ok {
			w.WithValueText(ss...)
		}
	case "number[]":
		var xs []float64
		if xs, ok = each(vals, exactNumber); ok {
			w.WithValueNumber(xs...)
		}
	case "boolean[]":
		var bs []bool
		if bs, ok = each(vals, filter.Value.Bool); ok {
			w.WithValueBoolean(bs...)
		}
	case "date[]":
		var ts []time.Time
		if ts, ok = each(vals, filter.Value.Time); ok {
			w.WithValueDate(ts...)
		}
	}
	if !ok {
		return superset
	}
	return compiled{w, true}
}

// each reads every value with read; false when one cannot be read (a value
// of another type than the field's, or one Weaviate cannot match exactly).
func each[T any](vals []filter.Value, read func(filter.Value) (T, bool)) ([]T, bool) {
	out := make([]T, 0, len(vals))
	for _, v := range vals {
		x, ok := read(v)
		if !ok {
			return nil, false
		}
		out = append(out, x)
	}
	return out, true
}

// exactText reads a string Weaviate matches exactly: the field tokenizer
// trims, so an empty string or one with edge white space is undecidable.
func exactText(v filter.Value) (string, bool) {
	s, ok := v.Str()
	return s, ok && s != "" && s == strings.TrimSpace(s)
}

// exactNumber reads a number within float64's exact integers.
func exactNumber(v filter.Value) (float64, bool) {
	x, ok := v.Float64()
	return x, ok && math.Abs(x) <= 1<<53
}

var rangeOps = map[filter.Op]filters.WhereOperator{
	filter.OpGt: filters.GreaterThan, filter.OpGte: filters.GreaterThanEqual,
	filter.OpLt: filters.LessThan, filter.OpLte: filters.LessThanEqual,
}

func (f field) rangeOf(op filter.Op, v filter.Value) compiled {
	w := filters.Where().WithPath([]string{f.prop}).WithOperator(rangeOps[op])
	switch f.dataType {
	case "number[]":
		x, ok := exactNumber(v)
		if !ok {
			return superset
		}
		return compiled{w.WithValueNumber(x), true}
	case "date[]":
		t, ok := v.Time()
		if !ok {
			return superset
		}
		return compiled{w.WithValueDate(t), true}
	}
	return superset // ranges over text or bools: the evaluator decides
}
