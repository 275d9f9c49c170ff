// Package mcpcmd is the command line of `rcpd mcp` and `rcpd mcpdesc`: flag
// parsing, choosing and dialling the engine, serving the MCP face of
// package mcpbridge over stdio or streamable HTTP, and printing its MCP
// Description.
package mcpcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcpgo/rcpgo/cmd/rcpd/internal/procmetrics"
	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/auth"
	"github.com/rcpgo/rcpgo/internal/buildinfo"
	"github.com/rcpgo/rcpgo/internal/datadir"
	"github.com/rcpgo/rcpgo/mcpbridge"
	"github.com/rcpgo/rcpgo/rcp"
)

// TokenEnv is the environment variable holding the HTTP bearer token (an
// alternative to --token-file; never pass secrets on the command line).
const TokenEnv = "RCPD_MCP_TOKEN"

// ConnectTokenEnv holds the bearer token sent to the --connect engine (an
// rcpd serve --token); --connect-token-file is the alternative.
const ConnectTokenEnv = "RCPD_CONNECT_TOKEN"

// config is what both subcommands parse.
type config struct {
	httpAddr    string
	path        string
	allowRemote bool
	tokenFile   string
	// connectTokenFile holds the bearer token of the --connect engine.
	connectTokenFile string
	origins          stringList
	metricsAddr      string
	connect          string
	registry         string
	engineID         string
	data             string
	readOnly         bool
	fields           stringList
	trust            stringList
	sampling         bool
	command          []string
	name             string
	logLevel         string
	refresh          time.Duration
	format           string
	sourceArgs       []string // the engine-selection flags, for mcpdesc's stdio transport
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func newFlags(name string, stderr io.Writer, c *config, desc bool) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.httpAddr, "http", "", "serve streamable HTTP on `ADDR` (loopback only unless --allow-remote) instead of stdio")
	fs.StringVar(&c.path, "path", "/mcp", "HTTP endpoint `PATH`")
	fs.StringVar(&c.tokenFile, "token-file", "", "require one of the tokens of `FILE` over HTTP: NAME SCOPES SECRET lines (scopes read, write, admin; docs/hostile-input.md), or one bare token with every scope (or set $"+TokenEnv+")")
	fs.StringVar(&c.connect, "connect", "", "RCP engine at HTTP base `URL`")
	fs.StringVar(&c.connectTokenFile, "connect-token-file", "", "with --connect: send the bearer token read from `FILE` to the engine (or set $"+ConnectTokenEnv+")")
	fs.StringVar(&c.registry, "registry", "", "rcp.json `FILE` (with --engine)")
	fs.StringVar(&c.engineID, "engine", "", "engine `ID` in --registry")
	fs.StringVar(&c.data, "data", "", "run the rcpd engine in-process on data `DIR` (the default engine: $RCPD_DATA, $XDG_DATA_HOME/rcpd or ~/.local/share/rcpd, as rcpd serve)")
	fs.BoolVar(&c.readOnly, "read-only", false, "with --data: open the index read-only")
	fs.Var(&c.fields, "field", "with --data: filterable metadata field `NAME=TYPE` (repeatable)")
	fs.Var(&c.trust, "trust", "with --data: trust level of documents ingested from source `NAME=LEVEL` (trusted, community or untrusted; repeatable; like trustedSources of rcpd serve)")
	fs.BoolVar(&c.sampling, "sampling", false, "let search (hyde, modelRewrite, modelRerank) and transform (useMyModel) use the MCP client's model through sampling when the client supports it; off by default")
	fs.StringVar(&c.name, "name", "", "engine `NAME` in resource URIs rcp://NAME/… (default: the engine's name)")
	fs.StringVar(&c.logLevel, "log-level", "info", "stderr log `LEVEL` (debug, info, warn, error)")
	if desc {
		fs.StringVar(&c.format, "format", "json", "output `FORMAT`: json or yaml")
	} else {
		fs.BoolVar(&c.allowRemote, "allow-remote", false, "allow --http on a non-loopback address")
		fs.Var(&c.origins, "allow-origin", "trusted browser `ORIGIN` for cross-origin requests (repeatable)")
		fs.StringVar(&c.metricsAddr, "metrics-addr", "", "with --http: serve /metrics without auth on this separate `ADDR` (and not on --http, where it needs the token when there is one)")
		fs.DurationVar(&c.refresh, "refresh", 0, "re-dial the engine every `INTERVAL` and re-derive tools when its capabilities changed (gateways)")
	}
	return fs
}

func parse(name string, args []string, stderr io.Writer, desc bool) (*config, error) {
	c := &config{}
	fs := newFlags(name, stderr, c, desc)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	c.command = fs.Args()
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "connect", "registry", "engine", "data", "read-only", "field", "trust", "name", "sampling":
			if f.Name == "field" || f.Name == "trust" {
				vals := c.fields
				if f.Name == "trust" {
					vals = c.trust
				}
				for _, v := range vals {
					c.sourceArgs = append(c.sourceArgs, "--"+f.Name, v)
				}
				return
			}
			if f.Name == "read-only" || f.Name == "sampling" { // bool flags take no separate value
				c.sourceArgs = append(c.sourceArgs, "--"+f.Name+"="+f.Value.String())
				return
			}
			c.sourceArgs = append(c.sourceArgs, "--"+f.Name, f.Value.String())
		}
	})
	n := 0
	for _, set := range []bool{c.connect != "", c.registry != "", c.data != "", len(c.command) > 0} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		// The default: the index rcpd serve and rcp index add use.
		c.data = datadir.Default()
	case n > 1:
		return nil, errors.New("choose one engine: --connect, --registry, --data or -- CMD")
	case c.registry != "" && c.engineID == "":
		return nil, errors.New("--registry needs --engine ID")
	case c.engineID != "" && c.registry == "":
		return nil, errors.New("--engine needs --registry FILE")
	}
	if len(c.command) > 0 {
		c.sourceArgs = append(c.sourceArgs, "--")
		c.sourceArgs = append(c.sourceArgs, c.command...)
	}
	if (len(c.fields) > 0 || len(c.trust) > 0 || c.readOnly) && c.data == "" {
		return nil, errors.New("--field, --trust and --read-only configure the in-process engine: they need --data DIR")
	}
	if c.refresh > 0 && c.data != "" {
		return nil, errors.New("--refresh needs a remote engine (--connect, --registry or -- CMD): an in-process engine's capabilities do not change")
	}
	if c.httpAddr != "" && !c.allowRemote && !mcpbridge.IsLoopback(c.httpAddr) {
		return nil, fmt.Errorf("--http %s is not a loopback address: pass --allow-remote to expose the MCP face beyond this host", c.httpAddr)
	}
	if c.metricsAddr != "" && c.httpAddr == "" {
		return nil, errors.New("--metrics-addr needs --http")
	}
	if c.httpAddr != "" && c.metricsAddr == "" && c.path == "/metrics" {
		return nil, errors.New("--path /metrics is where metrics are served: choose another path or --metrics-addr")
	}
	if desc && c.format != "json" && c.format != "yaml" {
		return nil, fmt.Errorf("--format %q: want json or yaml", c.format)
	}
	return c, nil
}

func (c *config) logger(stderr io.Writer) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
}

// tokens are the MCP face's tokens: the token file (several tokens with
// scopes, or one bare token with every scope), else $RCPD_MCP_TOKEN.
func (c *config) tokens() (*auth.Set, error) {
	if c.tokenFile != "" {
		return auth.Configure(c.tokenFile)
	}
	return auth.Configure("", strings.TrimSpace(os.Getenv(TokenEnv)))
}

// readToken reads a bearer token from file, else from the environment.
func readToken(file, env, flagName string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s: %w", flagName, err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("%s: the file is empty", flagName)
		}
		return t, nil
	}
	return strings.TrimSpace(os.Getenv(env)), nil
}

// dial connects to the engine the flags name. close releases the client
// and, for --data, the engine.
func (c *config) dial(ctx context.Context, log *slog.Logger, stderr io.Writer, relay *mcpbridge.Relay) (*rcp.Client, func(), error) {
	opts := &rcp.ClientOptions{Info: rcp.PeerInfo{Name: "rcpgo-mcpbridge", Version: buildinfo.Version()}, Logger: log, Stderr: stderr}
	if relay != nil {
		opts.OnLog = relay.OnLog
	}
	switch {
	case c.connect != "":
		tok, err := readToken(c.connectTokenFile, ConnectTokenEnv, "--connect-token-file")
		if err != nil {
			return nil, nil, err
		}
		opts.BearerToken = tok
		cl, err := rcp.ConnectHTTP(ctx, c.connect, opts)
		if err != nil {
			return nil, nil, fmt.Errorf("connecting to %s: %w", c.connect, err)
		}
		return cl, func() { _ = cl.Close() }, nil
	case c.registry != "":
		reg, err := federation.LoadRegistry(c.registry)
		if err != nil {
			return nil, nil, err
		}
		spec, ok := reg.Engine(c.engineID)
		if !ok {
			return nil, nil, fmt.Errorf("engine %q is not in %s", c.engineID, c.registry)
		}
		cl, err := spec.Connect(ctx, opts)
		if err != nil {
			return nil, nil, fmt.Errorf("connecting to engine %s: %w", c.engineID, err)
		}
		return cl, func() { _ = cl.Close() }, nil
	case c.data != "":
		fields := map[string]string{}
		for _, f := range c.fields {
			name, typ, ok := strings.Cut(f, "=")
			if !ok || name == "" {
				return nil, nil, fmt.Errorf("--field %q: want NAME=TYPE", f)
			}
			fields[name] = typ
		}
		// Like rcpd serve: when another rcpd holds DIR, serve a read-only
		// snapshot copy of it rather than refuse to start.
		trusted := map[string]string{}
		for _, f := range c.trust {
			name, level, ok := strings.Cut(f, "=")
			if !ok || name == "" || (level != rcp.TrustTrusted && level != rcp.TrustCommunity && level != rcp.TrustUntrusted) {
				return nil, nil, fmt.Errorf("--trust %q: want NAME=LEVEL with LEVEL trusted, community or untrusted", f)
			}
			trusted[name] = level
		}
		holder, held := engine.HeldBy(c.data)
		eng, err := engine.Open(ctx, engine.Config{Dir: c.data, ReadOnly: c.readOnly, Fields: fields, TrustedSources: trusted,
			Logger: log, SnapshotIfLocked: true, Holder: engine.Holder{What: "rcpd mcp"}})
		if err != nil {
			return nil, nil, err
		}
		if ix := eng.Describe(ctx).Capabilities.Index; held && !c.readOnly && (ix == nil || !ix.Writable) {
			connect := "--connect URL of that server (rcpd serve --http)"
			if holder.URL != "" {
				connect = "--connect " + holder.URL
			}
			log.Warn("rcpd mcp: the data directory is held by "+holder.String()+": serving a read-only snapshot taken now; "+
				"for live, writable access use "+connect, "dir", c.data)
		}
		cl, err := rcp.ConnectInProcess(ctx, rcp.NewServer(eng, &rcp.ServerOptions{Logger: log}), opts)
		if err != nil {
			_ = eng.Close()
			return nil, nil, err
		}
		return cl, func() { _ = cl.Close(); _ = eng.Close() }, nil
	default:
		cl, err := rcp.ConnectStdio(ctx, c.command, opts)
		if err != nil {
			return nil, nil, err
		}
		return cl, func() { _ = cl.Close() }, nil
	}
}

// Main implements `rcpd mcp [--http ADDR] [--connect URL | --registry
// rcp.json --engine ID | --data DIR | -- CMD ARGS]`: the MCP face of an RCP
// engine over stdio (default; stdout carries only MCP, logs go to stderr)
// or streamable HTTP. args are the arguments after "mcp". It returns the
// process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, err := parse("rcpd mcp", args, stderr, false)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "rcpd mcp:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := c.logger(stderr)
	if err := run(ctx, c, log, stdin, stdout, stderr); err != nil {
		log.Error("rcpd mcp", "err", err)
		return 1
	}
	return 0
}

func run(ctx context.Context, c *config, log *slog.Logger, stdin io.Reader, stdout, stderr io.Writer) error {
	tokens, err := c.tokens()
	if err != nil {
		return err
	}
	relay := &mcpbridge.Relay{}
	client, closeClient, err := c.dial(ctx, log, stderr, relay)
	if err != nil {
		return err
	}
	current := closeClient
	defer func() { release(ctx, log, current) }()
	b, err := mcpbridge.New(client, mcpbridge.Options{EngineID: c.name, Version: buildinfo.Version(), Sampling: c.sampling, Logger: log, Relay: relay})
	if err != nil {
		return err
	}
	if c.refresh > 0 {
		done := make(chan struct{})
		defer func() { <-done }()
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			defer close(done)
			refresh(rctx, c, b, log, stderr, relay, &current)
		}()
	}
	if c.httpAddr != "" {
		ln, err := net.Listen("tcp", c.httpAddr)
		if err != nil {
			return err
		}
		log.Info("rcpd mcp: serving streamable HTTP", "url", "http://"+ln.Addr().String()+c.path, "auth", tokens.Enabled())
		opts := mcpbridge.HTTPOptions{Tokens: tokens, TrustedOrigins: c.origins}
		if c.metricsAddr != "" {
			mctx, cancel := context.WithCancel(ctx) // the metrics listener ends with the MCP one
			defer cancel()
			if _, err := procmetrics.ServeSeparate(mctx, c.metricsAddr, log); err != nil {
				_ = ln.Close()
				return fmt.Errorf("--metrics-addr: %w", err)
			}
		} else {
			opts.Mount = func(mux *http.ServeMux) { procmetrics.Mount(mux, tokens, "rcpd-mcp") }
		}
		return b.ServeHTTP(ctx, ln, c.path, opts)
	}
	err = b.Run(ctx, &mcpbridge.StdioTransport{Reader: stdin, Writer: stdout})
	if err != nil && (ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed)) {
		return nil
	}
	return err
}

// releaseGrace bounds closing the engine after a signal: with
// mcpbridge.ShutdownGrace it keeps SIGTERM-to-exit under 5 s.
const releaseGrace = 1500 * time.Millisecond

// release closes the engine connection. After a signal it waits at most
// releaseGrace: the process is about to exit, and acknowledged writes are
// already durable.
func release(ctx context.Context, log *slog.Logger, closeFn func()) {
	if ctx.Err() == nil {
		closeFn()
		return
	}
	done := make(chan struct{})
	go func() { closeFn(); close(done) }()
	select {
	case <-done:
	case <-time.After(releaseGrace):
		log.Warn("rcpd mcp: the engine did not close in time; exiting anyway")
	}
}

// refresh re-dials the engine periodically; when its identity or
// capabilities changed (a gateway whose catalog changed) it swaps the
// bridge's client, which re-derives the features and notifies MCP clients.
func refresh(ctx context.Context, c *config, b *mcpbridge.Bridge, log *slog.Logger, stderr io.Writer, relay *mcpbridge.Relay, current *func()) {
	t := time.NewTicker(c.refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cl, closeNew, err := c.dial(ctx, log, stderr, relay)
		if err != nil {
			log.Warn("rcpd mcp: refresh", "err", err)
			continue
		}
		if sameJSON(cl.InitializeResult().Capabilities, b.Client().InitializeResult().Capabilities) {
			closeNew()
			continue
		}
		if _, err := b.SetClient(ctx, cl); err != nil {
			closeNew()
			log.Warn("rcpd mcp: refresh", "err", err)
			continue
		}
		old := *current
		*current = closeNew
		old()
		log.Info("rcpd mcp: engine capabilities changed; features re-derived")
	}
}

// DescMain implements `rcpd mcpdesc [--format json|yaml] [--http ADDR]
// [engine flags as for rcpd mcp]`: it prints the MCP Description 0.7.0
// document of the MCP face that `rcpd mcp` with the same flags serves.
func DescMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, err := parse("rcpd mcpdesc", args, stderr, true)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "rcpd mcpdesc:", err)
		return 2
	}
	log := c.logger(stderr)
	out, err := describe(ctx, c, log, stderr)
	if err != nil {
		log.Error("rcpd mcpdesc", "err", err)
		return 1
	}
	if _, err := stdout.Write(out); err != nil {
		return 1
	}
	return 0
}

func describe(ctx context.Context, c *config, log *slog.Logger, stderr io.Writer) ([]byte, error) {
	tokens, err := c.tokens()
	if err != nil {
		return nil, err
	}
	client, closeClient, err := c.dial(ctx, log, stderr, nil)
	if err != nil {
		return nil, err
	}
	defer closeClient()
	b, err := mcpbridge.New(client, mcpbridge.Options{EngineID: c.name, Version: buildinfo.Version(), Sampling: c.sampling, Logger: log})
	if err != nil {
		return nil, err
	}
	opts := mcpbridge.DescribeOptions{Command: "rcpd", Args: append([]string{"mcp"}, c.sourceArgs...)}
	if c.httpAddr != "" {
		opts.HTTPURL = "http://" + c.httpAddr + c.path
		opts.Bearer = tokens.Enabled()
	}
	d, err := b.Describe(ctx, opts)
	if err != nil {
		return nil, err
	}
	return mcpbridge.Encode(d, c.format)
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
