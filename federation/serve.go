package federation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

// EnvSpawnDepth carries the remaining spawn budget to the stdio engines a
// gateway starts: a gateway spawned over stdio by another gateway inherits
// it, so a registry that lists a stdio gateway running itself cannot fork
// without bound.
const EnvSpawnDepth = "RCP_GATEWAY_SPAWN_DEPTH"

// SpawnBudget returns this process's spawn budget: the value of
// EnvSpawnDepth when a parent gateway set it, else def.
func SpawnBudget(def int) (int, error) {
	v, ok := os.LookupEnv(EnvSpawnDepth)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("bad %s=%q", EnvSpawnDepth, v)
	}
	return n, nil
}

// SpawnEnv is the environment entry that hands the engines a gateway with
// the given budget spawns one hop less.
func SpawnEnv(budget int) string { return fmt.Sprintf("%s=%d", EnvSpawnDepth, budget-1) }

// ServeOptions says how Serve exposes a gateway.
type ServeOptions struct {
	// Listener serves HTTP (base path /rcp) when set; otherwise Serve speaks
	// NDJSON on Stdin and Stdout until EOF.
	Listener      net.Listener
	HTTP          *rcp.HTTPOptions
	Stdin         io.Reader
	Stdout        io.Writer
	Server        *rcp.ServerOptions
	Logger        *slog.Logger
	EngineTimeout time.Duration // bounds the start-up dialling a stdio session's capabilities wait for
	// NoDial leaves every engine to be dialled on demand (an exhausted
	// spawn budget: dialling a stdio engine would fork another gateway).
	NoDial bool
	// Wrap, when set, wraps the gateway's handler before it is served
	// (rcpd applies its tokens' scopes to each call).
	Wrap func(rcp.Handler) rcp.Handler
	// Mount, when set, adds routes to the HTTP listener beside the RCP
	// endpoint, which keeps its base path (rcpd mounts its web console at
	// "/"). srv is the gateway's RCP server.
	Mount func(mux *http.ServeMux, srv *rcp.Server)
}

// Serve dials the engines and serves the gateway until ctx ends (or, on
// stdio, until EOF). Over HTTP the engines are dialled before serving, so
// even the first session sees all of them, except engines at the
// listener's own address: dialling those would wait on a listener nobody
// serves yet; at query time they are recognised by identity and skipped as
// a cycle. Over stdio the gateway serves at once (ping answers
// immediately) while it dials; sessions' capabilities wait, bounded, for it.
func (g *Gateway) Serve(ctx context.Context, o ServeOptions) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	report := func(err error) {
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				log.Warn("engine unavailable at start; will retry on demand", "err", line)
			}
		}
		log.Info("gateway ready", "id", g.Identity(), "engines", len(g.fed.engines))
	}
	if o.NoDial {
		log.Warn("spawn budget exhausted; engines are dialled on demand only", "env", EnvSpawnDepth)
	}
	var h rcp.Handler = g
	if o.Wrap != nil {
		h = o.Wrap(h)
	}
	srv := rcp.NewServer(h, o.Server)
	if o.Listener != nil {
		if !o.NoDial {
			self, _ := o.Listener.Addr().(*net.TCPAddr)
			report(g.fed.connect(ctx, func(e *Engine) bool { return self != nil && pointsAt(e.Spec(), self) }))
		}
		log.Info("serving RCP over HTTP", "url", "http://"+o.Listener.Addr().String()+"/rcp",
			"auth", o.HTTP != nil && (len(o.HTTP.BearerTokens) > 0 || o.HTTP.Authenticate != nil))
		if o.Mount == nil {
			return srv.ServeListener(ctx, o.Listener, o.HTTP)
		}
		return serveMounted(ctx, srv, o)
	}
	if !o.NoDial {
		warmed := g.ConnectAsync(ctx, o.EngineTimeout+time.Second)
		go func() { report(<-warmed) }()
	}
	if err := srv.ServeStdio(ctx, o.Stdin, o.Stdout); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// serveMounted serves the RCP endpoint and o.Mount's routes on o.Listener
// until ctx ends, then shuts down like rcp.Server.ServeListener: in-flight
// requests get up to 10 s, then the sessions close.
func serveMounted(ctx context.Context, srv *rcp.Server, o ServeOptions) error {
	rh := srv.HTTPHandler(o.HTTP)
	defer rh.Close()
	base := "/rcp"
	if o.HTTP != nil && o.HTTP.Base != "" {
		base = "/" + strings.Trim(o.HTTP.Base, "/")
	}
	mux := http.NewServeMux()
	mux.Handle(base, rh)
	mux.Handle(base+"/", rh)
	o.Mount(mux, srv)
	// The limits rcp.Server.ServeListener applies: connection cap, read,
	// write and idle timeouts (docs/hostile-input.md item 4).
	var lim rcp.HTTPLimits
	if o.HTTP != nil {
		lim = o.HTTP.Limits
	}
	if lim.WriteTimeout == 0 && o.Server != nil && o.Server.RequestTimeout > 0 {
		lim.WriteTimeout = o.Server.RequestTimeout + 30*time.Second
	}
	hs := rcp.NewHTTPServer(mux, lim)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(o.Listener) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("federation: serving HTTP: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	<-errc
	if err != nil {
		return fmt.Errorf("federation: HTTP shutdown: %w", err)
	}
	return nil
}

// pointsAt reports whether an HTTP engine's URL addresses the listener at
// self (same port, and a loopback, unspecified or identical host).
func pointsAt(spec EngineSpec, self *net.TCPAddr) bool {
	if spec.EffectiveTransport() != TransportHTTP {
		return false
	}
	u, err := url.Parse(spec.URL)
	if err != nil || u.Port() != strconv.Itoa(self.Port) {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified() || ip.Equal(self.IP) || self.IP.IsUnspecified())
}
