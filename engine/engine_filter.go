package engine

import (
	"math"

	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/rcp/filter"
)

// compileFilter turns a validated filter tree into the index's filter
// structures. Operators the metadata indexes answer exactly (eq, ne, in,
// nin, ordered comparisons on numbers and dates, exists) use them; the rest
// (contains, null operands, comparisons the indexes cannot express) fall
// back to evaluating the node on the stored document with filter.Node.Match,
// so the semantics are always those of rcp/filter.
func (e *Engine) compileFilter(n *filter.Node) (index.Filter, error) {
	return compileNode(n), nil
}

func compileNode(n *filter.Node) index.Filter {
	switch n.Kind {
	case filter.KindAnd, filter.KindOr:
		fs := make([]index.Filter, len(n.Children))
		for i, c := range n.Children {
			fs[i] = compileNode(c)
		}
		if n.Kind == filter.KindAnd {
			return index.And(fs...)
		}
		return index.Or(fs...)
	case filter.KindNot:
		return index.Not(compileNode(n.Children[0]))
	}
	if f, ok := compileLeaf(n); ok {
		return f
	}
	return index.Predicate(func(d *index.Document) bool { return n.Match(d.Meta) })
}

func scalar(n *filter.Node, v filter.Value) (any, bool) {
	switch v.Kind() {
	case filter.String:
		if n.Type == filter.TypeDate {
			return nil, false // RFC 3339 instants compare as dates, not strings
		}
		s, _ := v.Str()
		return s, true
	case filter.Bool:
		b, _ := v.Bool()
		return b, true
	case filter.Number:
		if n.Type == filter.TypeDate {
			return nil, false
		}
		f, ok := v.Float64()
		return f, ok
	}
	return nil, false
}

func compileLeaf(n *filter.Node) (index.Filter, bool) {
	switch n.Op {
	case filter.OpExists:
		present, _ := n.Value.Bool()
		if present {
			return index.Exists(n.Field), true
		}
		return index.Not(index.Exists(n.Field)), true
	case filter.OpEq, filter.OpNe:
		v, ok := scalar(n, n.Value)
		if !ok {
			return nil, false
		}
		if n.Op == filter.OpEq {
			return index.Eq(n.Field, v), true
		}
		return index.Not(index.Eq(n.Field, v)), true
	case filter.OpIn, filter.OpNin:
		var vals []any
		for _, el := range n.Value.Elems() {
			v, ok := scalar(n, el)
			if !ok {
				return nil, false
			}
			vals = append(vals, v)
		}
		if n.Op == filter.OpIn {
			return index.In(n.Field, vals...), true
		}
		return index.Not(index.In(n.Field, vals...)), true
	case filter.OpGt, filter.OpGte, filter.OpLt, filter.OpLte:
		var f float64
		if t, ok := n.Value.Time(); ok && n.Type == filter.TypeDate {
			f = float64(t.UnixMilli())
		} else if x, ok := n.Value.Float64(); ok && n.Value.Kind() == filter.Number {
			f = x
		} else {
			return nil, false
		}
		switch n.Op {
		case filter.OpGt:
			return index.Range(n.Field, f, math.Inf(1), false, true), true
		case filter.OpGte:
			return index.Range(n.Field, f, math.Inf(1), true, true), true
		case filter.OpLt:
			return index.Range(n.Field, math.Inf(-1), f, true, false), true
		default:
			return index.Range(n.Field, math.Inf(-1), f, true, true), true
		}
	}
	return nil, false
}
