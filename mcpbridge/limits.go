package mcpbridge

import (
	"net/http"
	"sync"
	"time"
)

// Defaults of the MCP face's session bounds (docs/hostile-input.md): 3 000
// initialize calls with 200 KB clientInfo each took the face to 2.16 GB.
const (
	// DefaultMaxSessions caps live MCP sessions; a new session beyond it
	// closes the least recently used one.
	DefaultMaxSessions = 1000
	// MaxInitializeBytes bounds a request that opens a session (it carries
	// the clientInfo the session keeps).
	MaxInitializeBytes = 64 << 10
)

const headerSessionID = "Mcp-Session-Id"

// sessionGuard bounds the sessions of the streamable HTTP face.
type sessionGuard struct {
	b    *Bridge
	max  int
	next http.Handler

	mu   sync.Mutex
	used map[string]time.Time // session id → last request
	// closing holds evicted sessions: the SDK lists a closed session until
	// its connection has wound down, and counting those would evict more.
	closing map[string]bool
}

func (g *sessionGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(headerSessionID)
	if id != "" {
		g.touch(id)
		g.next.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, MaxInitializeBytes)
		g.makeRoom()
	}
	// A session opened by this request is recorded as its headers go out,
	// before the client can see them and open the next one.
	g.next.ServeHTTP(&openRecorder{ResponseWriter: w, g: g}, r)
}

func (g *sessionGuard) touch(id string) {
	g.mu.Lock()
	g.used[id] = time.Now()
	g.mu.Unlock()
}

// openRecorder records the session id a response carries when its header
// is written.
type openRecorder struct {
	http.ResponseWriter
	g    *sessionGuard
	done bool
}

func (o *openRecorder) record() {
	if o.done {
		return
	}
	o.done = true
	if id := o.Header().Get(headerSessionID); id != "" {
		o.g.touch(id)
	}
}

func (o *openRecorder) WriteHeader(code int) {
	o.record()
	o.ResponseWriter.WriteHeader(code)
}

func (o *openRecorder) Write(p []byte) (int, error) {
	o.record()
	return o.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the flusher underneath.
func (o *openRecorder) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// makeRoom closes the least recently used session when at the cap, and
// forgets sessions that are gone.
func (g *sessionGuard) makeRoom() {
	live := map[string]bool{}
	for ss := range g.b.srv.Sessions() {
		live[ss.ID()] = true
	}
	g.mu.Lock()
	for id, t := range g.used {
		// A session opened a moment ago may not be listed yet.
		if !live[id] && time.Since(t) > 10*time.Second {
			delete(g.used, id)
		}
	}
	for id := range g.closing {
		if !live[id] {
			delete(g.closing, id)
		}
		delete(live, id)
	}
	if len(live) < g.max {
		g.mu.Unlock()
		return
	}
	var victim string
	var oldest time.Time
	for id, t := range g.used {
		if live[id] && (victim == "" || t.Before(oldest)) {
			victim, oldest = id, t
		}
	}
	delete(g.used, victim)
	if victim != "" {
		g.closing[victim] = true
	}
	g.mu.Unlock()
	for ss := range g.b.srv.Sessions() {
		if ss.ID() == victim {
			_ = ss.Close()
		}
	}
}
