package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/internal/auth"
	"github.com/rcpgo/rcpgo/rcp"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// httpFace is rcpd's HTTP side: /rcp, /healthz and /metrics on the main
// address, or /healthz and /metrics on their own address (--metrics-addr).
type httpFace struct {
	rh      *rcp.HTTPHandler
	servers []*rcp.HTTPServer
	addrs   []string // bound addresses, main first
}

// httpFaceConfig is what startHTTP needs beyond the server and engine.
type httpFaceConfig struct {
	ln             net.Listener // the main address, bound (listen)
	metricsAddr    string
	opts           *rcp.HTTPOptions
	tokens         *auth.Set
	requestTimeout time.Duration
	mount          func(*http.ServeMux) // more handlers on the main address (the console)
}

// startHTTP listens and serves; each server's end is sent on errc.
//
// Under tokens, /metrics needs one with the admin scope (it exposes counts
// and the index version) and /healthz answers callers without a read token
// with the status alone; --metrics-addr serves both without auth on a
// separate (typically loopback or cluster-internal) address for scrapers
// and probes.
func startHTTP(c httpFaceConfig, srv *rcp.Server, eng engineState, m *metrics, log *slog.Logger, errc chan<- error) (*httpFace, int, error) {
	f := &httpFace{rh: srv.HTTPHandler(c.opts)}
	lim := c.opts.Limits
	if c.requestTimeout > 0 {
		lim.WriteTimeout = c.requestTimeout + 30*time.Second
	}
	mux := http.NewServeMux()
	mux.Handle("/rcp", f.rh)
	mux.Handle("/rcp/", f.rh)
	reader := func(r *http.Request) bool { _, ok := c.tokens.Allows(r, auth.Read); return ok }
	if c.mount != nil {
		c.mount(mux)
	}
	if c.metricsAddr == "" {
		mux.HandleFunc("/healthz", healthz(eng, reader))
		mux.Handle("/metrics", c.tokens.Require(auth.Admin, "rcp", m.handler()))
	}
	started := 0
	serve := func(ln net.Listener, h http.Handler, what string) {
		log.Info("rcpd: serving "+what, "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String())
		hs := rcp.NewHTTPServer(h, lim)
		f.servers = append(f.servers, hs)
		f.addrs = append(f.addrs, ln.Addr().String())
		started++
		go func() {
			err := hs.Serve(ln)
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			errc <- err
		}()
	}
	serve(c.ln, mux, "HTTP (RCP at /rcp)")
	if c.metricsAddr != "" {
		mm := http.NewServeMux()
		mm.HandleFunc("/healthz", healthz(eng, func(*http.Request) bool { return true }))
		mm.Handle("/metrics", m.handler())
		ln, err := net.Listen("tcp", c.metricsAddr)
		if err != nil {
			f.close()
			return nil, 0, err
		}
		serve(ln, mm, "metrics and health")
	}
	return f, started, nil
}

func (f *httpFace) close() {
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, hs := range f.servers {
		_ = hs.Shutdown(sctx)
	}
	_ = f.rh.Close()
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v) // maps of strings, numbers and rcp.DerivedState
	w.Write(append(b, '\n'))
}

// engineState is what /healthz and /metrics read of the engine.
type engineState interface {
	Health() error
	Stats() search.Stats
	Documents() (int, error)
	DenseBuild() (engine.DenseBuild, bool)
	Readiness() rcp.Readiness
}

// healthz answers probes: 200 {"status":"ok"} while the engine can serve
// and accept writes, 503 {"status":"unhealthy","reason":…} otherwise, with
// "derived": the state of each derived structure (dense, graph,
// communities, tree, memory: waiting, building, ready or stale); counts,
// the index version and the structures' progress only to authorised
// callers: documents (as rcp index list counts them) and units (what
// retrieve ranks: unchunked documents and chunks).
func healthz(eng engineState, authed func(*http.Request) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if err := eng.Health(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"status":"unhealthy","reason":%q}`+"\n", err.Error())
			return
		}
		derived := eng.Readiness()
		if !authed(r) {
			states := map[string]string{}
			for name, s := range derived {
				states[name] = s.State
			}
			writeJSONLine(w, map[string]any{"status": "ok", "derived": states})
			return
		}
		st := eng.Stats()
		docs, err := eng.Documents()
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"status":"unhealthy","reason":%q}`+"\n", err.Error())
			return
		}
		writeJSONLine(w, map[string]any{"status": "ok", "documents": docs, "units": st.Docs, "indexVersion": st.Version, "derived": derived})
	}
}
