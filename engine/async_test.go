package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/rcpgo/rcpgo/rcp"
)

// answer is the outcome of a call made on another goroutine.
type answer struct {
	res  json.RawMessage
	rerr *rcp.Error
	err  error // not an RCP error: a marshalling fault or a non-RCP error
}

// goCall runs a call on its own goroutine and delivers its answer. It never
// touches a testing.T (a goroutine must not call t.Fatal); the test receives
// the answer with within.Recv, which bounds the wait, and judges it there.
func goCall(e *Engine, method string, params any) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		var a answer
		defer func() { out <- a }()
		raw, err := json.Marshal(params)
		if err != nil {
			a.err = err
			return
		}
		res, err := e.Call(context.Background(), method, raw)
		if err != nil {
			if re, ok := rcp.AsError(err); ok {
				a.rerr = re
			} else {
				a.err = fmt.Errorf("%s: non-RCP error: %w", method, err)
			}
			return
		}
		a.res, a.err = json.Marshal(res)
	}()
	return out
}

// fault returns what went wrong with a, or nil.
func (a answer) fault() error {
	if a.err != nil {
		return a.err
	}
	if a.rerr != nil {
		return a.rerr
	}
	return nil
}
