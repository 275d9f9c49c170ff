package rcp_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/rcpgo/rcpgo/rcp"
)

// A server is a Router of typed handlers behind rcp.NewServer: the Router
// answers initialize with the Description (what the engine advertises) and
// gates every call on it. This example serves stdio, as an engine spawned
// by a client does; ListenAndServeHTTP serves the same handler over HTTP.
func Example_server() {
	ctx := context.Background()
	r := rcp.NewRouter(func(context.Context) rcp.Description {
		return rcp.Description{
			Server:       rcp.PeerInfo{Name: "my-engine", Version: "1.0"},
			Capabilities: rcp.Capabilities{Retrieve: &rcp.RetrieveCap{MaxK: 100}},
			Conformance:  rcp.LevelL0,
		}
	})
	rcp.Handle(r, rcp.MethodRetrieve, func(ctx context.Context, p *rcp.RetrieveParams) (*rcp.RetrieveResult, error) {
		_ = rcp.ReportProgress(ctx, rcp.ProgressParams{Stage: "recall"}) // no-op unless asked for
		return &rcp.RetrieveResult{Hits: []rcp.Hit{}}, nil
	})
	srv := rcp.NewServer(r, nil)
	err := srv.ServeStdio(ctx, os.Stdin, os.Stdout) // or srv.ListenAndServeHTTP(ctx, addr, opts)
	if err != nil {
		log.Fatal(err)
	}
}

// A client connects to a server — a command spawned over stdio, an HTTP
// endpoint, or a Server in the same process as here — and calls its
// methods; a call the server did not advertise fails before it is sent.
func Example_client() {
	ctx := context.Background()
	r := rcp.NewRouter(func(context.Context) rcp.Description {
		return rcp.Description{
			Server:       rcp.PeerInfo{Name: "my-engine", Version: "1.0"},
			Capabilities: rcp.Capabilities{Retrieve: &rcp.RetrieveCap{MaxK: 100}},
		}
	})
	rcp.Handle(r, rcp.MethodRetrieve, func(_ context.Context, p *rcp.RetrieveParams) (*rcp.RetrieveResult, error) {
		text := "Reciprocal rank fusion sums 1/(60+rank)."
		return &rcp.RetrieveResult{Hits: []rcp.Hit{{ID: rcp.StringID("rrf"), Score: 1, Text: &text}}}, nil
	})
	// c, err := rcp.ConnectStdio(ctx, []string{"my-engine"}, nil) or rcp.ConnectHTTP(ctx, "http://host/rcp", nil)
	c, err := rcp.ConnectInProcess(ctx, rcp.NewServer(r, nil), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("what is rrf"), K: 5})
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range res.Hits {
		fmt.Println(h.ID, h.Score, *h.Text)
	}
	_, err = c.Embed(ctx, &rcp.EmbedParams{Inputs: rcp.TextInputs("rrf")})
	if e, ok := rcp.AsError(err); ok {
		fmt.Println(e.Code)
	}
	// Output:
	// rrf 1 Reciprocal rank fusion sums 1/(60+rank).
	// CapabilityMissing
}
