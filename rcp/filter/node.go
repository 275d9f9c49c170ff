package filter

import (
	"errors"
	"fmt"
)

// Op is a §8 comparison operator.
type Op string

// The ten operators of §8.
const (
	OpEq       Op = "eq"
	OpNe       Op = "ne"
	OpGt       Op = "gt"
	OpGte      Op = "gte"
	OpLt       Op = "lt"
	OpLte      Op = "lte"
	OpIn       Op = "in"
	OpNin      Op = "nin"
	OpContains Op = "contains"
	OpExists   Op = "exists"
)

// AllOperators lists the ten §8 operators in spec order.
var AllOperators = []Op{OpEq, OpNe, OpGt, OpGte, OpLt, OpLte, OpIn, OpNin, OpContains, OpExists}

// Known reports whether op is one of the ten §8 operators.
func (op Op) Known() bool {
	switch op {
	case OpEq, OpNe, OpGt, OpGte, OpLt, OpLte, OpIn, OpNin, OpContains, OpExists:
		return true
	}
	return false
}

// Ordered reports whether op is gt, gte, lt or lte.
func (op Op) Ordered() bool { return op == OpGt || op == OpGte || op == OpLt || op == OpLte }

// Field types advertised in filter.fields (§8).
const (
	TypeKeyword = "keyword"
	TypeText    = "text"
	TypeInt     = "int"
	TypeFloat   = "float"
	TypeBool    = "bool"
	TypeDate    = "date"
	TypeGeo     = "geo"
)

// Kind is the kind of a filter tree node.
type Kind uint8

// Node kinds.
const (
	KindLeaf Kind = iota + 1
	KindAnd
	KindOr
	KindNot
)

func (k Kind) String() string {
	switch k {
	case KindLeaf:
		return "leaf"
	case KindAnd:
		return "and"
	case KindOr:
		return "or"
	case KindNot:
		return "not"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Node is one node of a filter tree: a leaf comparison or an and/or/not
// combinator. Validate returns a tree of Nodes that backends compile
// directly; the builder functions (Eq, And, ...) construct them.
//
// A validated tree satisfies: And/Or nodes have at least one child, Not
// nodes exactly one; leaves have a non-empty Field and a known Op; Value is a
// non-empty List for in/nin, a Bool for exists, and a scalar otherwise.
// Nodes are treated as immutable once built.
type Node struct {
	Kind     Kind
	Children []*Node // And, Or: the operands; Not: exactly one

	// Leaf fields.
	Field string
	Op    Op
	Value Value
	// Type is the field's advertised type ("" when undeclared). Validate
	// sets it; the Evaluator uses it for date comparisons.
	Type string

	err error // first construction error (builder)
}

// Err returns the first construction error in the tree built by the
// builder functions, or nil.
func (n *Node) Err() error {
	if n == nil {
		return errors.New("filter: nil node")
	}
	return n.err
}

// MarshalJSON writes the wire form (§8): {"and":[...]}, {"or":[...]},
// {"not":{...}} or {"field","op","value"}. A tree holding a builder error
// fails to marshal with that error.
func (n *Node) MarshalJSON() ([]byte, error) {
	if n == nil {
		return []byte("null"), nil
	}
	if n.err != nil {
		return nil, n.err
	}
	return n.appendJSON(nil)
}

func (n *Node) appendJSON(b []byte) ([]byte, error) {
	if n == nil {
		return nil, errors.New("filter: nil node in tree")
	}
	var err error
	switch n.Kind {
	case KindAnd, KindOr:
		b = append(b, `{"`...)
		b = append(b, n.Kind.String()...)
		b = append(b, `":[`...)
		for i, c := range n.Children {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = c.appendJSON(b); err != nil {
				return nil, err
			}
		}
		return append(b, "]}"...), nil
	case KindNot:
		if len(n.Children) != 1 {
			return nil, errors.New("filter: not node needs exactly one child")
		}
		b = append(b, `{"not":`...)
		if b, err = n.Children[0].appendJSON(b); err != nil {
			return nil, err
		}
		return append(b, '}'), nil
	case KindLeaf:
		b = append(b, `{"field":`...)
		b = StringValue(n.Field).appendJSON(b)
		b = append(b, `,"op":`...)
		b = StringValue(string(n.Op)).appendJSON(b)
		b = append(b, `,"value":`...)
		b = n.Value.appendJSON(b)
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("filter: invalid node kind %v", n.Kind)
}

// String returns the wire JSON, or an error description.
func (n *Node) String() string {
	b, err := n.MarshalJSON()
	if err != nil {
		return "<invalid filter: " + err.Error() + ">"
	}
	return string(b)
}

// Count returns the number of nodes in the tree.
func (n *Node) Count() int {
	if n == nil {
		return 0
	}
	c := 1
	for _, ch := range n.Children {
		c += ch.Count()
	}
	return c
}

// Walk calls fn for every node in depth-first pre-order; returning false
// skips the node's children.
func (n *Node) Walk(fn func(*Node) bool) {
	if n == nil || !fn(n) {
		return
	}
	for _, c := range n.Children {
		c.Walk(fn)
	}
}
