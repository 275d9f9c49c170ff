package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	mcpauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcpgo/rcpgo/internal/auth"
	"github.com/rcpgo/rcpgo/mcpbridge/tasks"
	"github.com/rcpgo/rcpgo/rcp"
)

// MaxHTTPBodyBytes caps one request body of the streamable HTTP face (the
// go-sdk's default, now explicit): the guards in front of the go-sdk read
// no more than it refuses (they read 16 MiB of bodies it then refused at
// 4 MiB: 32 such requests at once took the face to 1.09 GB).
const MaxHTTPBodyBytes = mcp.DefaultMaxRequestBodyBytes

// HTTPOptions configure the streamable HTTP face.
type HTTPOptions struct {
	// Tokens, when not empty, require one of them as "Authorization:
	// Bearer …" on every request (401 otherwise), read with the one
	// parser of every rcpd route; each tool call then needs the scope of
	// its tool (ToolScope: -32012 with error.data.scope otherwise).
	Tokens *auth.Set
	// TrustedOrigins are browser origins (scheme://host[:port]) allowed to
	// make cross-origin requests; all others are refused by
	// http.CrossOriginProtection.
	TrustedOrigins []string
	// SessionTimeout closes idle MCP sessions (default 30 min).
	SessionTimeout time.Duration
	// MaxSessions caps live sessions (default DefaultMaxSessions); a new
	// session beyond it closes the least recently used one.
	MaxSessions int
	// Limits bound the connections of ServeHTTP (rcp.HTTPLimits; the write
	// timeout is off: standalone SSE streams stay open).
	Limits rcp.HTTPLimits
	// Mount, when set, adds routes beside the MCP endpoint on ServeHTTP's
	// listener (rcpd mounts /metrics); they get none of its protections.
	Mount func(mux *http.ServeMux)
}

// HTTPHandler returns the streamable HTTP handler of the bridge with its
// protections: DNS-rebinding protection (the go-sdk refuses requests that
// reach a loopback listener with a non-loopback Host header), cross-origin
// protection (Go's http.CrossOriginProtection: cross-site browser requests
// are refused unless their origin is trusted) and optional bearer auth.
func (b *Bridge) HTTPHandler(opts HTTPOptions) (http.Handler, error) {
	cop := http.NewCrossOriginProtection()
	for _, o := range opts.TrustedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("mcpbridge: trusted origin %q: %w", o, err)
		}
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Forbidden: cross-origin request", http.StatusForbidden)
	}))
	timeout := opts.SessionTimeout
	if timeout <= 0 {
		timeout = 30 * time.Minute
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return b.srv },
		&mcp.StreamableHTTPOptions{Logger: b.log, SessionTimeout: timeout, MaxRequestBodyBytes: MaxHTTPBodyBytes})
	maxSess := opts.MaxSessions
	if maxSess <= 0 {
		maxSess = DefaultMaxSessions
	}
	var out http.Handler = cop.Handler(&sessionGuard{b: b, max: maxSess, next: newCancelGuard(tasks.LiftHTTP(h, MaxHTTPBodyBytes), MaxHTTPBodyBytes), used: map[string]time.Time{}, closing: map[string]bool{}})
	if opts.Tokens.Enabled() {
		out = requireToken(opts.Tokens, out)
	}
	if len(opts.TrustedOrigins) > 0 {
		out = cors(opts.TrustedOrigins, out)
	}
	return withPeer(out), nil
}

// requireToken admits requests carrying one of tokens and hands the
// go-sdk the token's name and scopes (mcp.RequestExtra.TokenInfo): it
// binds each MCP session to the token that opened it (another token cannot
// use the session) and the bridge checks each tool's scope against it.
func requireToken(tokens *auth.Set, next http.Handler) http.Handler {
	verify := func(_ context.Context, _ string, r *http.Request) (*mcpauth.TokenInfo, error) {
		t, ok := tokens.FromRequest(r) // the one bearer parser, not the go-sdk's
		if !ok {
			return nil, mcpauth.ErrInvalidToken
		}
		scopes := make([]string, len(t.Scopes))
		for i, s := range t.Scopes {
			scopes[i] = string(s)
		}
		return &mcpauth.TokenInfo{Scopes: scopes, UserID: t.Name}, nil
	}
	h := mcpauth.RequireBearerToken(verify, &mcpauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := tokens.FromRequest(r); !ok {
			auth.Refuse(w, http.StatusUnauthorized, "", "rcpd-mcp")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// cors lets the trusted browser origins use the endpoint: their requests
// get Access-Control-Allow-Origin and may read Mcp-Session-Id (without it
// a browser client cannot continue its session), and their preflights are
// answered here, before authentication (a preflight carries no
// credentials). Preflights from other origins are refused; their other
// requests are refused by cross-origin protection.
func cors(origins []string, next http.Handler) http.Handler {
	trusted := map[string]bool{}
	for _, o := range origins {
		trusted[strings.TrimRight(o, "/")] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Add("Vary", "Origin")
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if !trusted[origin] {
			if preflight {
				http.Error(w, "Forbidden: untrusted origin", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
		if preflight {
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// endpointHint answers GET / of the MCP HTTP face: a person or a client
// configured with the bare address learns where the endpoint is, instead
// of a 404.
func endpointHint(path string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "This is rcpd's MCP face (streamable HTTP). Its endpoint is %s, not /:\n"+
			"point your MCP client at http://%s%s (e.g. claude mcp add --transport http rcpd http://%s%s).\n",
			path, r.Host, path, r.Host, path)
	}
}

// IsLoopback reports whether a listen address binds only loopback
// interfaces (an empty host, like ":8080", binds all of them).
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// ServeHTTP serves the bridge on ln at path until ctx ends, then shuts the
// server down and closes the MCP sessions.
func (b *Bridge) ServeHTTP(ctx context.Context, ln net.Listener, path string, opts HTTPOptions) error {
	h, err := b.HTTPHandler(opts)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(path, h)
	if path != "/" {
		mux.HandleFunc("/{$}", endpointHint(path))
	}
	if opts.Mount != nil {
		opts.Mount(mux)
	}
	lim := opts.Limits
	lim.WriteTimeout = -1
	srv := rcp.NewHTTPServer(mux, lim)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Cancel what is in flight, then close the sessions and the server,
	// waiting at most ShutdownGrace for them.
	b.abort()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	defer cancel()
	var wg sync.WaitGroup
	for ss := range b.srv.Sessions() {
		wg.Go(func() { _ = ss.Close() })
	}
	closed := make(chan struct{})
	go func() { wg.Wait(); close(closed) }()
	select {
	case <-closed:
	case <-sctx.Done():
		b.log.Warn("mcpbridge: MCP sessions still busy at shutdown; not waiting for them")
	}
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
