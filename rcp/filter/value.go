package filter

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
)

// ValueKind is the JSON type of a filter Value.
type ValueKind uint8

// Value kinds. The zero Value is Null.
const (
	Null ValueKind = iota
	String
	Number
	Bool
	List // the array of scalars of in / nin
)

func (k ValueKind) String() string {
	switch k {
	case Null:
		return "null"
	case String:
		return "string"
	case Number:
		return "number"
	case Bool:
		return "bool"
	case List:
		return "array"
	}
	return fmt.Sprintf("ValueKind(%d)", uint8(k))
}

// Value is a filter operand: a JSON scalar, or for in/nin a list of scalars.
// Numbers keep their exact JSON text (json.Number), so 9007199254740993 or
// 1.10 reach the backend unchanged. Values are immutable.
type Value struct {
	kind ValueKind
	s    string // string value, or number text
	b    bool
	list []Value
}

// NullValue, StringValue, BoolValue and IntValue build scalar values.
func NullValue() Value           { return Value{} }
func StringValue(s string) Value { return Value{kind: String, s: s} }
func BoolValue(b bool) Value     { return Value{kind: Bool, b: b} }
func IntValue(n int64) Value     { return Value{kind: Number, s: strconv.FormatInt(n, 10)} }

func listValue(vs []Value) Value { return Value{kind: List, list: vs} }
func numberText(s string) Value  { return Value{kind: Number, s: s} }

// Kind returns the value's JSON type.
func (v Value) Kind() ValueKind { return v.kind }

// IsNull reports whether v is JSON null.
func (v Value) IsNull() bool { return v.kind == Null }

func (v Value) isScalar() bool { return v.kind != List }

// Elems returns the elements of a List (nil otherwise).
func (v Value) Elems() []Value { return v.list }

// Bool returns the boolean and whether v is a boolean.
func (v Value) Bool() (bool, bool) { return v.b, v.kind == Bool }

// Str returns the string and whether v is a string.
func (v Value) Str() (string, bool) { return v.s, v.kind == String }

// Number returns the exact JSON text of a number.
func (v Value) Number() (json.Number, bool) { return json.Number(v.s), v.kind == Number }

// Float64 returns a number as float64 (rounded for long decimals).
func (v Value) Float64() (float64, bool) {
	if v.kind != Number {
		return 0, false
	}
	f, err := strconv.ParseFloat(v.s, 64)
	return f, err == nil
}

// Int64 returns a number that is an exact integer within int64.
func (v Value) Int64() (int64, bool) {
	if v.kind != Number {
		return 0, false
	}
	n, err := strconv.ParseInt(v.s, 10, 64)
	if err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(v.s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

// Time interprets v as a §4.6 timestamp: an RFC 3339 string or an integer
// count of milliseconds since the Unix epoch. Both forms map to the same
// instant, so "2023-01-01T00:00:00Z" equals 1672531200000.
func (v Value) Time() (time.Time, bool) {
	switch v.kind {
	case String:
		t, err := time.Parse(time.RFC3339Nano, v.s)
		return t, err == nil
	case Number:
		ms, ok := v.Int64()
		if !ok {
			return time.Time{}, false
		}
		return time.UnixMilli(ms), true
	}
	return time.Time{}, false
}

// Interface returns v as plain Go data: nil, string, bool, json.Number or
// []any.
func (v Value) Interface() any {
	switch v.kind {
	case String:
		return v.s
	case Number:
		return json.Number(v.s)
	case Bool:
		return v.b
	case List:
		out := make([]any, len(v.list))
		for i, e := range v.list {
			out[i] = e.Interface()
		}
		return out
	}
	return nil
}

// MarshalJSON writes the value with numbers in their original text.
func (v Value) MarshalJSON() ([]byte, error) { return v.appendJSON(nil), nil }

func (v Value) appendJSON(b []byte) []byte {
	switch v.kind {
	case String:
		q, _ := json.Marshal(v.s)
		return append(b, q...)
	case Number:
		return append(b, v.s...)
	case Bool:
		return strconv.AppendBool(b, v.b)
	case List:
		b = append(b, '[')
		for i, e := range v.list {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.appendJSON(b)
		}
		return append(b, ']')
	}
	return append(b, "null"...)
}

func (v Value) String() string { return string(v.appendJSON(nil)) }

// validNumber reports whether s is a JSON number literal.
func validNumber(s string) bool {
	if s == "" || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) {
		return false
	}
	return json.Valid([]byte(s))
}

// scalarOf converts a Go or decoded-JSON scalar to a Value. ok is false for
// arrays, objects and unsupported types; err reports a non-finite float or a
// malformed json.Number.
func scalarOf(x any) (v Value, ok bool, err error) {
	switch x := x.(type) {
	case nil:
		return Value{}, true, nil
	case Value:
		return x, x.isScalar(), nil
	case string:
		return StringValue(x), true, nil
	case bool:
		return BoolValue(x), true, nil
	case json.Number:
		if !validNumber(string(x)) {
			return Value{}, true, fmt.Errorf("%q is not a JSON number", string(x))
		}
		return numberText(string(x)), true, nil
	case float64:
		return floatValue(x, 64)
	case float32:
		return floatValue(float64(x), 32)
	case int:
		return IntValue(int64(x)), true, nil
	case int8:
		return IntValue(int64(x)), true, nil
	case int16:
		return IntValue(int64(x)), true, nil
	case int32:
		return IntValue(int64(x)), true, nil
	case int64:
		return IntValue(x), true, nil
	case uint:
		return numberText(strconv.FormatUint(uint64(x), 10)), true, nil
	case uint8:
		return IntValue(int64(x)), true, nil
	case uint16:
		return IntValue(int64(x)), true, nil
	case uint32:
		return IntValue(int64(x)), true, nil
	case uint64:
		return numberText(strconv.FormatUint(x, 10)), true, nil
	case time.Time:
		return StringValue(x.Format(time.RFC3339Nano)), true, nil
	}
	return Value{}, false, nil
}

func floatValue(f float64, bits int) (Value, bool, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Value{}, true, fmt.Errorf("non-finite number %v (§4.6)", f)
	}
	return numberText(strconv.FormatFloat(f, 'g', -1, bits)), true, nil
}

// listOf converts a Go slice or array (or []any from JSON) into a List of
// scalars. ok is false when x is not a slice or array.
func listOf(x any) (v Value, ok bool, err error) {
	if x == nil {
		return Value{}, false, nil
	}
	if vv, isV := x.(Value); isV {
		return vv, vv.kind == List, nil
	}
	rv := reflect.ValueOf(x)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return Value{}, false, nil
	}
	if rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8 {
		return Value{}, false, nil // []byte is not a list of numbers
	}
	out := make([]Value, rv.Len())
	for i := range out {
		e, isScalar, err := scalarOf(rv.Index(i).Interface())
		if err != nil {
			return Value{}, true, fmt.Errorf("element %d: %w", i, err)
		}
		if !isScalar {
			return Value{}, true, fmt.Errorf("element %d is not a scalar", i)
		}
		out[i] = e
	}
	return listValue(out), true, nil
}
