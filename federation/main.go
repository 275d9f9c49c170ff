package federation

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

const gatewayUsage = `usage: rcpd gateway --registry rcp.json [--http ADDR | --stdio] [--token T] [flags]

Serves every engine of an rcp.json registry (§16.1) as one RCP server:
retrieve fans out and fuses, catalog/list describes the engines, and
embed/rerank/graph/transform are routed to one engine each.

flags:
`

// GatewayMain is the "rcpd gateway" command: it parses args, loads the
// registry, dials the engines and serves the gateway over HTTP or stdio
// until ctx ends (or, on stdio, until EOF). stdout carries the protocol in
// stdio mode and nothing otherwise; diagnostics go to stderr. It returns the
// process exit code: 0 after a clean stop, 1 on a serving error, 2 on usage
// or configuration errors.
func GatewayMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rcpd gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		registry      = fs.String("registry", "", "path of the rcp.json engine registry (required)")
		httpAddr      = fs.String("http", "", "serve HTTP on this address, e.g. 127.0.0.1:8090 (base path /rcp)")
		stdio         = fs.Bool("stdio", false, "serve NDJSON on stdin/stdout (the default when --http is not given)")
		token         = fs.String("token", "", "require this bearer token on the HTTP listener (-32012 otherwise)")
		sessions      = fs.String("sessions", "stateful", "HTTP session mode: stateful (a session per initializing client; tokenless requests served statelessly) | stateless | single")
		identity      = fs.String("id", "", "federation identity used for loop detection (default: random per process)")
		engineTimeout = fs.Duration("engine-timeout", 10*time.Second, "client-side deadline of one engine call")
		depth         = fs.Int("depth", DefaultDepth, "hop budget of queries that arrive without _meta.federation")
		fusionMethod  = fs.String("fusion", rcp.FusionRRF, "default fusion: rrf | auto | weighted | convex")
		dedup         = fs.String("dedup", DedupID, "document identity across engines: id | uri | content")
		maxK          = fs.Int("max-k", 100, "largest k served")
		hide          = fs.Bool("hide-endpoints", false, "never expose engine endpoints in catalog/list")
		logLevel      = fs.String("log-level", "info", "stderr log level: debug | info | warn | error")
	)
	fs.Usage = func() {
		fmt.Fprint(stderr, gatewayUsage)
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
	case *token != "" && *httpAddr == "":
		return fail("--token needs --http (stdio peers are authorised by whoever spawns the process)")
	}
	switch *fusionMethod {
	case rcp.FusionRRF, FusionAuto, rcp.FusionWeighted, rcp.FusionConvex:
	default:
		return fail("unknown --fusion %q", *fusionMethod)
	}
	switch *dedup {
	case DedupID, DedupCitationURI, DedupContent:
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
	httpOpts := &rcp.HTTPOptions{Sessions: mode}
	if *token != "" {
		httpOpts.BearerTokens = []string{*token}
	}

	reg, err := LoadRegistry(*registry)
	if err != nil {
		return fail("%v", err)
	}
	// A gateway spawned over stdio by another gateway inherits a spawn
	// budget, so a registry that lists a stdio gateway running itself
	// cannot fork without bound: at 0 the gateway dials nothing at start.
	spawnDepth := *depth
	if v, ok := os.LookupEnv(EnvSpawnDepth); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fail("bad %s=%q", EnvSpawnDepth, v)
		}
		spawnDepth = n
	}
	clientOpts := &rcp.ClientOptions{Info: rcp.PeerInfo{Name: "rcpd-gateway", Version: "0.1.0"}, Logger: log, Stderr: stderr,
		Env: []string{fmt.Sprintf("%s=%d", EnvSpawnDepth, spawnDepth-1)}}
	gw := NewGateway(reg, &GatewayOptions{
		Identity:      *identity,
		MaxK:          *maxK,
		HideEndpoints: *hide,
		Federation: Options{
			Client:        clientOpts,
			EngineTimeout: *engineTimeout,
			Depth:         *depth,
			Fusion:        *fusionMethod,
			Dedup:         *dedup,
			Logger:        log,
		},
	})
	defer gw.Close()
	srv := rcp.NewServer(gw, &rcp.ServerOptions{Logger: log})

	report := func(err error) {
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				log.Warn("engine unavailable at start; will retry on demand", "err", line)
			}
		}
		log.Info("gateway ready", "id", gw.Identity(), "engines", len(reg.Engines))
	}
	if spawnDepth <= 0 {
		log.Warn("spawn budget exhausted; engines are dialled on demand only", "env", EnvSpawnDepth)
	}

	if *httpAddr != "" {
		ln, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			fmt.Fprintf(stderr, "rcpd gateway: %v\n", err)
			return 1
		}
		// Dial the engines before serving, so even the first session (and
		// the one shared session of stateless HTTP) sees all of them.
		// Engines at our own address are left for later: dialling them now
		// would wait on a listener nobody serves yet. At query time they are
		// recognised by identity and skipped as a cycle.
		if spawnDepth > 0 {
			self := ln.Addr().(*net.TCPAddr)
			report(gw.fed.connect(ctx, func(e *Engine) bool { return pointsAt(e.Spec(), self) }))
		}
		log.Info("serving RCP over HTTP", "url", "http://"+ln.Addr().String()+"/rcp", "auth", *token != "")
		if err := srv.ServeListener(ctx, ln, httpOpts); err != nil {
			fmt.Fprintf(stderr, "rcpd gateway: %v\n", err)
			return 1
		}
		return 0
	}
	// stdio: serve at once (ping answers immediately) and dial meanwhile;
	// the session's capabilities wait (bounded) for the dialling.
	if spawnDepth > 0 {
		warmed := gw.ConnectAsync(ctx, *engineTimeout+time.Second)
		go func() { report(<-warmed) }()
	}
	if err := srv.ServeStdio(ctx, os.Stdin, stdout); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "rcpd gateway: %v\n", err)
		return 1
	}
	return 0
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

// EnvSpawnDepth carries the remaining spawn budget to stdio engines a
// gateway starts (see GatewayMain).
const EnvSpawnDepth = "RCP_GATEWAY_SPAWN_DEPTH"
