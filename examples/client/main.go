// Command client is an example RCP/1 client. It connects to a server over
// stdio (spawning the command after --) or HTTP, performs the handshake and
// exercises info, ping, retrieve, embed (json and f32-base64) and rerank —
// each only when the server advertised it.
//
// Usage:
//
//	client [-query q] -- go run ./examples/memserver
//	client [-query q] -http http://127.0.0.1:8080/rcp
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/vector"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

func run() error {
	httpURL := flag.String("http", "", "base URL of an HTTP RCP server (e.g. http://127.0.0.1:8080/rcp)")
	query := flag.String("query", "eiffel tower paris", "query for retrieve and rerank")
	k := flag.Int("k", 3, "hits to retrieve")
	token := flag.String("token", "", "bearer token for HTTP")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	opts := &rcp.ClientOptions{Info: rcp.PeerInfo{Name: "rcpgo-example-client", Version: "0.1.0"}, BearerToken: *token}
	var (
		c   *rcp.Client
		err error
	)
	switch {
	case *httpURL != "":
		c, err = rcp.ConnectHTTP(ctx, *httpURL, opts)
	case flag.NArg() > 0:
		c, err = rcp.ConnectStdio(ctx, flag.Args(), opts)
	default:
		return errors.New("give -http URL or a server command after --")
	}
	if err != nil {
		return err
	}
	defer c.Close()

	init := c.InitializeResult()
	fmt.Printf("connected: %s %s, RCP/%d, conformance %q\n", init.Server.Name, init.Server.Version, init.ProtocolVersion, c.Conformance())

	info, err := c.Info(ctx)
	if err != nil {
		return fmt.Errorf("info: %w", err)
	}
	fmt.Printf("info: server %s\n", info.Server.Name)

	p, err := c.Ping(ctx, "hello")
	if err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	fmt.Printf("ping: nonce %s\n", p.Nonce)

	if c.Supports(rcp.CapRetrieve) {
		res, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery(*query), K: *k})
		if err != nil {
			return fmt.Errorf("retrieve: %w", err)
		}
		fmt.Printf("retrieve %q: %d hits\n", *query, len(res.Hits))
		for i, h := range res.Hits {
			fmt.Printf("  %d. %-12s %.4f  %.60s\n", i+1, h.ID.String(), h.Score, h.TextOf())
		}
	}
	if c.Supports(rcp.CapEmbed) {
		for _, enc := range []string{rcp.EncodingJSON, rcp.EncodingF32Base64} {
			if enc != rcp.EncodingJSON && !rcp.Contains(c.Capabilities().Embed.Encodings, enc) {
				continue
			}
			res, err := c.Embed(ctx, &rcp.EmbedParams{Inputs: rcp.TextInputs(*query, "another text"), Encoding: enc})
			if err != nil {
				return fmt.Errorf("embed %s: %w", enc, err)
			}
			if res.Encoding == "" {
				res.Encoding = rcp.EncodingJSON
			}
			vecs, err := vector.DecodeResult(res)
			if err != nil {
				return fmt.Errorf("embed %s: decoding: %w", enc, err)
			}
			fmt.Printf("embed (%s): %d vectors of dimension %d\n", res.Encoding, len(vecs), len(vecs[0]))
		}
	}
	if c.Supports(rcp.CapRerank) {
		passages := rcp.TextInputs("The Eiffel Tower is in Paris.", "Photosynthesis happens in leaves.")
		// Documents repeats the passages under their legacy name for older
		// servers that only read it; conformant servers ignore it.
		res, err := c.Rerank(ctx, &rcp.RerankParams{Query: rcp.TextQuery(*query), Passages: passages, Documents: passages})
		if err != nil {
			return fmt.Errorf("rerank: %w", err)
		}
		fmt.Printf("rerank: scores %v order %v\n", res.Scores, res.Order)
	}
	return nil
}
