package cli

import (
	"context"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

// testServerEnv makes this test binary an RCP server over stdio (see
// TestMain): "slow" takes 100 ms per index/add; "small" reads requests of
// at most 1 MiB and does not advertise it.
const testServerEnv = "RCP_CLI_TEST_SERVER"

// serveTestServer runs the server mode named by testServerEnv.
func serveTestServer(mode string) int {
	r := rcp.NewRouter(func(context.Context) rcp.Description {
		return rcp.Description{
			Server:       rcp.PeerInfo{Name: "cli-test-" + mode, Version: "0"},
			Capabilities: rcp.Capabilities{Retrieve: &rcp.RetrieveCap{Modes: []string{rcp.ModeSparse}}, Index: &rcp.IndexCap{Writable: true}},
			Conformance:  rcp.LevelL0,
		}
	})
	rcp.Handle(r, rcp.MethodRetrieve, func(context.Context, *rcp.RetrieveParams) (*rcp.RetrieveResult, error) {
		return &rcp.RetrieveResult{Hits: []rcp.Hit{}}, nil
	})
	rcp.Handle(r, rcp.MethodIndexAdd, func(ctx context.Context, p *rcp.IndexAddParams) (*rcp.IndexAddResult, error) {
		if mode == "slow" {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		ids := make([]string, len(p.Documents))
		for i, d := range p.Documents {
			ids[i] = d.ID
		}
		return &rcp.IndexAddResult{IDs: ids}, nil
	})
	opts := &rcp.ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mode == "small" {
		opts.MaxFrameBytes = 1 << 20
	}
	if err := rcp.NewServer(r, opts).ServeStdio(context.Background(), os.Stdin, os.Stdout); err != nil {
		return 1
	}
	return 0
}
