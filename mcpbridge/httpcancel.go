package mcpbridge

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// cancelGuard keeps, over streamable HTTP, MCP's rule that a request the
// client cancelled is not answered (the stdio transport keeps it in
// stdioConn). The go-sdk cancels the handler on notifications/cancelled but
// still writes its (error) answer to the request's stream; the guard drops
// that answer, so the stream ends without one.
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
	if r.Method != http.MethodPost || sid == "" || r.Body == nil {
		g.next.ServeHTTP(w, r)
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
		g.next.ServeHTTP(w, r) // batches, garbage: the handler answers them
		return
	}
	if head.Method == "notifications/cancelled" {
		g.cancel(sid, head.Params.RequestID)
		g.next.ServeHTTP(w, r)
		return
	}
	id, err := jsonrpc.MakeID(head.ID)
	if err != nil || !id.IsValid() || head.Method == "" {
		g.next.ServeHTTP(w, r)
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
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cancelled[k]
}

// answerFilter is the response writer of one request's POST: it drops the
// answer to that request once the request is cancelled. The go-sdk writes
// one SSE event (or the one JSON body) per Write.
type answerFilter struct {
	http.ResponseWriter
	g   *cancelGuard
	key string
	id  jsonrpc.ID
}

func (f *answerFilter) Write(p []byte) (int, error) {
	if f.g.drop(f.key) && answers(p, f.id) {
		return len(p), nil
	}
	return f.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the flusher underneath.
func (f *answerFilter) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// answers reports whether p, an SSE event or a JSON body, is the answer
// (a response, not a request or notification) to id.
func answers(p []byte, id jsonrpc.ID) bool {
	data := p
	if i := bytes.Index(p, []byte("data: ")); i >= 0 && (i == 0 || p[i-1] == '\n') {
		data = p[i+len("data: "):]
		if j := bytes.IndexByte(data, '\n'); j >= 0 {
			data = data[:j]
		}
	}
	var head frameHead
	if json.Unmarshal(data, &head) != nil || head.Method != "" {
		return false
	}
	got, err := jsonrpc.MakeID(head.ID)
	return err == nil && got.IsValid() && idKey(got) == idKey(id)
}
