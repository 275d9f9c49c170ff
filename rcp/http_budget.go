package rcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// The request-body budget of an HTTPServer (HTTPLimits.MaxBodyBytesInFlight):
// each route caps one body (16 MiB for RCP, 32 MiB for a console upload),
// but nothing capped how many such bodies were held at once — 32
// concurrent 16 MiB requests took rcpd to 1.29 GB and the MCP face to
// 1.09 GB, however quickly each was refused. Bodies above smallBody now
// reserve their bytes before a handler reads them: a request whose
// Content-Length does not fit waits up to 5 s for room, else is
// answered 503 with Retry-After (-32011, retryable) without a byte of its
// body read; a body of unknown length takes budget as it is read and fails
// its read when there is none. Small bodies (every retrieve, every MCP
// search) never wait: at most MaxConns of them are held, 64 MiB in all.

// smallBody is the size below which a body is not counted.
const smallBody = 64 << 10

// bodyBudgetWait is how long a request waits for room in the body budget
// (a variable for tests).
var bodyBudgetWait = 5 * time.Second

// ErrBodyBudget is the read error of a body of unknown length that found
// the server's body budget spent.
var ErrBodyBudget = errors.New("rcp: the server is reading too many large request bodies; retry shortly")

// bodyBudget counts the bytes of large request bodies held at once.
type bodyBudget struct {
	max     int64
	mu      sync.Mutex
	used    int64
	changed chan struct{} // closed and replaced whenever used shrinks
}

func newBodyBudget(max int64) *bodyBudget {
	return &bodyBudget{max: max, changed: make(chan struct{})}
}

// tryTake takes n bytes when they fit (a request larger than the whole
// budget fits when nothing else is held, and runs alone).
func (b *bodyBudget) tryTake(n int64) (bool, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n <= b.max || b.used == 0 {
		b.used += n
		return true, nil
	}
	return false, b.changed
}

// take waits until n bytes fit, or ctx ends.
func (b *bodyBudget) take(ctx context.Context, n int64) bool {
	for {
		ok, changed := b.tryTake(n)
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

func (b *bodyBudget) give(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// handler wraps h with the budget.
func (b *bodyBudget) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Body == nil || r.Body == http.NoBody || (r.ContentLength >= 0 && r.ContentLength <= smallBody):
			h.ServeHTTP(w, r)
			return
		case r.ContentLength > 0:
			n := min(r.ContentLength, b.max)
			ctx, cancel := context.WithTimeout(r.Context(), bodyBudgetWait)
			ok := b.take(ctx, n)
			cancel()
			if !ok {
				refuseBusy(w, r)
				return
			}
			defer b.give(n)
			h.ServeHTTP(w, r)
		default: // unknown length: budget as it is read
			br := &budgetedBody{ReadCloser: r.Body, b: b}
			defer func() { b.give(br.held) }()
			r.Body = br
			h.ServeHTTP(w, r)
		}
	})
}

// refuseBusy answers a request the budget has no room for: 503, with a
// JSON-RPC error every face's client understands. The body is not kept:
// what the client is still sending is discarded (up to drainLimit, for at
// most drainWait) so that it reads the 503 — closing with the body unread
// resets the connection, and the client sees "connection reset by peer"
// instead of a retryable refusal.
func refuseBusy(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Connection", "close")
	writeJSON(w, http.StatusServiceUnavailable, errorFrame(nil, &Error{Code: CodeRateLimited,
		Message: "the server is reading too many large request bodies; retry shortly",
		Data:    &ErrorData{Retryable: ptr(true), RetryAfterMs: ptr(int64(1000))}}))
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	_ = rc.SetReadDeadline(time.Now().Add(drainWait))
	body := r.Body
	if bb, ok := body.(*budgetedBody); ok {
		body = bb.ReadCloser // past the budget: discarding holds nothing
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(body, drainLimit))
}

// How much of a refused body refuseBusy discards, and for how long.
const (
	drainLimit = 32 << 20
	drainWait  = 2 * time.Second
)

// budgetedBody takes budget for the bytes it reads beyond smallBody.
type budgetedBody struct {
	io.ReadCloser
	b    *bodyBudget
	read int64
	held int64
}

func (r *budgetedBody) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.read += int64(n)
	if need := r.read - smallBody - r.held; need > 0 {
		if ok, _ := r.b.tryTake(need); !ok {
			return n, ErrBodyBudget
		}
		r.held += need
	}
	return n, err
}

// readBody reads r's body up to max+1 bytes into one buffer of its
// declared length (io.ReadAll doubles its buffer as it goes: a 16 MiB body
// allocated 32 MiB and more).
func readBody(r *http.Request, max int64) ([]byte, error) {
	lr := io.LimitReader(r.Body, max+1)
	if r.ContentLength <= 0 || r.ContentLength > max {
		return io.ReadAll(lr)
	}
	buf := bytes.NewBuffer(make([]byte, 0, r.ContentLength+1))
	_, err := buf.ReadFrom(lr)
	return buf.Bytes(), err
}
