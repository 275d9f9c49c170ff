package filter

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"

	"github.com/rcpgo/rcpgo/rcp"
)

// Default DoS bounds (§15.5). The spec lets combinators nest "arbitrarily";
// like the reference SDKs, the validator caps the depth at 32 levels below
// the root, and it also caps the total number of nodes.
const (
	DefaultMaxDepth = 32
	DefaultMaxNodes = 1024
	// DefaultMaxValues caps the values of all in/nin lists of one filter
	// together, and DefaultMaxBytes the size of a raw JSON filter (checked
	// before it is decoded): a 12 MB list of 1.5 M ints cost 3.2 s and
	// 330 MB.
	DefaultMaxValues = 4096
	DefaultMaxBytes  = 256 << 10
)

// Validator checks untrusted filter trees against a server's advertised
// filter capability (§8). The zero value accepts any field and operator with
// the default limits.
type Validator struct {
	// Fields maps advertised field names to their types (see
	// rcp.FilterCap.FieldTypes). "" means the field is advertised without a
	// type. A nil map disables field gating; an empty map allows no field.
	Fields map[string]string
	// Operators is the advertised operator allow-list; nil allows all ten,
	// an empty slice allows none.
	Operators []string
	// MaxDepth, MaxNodes, MaxValues (in/nin values in all) and MaxBytes
	// (raw JSON) bound the filter; 0 selects the defaults.
	MaxDepth, MaxNodes, MaxValues, MaxBytes int
}

// Validate checks tree with a Validator built from fields and operators.
func Validate(tree any, fields map[string]string, operators []string) (*Node, error) {
	v := Validator{Fields: fields, Operators: operators}
	return v.Validate(tree)
}

// Validate checks an untrusted filter and returns its normalised tree.
//
// tree may be raw JSON (json.RawMessage or []byte, decoded with UseNumber so
// numbers keep their exact text), a *Node from the builder, or already
// decoded JSON (nil, map[string]any, []any, string, float64, json.Number,
// bool; objects must be map[string]any). An absent filter — nil, empty raw JSON, JSON null or {} — returns
// (nil, nil), which matches every document.
//
// Errors are *rcp.Error: -32602 with error.data.field set to the path of the
// offending node ("filter", "filter.and[1].op", "filter.not.value",
// "filter.or[0].author" for an unadvertised field author), or -32005 with
// error.data.option set to an operator outside the advertised list (and
// error.data.field to its path). Only the first error, in the order
// documented in the package comment, is reported.
func (v *Validator) Validate(tree any) (*Node, error) {
	var root any
	switch t := tree.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return v.validateRaw(t)
	case []byte:
		return v.validateRaw(t)
	case *Node:
		if t == nil {
			return nil, nil
		}
		raw, err := t.MarshalJSON()
		if err != nil {
			return nil, rcp.InvalidParams("filter", "%v", err)
		}
		return v.validateRaw(raw)
	default:
		root = tree
	}
	return v.validateRoot(root)
}

func (v *Validator) validateRaw(raw []byte) (*Node, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	if limit := cmp.Or(v.MaxBytes, DefaultMaxBytes); len(raw) > limit {
		return nil, rcp.InvalidParams("filter", "filter is %d bytes of JSON; the limit is %d", len(raw), limit)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, rcp.InvalidParams("filter", "filter is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, rcp.InvalidParams("filter", "trailing data after the filter")
	}
	return v.validateRoot(root)
}

func (v *Validator) validateRoot(root any) (*Node, error) {
	if root == nil {
		return nil, nil
	}
	if m, ok := root.(map[string]any); ok && len(m) == 0 {
		return nil, nil
	}
	st := state{v: v, maxDepth: v.MaxDepth, maxNodes: v.MaxNodes, maxValues: cmp.Or(v.MaxValues, DefaultMaxValues)}
	if st.maxDepth <= 0 {
		st.maxDepth = DefaultMaxDepth
	}
	if st.maxNodes <= 0 {
		st.maxNodes = DefaultMaxNodes
	}
	if v.Operators != nil {
		st.ops = make(map[Op]bool, len(v.Operators))
		for _, o := range v.Operators {
			st.ops[Op(o)] = true
		}
	}
	return st.node(root, 0)
}

type state struct {
	v                  *Validator
	ops                map[Op]bool // nil: all allowed
	maxDepth, maxNodes int
	nodes              int
	maxValues, values  int   // in/nin list values
	path               []seg // current node; rendered only for errors
}

// seg is one step of an error path: ".key" or ".key[idx]" (idx ≥ 0).
type seg struct {
	key string
	idx int
}

// pathTo renders the current path plus suffix ("filter.and[1].op").
func (st *state) pathTo(suffix string) string {
	b := []byte("filter")
	for _, s := range st.path {
		b = append(b, '.')
		b = append(b, s.key...)
		if s.idx >= 0 {
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(s.idx), 10)
			b = append(b, ']')
		}
	}
	return string(b) + suffix
}

func (st *state) invalid(suffix, format string, args ...any) error {
	return rcp.InvalidParams(st.pathTo(suffix), format, args...)
}

func (st *state) node(x any, depth int) (*Node, error) {
	if depth > st.maxDepth {
		return nil, st.invalid("", "filter nested deeper than %d levels", st.maxDepth)
	}
	st.nodes++
	if st.nodes > st.maxNodes {
		return nil, st.invalid("", "filter has more than %d nodes", st.maxNodes)
	}
	obj, ok := x.(map[string]any)
	if !ok {
		return nil, st.invalid("", "filter node must be an object")
	}
	var combBuf [3]string
	comb := combBuf[:0]
	for _, k := range [...]string{"and", "or", "not"} {
		if _, ok := obj[k]; ok {
			comb = append(comb, k)
		}
	}
	_, hasField := obj["field"]
	_, hasOp := obj["op"]
	switch {
	case len(comb) > 1:
		return nil, st.invalid("", "filter node has several combinators %v", comb)
	case len(comb) == 1 && (hasField || hasOp):
		return nil, st.invalid("", "filter node mixes %q with a leaf comparison", comb[0])
	case len(comb) == 0 && !hasField && !hasOp:
		return nil, st.invalid("", "filter node is neither a combinator nor a comparison")
	}
	if len(comb) == 1 {
		return st.combinator(comb[0], obj[comb[0]], depth)
	}
	return st.leaf(obj)
}

func (st *state) combinator(key string, x any, depth int) (*Node, error) {
	if key == "not" {
		st.path = append(st.path, seg{"not", -1})
		child, err := st.node(x, depth+1)
		st.path = st.path[:len(st.path)-1]
		if err != nil {
			return nil, err
		}
		return &Node{Kind: KindNot, Children: []*Node{child}}, nil
	}
	arr, ok := x.([]any)
	if !ok {
		return nil, st.invalid("."+key, "%q must be an array of filter nodes", key)
	}
	if len(arr) == 0 {
		return nil, st.invalid("."+key, "%q must not be empty (§8)", key)
	}
	kind := KindAnd
	if key == "or" {
		kind = KindOr
	}
	n := &Node{Kind: kind, Children: make([]*Node, len(arr))}
	for i, c := range arr {
		st.path = append(st.path, seg{key, i})
		child, err := st.node(c, depth+1)
		st.path = st.path[:len(st.path)-1]
		if err != nil {
			return nil, err
		}
		n.Children[i] = child
	}
	return n, nil
}

func (st *state) leaf(obj map[string]any) (*Node, error) {
	field, ok := obj["field"].(string)
	if !ok || field == "" {
		return nil, st.invalid("", "comparison needs a non-empty string \"field\"")
	}
	opStr, ok := obj["op"].(string)
	op := Op(opStr)
	if !ok || !op.Known() {
		return nil, st.invalid(".op", "unknown filter operator")
	}
	if st.ops != nil && !st.ops[op] {
		e := rcp.OptionUnsupported(opStr, "filter operator %q is not advertised", opStr)
		e.Data.Field = st.pathTo(".op")
		return nil, e
	}
	typ, advertised := "", true
	if st.v.Fields != nil {
		typ, advertised = st.v.Fields[field]
	}
	if !advertised {
		return nil, st.invalid("."+field, "filter field %q is not advertised", field)
	}
	n := &Node{Kind: KindLeaf, Field: field, Op: op, Type: typ}
	raw, hasValue := obj["value"]

	if op == OpExists {
		switch b := raw.(type) {
		case nil: // absent, or null which §4.6 reads as absent: default true
			n.Value = BoolValue(true)
		case bool:
			n.Value = BoolValue(b)
		default:
			return nil, st.invalid(".value", "exists takes a boolean value")
		}
		return n, nil
	}
	if !hasValue {
		return nil, st.invalid(".value", "comparison %q needs a value", opStr)
	}
	if op == OpIn || op == OpNin {
		arr, ok := raw.([]any)
		if !ok && raw != nil {
			if rv := reflect.ValueOf(raw); rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() != reflect.Uint8 {
				arr, ok = make([]any, rv.Len()), true
				for i := range arr {
					arr[i] = rv.Index(i).Interface()
				}
			}
		}
		if !ok || len(arr) == 0 {
			return nil, st.invalid(".value", "%q needs a non-empty array of scalars", opStr)
		}
		if st.values += len(arr); st.values > st.maxValues {
			return nil, st.invalid(".value", "filter lists hold more than %d values", st.maxValues)
		}
		elems := make([]Value, len(arr))
		for i, e := range arr {
			val, scalar, err := scalarOf(e)
			if err != nil || !scalar {
				return nil, st.invalid(".value", "%q values must be scalars", opStr)
			}
			elems[i] = val
		}
		n.Value = listValue(elems)
	} else {
		val, scalar, err := scalarOf(raw)
		if err != nil || !scalar {
			return nil, st.invalid(".value", "%q needs a scalar value", opStr)
		}
		n.Value = val
	}
	if op.Ordered() && typ != "" && typ != TypeInt && typ != TypeFloat && typ != TypeDate {
		return nil, st.invalid(".op", "ordered operator %q is not allowed on %s field %q", opStr, typ, field)
	}
	if n.Value.kind == List {
		for _, e := range n.Value.list {
			if err := checkType(e, typ); err != nil {
				return nil, st.invalid(".value", "%q value for %s field %q: %v", opStr, typ, field, err)
			}
		}
	} else if err := checkType(n.Value, typ); err != nil {
		return nil, st.invalid(".value", "%q value for %s field %q: %v", opStr, typ, field, err)
	}
	return n, nil
}

// checkType enforces the §8 rule that a value's JSON type must suit the
// field type. null is accepted everywhere (it compares as "absent").
func checkType(v Value, typ string) error {
	if v.kind == Null {
		return nil
	}
	want := ""
	switch typ {
	case TypeKeyword, TypeText:
		if v.kind != String {
			want = "a string"
		}
	case TypeInt, TypeFloat:
		if v.kind != Number {
			want = "a number"
		} else if f, ok := v.Float64(); !ok || math.IsInf(f, 0) {
			want = "a finite number"
		}
	case TypeBool:
		if v.kind != Bool {
			want = "a boolean"
		}
	case TypeDate:
		if _, ok := v.Time(); !ok {
			want = "an RFC 3339 timestamp or integer epoch milliseconds (§4.6)"
		}
	}
	if want != "" {
		return fmt.Errorf("got %s %s, want %s", v.kind, v, want)
	}
	return nil
}

// IsFilterError reports whether err is a validation error of this package:
// an *rcp.Error with code -32602 or -32005.
func IsFilterError(err error) bool {
	var e *rcp.Error
	return errors.As(err, &e) && (e.Code == rcp.CodeInvalidParams || e.Code == rcp.CodeOptionUnsupported)
}
