// Package defaults fills the unset fields of an options struct: the one
// shape the engine's stores (memory, session, feedback) used to spell out
// field by field.
package defaults

import "time"

// number is what an option with a positive default may be.
type number interface {
	~int | ~int32 | ~int64 | ~float64
}

// Positive sets *v to d when *v is zero or negative (unset, or a value
// that means "the default").
func Positive[T number](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Clock sets *now to time.Now when it is nil (tests pass a fake clock).
func Clock(now *func() time.Time) {
	if *now == nil {
		*now = time.Now
	}
}
