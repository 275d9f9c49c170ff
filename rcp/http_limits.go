package rcp

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// HTTPLimits bound what an HTTP server spends on its connections, so idle,
// slow or non-reading clients cannot exhaust file descriptors or memory
// (docs/hostile-input.md). Zero fields take the defaults; a negative
// timeout disables it.
type HTTPLimits struct {
	// MaxConns caps open connections (default 1024). At the cap a new
	// connection first evicts the longest-idle keep-alive connection, else
	// the oldest one that has not sent a complete request; when every
	// connection is serving a request the new one is closed.
	MaxConns int
	// ReadTimeout bounds reading one request, headers and body (default
	// 30 s); ReadHeaderTimeout the headers alone (default 10 s).
	ReadTimeout       time.Duration
	ReadHeaderTimeout time.Duration
	// WriteTimeout bounds a response from the end of its request headers
	// (default 90 s: the default 60 s request deadline plus margin). SSE
	// streams extend it frame by frame (SSEWriteTimeout).
	WriteTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long (default
	// 30 s).
	IdleTimeout time.Duration
	// MaxBodyBytesInFlight bounds the bytes of large request bodies (over
	// 64 KiB) held at once (default 64 MiB; negative: no bound). A request
	// whose body does not fit waits up to 5 s, then gets 503
	// and -32011 (retryable) unread (http_budget.go).
	MaxBodyBytesInFlight int64
}

// DefaultMaxBodyBytesInFlight is HTTPLimits.MaxBodyBytesInFlight's
// default: four requests of the largest default size (16 MiB) at once.
const DefaultMaxBodyBytesInFlight = 64 << 20

// SSEWriteTimeout bounds writing one SSE frame; a client that does not
// read for that long loses its stream and its request is cancelled.
const SSEWriteTimeout = 10 * time.Second

// sseQueue bounds the progress and log frames buffered for one SSE client;
// beyond it frames are dropped (they are advisory; the final frame is not).
const sseQueue = 64

func (l HTTPLimits) withDefaults() HTTPLimits {
	def := func(d *time.Duration, v time.Duration) {
		switch {
		case *d == 0:
			*d = v
		case *d < 0:
			*d = 0
		}
	}
	if l.MaxConns <= 0 {
		l.MaxConns = 1024
	}
	def(&l.ReadTimeout, 30*time.Second)
	def(&l.ReadHeaderTimeout, 10*time.Second)
	def(&l.WriteTimeout, 90*time.Second)
	def(&l.IdleTimeout, 30*time.Second)
	if l.MaxBodyBytesInFlight == 0 {
		l.MaxBodyBytesInFlight = DefaultMaxBodyBytesInFlight
	}
	return l
}

// HTTPServer is an http.Server with HTTPLimits applied; serve it with its
// Serve method, which enforces MaxConns.
type HTTPServer struct {
	*http.Server
	conns *connTable
}

// NewHTTPServer returns a server for h with the limits applied.
func NewHTTPServer(h http.Handler, lim HTTPLimits) *HTTPServer {
	lim = lim.withDefaults()
	ct := &connTable{max: lim.MaxConns, conns: map[net.Conn]*connInfo{}}
	if lim.MaxBodyBytesInFlight > 0 {
		h = newBodyBudget(lim.MaxBodyBytesInFlight).handler(h)
	}
	hs := &http.Server{Handler: h, ReadTimeout: lim.ReadTimeout, ReadHeaderTimeout: lim.ReadHeaderTimeout,
		WriteTimeout: lim.WriteTimeout, IdleTimeout: lim.IdleTimeout, ConnState: ct.track,
		MaxHeaderBytes: 64 << 10}
	return &HTTPServer{Server: hs, conns: ct}
}

// Serve accepts connections on ln, at most MaxConns at a time.
func (s *HTTPServer) Serve(ln net.Listener) error {
	return s.Server.Serve(&limitListener{Listener: ln, t: s.conns})
}

// Conns reports the open connections (for tests and metrics).
func (s *HTTPServer) Conns() int {
	s.conns.mu.Lock()
	defer s.conns.mu.Unlock()
	return len(s.conns.conns)
}

type connInfo struct {
	state http.ConnState
	since time.Time
}

// connTable tracks connection states to pick an eviction victim.
type connTable struct {
	max   int
	mu    sync.Mutex
	conns map[net.Conn]*connInfo
}

func (t *connTable) track(c net.Conn, st http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch st {
	case http.StateClosed, http.StateHijacked:
		delete(t.conns, c)
	default:
		if ci, ok := t.conns[c]; ok {
			ci.state, ci.since = st, time.Now()
		}
	}
}

// admit registers c, evicting another connection when at the cap; false
// means c must be refused.
func (t *connTable) admit(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.conns) >= t.max {
		victim := t.victimLocked()
		if victim == nil {
			return false
		}
		delete(t.conns, victim)
		_ = victim.Close()
	}
	t.conns[c] = &connInfo{state: http.StateNew, since: time.Now()}
	return true
}

// victimLocked picks the longest-idle keep-alive connection, else the
// oldest connection that has not sent a complete request yet. A client
// sends its request right after connecting, so under a flood of silent
// connections the flood churns while real requests get through.
func (t *connTable) victimLocked() net.Conn {
	var idle, fresh net.Conn
	var idleSince, freshSince time.Time
	for c, ci := range t.conns {
		switch ci.state {
		case http.StateIdle:
			if idle == nil || ci.since.Before(idleSince) {
				idle, idleSince = c, ci.since
			}
		case http.StateNew:
			if fresh == nil || ci.since.Before(freshSince) {
				fresh, freshSince = c, ci.since
			}
		}
	}
	if idle != nil {
		return idle
	}
	return fresh
}

type limitListener struct {
	net.Listener
	t *connTable
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.t.admit(c) {
			return c, nil
		}
		_ = c.Close() // every connection is busy serving a request
	}
}
