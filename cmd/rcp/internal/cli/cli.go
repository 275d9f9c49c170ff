// Package cli implements the `rcp` command: flag parsing and wiring only.
// Every subcommand talks to its target through rcp.Client, so it works the
// same against rcpd, a gateway, or any RCP server in any language.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	neturl "net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/buildinfo"
	"github.com/rcpgo/rcpgo/internal/didyoumean"
	"github.com/rcpgo/rcpgo/rcp"
)

// Env is what a command sees of the process: its streams and environment.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
}

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"query":       {"retrieve hits for a query", runQuery},
		"index":       {"store, list and delete documents: index add|sync|list|delete|status (rcp index -h)", runIndex},
		"info":        {"print the server's identity and capabilities", runInfo},
		"ping":        {"measure a round trip", runPing},
		"conformance": {"certify a server against RCP/1 (see rcp conformance -h)", runConformance},
		"version":     {"print the version (module version, VCS revision, Go)", runVersion},
		"completion":  {"print a shell completion script: completion bash|zsh|fish", runCompletion},
	}
}

// Main runs the rcp command and returns its exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	env := &Env{Stdout: stdout, Stderr: stderr, Getenv: os.Getenv}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "rcp: unknown command %q", args[0])
		if near := didyoumean.Nearest(args[0], maps.Keys(commands)); near != "" {
			fmt.Fprintf(stderr, "; did you mean %q?", near)
		}
		fmt.Fprint(stderr, "\n\n")
		usage(stderr)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := cmd.run(ctx, env, args[1:])
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "rcp %s: %v\n", args[0], err)
		return 2
	default:
		var ec exitCode
		if errors.As(err, &ec) {
			return int(ec)
		}
		fmt.Fprintf(stderr, "rcp %s: %v\n", args[0], err)
		if h := hintFor(err); h != "" {
			fmt.Fprintln(stderr, "hint: "+h)
		}
		return 1
	}
}

// hintFor is what to do about err, when rcp knows.
func hintFor(err error) string {
	if errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "-timeout") {
		return "the server did not answer within --timeout (per call; default 60s): raise it, or check the server's load"
	}
	if e, ok := rcp.AsError(err); ok && e.Code == rcp.CodeUnauthorized {
		return "the server wants a bearer token it accepts for this call: pass --token TOKEN or set RCP_TOKEN " +
			"(rcpd serve takes its tokens from --token, $RCPD_TOKEN or the config's bearerTokens; a token that is accepted " +
			"but not allowed this method needs one with more rights)"
	}
	return ""
}

// exitCode lets a command choose its exit status after printing its own report.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

var errUsage = errors.New("usage")

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "rcp — the Retrieval Context Protocol command line")
	fmt.Fprintln(w, "\nUsage: rcp COMMAND [flags] [target]")
	fmt.Fprintln(w, "\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nTargets (every command):")
	fmt.Fprintln(w, "  --http URL              an HTTP server (default $RCP_URL, else http://127.0.0.1:7700/rcp)")
	fmt.Fprintln(w, "  --token TOKEN           bearer token for --http (default $RCP_TOKEN)")
	fmt.Fprintln(w, "  --registry FILE --engine ID   an engine from an rcp.json registry")
	fmt.Fprintln(w, "  -- CMD ARGS…            spawn a server and speak over stdio")
}

// target is the common "which server" flag set.
type target struct {
	http, token, registry, engine string
	timeout, start                time.Duration
	verbose                       bool
	argv                          []string
}

func (t *target) register(fs *flag.FlagSet) {
	fs.StringVar(&t.http, "http", "", "base URL of an HTTP RCP server (e.g. http://127.0.0.1:7700/rcp)")
	fs.StringVar(&t.token, "token", "", "bearer token for --http (default $RCP_TOKEN)")
	fs.StringVar(&t.registry, "registry", "", "rcp.json engine registry")
	fs.StringVar(&t.engine, "engine", "", "engine id in --registry")
	fs.DurationVar(&t.timeout, "timeout", 60*time.Second, "per-call timeout (and the initialize of an HTTP or registry server)")
	fs.DurationVar(&t.start, "start-timeout", 0, "how long a server spawned with -- CMD may take to start and answer initialize (default 5m; 20m for 'go run', which compiles first)")
	fs.BoolVar(&t.verbose, "verbose", false, "say more: a spawned rcpd logs at info level (else warnings only), index add lists every skipped file")
}

// quietServer is the environment a spawned server gets beside the user's
// own: rcpd logs warnings and errors only (its start-up INFO lines would
// precede every answer), unless --verbose or the user's RCPD_LOG_LEVEL
// says otherwise; a --log-level in the command itself wins over both.
func quietServer(getenv func(string) string, verbose bool) []string {
	if verbose || getenv("RCPD_LOG_LEVEL") != "" {
		return nil
	}
	return []string{"RCPD_LOG_LEVEL=warn"}
}

// connect opens a client to the selected target. A command given after --
// is the user's own: it inherits their whole environment (GOCACHE,
// RCPD_DATA, …). Engines from a registry get the least-privilege
// environment plus what the registry names (§15.1).
func (t *target) connect(ctx context.Context, env *Env, opts *rcp.ClientOptions) (*rcp.Client, error) {
	var o rcp.ClientOptions
	if opts != nil {
		o = *opts
	}
	if o.Info.Name == "" {
		o.Info = rcp.PeerInfo{Name: "rcp-cli", Version: buildinfo.Version()}
	}
	if o.Timeout == 0 {
		o.Timeout = t.timeout
	}
	switch {
	case len(t.argv) > 0:
		if t.http != "" || t.registry != "" {
			return nil, usageErr("choose one target: --http, --registry or -- CMD")
		}
		o.InheritEnv = true
		o.Env = append(o.Env, quietServer(env.Getenv, t.verbose)...)
		if o.Stderr == nil {
			o.Stderr = env.Stderr
		}
		return t.spawn(ctx, env, &o)
	case t.registry != "":
		reg, err := federation.LoadRegistry(t.registry)
		if err != nil {
			return nil, err
		}
		if t.engine == "" {
			return nil, usageErr("--registry needs --engine ID")
		}
		spec, ok := reg.Engine(t.engine)
		if !ok {
			return nil, fmt.Errorf("registry %s has no engine %q", t.registry, t.engine)
		}
		c, err := spec.Connect(ctx, &o)
		return c, t.explain(err, "engine "+t.engine)
	default:
		url := t.http
		if url == "" {
			url = env.Getenv("RCP_URL")
		}
		if url == "" {
			url = "http://127.0.0.1:7700/rcp"
		}
		o.BearerToken = t.token
		if o.BearerToken == "" {
			o.BearerToken = env.Getenv("RCP_TOKEN")
		}
		c, err := rcp.ConnectHTTP(ctx, url, &o)
		if err != nil {
			if u, perr := neturl.Parse(url); perr == nil && strings.Trim(u.Path, "/") == "" {
				return nil, fmt.Errorf("%w\nhint: %s has no path; RCP servers answer at a base path, e.g. %s", err, url, strings.TrimSuffix(url, "/")+"/rcp")
			}
		}
		return c, t.explain(err, url)
	}
}

// startNotice is how long a spawned server may take before rcp says it is
// still starting it.
const startNotice = time.Second

// Default --start-timeout: a server binary starts in seconds (a model
// may take a minute to load); `go run` compiles it first, which in a fresh
// build cache on a busy two-core machine took over 5 minutes.
const (
	defaultStart = 5 * time.Minute
	goRunStart   = 20 * time.Minute
)

func isGoRun(argv []string) bool {
	return len(argv) > 2 && filepath.Base(argv[0]) == "go" && argv[1] == "run"
}

// startTimeout is --start-timeout, or its default for argv.
func startTimeout(argv []string, flag time.Duration) time.Duration {
	switch {
	case flag > 0:
		return flag
	case isGoRun(argv):
		return goRunStart
	}
	return defaultStart
}

// spawn starts the user's command and says so on stderr when its handshake
// takes a while (a `go run` compiling, a model loading).
func (t *target) spawn(ctx context.Context, env *Env, o *rcp.ClientOptions) (*rcp.Client, error) {
	name := filepath.Base(t.argv[0])
	t.start = startTimeout(t.argv, t.start)
	if isGoRun(t.argv) {
		name = strings.Join(t.argv[:3], " ")
	}
	timer := time.AfterFunc(startNotice, func() {
		fmt.Fprintf(env.Stderr, "starting %s… (waiting up to --start-timeout %s for its initialize answer)\n", name, t.start)
	})
	// The handshake has its own bound; later calls get --timeout each.
	hctx, cancel := context.WithTimeout(ctx, t.start)
	defer cancel()
	c, err := rcp.ConnectStdio(hctx, t.argv, o)
	timer.Stop()
	return c, t.explain(err, name)
}

// explain turns an initialize timeout into an error naming the flag and the
// likely cause.
func (t *target) explain(err error, what string) error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("no server listens at %s (%w)\nhint: start one (rcpd serve --demo answers at http://127.0.0.1:7700/rcp), or name another with --http URL ($RCP_URL), --registry FILE --engine ID, or -- CMD ARGS… to spawn one over stdio", what, err)
	}
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if len(t.argv) > 0 {
		return fmt.Errorf("%s did not answer initialize within --start-timeout %s (%w); a server started with 'go run' may still be compiling: build it once (go build ./cmd/rcpd) or raise --start-timeout", what, t.start, err)
	}
	return fmt.Errorf("%s did not answer initialize within --timeout %s (%w); is it running and reachable?", what, t.timeout, err)
}

// parse parses flags that may be interspersed with positional arguments and
// splits off a trailing "-- CMD ARGS…" into t.argv.
func parse(fs *flag.FlagSet, t *target, args []string) ([]string, error) {
	var cmd []string
	for i, a := range args {
		if a == "--" {
			cmd = args[i+1:]
			args = args[:i]
			break
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, exitCode(2) // a usage error; the flag package has said what was wrong
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if t != nil {
		t.argv = cmd
	} else if len(cmd) > 0 {
		pos = append(pos, cmd...)
	}
	return pos, nil
}

func newFlags(name string, env *Env, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("rcp "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "Usage: rcp %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// colorOn reports whether w gets ANSI colour: a terminal, and neither
// NO_COLOR (https://no-color.org) nor TERM=dumb set.
func colorOn(env *Env, w io.Writer) bool {
	if env.Getenv("NO_COLOR") != "" || env.Getenv("TERM") == "dumb" {
		return false
	}
	return isTTY(w)
}

// writeJSON prints v as indented JSON (the --json output of every command).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// printSubcommands writes a command group's help: its synopsis, a line per
// subcommand ({usage, what it does}, aligned), and where each one's flags
// are described (rcp GROUP SUBCOMMAND -h).
func printSubcommands(w io.Writer, synopsis, each string, rows ...[2]string) {
	fmt.Fprintf(w, "Usage: rcp %s\n\n", synopsis)
	width := 0
	for _, r := range rows {
		width = max(width, utf8.RuneCountInString(r[0]))
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %s%s  %s\n", r[0], strings.Repeat(" ", width-utf8.RuneCountInString(r[0])), r[1])
	}
	fmt.Fprintf(w, "\nrun '%s -h' for its flags\n", each)
}
