package rcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// MaxSafeInteger is the largest integer RCP carries (§4.6): 2^53-1.
const MaxSafeInteger = 1<<53 - 1

// DecodeParams decodes a params object into v (a pointer to struct) with the
// §4.6 data rules, mapping every problem to -32602 with error.data.field
// naming the offending path:
//   - integers must be JSON numbers without a fraction, within ±(2^53-1),
//     never strings;
//   - booleans must be true/false (never 0/1 or "true");
//   - null is treated as absent (the field keeps its zero value);
//   - unknown fields are ignored.
//
// Absent params decode as {}. params that are not an object are rejected.
func DecodeParams(raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if raw[0] != '{' {
		return InvalidParams("params", "params must be an object")
	}
	err := json.Unmarshal(raw, v)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && strings.HasPrefix(te.Value, "number") {
		// 5.0, 1E2, 1e1 are integers (§4.6: a number without a fractional
		// part); encoding/json only takes the plain spelling.
		if norm, ok := integralNumbers(raw); ok {
			err = json.Unmarshal(norm, v)
		}
	}
	if err != nil {
		if errors.As(err, &te) {
			field := wirePath(reflect.TypeOf(v), te.Field)
			if field == "" {
				field = "params"
			}
			return InvalidParams(field, "%s: expected %s, got JSON %s", field, jsonKind(te.Type), te.Value)
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return InvalidParams("params", "malformed JSON: %v", err)
		}
		return InvalidParams(wirePath(reflect.TypeOf(v), fieldFromError(err)), "%v", err)
	}
	if path, ok := checkIntegers(reflect.ValueOf(v)); !ok {
		path = strings.TrimPrefix(path, ".")
		return InvalidParams(path, "%s: integer outside the 53-bit range", path)
	}
	return nil
}

func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// fieldFromError extracts a field name from custom unmarshaler errors of
// the form `json: ... Go struct field X.y of type ...`; "" otherwise.
// DecodeInteger decodes one JSON integer (§4.6): any spelling of an
// integral number within ±MaxSafeInteger (5, 5.0, 1E2).
func DecodeInteger(raw json.RawMessage) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if n, ok := plainInteger(raw); ok {
		return n, true
	}
	return decodeIntegerJSON(raw)
}

// decodeIntegerJSON is DecodeInteger through encoding/json (every spelling).
func decodeIntegerJSON(raw []byte) (int64, bool) {
	var n json.Number
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &n) != nil { // never a string (§4.6)
		return 0, false
	}
	return integral(n)
}

// plainInteger decodes the common spelling of an integer, -?[1-9][0-9]*
// or 0 with at most 15 digits (always within the 53-bit range), without
// encoding/json; ok is false for anything else.
func plainInteger(raw []byte) (int64, bool) {
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || digits[0] == '0' && len(digits) > 1 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(raw) {
		n = -n
	}
	return n, true
}

func integral(n json.Number) (int64, bool) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, i >= -MaxSafeInteger && i <= MaxSafeInteger
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > MaxSafeInteger {
		return 0, false
	}
	return int64(f), true
}

// integralNumbers rewrites every integral number of raw spelled with a
// fraction or exponent (5.0, 1E2) in plain digits; ok is false when there
// was none.
func integralNumbers(raw []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if dec.Decode(&tree) != nil {
		return nil, false
	}
	changed := false
	var walk func(x any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			for k, e := range t {
				t[k] = walk(e)
			}
		case []any:
			for i, e := range t {
				t[i] = walk(e)
			}
		case json.Number:
			if strings.ContainsAny(string(t), ".eE") {
				if i, ok := integral(t); ok {
					changed = true
					return json.Number(strconv.FormatInt(i, 10))
				}
			}
		}
		return x
	}
	tree = walk(tree)
	if !changed {
		return nil, false
	}
	out, err := json.Marshal(tree)
	return out, err == nil
}

// wirePath removes from a Go decoding path the names of embedded structs
// ("RetrieveParams.candidateK" when params embed rcp.RetrieveParams): the
// wire path is "candidateK".
func wirePath(t reflect.Type, path string) string {
	embedded := map[string]bool{}
	var collect func(t reflect.Type, depth int)
	collect = func(t reflect.Type, depth int) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || depth > 8 {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous {
				embedded[f.Name] = true
			}
			collect(f.Type, depth+1)
		}
	}
	if t != nil {
		collect(t, 0)
	}
	var keep []string
	for _, seg := range strings.Split(path, ".") {
		if seg != "" && !embedded[seg] {
			keep = append(keep, seg)
		}
	}
	return strings.Join(keep, ".")
}

func fieldFromError(err error) string {
	s := err.Error()
	if i := strings.Index(s, "Go struct field "); i >= 0 {
		rest := s[i+len("Go struct field "):]
		if j := strings.IndexByte(rest, ' '); j >= 0 {
			rest = rest[:j]
		}
		if k := strings.IndexByte(rest, '.'); k >= 0 {
			return rest[k+1:]
		}
		return rest
	}
	return ""
}

// checkIntegers walks a decoded value and reports the first integer field
// beyond ±MaxSafeInteger with its path below v ("a.b[2].c"). It only
// descends into parts of the type that can hold integers (a per-type plan
// is cached) and builds the path on the way out of a failure only.
func checkIntegers(v reflect.Value) (string, bool) {
	if !mayHoldInts(v.Type()) {
		return "", true
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "", true
		}
		return checkIntegers(v.Elem())
	case reflect.Int, reflect.Int64, reflect.Int32:
		n := v.Int()
		if n > MaxSafeInteger || n < -MaxSafeInteger {
			return "", false
		}
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		if v.Uint() > MaxSafeInteger {
			return "", false
		}
	case reflect.Struct:
		for _, f := range structPlan(v.Type()) {
			if q, ok := checkIntegers(v.Field(f.index)); !ok {
				return joinPath(f.name, q), false
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if q, ok := checkIntegers(v.Index(i)); !ok {
				return joinPath("["+strconv.Itoa(i)+"]", q), false
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if q, ok := checkIntegers(iter.Value()); !ok {
				return joinPath("."+iter.Key().String(), q), false
			}
		}
	}
	return "", true
}

// joinPath appends the path tail (a field name, "[i]" or ".key") to head.
func joinPath(head, tail string) string {
	if tail == "" || tail[0] == '[' || tail[0] == '.' {
		return head + tail
	}
	return head + "." + tail
}

type planField struct {
	index int
	name  string
}

var (
	plans   sync.Map // reflect.Type -> []planField
	intTyps sync.Map // reflect.Type -> bool
)

// mayHoldInts reports whether a value of type t can contain a Go integer
// (interfaces can: they hold whatever was decoded into them, which for JSON
// is never an integer type, so they are skipped too).
func mayHoldInts(t reflect.Type) bool {
	if v, ok := intTyps.Load(t); ok {
		return v.(bool)
	}
	intTyps.Store(t, false) // breaks cycles; refined below
	var r bool
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Uint32:
		r = true
	case reflect.Pointer, reflect.Array:
		r = mayHoldInts(t.Elem())
	case reflect.Slice:
		r = t.Elem().Kind() != reflect.Uint8 && mayHoldInts(t.Elem())
	case reflect.Map:
		r = mayHoldInts(t.Elem())
	case reflect.Struct:
		r = len(structPlan(t)) > 0
	}
	intTyps.Store(t, r)
	return r
}

// structPlan lists the exported, JSON-visible fields of t that may hold
// integers, with their JSON names.
func structPlan(t reflect.Type) []planField {
	if v, ok := plans.Load(t); ok {
		return v.([]planField)
	}
	plans.Store(t, []planField(nil)) // breaks cycles
	var out []planField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if mayHoldInts(f.Type) {
			out = append(out, planField{index: i, name: name})
		}
	}
	plans.Store(t, out)
	return out
}

// unquote decodes the JSON string literal b into *s as json.Unmarshal does.
// A plain ASCII literal without escapes is copied directly; anything else
// goes through encoding/json (which unescapes and replaces invalid UTF-8).
func unquote(b []byte, s *string) error {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		body := b[1 : len(b)-1]
		plain := true
		for _, c := range body {
			if c == '\\' || c == '"' || c < 0x20 || c >= 0x80 {
				plain = false
				break
			}
		}
		if plain {
			*s = string(body)
			return nil
		}
	}
	return json.Unmarshal(b, s)
}
