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
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/cmd/rcpd/internal/procmetrics"
	"github.com/rcpgo/rcpgo/console"
	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/auth"
	"github.com/rcpgo/rcpgo/internal/buildinfo"
	"github.com/rcpgo/rcpgo/rcp"
)

const usage = `usage: rcpd gateway --registry rcp.json [--http ADDR | --stdio] [--token-file FILE] [flags]

Serves every engine of an rcp.json registry (§16.1) as one RCP server:
retrieve, graph local and graph drift fan out and fuse, catalog/list
describes the engines, and embed/rerank/transform, the other graph ops and
memory/build|recall are routed to one engine each.

flags:
`

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
	fs := flag.NewFlagSet("rcpd gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		registry      = fs.String("registry", "", "path of the rcp.json engine registry (required)")
		httpAddr      = fs.String("http", "", "serve HTTP on this address, e.g. 127.0.0.1:8090 (base path /rcp)")
		stdio         = fs.Bool("stdio", false, "serve NDJSON on stdin/stdout (the default when --http is not given)")
		token         = fs.String("token", "", "require this bearer token on the HTTP listener, with every scope (-32012 otherwise)")
		tokenFile     = fs.String("token-file", "", "require one of the tokens of this `FILE` on the HTTP listener, each with its scopes read, write, admin (format: docs/hostile-input.md)")
		sessions      = fs.String("sessions", "stateful", "HTTP session mode: stateful (a session per initializing client; tokenless requests served statelessly) | stateless | single")
		identity      = fs.String("id", "", "federation identity used for loop detection (default: random per process)")
		engineTimeout = fs.Duration("engine-timeout", 10*time.Second, "client-side deadline of one engine call")
		depth         = fs.Int("depth", federation.DefaultDepth, "hop budget of queries that arrive without _meta.federation")
		fusionMethod  = fs.String("fusion", rcp.FusionRRF, "default fusion: rrf | auto | weighted | convex")
		dedup         = fs.String("dedup", federation.DedupID, "document identity across engines: id | uri | content")
		maxK          = fs.Int("max-k", 100, "largest k served")
		hide          = fs.Bool("hide-endpoints", false, "never expose engine endpoints in catalog/list")
		logLevel      = fs.String("log-level", "info", "stderr log level: debug | info | warn | error")
		noUI          = fs.Bool("no-ui", false, "do not serve the web console at / on the HTTP listener")
		uiDatasets    = fs.String("ui-datasets", "", "directory of BEIR datasets the console's Evaluate tab may run against the gateway (default: off)")
		metricsAddr   = fs.String("metrics-addr", "", "serve /metrics without auth on this separate `ADDR` (and not on --http)")
		allowHosts    stringList
		allowOrigins  stringList
	)
	fs.Var(&allowHosts, "allow-host", "also accept this `NAME` in the HTTP Host header (repeatable; IP literals and localhost always pass; * accepts any): DNS-rebinding protection")
	fs.Var(&allowOrigins, "allow-origin", "accept cross-site browser requests from this `ORIGIN` (scheme://host[:port], repeatable; * accepts any): CSRF protection")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "rcpd gateway: "+format+"\n", a...)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		return fail("unexpected arguments %q", fs.Args())
	case *registry == "":
		return fail("--registry is required")
	case *httpAddr != "" && *stdio:
		return fail("give either --http or --stdio, not both")
	case (*token != "" || *tokenFile != "") && *httpAddr == "":
		return fail("--token and --token-file need --http (stdio peers are authorised by whoever spawns the process)")
	case (len(allowHosts) > 0 || len(allowOrigins) > 0 || *metricsAddr != "") && *httpAddr == "":
		return fail("--allow-host, --allow-origin and --metrics-addr need --http")
	}
	for _, o := range allowOrigins {
		if o != "*" {
			if err := http.NewCrossOriginProtection().AddTrustedOrigin(o); err != nil {
				return fail("--allow-origin %q: %v", o, err)
			}
		}
	}
	switch *fusionMethod {
	case rcp.FusionRRF, federation.FusionAuto, rcp.FusionWeighted, rcp.FusionConvex:
	default:
		return fail("unknown --fusion %q", *fusionMethod)
	}
	switch *dedup {
	case federation.DedupID, federation.DedupCitationURI, federation.DedupContent:
	default:
		return fail("unknown --dedup %q", *dedup)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fail("bad --log-level: %v", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	mode, err := rcp.ParseSessionMode(*sessions)
	if err != nil {
		return fail("--sessions: %v", err)
	}
	tokens, err := auth.Configure(*tokenFile, *token)
	if err != nil {
		return fail("%v", err)
	}
	httpOpts := &rcp.HTTPOptions{Sessions: mode, AllowedHosts: allowHosts, TrustedOrigins: allowOrigins, Authenticate: tokens.Authenticate}
	reg, err := federation.LoadRegistry(*registry)
	if err != nil {
		return fail("%v", err)
	}
	budget, err := federation.SpawnBudget(*depth)
	if err != nil {
		return fail("%v", err)
	}
	clientOpts := &rcp.ClientOptions{Info: rcp.PeerInfo{Name: "rcpd-gateway", Version: buildinfo.Version()}, Logger: log, Stderr: stderr,
		Env: []string{federation.SpawnEnv(budget)}}
	gw := federation.NewGateway(reg, &federation.GatewayOptions{
		Identity:      *identity,
		Server:        rcp.PeerInfo{Name: "rcpd-gateway", Version: buildinfo.Version()},
		MaxK:          *maxK,
		HideEndpoints: *hide,
		Federation: federation.Options{
			Client:        clientOpts,
			EngineTimeout: *engineTimeout,
			Depth:         *depth,
			Fusion:        *fusionMethod,
			Dedup:         *dedup,
			Logger:        log,
		},
	})
	defer gw.Close()
	o := federation.ServeOptions{HTTP: httpOpts, Stdin: stdin, Stdout: stdout, Server: &rcp.ServerOptions{Logger: log},
		Logger: log, EngineTimeout: *engineTimeout, NoDial: budget <= 0, Wrap: tokens.Guard}
	if *httpAddr != "" {
		o.Mount = func(mux *http.ServeMux, srv *rcp.Server) {
			if *metricsAddr == "" {
				procmetrics.Mount(mux, tokens, "rcpd-gateway")
			}
			if !*noUI {
				mux.Handle("/", console.New(console.Options{Server: srv, Tokens: tokens,
					Datasets: *uiDatasets, Title: "rcpd gateway console", Version: buildinfo.Version(), Logger: log, AllowedHosts: httpOpts.AllowedHosts}))
			}
		}
		if o.Listener, err = net.Listen("tcp", *httpAddr); err != nil {
			fmt.Fprintf(stderr, "rcpd gateway: %v\n", err)
			return 1
		}
		if *metricsAddr != "" {
			mctx, cancel := context.WithCancel(ctx)
			defer cancel()
			if _, err := procmetrics.ServeSeparate(mctx, *metricsAddr, log); err != nil {
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
