// Command memserver is an example RCP/1 server over a handful of in-memory
// documents. It answers retrieve (dense = hashed bag-of-words vectors, sparse
// = word overlap, hybrid = reciprocal rank fusion of both — toy scoring, not
// a learned model), embed (json and f32-base64), rerank (word overlap),
// ping, info and shutdown, with progress and log notifications.
//
// Usage:
//
//	memserver                      # stdio (NDJSON on stdin/stdout)
//	memserver -http 127.0.0.1:8080 # HTTP on POST /rcp/<method>
//	memserver -query "eiffel tower paris" # run one query in-process and print hits
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/rcpgo/rcpgo/rcp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "memserver:", err)
		os.Exit(1)
	}
}

func run() error {
	httpAddr := flag.String("http", "", "serve HTTP on this address (e.g. 127.0.0.1:8080) instead of stdio")
	sessions := flag.String("sessions", "stateful", "HTTP session mode: stateful | stateless | single (one shared session, what the reference harness check.py expects)")
	token := flag.String("token", "", "require this bearer token over HTTP")
	query := flag.String("query", "", "run one retrieve in-process, print the hits as JSON and exit")
	k := flag.Int("k", 3, "hits for -query")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	flag.Parse()

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := rcp.NewServer(newEngine().router(), &rcp.ServerOptions{Logger: logger})

	switch {
	case *query != "":
		c, err := rcp.ConnectInProcess(ctx, srv, nil)
		if err != nil {
			return err
		}
		defer c.Close()
		res, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery(*query), K: *k})
		if err != nil {
			return err
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	case *httpAddr != "":
		mode, err := rcp.ParseSessionMode(*sessions)
		if err != nil {
			return err
		}
		opts := &rcp.HTTPOptions{CORSOrigin: "*", Sessions: mode}
		if *token != "" {
			opts.BearerTokens = []string{*token}
		}
		logger.Info("serving RCP over HTTP", "addr", *httpAddr, "base", "/rcp", "sessions", *sessions)
		return srv.ListenAndServeHTTP(ctx, *httpAddr, opts)
	default:
		err := srv.ServeStdio(ctx, os.Stdin, os.Stdout)
		if errors.Is(err, context.Canceled) {
			return nil // interrupted: a normal way to stop
		}
		return err
	}
}
