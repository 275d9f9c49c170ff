package benchcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/rcpgo/rcpgo/bench/gen"
	"github.com/rcpgo/rcpgo/internal/progress"
)

// Gen is the `rcp gen` command: it writes a synthetic BEIR dataset
// into -out and prints its statistics as JSON on stdout; progress goes to stderr.
// It returns the exit status (0 ok, 1 failure, 2 usage).
//
//	gen -seed 1 -docs 1000000 -queries 10000 -out /tmp/synth
//	gen -multihop -seed 1 -docs 5000 -queries 300 -out /tmp/multihop
func Gen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c gen.Config
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed: the same seed gives the same bytes")
	fs.IntVar(&c.Docs, "docs", 10_000, "number of passages")
	fs.IntVar(&c.Queries, "queries", 1_000, "number of queries (each with one known relevant passage)")
	fs.IntVar(&c.Vocab, "vocab", 50_000, "vocabulary size")
	fs.Float64Var(&c.ZipfS, "zipf", 1.07, "Zipf exponent of word frequencies (> 1)")
	fs.IntVar(&c.MedianWords, "words", 85, "median passage length in words (log-normal)")
	workers := fs.Int("workers", 0, "rendering goroutines (0: all cores)")
	out := fs.String("out", "", "output `directory` (corpus.jsonl, queries.jsonl, qrels/test.tsv)")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	multihop := fs.Bool("multihop", false, "write a two-hop (bridge) question corpus instead: -docs documents, -queries questions, both supporting documents in qrels")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "gen: -out is required")
		return 2
	}
	if *multihop {
		return genMultihop(gen.MultihopConfig{Seed: c.Seed, Docs: c.Docs, Questions: c.Queries}, *out, stdout, stderr)
	}
	g, err := gen.New(c)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var bar *progress.Bar
	var report func(int)
	if !*quiet {
		bar = progress.New(stderr, "generating", int64(g.Config().Docs), progress.WithUnit("docs"))
		report = func(done int) { bar.Set(int64(done)) }
	}
	st, err := g.WriteDir(ctx, *out, *workers, report)
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := writeJSON(stdout, struct {
		gen.Stats
		Config  gen.Config `json:"config"`
		Seconds float64    `json:"seconds"`
		DocsPS  float64    `json:"docsPerSecond"`
	}{st, g.Config(), st.Elapsed.Seconds(), float64(st.Docs) / st.Elapsed.Seconds()}); err != nil {
		return 1
	}
	return 0
}

func genMultihop(c gen.MultihopConfig, out string, stdout, stderr io.Writer) int {
	m, err := gen.NewMultihop(c)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	st, err := m.WriteDir(ctx, out)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := writeJSON(stdout, struct {
		gen.Stats
		Config  gen.MultihopConfig `json:"config"`
		Seconds float64            `json:"seconds"`
	}{st, c, st.Elapsed.Seconds()}); err != nil {
		return 1
	}
	return 0
}
