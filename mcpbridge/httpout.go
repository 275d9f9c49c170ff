package mcpbridge

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/rcpgo/rcpgo/mcpbridge/tasks"
)

// cancelGuard adjusts what the go-sdk's streamable HTTP handler writes in a
// session, one SSE event (or JSON body) per Write:
//
//   - It keeps MCP's rule that a request the client cancelled is not
//     answered (the stdio transport keeps it in stdioConn). The go-sdk
//     cancels the handler on notifications/cancelled but still writes its
//     (error) answer to the request's stream; the guard drops that answer,
//     so the stream ends without one.
//   - It turns task status notifications in transit into
//     notifications/tasks/status (tasks.RewriteStatus).
//
// State is held only for requests whose POST is still being served: once
// the POST returns its stream is gone and nothing more can be written to it.
type cancelGuard struct {
	next    http.Handler
	maxBody int64

	mu        sync.Mutex
	open      map[string]bool // session NUL request id → POST in flight
	cancelled map[string]bool // of those, the ones the client cancelled
}

func newCancelGuard(next http.Handler, maxBody int64) *cancelGuard {
	return &cancelGuard{next: next, maxBody: maxBody, open: map[string]bool{}, cancelled: map[string]bool{}}
}

// frameHead is what the guard reads of a frame.
type frameHead struct {
	ID     any    `json:"id"`
	Method string `json:"method"`
	Params struct {
		RequestID any `json:"requestId"`
	} `json:"params"`
}

func (g *cancelGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get(headerSessionID)
	if sid == "" {
		g.next.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost || r.Body == nil {
		g.next.ServeHTTP(&answerFilter{ResponseWriter: w}, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, g.maxBody+1))
	if err != nil {
		http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	var head frameHead
	if int64(len(body)) > g.maxBody || json.Unmarshal(body, &head) != nil {
		g.next.ServeHTTP(&answerFilter{ResponseWriter: w}, r) // batches, garbage: the handler answers them
		return
	}
	if head.Method == "notifications/cancelled" {
		g.cancel(sid, head.Params.RequestID)
	}
	id, err := jsonrpc.MakeID(head.ID)
	if err != nil || !id.IsValid() || head.Method == "" {
		g.next.ServeHTTP(&answerFilter{ResponseWriter: w}, r)
		return
	}
	k := sid + "\x00" + idKey(id)
	g.mu.Lock()
	g.open[k] = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.open, k)
		delete(g.cancelled, k)
		g.mu.Unlock()
	}()
	g.next.ServeHTTP(&answerFilter{ResponseWriter: w, g: g, key: k, id: id}, r)
}

// cancel records the cancellation of a request in flight.
func (g *cancelGuard) cancel(sid string, requestID any) {
	id, err := jsonrpc.MakeID(requestID)
	if err != nil || !id.IsValid() {
		return
	}
	k := sid + "\x00" + idKey(id)
	g.mu.Lock()
	if g.open[k] {
		g.cancelled[k] = true
	}
	g.mu.Unlock()
}

// drop reports whether the answer to k must be dropped.
func (g *cancelGuard) drop(k string) bool {
	if k == "" {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cancelled[k]
}

// answerFilter is the response writer of one request of a session: it
// rewrites task status notifications and, for the POST of a request (key
// set), drops the answer to that request once the request is cancelled.
type answerFilter struct {
	http.ResponseWriter
	g   *cancelGuard
	key string
	id  jsonrpc.ID
}

func (f *answerFilter) Write(p []byte) (int, error) {
	data, start, end := eventData(p)
	if f.key != "" && f.g.drop(f.key) && answers(data, f.id) {
		return len(p), nil
	}
	if status := tasks.RewriteStatus(data); status != nil {
		if _, err := f.ResponseWriter.Write(slices.Concat(p[:start], status, p[end:])); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return f.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the flusher underneath.
func (f *answerFilter) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// eventData returns the JSON-RPC message of p, an SSE event or a JSON
// body, and where it lies in p.
func eventData(p []byte) (data []byte, start, end int) {
	i := bytes.Index(p, []byte("data: "))
	if i < 0 || (i > 0 && p[i-1] != '\n') {
		return p, 0, len(p)
	}
	start = i + len("data: ")
	end = len(p)
	if j := bytes.IndexByte(p[start:], '\n'); j >= 0 {
		end = start + j
	}
	return p[start:end], start, end
}

// answers reports whether data is the answer (a response, not a request or
// notification) to id.
func answers(data []byte, id jsonrpc.ID) bool {
	var head frameHead
	if json.Unmarshal(data, &head) != nil || head.Method != "" {
		return false
	}
	got, err := jsonrpc.MakeID(head.ID)
	return err == nil && got.IsValid() && idKey(got) == idKey(id)
}
