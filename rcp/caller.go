package rcp

import (
	"context"
	"net/http"
	"strconv"
)

// Caller is who sent a request, as its transport established it: RCP
// carries no credentials of its own (§15.6), so a server that scopes state
// by caller (sessionId trajectories, feedback reporters, budgets) reads
// this instead of anything in params, which the client chooses freely.
type Caller struct {
	// Transport is "http", or "stream" for stdio and other connections
	// (whose peer is whoever spawned or dialled the process, §15.6).
	Transport string
	// Principal names the credential the request carried, as
	// HTTPOptions.Authenticate identified it ("" when anonymous).
	Principal string
	// Addr is the HTTP client's IP address ("" on streams).
	Addr string
	// Session identifies the RCP session: a stateful HTTP session or a
	// stream connection ("" for stateless HTTP and the single shared HTTP
	// session). It is not the session token.
	Session string
}

// Transports of Caller.
const (
	TransportHTTP   = "http"
	TransportStream = "stream"
)

// CallerOf returns the caller of the request served by ctx (the zero
// Caller outside a request).
func CallerOf(ctx context.Context) Caller {
	if s := scopeOf(ctx); s != nil {
		return s.caller
	}
	return Caller{}
}

// ID identifies the caller across its sessions: its principal when it is
// authenticated, else its address over HTTP, else its connection. Two
// requests with the same ID are the same party as far as the transport
// can tell; budgets and "distinct reporters" count IDs.
func (c Caller) ID() string {
	switch {
	case c.Principal != "":
		return "token:" + c.Principal
	case c.Transport == TransportHTTP:
		return "addr:" + c.Addr
	case c.Session != "":
		return "stream:" + c.Session
	}
	return ""
}

// Scope is the namespace of the client-chosen names of the caller
// (sessionId): its ID, narrowed to its RCP session when it has one, so two
// callers using the same name never share what it names.
func (c Caller) Scope() string {
	id := c.ID()
	if c.Session != "" && c.Transport == TransportHTTP {
		id += "/session:" + c.Session
	}
	return id
}

// callerFor is the caller of an HTTP request authenticated as principal.
func callerFor(r *http.Request, principal string) Caller {
	return Caller{Transport: TransportHTTP, Principal: principal, Addr: remoteIP(r)}
}

// sessionName names session number n in Caller.Session.
func sessionName(n uint64) string { return "s" + strconv.FormatUint(n, 10) }
