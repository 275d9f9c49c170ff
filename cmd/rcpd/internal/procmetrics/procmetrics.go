// Package procmetrics serves /metrics for the rcpd faces that proxy an
// engine (`rcpd gateway`, `rcpd mcp --http`): the Go runtime and process
// collectors (go_goroutines, process_resident_memory_bytes, open file
// descriptors…), which is what an operator watches under attack. It also
// holds the rule every rcpd face applies to /metrics (docs/hostile-input.md
// item 3): under tokens the endpoint needs one with the admin scope, or it
// moves to a separate unauthenticated address with --metrics-addr.
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

	"github.com/rcpgo/rcpgo/internal/auth"
	"github.com/rcpgo/rcpgo/rcp"
)

// Handler serves the Go runtime and process metrics of this process.
func Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// Mount adds /metrics to mux, behind a token with the admin scope when
// there are tokens.
func Mount(mux *http.ServeMux, tokens *auth.Set, realm string) {
	mux.Handle("/metrics", tokens.Require(auth.Admin, realm, Handler()))
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
