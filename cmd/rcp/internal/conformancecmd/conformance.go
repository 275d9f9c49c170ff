// Package conformancecmd holds the `rcp conformance` command: flag
// parsing and the text report over package conformance.
package conformancecmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/conformance"
	"github.com/rcpgo/rcpgo/internal/wording"
)

const usage = `usage:
  rcp conformance [flags] -- CMD [ARGS...]     certify a stdio server (spawned, then cleaned up)
  rcp conformance [flags] --http URL [--token T]   certify an HTTP server at base URL (e.g. http://127.0.0.1:8000/rcp)
  rcp conformance --list                        list the checks

flags:
`

// Main is the `rcp conformance` command. It returns the process exit code:
// 0 when no MUST failed and the declared level is honest, 1 otherwise, 2 on
// usage or setup errors.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rcp conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		asJSON      = fs.Bool("json", false, "emit the machine-readable report (certifiedLevel, declaredLevel, declarationHonest, checks)")
		level       = fs.String("level", "L2", "highest level to test: L0, L1 or L2; the run fails unless the server certifies at it")
		timeout     = fs.Duration("timeout", 5*time.Minute, "bound for the whole run")
		callTimeout = fs.Duration("call-timeout", 5*time.Second, "bound for one request/response exchange")
		quiet       = fs.Duration("quiet", 300*time.Millisecond, "how long to listen to prove the server stays silent")
		httpURL     = fs.String("http", "", "HTTP base URL of the server (instead of a command)")
		token       = fs.String("token", "", "bearer token for --http; enables the auth checks")
		noAuthProbe = fs.Bool("no-auth-probe", false, "with --token, do not run the auth checks")
		only        = fs.String("only", "", "comma-separated check ids to run")
		list        = fs.Bool("list", false, "list the checks and exit")
		noColor     = fs.Bool("no-color", false, "never colour the output")
		allowWrites = fs.Bool("allow-writes", false, "with --http, also run the checks that write to the index (every probe document is deleted afterwards)")
		schemaPath  = fs.String("schema", os.Getenv("RCP_SCHEMA"), "an RCP/1 JSON Schema file (such as the specification's normative schema) every message must satisfy too, besides the suite's own embedded schema (env RCP_SCHEMA)")
	)
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
	if *list {
		listChecks(stdout)
		return 0
	}
	lvl, err := conformance.ParseLevel(*level)
	if err != nil {
		fmt.Fprintln(stderr, "rcp conformance:", err)
		return 2
	}
	target := conformance.Target{URL: *httpURL, Token: *token, SkipAuthProbe: *noAuthProbe, Command: fs.Args()}
	switch {
	case target.URL != "" && len(target.Command) > 0:
		fmt.Fprintln(stderr, "rcp conformance: give either --http URL or a command after --, not both")
		return 2
	case target.URL == "" && len(target.Command) == 0:
		fs.Usage()
		return 2
	case target.Token != "" && target.URL == "":
		fmt.Fprintln(stderr, "rcp conformance: --token needs --http")
		return 2
	}
	// A server at a URL is usually someone's live index: its write checks
	// run only when asked. A spawned server is the run's own.
	opts := conformance.Options{MaxLevel: lvl, Timeout: *timeout, CallTimeout: *callTimeout, QuietWait: *quiet, SchemaPath: *schemaPath,
		NoWrites: target.URL != "" && !*allowWrites}
	if opts.NoWrites && !*asJSON {
		fmt.Fprintln(stderr, "rcp conformance: the index write checks are skipped for --http (pass --allow-writes to run them; their documents are deleted afterwards)")
	}
	if *only != "" {
		opts.Only = strings.Split(*only, ",")
	}
	color := !*noColor && isTerminal(stdout)
	if !*asJSON {
		fmt.Fprintf(stdout, "RCP/1 conformance — %s\n\n", target)
		opts.Progress = func(r conformance.Result) { printResult(stdout, r, color) }
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := conformance.Run(ctx, target, opts)
	if err != nil {
		fmt.Fprintln(stderr, "rcp conformance:", err)
		return 2
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintln(stderr, "rcp conformance:", err)
			return 2
		}
	} else {
		printSummary(stdout, rep, color)
	}
	if !rep.OK() {
		return 1
	}
	if !rep.Certifies(lvl) {
		if *level != "L2" || flagSet(fs, "level") {
			return 1
		}
	}
	return 0
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

func isTerminal(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func paint(on bool, code, s string) string {
	if !on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func printResult(w io.Writer, r conformance.Result, color bool) {
	var mark string
	switch r.Status {
	case conformance.Pass:
		mark = paint(color, "32", "PASS")
	case conformance.Skip:
		mark = paint(color, "90", "SKIP")
	default:
		if r.Requirement == conformance.Must {
			mark = paint(color, "31", "FAIL")
		} else {
			mark = paint(color, "33", "WARN")
		}
	}
	line := fmt.Sprintf("  [%s] %s  %-6s %-14s %s", r.Level, mark, r.Requirement, r.Section, r.Name)
	if r.Detail != "" && r.Status != conformance.Pass {
		line += "  " + paint(color, "90", "("+r.Detail+")")
	}
	fmt.Fprintln(w, line)
}

func printSummary(w io.Writer, rep *conformance.Report, color bool) {
	fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped  (%d MUST, %d SHOULD failures; %.1fs)\n",
		rep.Passed, rep.Failed, rep.Skipped, rep.FailedMust, rep.FailedShould, float64(rep.DurationMs)/1000)
	if rep.Server != nil {
		fmt.Fprintf(w, "server: %s %s, capabilities: %s\n", rep.Server.Name, rep.Server.Version, strings.Join(rep.Capabilities, ", "))
	}
	cert := "NONE"
	if rep.CertifiedLevel != nil {
		cert = string(*rep.CertifiedLevel)
	}
	fmt.Fprintf(w, "CERTIFIED LEVEL: %s\n", paint(color, "1", cert))
	for _, n := range rep.LevelNotes {
		fmt.Fprintf(w, "  %s\n", n)
	}
	switch {
	case rep.DeclaredLevel == nil:
		fmt.Fprintln(w, "declared _meta.conformance: none")
	case rep.DeclaredLevel.Exceeds(rep.MaxLevel) && rep.DeclarationHonest:
		fmt.Fprintf(w, "declared _meta.conformance=%q — not verified (run limited to %s)\n", *rep.DeclaredLevel, rep.MaxLevel)
	case rep.DeclarationHonest:
		fmt.Fprintf(w, "declared _meta.conformance=%q — consistent\n", *rep.DeclaredLevel)
	default:
		fmt.Fprintf(w, "declared _meta.conformance=%q — %s\n", *rep.DeclaredLevel, paint(color, "31", "OVERCLAIMED"))
	}
}

func listChecks(w io.Writer) {
	checks := conformance.Checks()
	byLevel := map[conformance.Level]int{}
	for _, c := range checks {
		byLevel[c.Level]++
		needs := strings.Join(c.Needs, ",")
		if c.Transport != "" {
			needs = strings.TrimPrefix(needs+","+c.Transport+" only", ",")
		}
		fmt.Fprintf(w, "%-40s %s %-6s %-16s %s", c.ID, c.Level, c.Requirement, c.Section, c.Name)
		if needs != "" {
			fmt.Fprintf(w, "  [%s]", needs)
		}
		fmt.Fprintln(w)
	}
	keys := make([]string, 0, len(byLevel))
	for l := range byLevel {
		keys = append(keys, string(l))
	}
	sort.Strings(keys)
	fmt.Fprintf(w, "\n%s:", wording.Plural(len(checks), "check", "checks"))
	for _, k := range keys {
		fmt.Fprintf(w, " %s=%d", k, byLevel[conformance.Level(k)])
	}
	fmt.Fprintln(w)
}
