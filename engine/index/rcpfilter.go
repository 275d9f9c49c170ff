package index

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp/filter"
)

// CompileFilter turns a validated rcp/filter tree (§8) into a Filter with
// the same semantics as filter.Node.Match: leaves become dictionary,
// bitset and numeric-column lookups; the few comparisons no index answers
// exactly (ordered comparisons on strings or bools, dates on fields not
// declared FieldDate, numbers a float64 cannot hold exactly) fall back to
// evaluating the leaf on stored metadata. A nil tree matches everything
// and yields a nil Filter.
func (ix *Index) CompileFilter(n *filter.Node) (search.Filter, error) {
	if n == nil {
		return nil, nil
	}
	f, err := compileNode(n, ix.opts.Fields)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func compileNode(n *filter.Node, fields map[string]FieldType) (Filter, error) {
	switch n.Kind {
	case filter.KindAnd, filter.KindOr:
		if len(n.Children) == 0 {
			return nil, fmt.Errorf("index: empty %s in filter", n.Kind)
		}
		fs := make([]Filter, len(n.Children))
		for i, c := range n.Children {
			f, err := compileNode(c, fields)
			if err != nil {
				return nil, err
			}
			fs[i] = f
		}
		if n.Kind == filter.KindAnd {
			return And(fs...), nil
		}
		return Or(fs...), nil
	case filter.KindNot:
		if len(n.Children) != 1 {
			return nil, fmt.Errorf("index: not with %d operands", len(n.Children))
		}
		f, err := compileNode(n.Children[0], fields)
		if err != nil {
			return nil, err
		}
		return Not(f), nil
	case filter.KindLeaf:
		return compileLeaf(n, fields), nil
	}
	return nil, fmt.Errorf("index: unknown filter node kind %v", n.Kind)
}

func compileLeaf(n *filter.Node, fields map[string]FieldType) Filter {
	fallback := Predicate(func(d *search.Document) bool { return n.Match(d.Meta) })
	isDate := n.Type == filter.TypeDate
	if isDate && fields[n.Field] != FieldDate {
		return fallback
	}
	switch n.Op {
	case filter.OpExists:
		want, _ := n.Value.Bool()
		if want {
			return Exists(n.Field)
		}
		return Not(Exists(n.Field))
	case filter.OpEq:
		if f, ok := eqLeaf(n.Field, n.Value, isDate); ok {
			return f
		}
	case filter.OpNe:
		if f, ok := eqLeaf(n.Field, n.Value, isDate); ok {
			return Not(f)
		}
	case filter.OpIn, filter.OpNin:
		f, ok := inLeaf(n.Field, n.Value.Elems(), isDate, fields[n.Field] == FieldText)
		if !ok {
			return fallback
		}
		if n.Op == filter.OpIn {
			return f
		}
		return Not(f)
	case filter.OpContains:
		if s, ok := n.Value.Str(); ok && !isDate {
			return Contains(n.Field, s)
		}
		if f, ok := eqLeaf(n.Field, n.Value, isDate); ok {
			return f
		}
	case filter.OpGt, filter.OpGte, filter.OpLt, filter.OpLte:
		v, ok := numericOperand(n.Value, isDate)
		if !ok {
			if s, isStr := n.Value.Str(); isStr && !isDate {
				return stringRange(n.Field, n.Op, s)
			}
			return fallback
		}
		switch n.Op {
		case filter.OpGt:
			return Gt(n.Field, v)
		case filter.OpGte:
			return Gte(n.Field, v)
		case filter.OpLt:
			return Lt(n.Field, v)
		default:
			return Lte(n.Field, v)
		}
	}
	return fallback
}

// inLeaf compiles membership of field in vals: one equality per value,
// except that the strings of a FieldText field (not indexed: every
// equality reads the stored documents) are matched together in one pass
// over them. A 4096-string list on 2000 documents took 30 s one value at
// a time.
func inLeaf(field string, vals []filter.Value, isDate, text bool) (Filter, bool) {
	fs := make([]Filter, 0, len(vals))
	strs := map[string]bool{}
	for _, e := range vals {
		if s, ok := e.Str(); ok && text {
			strs[s] = true
			continue
		}
		f, ok := eqLeaf(field, e, isDate)
		if !ok {
			return nil, false
		}
		fs = append(fs, f)
	}
	if len(strs) > 0 {
		fs = append(fs, scanFilter{field: field, match: func(v string) bool { return strs[v] }})
	}
	return Or(fs...), true
}

// eqLeaf compiles field == v (element membership for arrays); ok is false
// when no index answers it exactly.
func eqLeaf(field string, v filter.Value, isDate bool) (Filter, bool) {
	if v.IsNull() {
		return Not(Exists(field)), true
	}
	if isDate {
		ms, ok := numericOperand(v, true)
		if !ok {
			return nil, false
		}
		return Range(field, ms, ms, true, true), true
	}
	switch v.Kind() {
	case filter.String:
		s, _ := v.Str()
		return Eq(field, s), true
	case filter.Bool:
		b, _ := v.Bool()
		return Eq(field, b), true
	case filter.Number:
		f, ok := numericOperand(v, false)
		if !ok {
			return nil, false
		}
		return Range(field, f, f, true, true), true
	}
	return nil, false
}

// numericOperand returns v as a float64 that compares exactly like the
// evaluator: numbers whose decimal text a float64 holds exactly, and for
// date fields RFC 3339 strings or integer epoch milliseconds as
// milliseconds.
func numericOperand(v filter.Value, isDate bool) (float64, bool) {
	if isDate {
		t, ok := v.Time()
		if !ok {
			return 0, false
		}
		return timeMillis(t), true
	}
	num, ok := v.Number()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	// Exact only if the shortest float text denotes the same number.
	if i, err := strconv.ParseInt(string(num), 10, 64); err == nil {
		return f, math.Abs(f) <= 1<<53 && int64(f) == i
	}
	back, err := strconv.ParseFloat(strconv.FormatFloat(f, 'g', -1, 64), 64)
	return f, err == nil && back == f && len(strings.TrimLeft(string(num), "-0.")) <= 15
}

// stringRange compiles an ordered comparison on string values (byte order)
// as a dictionary scan.
func stringRange(field string, op filter.Op, s string) Filter {
	return scanFilter{field: field, match: func(v string) bool {
		c := strings.Compare(v, s)
		switch op {
		case filter.OpGt:
			return c > 0
		case filter.OpGte:
			return c >= 0
		case filter.OpLt:
			return c < 0
		}
		return c <= 0
	}}
}

type scanFilter struct {
	field string
	match func(string) bool
}

func (f scanFilter) Compile(r FieldReader) (*Bitset, error) {
	return r.KeywordScan(f.field, true, true, f.match), nil
}
