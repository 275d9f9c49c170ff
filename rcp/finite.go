package rcp

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
)

// §4.6: NaN and ±Inf are not JSON and are never emitted. A result that holds
// one is re-encoded with every non-finite float replaced by a finite
// sentinel: the largest float for +Inf, the lowest for -Inf and NaN (a NaN
// score ranks last). Optional (pointer) floats are omitted instead.

// Finite returns f, or the sentinel that replaces it on the wire.
func Finite(f float64) float64 {
	switch {
	case math.IsInf(f, 1):
		return math.MaxFloat64
	case math.IsNaN(f) || math.IsInf(f, -1):
		return -math.MaxFloat64
	}
	return f
}

// marshalFinite marshals v, sanitising non-finite floats when plain
// encoding fails because of them.
func marshalFinite(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	var uve *json.UnsupportedValueError
	if err == nil || !errors.As(err, &uve) {
		return b, err
	}
	rv := reflect.ValueOf(v)
	cp := reflect.New(rv.Type()).Elem()
	cp.Set(deepCopy(rv))
	sanitize(cp)
	return json.Marshal(cp.Interface())
}

// deepCopy copies pointers, slices and maps so sanitising never writes
// through to the handler's own data.
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type().Elem())
		n.Elem().Set(deepCopy(v.Elem()))
		return n
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		c := deepCopy(v.Elem())
		n := reflect.New(v.Type()).Elem()
		n.Set(c)
		return n
	case reflect.Struct:
		n := reflect.New(v.Type()).Elem()
		n.Set(v)
		for i := 0; i < v.NumField(); i++ {
			if n.Field(i).CanSet() {
				n.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
		return n
	case reflect.Slice:
		if v.IsNil() || v.Type().Elem().Kind() == reflect.Uint8 {
			return v
		}
		n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			n.Index(i).Set(deepCopy(v.Index(i)))
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			n.SetMapIndex(iter.Key(), deepCopy(iter.Value()))
		}
		return n
	}
	return v
}

func nonFinite(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) }

// sanitize replaces non-finite floats in an addressable value.
func sanitize(v reflect.Value) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if v.CanSet() && nonFinite(v.Float()) {
			v.SetFloat(Finite(v.Float()))
		}
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if k := v.Elem().Kind(); (k == reflect.Float64 || k == reflect.Float32) && nonFinite(v.Elem().Float()) && v.CanSet() {
			v.Set(reflect.Zero(v.Type())) // optional number: omit it
			return
		}
		sanitize(v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		e := v.Elem()
		if (e.Kind() == reflect.Float64 || e.Kind() == reflect.Float32) && nonFinite(e.Float()) && v.CanSet() {
			v.Set(reflect.ValueOf(Finite(e.Float())))
			return
		}
		c := reflect.New(e.Type()).Elem()
		c.Set(e)
		sanitize(c)
		if v.CanSet() {
			v.Set(c)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			sanitize(v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			sanitize(v.Index(i))
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			val := reflect.New(iter.Value().Type()).Elem()
			val.Set(iter.Value())
			sanitize(val)
			v.SetMapIndex(iter.Key(), val)
		}
	}
}
