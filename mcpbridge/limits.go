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
}

func (g *sessionGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(headerSessionID)
	if id == "" && r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, MaxInitializeBytes)
		g.makeRoom()
	}
	g.next.ServeHTTP(w, r)
	if id == "" {
		id = w.Header().Get(headerSessionID) // the session just opened
	}
	if id != "" {
		g.mu.Lock()
		g.used[id] = time.Now()
		g.mu.Unlock()
	}
}

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
	g.mu.Unlock()
	for ss := range g.b.srv.Sessions() {
		if ss.ID() == victim {
			_ = ss.Close()
		}
	}
}
