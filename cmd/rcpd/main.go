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
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// version is set at link time (-ldflags "-X main.version=...").
var version = "dev"

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

var commands = map[string]command{
	"serve":   {summary: "serve the engine over stdio and/or HTTP", run: runServe},
	"version": {summary: "print the version", run: runVersion},
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
		fmt.Fprintf(stderr, "rcpd: unknown command %q\n\n", args[0])
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

func runVersion(_ context.Context, _ []string, _ io.Reader, stdout, _ io.Writer) int {
	fmt.Fprintln(stdout, "rcpd", version)
	return 0
}
