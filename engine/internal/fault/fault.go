// Package fault is how the engine's layers report a failure the client
// must hear about: the layer's sentinel error and what this occurrence
// tells the client (error.message and error.data). The engine translates
// the sentinel into an RCP code in one place, its error table at the Call
// boundary (engine/errors.go); no layer builds an rcp.Error itself.
package fault

// Error is one occurrence of a layer's failure.
type Error struct {
	// Err is the layer's sentinel: what the error table translates.
	Err error
	// Message, when set, replaces the table's error.message.
	Message string
	// Field and Option name what in the request caused it; Detail says
	// what to do about it (error.data).
	Field, Option, Detail string
	// RetryAfterMs, when set, replaces the table's error.data.retryAfterMs
	// (how long this occurrence expects the client to wait).
	RetryAfterMs int64
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Err.Error()
	}
	if e.Detail != "" {
		return msg + ": " + e.Detail
	}
	return msg
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }
