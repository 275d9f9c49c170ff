// Command agentloop is an example of the agentic loop of RCP §7.7.3 over
// standard methods: think (query/transform decomposes the question) →
// retrieve each sub-question with one sessionId → observe (keep the
// confident hits, report them with feedback) → retrieve again in the same
// session, where the server's dedup returns new evidence only.
//
// Usage:
//
//	agentloop [-question q] -- rcpd serve --stdio --demo --data /tmp/agentloop
//	agentloop -http http://127.0.0.1:7700/rcp
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "agentloop:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	httpURL := flag.String("http", "", "base URL of an HTTP RCP server")
	question := flag.String("question", "how does BM25 weight terms and how are posting lists compressed", "the question to research")
	k := flag.Int("k", 3, "hits per retrieve")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	opts := &rcp.ClientOptions{Info: rcp.PeerInfo{Name: "rcpgo-agentloop", Version: "0.1.0"}}
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
	return loop(ctx, c, out, *question, *k)
}

// loop runs think → retrieve → feedback → retrieve again and prints what
// each step saw. It uses each capability only when the server advertises it.
func loop(ctx context.Context, c *rcp.Client, out io.Writer, question string, k int) error {
	caps := c.Capabilities()
	session := fmt.Sprintf("agentloop-%d", time.Now().UnixNano())

	// Think: split the question into sub-questions.
	subs := []string{question}
	if caps.Transform != nil && slices.Contains(caps.Transform.Methods, "decompose") {
		res, err := c.Transform(ctx, &rcp.TransformParams{Query: question, Method: "decompose"})
		if err != nil {
			return fmt.Errorf("think: %w", err)
		}
		subs = res.Queries
	}
	fmt.Fprintf(out, "think: %d sub-question(s)\n", len(subs))

	seen := map[string]bool{}
	for round := 1; round <= 2; round++ {
		var signals []rcp.FeedbackSignal
		for _, q := range subs {
			res, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery(q), K: k, SessionID: session})
			if err != nil {
				return fmt.Errorf("retrieve %q: %w", q, err)
			}
			for _, h := range res.Hits {
				id := h.ID.String()
				repeat := ""
				if seen[id] {
					repeat = " (seen before)"
				}
				seen[id] = true
				fmt.Fprintf(out, "round %d: %-40.40q → %s%s\n", round, q, id, repeat)
				// Observe: keep confident evidence and say so.
				if h.Confidence != nil && *h.Confidence >= 0.5 {
					yes := true
					signals = append(signals, rcp.FeedbackSignal{HitID: h.ID, Used: &yes})
				}
			}
		}
		if caps.Feedback != nil && len(signals) > 0 {
			res, err := c.Feedback(ctx, &rcp.FeedbackParams{SessionID: session, Query: question, Signals: signals})
			if err != nil {
				return fmt.Errorf("feedback: %w", err)
			}
			fmt.Fprintf(out, "feedback: %d of %d signals accepted\n", res.Accepted, len(signals))
		}
	}
	dedup := caps.Session != nil && caps.Session.Dedup
	fmt.Fprintf(out, "distinct hits: %d (server dedup: %v)\n", len(seen), dedup)
	return nil
}
