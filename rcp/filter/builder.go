package filter

import (
	"errors"
	"fmt"
)

// Builder functions construct filter trees in Go:
//
//	f := filter.And(
//		filter.Eq("lang", "en"),
//		filter.Or(filter.Gte("year", 2023), filter.In("tag", []string{"news", "blog"})),
//	)
//	if err := f.Err(); err != nil { ... }   // or let json.Marshal report it
//
// They never panic. Nonsense (In with a scalar or an empty slice, Eq with a
// slice or a map, a NaN operand, And with no operands, a nil operand, an
// empty field name) is recorded in the returned node; the first such error
// propagates to every enclosing combinator and is returned by Err,
// MarshalJSON and Validate. Scalars may be Go strings, bools, integers,
// floats, json.Number, time.Time (written as RFC 3339) or nil (JSON null);
// In and Nin take any slice or array of those.

func leaf(field string, op Op, v any) *Node {
	n := &Node{Kind: KindLeaf, Field: field, Op: op}
	if field == "" {
		n.err = fmt.Errorf("filter: %s: empty field name", op)
		return n
	}
	val, ok, err := scalarOf(v)
	switch {
	case err != nil:
		n.err = fmt.Errorf("filter: %s(%q): %w", op, field, err)
	case !ok:
		n.err = fmt.Errorf("filter: %s(%q) needs a scalar value, got %T", op, field, v)
	}
	n.Value = val
	return n
}

func setLeaf(field string, op Op, values any) *Node {
	n := &Node{Kind: KindLeaf, Field: field, Op: op}
	if field == "" {
		n.err = fmt.Errorf("filter: %s: empty field name", op)
		return n
	}
	val, ok, err := listOf(values)
	switch {
	case err != nil:
		n.err = fmt.Errorf("filter: %s(%q): %w", op, field, err)
	case !ok:
		n.err = fmt.Errorf("filter: %s(%q) needs a slice of scalars, got %T", op, field, values)
	case len(val.list) == 0:
		n.err = fmt.Errorf("filter: %s(%q) needs at least one value", op, field)
	}
	n.Value = val
	return n
}

// Eq matches documents whose field equals v.
func Eq(field string, v any) *Node { return leaf(field, OpEq, v) }

// Ne matches documents whose field does not equal v.
func Ne(field string, v any) *Node { return leaf(field, OpNe, v) }

// Gt, Gte, Lt and Lte are ordered comparisons (numbers or dates).
func Gt(field string, v any) *Node  { return leaf(field, OpGt, v) }
func Gte(field string, v any) *Node { return leaf(field, OpGte, v) }
func Lt(field string, v any) *Node  { return leaf(field, OpLt, v) }
func Lte(field string, v any) *Node { return leaf(field, OpLte, v) }

// In matches documents whose field equals one of values (a non-empty slice).
func In(field string, values any) *Node { return setLeaf(field, OpIn, values) }

// Nin matches documents whose field equals none of values.
func Nin(field string, values any) *Node { return setLeaf(field, OpNin, values) }

// Contains is substring match on text fields and element membership on
// array-valued fields.
func Contains(field string, v any) *Node { return leaf(field, OpContains, v) }

// Exists matches documents that have (present=true) or lack the field.
func Exists(field string, present bool) *Node { return leaf(field, OpExists, present) }

func combine(kind Kind, nodes []*Node) *Node {
	n := &Node{Kind: kind, Children: nodes}
	if len(nodes) == 0 {
		n.err = fmt.Errorf("filter: %s needs at least one operand (§8)", kind)
	}
	for i, c := range nodes {
		if n.err != nil {
			break
		}
		if c == nil {
			n.err = fmt.Errorf("filter: %s operand %d is nil", kind, i)
		} else if c.err != nil {
			n.err = c.err
		}
	}
	return n
}

// And matches when every operand matches. It needs at least one operand.
func And(nodes ...*Node) *Node { return combine(KindAnd, nodes) }

// Or matches when any operand matches. It needs at least one operand.
func Or(nodes ...*Node) *Node { return combine(KindOr, nodes) }

// Not negates n.
func Not(n *Node) *Node {
	out := &Node{Kind: KindNot, Children: []*Node{n}}
	if n == nil {
		out.err = errors.New("filter: not operand is nil")
	} else {
		out.err = n.err
	}
	return out
}
