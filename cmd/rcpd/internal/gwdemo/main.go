// Command gwdemo serves three toy engines with distinct corpora (alpha,
// beta, gamma: fedtest) on loopback HTTP and puts the real "rcpd gateway"
// code (the gatewaycmd package) in front of them. It exists to run the
// conformance suite and foreign clients against the gateway:
//
//	go run ./cmd/rcpd/internal/gwdemo --http 127.0.0.1:8090   # then: rcp conformance --http http://127.0.0.1:8090/rcp
//	go run ./cmd/rcp conformance -- ./gwdemo --stdio              # stdio (build it first)
//
// Every flag is passed to the gateway command unchanged.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/rcpgo/rcpgo/cmd/rcpd/internal/gatewaycmd"
	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/testutil/fedtest"
	"github.com/rcpgo/rcpgo/rcp"
)

func main() { os.Exit(run()) }

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	features := map[string]fedtest.Features{
		"alpha": {Embed: true},
		"beta":  {Embed: true, Rerank: true},
		"gamma": {GraphOps: []string{"local"}},
	}
	reg := federation.Registry{}
	for _, name := range []string{"alpha", "beta", "gamma"} {
		e := fedtest.New(name, features[name])
		s, err := fedtest.ServeHTTP(e.Router(), "127.0.0.1:0", &rcp.HTTPOptions{Sessions: rcp.SessionStateful}, &rcp.ServerOptions{Logger: quiet})
		if err != nil {
			fmt.Fprintln(os.Stderr, "gwdemo:", err)
			return 1
		}
		defer s.Kill()
		reg.Engines = append(reg.Engines, federation.EngineSpec{ID: name, URL: s.URL})
	}
	dir, err := os.MkdirTemp("", "gwdemo")
	if err != nil {
		fmt.Fprintln(os.Stderr, "gwdemo:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "rcp.json")
	b, _ := json.MarshalIndent(reg, "", "  ")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "gwdemo:", err)
		return 1
	}
	args := append([]string{"--registry", path}, os.Args[1:]...)
	return gatewaycmd.Main(ctx, args, os.Stdin, os.Stdout, os.Stderr)
}
