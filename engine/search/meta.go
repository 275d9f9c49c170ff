package search

import (
	"math"
	"time"
)

// How the engine and its backends read metadata values (Document.Meta):
// decoded JSON, so numbers arrive as float64 or json.Number, and values
// given in Go (a preload) as any numeric type.

// MetaNumber reads a metadata value as a number: any Go numeric type a
// caller may have stored, or a json.Number. NaN and ±Inf pass through; a
// caller that cannot store them checks.
func MetaNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case interface{ Float64() (float64, error) }: // json.Number
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// MetaDate interprets a metadata value as an instant: an RFC 3339 or
// YYYY-MM-DD string, epoch milliseconds, or a bare year (1000..9999).
func MetaDate(v any) (time.Time, bool) {
	var f float64
	switch x := v.(type) {
	case string:
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
			if t, err := time.Parse(layout, x); err == nil {
				return t, true
			}
		}
		return time.Time{}, false
	case float64:
		f = x
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case interface{ Float64() (float64, error) }:
		var err error
		if f, err = x.Float64(); err != nil {
			return time.Time{}, false
		}
	default:
		return time.Time{}, false
	}
	if f >= 1000 && f <= 9999 && f == math.Trunc(f) {
		return time.Date(int(f), 1, 1, 0, 0, 0, 0, time.UTC), true
	}
	return time.UnixMilli(int64(f)).UTC(), true
}
