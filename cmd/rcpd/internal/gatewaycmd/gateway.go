// Package gatewaycmd holds the `rcpd gateway` command: flag parsing and
// wiring over package federation.
package gatewaycmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/cmd/rcpd/internal/procmetrics"
	"github.com/rcpgo/rcpgo/console"
	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/auth"
	"github.com/rcpgo/rcpgo/internal/buildinfo"
	"github.com/rcpgo/rcpgo/internal/ingest"
	"github.com/rcpgo/rcpgo/rcp"
)

const usage = `usage: rcpd gateway --registry rcp.json [--http ADDR | --stdio] [--token-file FILE] [flags]

Serves every engine of an rcp.json registry (§16.1) as one RCP server:
retrieve, graph local and graph drift fan out and fuse, catalog/list
describes the engines, and embed/rerank/transform, the other graph ops and
memory/build|recall are routed to one engine each.

flags:
`

// isolatedExtract runs the console's extractions in a child process: this
// executable is rcpd, whose hidden "extract" command is the child
// (ingest.Isolated); in process when the executable cannot be named.
func isolatedExtract() func(ctx context.Context, name string, b []byte) ([]rcp.Document, error) {
	exe, err := os.Executable()
	if err != nil {
		return ingest.ReadUpload
	}
	return ingest.Isolated{Argv: []string{exe, "extract"}}.ReadUpload
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// Main is the "rcpd gateway" command: it parses args, loads the registry,
// dials the engines and serves the gateway over HTTP or stdio until ctx
// ends (or, on stdio, until EOF). stdout carries the protocol in stdio mode
// and nothing otherwise; diagnostics go to stderr. It returns the process
// exit code: 0 after a clean stop, 1 on a serving error, 2 on usage or
// configuration errors.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g, code := parseFlags(args, stderr)
	if g == nil {
		return code
	}
	return run(ctx, g, stdin, stdout, stderr)
}

// gatewayFlags are the checked flags of one rcpd gateway run.
type gatewayFlags struct {
	registry, httpAddr, token, tokenFile, sessions, identity string
	fusion, dedup, logLevel, uiDatasets, metricsAddr         string
	stdio, hide, noUI                                        bool
	engineTimeout                                            time.Duration
	depth, maxK                                              int
	allowHosts, allowOrigins                                 stringList
}

// fail reports a usage error; the exit code is 2.
func fail(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "rcpd gateway: "+format+"\n", a...)
	return 2
}

// parseFlags parses and checks the command line. It returns nil and the
// exit code when the command ends here (-h, a usage error).
func parseFlags(args []string, stderr io.Writer) (*gatewayFlags, int) {
	fs := flag.NewFlagSet("rcpd gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	g := &gatewayFlags{}
	fs.StringVar(&g.registry, "registry", "", "path of the rcp.json engine registry (required)")
	fs.StringVar(&g.httpAddr, "http", "", "serve HTTP on this address, e.g. 127.0.0.1:8090 (base path /rcp)")
	fs.BoolVar(&g.stdio, "stdio", false, "serve NDJSON on stdin/stdout (the default when --http is not given)")
	fs.StringVar(&g.token, "token", "", "require this bearer token on the HTTP listener, with every scope (-32012 otherwise)")
	fs.StringVar(&g.tokenFile, "token-file", "", "require one of the tokens of this `FILE` on the HTTP listener, each with its scopes read, write, admin (format: docs/hostile-input.md)")
	fs.StringVar(&g.sessions, "sessions", "stateful", "HTTP session mode: stateful (a session per initializing client; tokenless requests served statelessly) | stateless | single")
	fs.StringVar(&g.identity, "id", "", "federation identity used for loop detection (default: random per process)")
	fs.DurationVar(&g.engineTimeout, "engine-timeout", 10*time.Second, "client-side deadline of one engine call")
	fs.IntVar(&g.depth, "depth", federation.DefaultDepth, "hop budget of queries that arrive without _meta.federation")
	fs.StringVar(&g.fusion, "fusion", rcp.FusionRRF, "default fusion: rrf | auto | weighted | convex")
	fs.StringVar(&g.dedup, "dedup", federation.DedupID, "document identity across engines: id | uri | content")
	fs.IntVar(&g.maxK, "max-k", 100, "largest k served")
	fs.BoolVar(&g.hide, "hide-endpoints", false, "never expose engine endpoints in catalog/list")
	fs.StringVar(&g.logLevel, "log-level", "info", "stderr log level: debug | info | warn | error")
	fs.BoolVar(&g.noUI, "no-ui", false, "do not serve the web console at / on the HTTP listener")
	fs.StringVar(&g.uiDatasets, "ui-datasets", "", "directory of BEIR datasets the console's Evaluate tab may run against the gateway (default: off)")
	fs.StringVar(&g.metricsAddr, "metrics-addr", "", "serve /metrics without auth on this separate `ADDR` (and not on --http)")
	fs.Var(&g.allowHosts, "allow-host", "also accept this `NAME` in the HTTP Host header (repeatable; IP literals and localhost always pass; * accepts any): DNS-rebinding protection")
	fs.Var(&g.allowOrigins, "allow-origin", "accept cross-site browser requests from this `ORIGIN` (scheme://host[:port], repeatable; * accepts any): CSRF protection")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, 0
		}
		return nil, 2
	}
	switch {
	case fs.NArg() > 0:
		return nil, fail(stderr, "unexpected arguments %q", fs.Args())
	case g.registry == "":
		return nil, fail(stderr, "--registry is required")
	case g.httpAddr != "" && g.stdio:
		return nil, fail(stderr, "give either --http or --stdio, not both")
	case (g.token != "" || g.tokenFile != "") && g.httpAddr == "":
		return nil, fail(stderr, "--token and --token-file need --http (stdio peers are authorised by whoever spawns the process)")
	case (len(g.allowHosts) > 0 || len(g.allowOrigins) > 0 || g.metricsAddr != "") && g.httpAddr == "":
		return nil, fail(stderr, "--allow-host, --allow-origin and --metrics-addr need --http")
	}
	for _, o := range g.allowOrigins {
		if o != "*" {
			if err := http.NewCrossOriginProtection().AddTrustedOrigin(o); err != nil {
				return nil, fail(stderr, "--allow-origin %q: %v", o, err)
			}
		}
	}
	switch g.fusion {
	case rcp.FusionRRF, federation.FusionAuto, rcp.FusionWeighted, rcp.FusionConvex:
	default:
		return nil, fail(stderr, "unknown --fusion %q", g.fusion)
	}
	switch g.dedup {
	case federation.DedupID, federation.DedupCitationURI, federation.DedupContent:
	default:
		return nil, fail(stderr, "unknown --dedup %q", g.dedup)
	}
	return g, 0
}

// run serves the gateway the flags describe until ctx ends or serving
// fails; it returns the exit code.
func run(ctx context.Context, g *gatewayFlags, stdin io.Reader, stdout, stderr io.Writer) int {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return fail(stderr, "bad --log-level: %v", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	mode, err := rcp.ParseSessionMode(g.sessions)
	if err != nil {
		return fail(stderr, "--sessions: %v", err)
	}
	tokens, err := auth.Configure(g.tokenFile, g.token)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	httpOpts := &rcp.HTTPOptions{Sessions: mode, AllowedHosts: g.allowHosts, TrustedOrigins: g.allowOrigins, Authenticate: tokens.Authenticate}
	reg, err := federation.LoadRegistry(g.registry)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	budget, err := federation.SpawnBudget(g.depth)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	clientOpts := &rcp.ClientOptions{Info: rcp.PeerInfo{Name: "rcpd-gateway", Version: buildinfo.Version()}, Logger: log, Stderr: stderr,
		Env: []string{federation.SpawnEnv(budget)}}
	gw := federation.NewGateway(reg, &federation.GatewayOptions{
		Identity:      g.identity,
		Server:        rcp.PeerInfo{Name: "rcpd-gateway", Version: buildinfo.Version()},
		MaxK:          g.maxK,
		HideEndpoints: g.hide,
		Federation: federation.Options{
			Client:        clientOpts,
			EngineTimeout: g.engineTimeout,
			Depth:         g.depth,
			Fusion:        g.fusion,
			Dedup:         g.dedup,
			Logger:        log,
		},
	})
	defer gw.Close()
	o := federation.ServeOptions{HTTP: httpOpts, Stdin: stdin, Stdout: stdout, Server: &rcp.ServerOptions{Logger: log},
		Logger: log, EngineTimeout: g.engineTimeout, NoDial: budget <= 0, Wrap: tokens.Guard}
	if g.httpAddr != "" {
		o.Mount = func(mux *http.ServeMux, srv *rcp.Server) {
			if g.metricsAddr == "" {
				procmetrics.Mount(mux, tokens, "rcpd-gateway")
			}
			if !g.noUI {
				mux.Handle("/", console.New(console.Options{Server: srv, Tokens: tokens, Extract: isolatedExtract(),
					Datasets: g.uiDatasets, Title: "rcpd gateway console", Version: buildinfo.Version(), Logger: log, AllowedHosts: httpOpts.AllowedHosts}))
			}
		}
		if o.Listener, err = net.Listen("tcp", g.httpAddr); err != nil {
			fmt.Fprintf(stderr, "rcpd gateway: %v\n", err)
			return 1
		}
		if g.metricsAddr != "" {
			mctx, cancel := context.WithCancel(ctx)
			defer cancel()
			if _, err := procmetrics.ServeSeparate(mctx, g.metricsAddr, log); err != nil {
				_ = o.Listener.Close()
				fmt.Fprintf(stderr, "rcpd gateway: --metrics-addr: %v\n", err)
				return 1
			}
		}
	}
	if err := gw.Serve(ctx, o); err != nil {
		fmt.Fprintf(stderr, "rcpd gateway: %v\n", err)
		return 1
	}
	return 0
}
