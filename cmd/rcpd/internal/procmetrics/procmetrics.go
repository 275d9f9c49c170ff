// Package procmetrics serves /metrics for the rcpd faces that proxy an
// engine (`rcpd gateway`, `rcpd mcp --http`): the Go runtime and process
// collectors (go_goroutines, process_resident_memory_bytes, open file
// descriptors…), which is what an operator watches under attack. It also
// holds the rule every rcpd face applies to /metrics (docs/hostile-input.md
// item 3): under a bearer token the endpoint needs the token, or it moves
// to a separate unauthenticated address with --metrics-addr.
package procmetrics

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rcpgo/rcpgo/rcp"
)

// Handler serves the Go runtime and process metrics of this process.
func Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// RequireBearer lets through only requests carrying one of tokens as
// "Authorization: Bearer …" (401 otherwise); with no tokens, everything.
func RequireBearer(h http.Handler, tokens []string, realm string) http.Handler {
	if len(tokens) == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := rcp.BearerToken(r.Header.Get("Authorization"))
		if !ok || !rcp.TokenMatches(tok, tokens) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm+`"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Mount adds /metrics to mux, behind the bearer tokens when there are any.
func Mount(mux *http.ServeMux, tokens []string, realm string) {
	mux.Handle("/metrics", RequireBearer(Handler(), tokens, realm))
}

// ServeSeparate serves /metrics without auth on addr (--metrics-addr),
// with the connection limits of every rcpd listener, until ctx ends. It
// returns once the address is bound; the server stops with ctx.
func ServeSeparate(ctx context.Context, addr string, log *slog.Logger) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", Handler())
	hs := rcp.NewHTTPServer(mux, rcp.HTTPLimits{})
	log.Info("serving metrics", "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String()+"/metrics")
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics listener", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	return ln.Addr().String(), nil
}
