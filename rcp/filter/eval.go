package filter

import (
	"math/big"
	"reflect"
	"strconv"
	"strings"
)

// Match evaluates the tree against a document's metadata; a nil tree
// matches everything. See the package documentation for the semantics of
// missing fields, null and array-valued fields.
func (n *Node) Match(meta map[string]any) bool {
	if n == nil {
		return true
	}
	switch n.Kind {
	case KindAnd:
		for _, c := range n.Children {
			if !c.Match(meta) {
				return false
			}
		}
		return true
	case KindOr:
		for _, c := range n.Children {
			if c.Match(meta) {
				return true
			}
		}
		return false
	case KindNot:
		return len(n.Children) == 1 && !n.Children[0].Match(meta)
	case KindLeaf:
		return n.matchLeaf(meta)
	}
	return false
}

// Lookup finds field in meta as a filter does: the exact key first, then,
// for dotted names, a path through nested objects. A null value counts as
// absent (§4.6). Backends that store fields elsewhere resolve them with it.
func Lookup(meta map[string]any, field string) (any, bool) {
	if v, ok := meta[field]; ok {
		return v, v != nil
	}
	if !strings.Contains(field, ".") {
		return nil, false
	}
	var cur any = meta
	for _, part := range strings.Split(field, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, cur != nil
}

// docValues flattens a document value into scalar Values: an array-valued
// field yields its scalar elements. Unsupported elements are skipped.
func docValues(x any) (vals []Value, isArray bool) {
	if v, ok, err := scalarOf(x); ok && err == nil {
		return []Value{v}, false
	}
	rv := reflect.ValueOf(x)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	vals = make([]Value, 0, rv.Len())
	for i := 0; i < rv.Len(); i++ {
		if v, ok, err := scalarOf(rv.Index(i).Interface()); ok && err == nil && v.kind != Null {
			vals = append(vals, v)
		}
	}
	return vals, true
}

func (n *Node) matchLeaf(meta map[string]any) bool {
	raw, present := Lookup(meta, n.Field)
	switch n.Op {
	case OpExists:
		want, _ := n.Value.Bool()
		return present == want
	case OpNe:
		return !n.leafEq(raw, present)
	case OpNin:
		return !n.leafIn(raw, present)
	case OpEq:
		return n.leafEq(raw, present)
	case OpIn:
		return n.leafIn(raw, present)
	}
	if !present {
		return false
	}
	vals, isArray := docValues(raw)
	switch n.Op {
	case OpContains:
		if !isArray && len(vals) == 1 {
			if s, ok := vals[0].Str(); ok {
				sub, ok := n.Value.Str()
				return ok && strings.Contains(s, sub)
			}
		}
		return n.anyEqual(vals, n.Value)
	case OpGt, OpGte, OpLt, OpLte:
		for _, v := range vals {
			c, ok := compare(v, n.Value, n.Type)
			if !ok {
				continue
			}
			switch {
			case n.Op == OpGt && c > 0, n.Op == OpGte && c >= 0,
				n.Op == OpLt && c < 0, n.Op == OpLte && c <= 0:
				return true
			}
		}
	}
	return false
}

func (n *Node) leafEq(raw any, present bool) bool {
	if n.Value.kind == Null {
		return !present
	}
	if !present {
		return false
	}
	vals, _ := docValues(raw)
	return n.anyEqual(vals, n.Value)
}

func (n *Node) leafIn(raw any, present bool) bool {
	if !present {
		for _, e := range n.Value.list {
			if e.kind == Null {
				return true
			}
		}
		return false
	}
	vals, _ := docValues(raw)
	for _, e := range n.Value.list {
		if e.kind != Null && n.anyEqual(vals, e) {
			return true
		}
	}
	return false
}

func (n *Node) anyEqual(vals []Value, want Value) bool {
	for _, v := range vals {
		if c, ok := compare(v, want, n.Type); ok && c == 0 {
			return true
		}
	}
	return false
}

// compare orders a document value against a filter value. ok is false when
// they are not comparable (different JSON types, or an unparsable date).
// Date fields compare as instants whatever the encoding; numbers compare
// numerically (exactly for integers and decimals); strings by bytes; bools
// only by equality (false < true).
func compare(doc, val Value, typ string) (int, bool) {
	if typ == TypeDate {
		a, ok1 := doc.Time()
		b, ok2 := val.Time()
		if !ok1 || !ok2 {
			return 0, false
		}
		return a.Compare(b), true
	}
	if doc.kind != val.kind {
		return 0, false
	}
	switch doc.kind {
	case String:
		return strings.Compare(doc.s, val.s), true
	case Bool:
		switch {
		case doc.b == val.b:
			return 0, true
		case val.b:
			return -1, true
		}
		return 1, true
	case Number:
		return compareNumbers(doc.s, val.s)
	}
	return 0, false
}

func compareNumbers(a, b string) (int, bool) {
	if x, err := strconv.ParseInt(a, 10, 64); err == nil {
		if y, err := strconv.ParseInt(b, 10, 64); err == nil {
			switch {
			case x < y:
				return -1, true
			case x > y:
				return 1, true
			}
			return 0, true
		}
	}
	x, ok1 := new(big.Float).SetPrec(200).SetString(a)
	y, ok2 := new(big.Float).SetPrec(200).SetString(b)
	if !ok1 || !ok2 {
		return 0, false
	}
	return x.Cmp(y), true
}
