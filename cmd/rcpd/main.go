// Command rcpd is the rcpgo retrieval engine server.
//
//	rcpd serve [--data DIR] [--http ADDR] [--stdio] [--config FILE] [--demo] ...
//
//	rcpd gateway --registry rcp.json [--http ADDR | --stdio] ...
//	rcpd mcp [--http ADDR] [--data DIR | --connect URL | -- CMD ARGS] ...
//	rcpd mcpdesc [--format json|yaml] ...
//
// main is a small subcommand dispatcher over the commands table; the
// gateway and MCP faces register themselves in faces.go.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/rcpgo/rcpgo/internal/buildinfo"
	"github.com/rcpgo/rcpgo/internal/completion"
	"github.com/rcpgo/rcpgo/internal/didyoumean"
)

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

var commands = map[string]command{
	"serve":   {summary: "serve the engine over stdio and/or HTTP", run: runServe},
	"version": {summary: "print the version (module version, VCS revision, Go)", run: runVersion},
}

func init() {
	commands["completion"] = command{summary: "print a shell completion script: completion bash|zsh|fish", run: runCompletion}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "rcpd: unknown command %q", args[0])
		if near := didyoumean.Nearest(args[0], maps.Keys(commands)); near != "" {
			fmt.Fprintf(stderr, "; did you mean %q?", near)
		}
		fmt.Fprint(stderr, "\n\n")
		usage(stderr)
		return 2
	}
	return cmd.run(ctx, args[1:], stdin, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: rcpd <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nrun 'rcpd <command> -h' for the flags of a command")
}

func runVersion(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rcpd version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.Bool("json", false, "print the version as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	info := buildinfo.Read() // the version every face reports (internal/buildinfo)
	if *jsonOut {
		_ = json.NewEncoder(stdout).Encode(info)
		return 0
	}
	fmt.Fprintln(stdout, "rcpd", info)
	return 0
}

// runCompletion prints a completion script whose flags come from every
// command's own -h output.
func runCompletion(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 || !slices.Contains(completion.Shells, args[0]) {
		fmt.Fprintln(stderr, "usage: rcpd completion bash|zsh|fish  (bash: eval \"$(rcpd completion bash)\" in ~/.bashrc)")
		if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
			return 0
		}
		return 2
	}
	var cmds []completion.Command
	for _, name := range slices.Sorted(maps.Keys(commands)) {
		c := completion.Command{Name: name}
		if name == "completion" {
			c.Subs = []completion.Command{{Name: "bash"}, {Name: "zsh"}, {Name: "fish"}}
		} else {
			var b bytes.Buffer
			commands[name].run(ctx, []string{"-h"}, strings.NewReader(""), io.Discard, &b)
			c.Flags = completion.FlagsFromHelp(b.String())
		}
		cmds = append(cmds, c)
	}
	if err := completion.Write(stdout, args[0], "rcpd", cmds); err != nil {
		fmt.Fprintln(stderr, "rcpd completion:", err)
		return 1
	}
	return 0
}
