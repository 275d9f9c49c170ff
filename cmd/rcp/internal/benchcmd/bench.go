// Package benchcmd holds the `rcp bench` and `rcp gen` commands: flag
// parsing over packages bench and bench/gen.
package benchcmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/bench"
	"github.com/rcpgo/rcpgo/bench/gen"
	"github.com/rcpgo/rcpgo/internal/progress"
)

// Dialer connects to a target as written on the command line (an address,
// or whatever the CLI accepts) and returns its bench.Caller and a close function.
type Dialer func(ctx context.Context, target string) (bench.Caller, func() error, error)

// targetList is a repeatable -target flag: "[name=]address".
type targetList []struct{ name, addr string }

func (t *targetList) String() string { return fmt.Sprint(*t) }

func (t *targetList) Set(v string) error {
	name, addr, ok := strings.Cut(v, "=")
	if !ok || strings.Contains(name, "://") || strings.ContainsAny(name, "/:") {
		name, addr = "", v
	}
	if addr == "" {
		return errors.New("empty target")
	}
	if name == "" {
		name = string(rune('A' + len(*t)))
	}
	*t = append(*t, struct{ name, addr string }{name, addr})
	return nil
}

// Main is the `rcp bench` command. dial connects to each
// -target; two or more targets make an A/B run. It prints the table (or the
// JSON with -json -) on stdout, progress on stderr, and returns the exit
// status: 0 ok, 1 failure, 2 usage. Examples:
//
//	bench -target :7400 -workload ping -n 10000 -c 8
//	bench -target old=:7400 -target new=:7401 -workload retrieve -queries q.jsonl -d 30s
//	bench -target :7400 -workload mixed -mix ping:1,retrieve:8,index:1 -batch 64 -d 1m -json out.json
func Main(args []string, stdout, stderr io.Writer, dial Dialer) int {
	p, code := parseBench(args, stderr)
	if p == nil {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := p.cfg
	for _, t := range p.targets {
		// A target may name several replicas of one server, comma-separated:
		// its calls go to them in turn.
		var replicas []bench.Caller
		for _, addr := range strings.Split(t.addr, ",") {
			c, closeFn, err := dial(ctx, addr)
			if err != nil {
				fmt.Fprintf(stderr, "bench: %s: %v\n", t.name, err)
				return 1
			}
			if closeFn != nil {
				defer closeFn()
			}
			replicas = append(replicas, c)
		}
		cfg.Targets = append(cfg.Targets, bench.Target{Name: t.name, Caller: bench.RoundRobin(replicas...)})
	}
	var results []*bench.Result
	for _, size := range p.batches {
		if p.workload == "index" {
			cfg.Workload = &bench.Index{Gen: p.gen, Batch: size}
		}
		res, code := runOnce(ctx, cfg, p.quiet, stderr)
		if code != 0 {
			return code
		}
		results = append(results, res)
	}
	if p.jsonOut == "-" {
		if writeResultsJSON(stdout, results) != nil {
			return 1
		}
		return 0
	}
	if code := writeResults(results, p.jsonOut, stdout, stderr); code != 0 {
		return code
	}
	for _, res := range results {
		if res.StoppedBy == "context" {
			return 1
		}
	}
	return 0
}

// benchPlan is a checked rcp bench command line: the load to run (cfg,
// without its targets) against each target, once per index batch size.
type benchPlan struct {
	targets  targetList
	workload string
	cfg      bench.Config
	batches  []int
	gen      *gen.Generator
	jsonOut  string
	quiet    bool
}

// parseBench parses and checks the command line and builds the workload.
// It returns nil and the exit code when the command ends here (-h, a
// usage error).
func parseBench(args []string, stderr io.Writer) (*benchPlan, int) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	p := &benchPlan{}
	fs.Var(&p.targets, "target", "server to load, `[name=]address[,address…]` (several addresses: replicas called in turn); repeat for an A/B run (the first is the baseline)")
	fs.StringVar(&p.workload, "workload", "ping", "ping, retrieve, index or mixed")
	conc := fs.Int("c", 4, "concurrency: requests in flight")
	n := fs.Int64("n", 0, "operations to run (0: bounded by -d)")
	dur := fs.Duration("d", 0, "duration (default 10s when -n is not set)")
	warmup := fs.Int64("warmup", 0, "operations run before recording")
	timeout := fs.Duration("timeout", 30*time.Second, "per-call timeout")
	queries := fs.String("queries", "", "retrieve: queries file (queries.jsonl or one per line); default: generated")
	k := fs.Int("k", 10, "retrieve: k")
	opts := fs.String("opts", "", `retrieve: extra params as JSON, e.g. {"mode":"hybrid"}`)
	batchList := fs.String("batch", "32", "index: documents per index/add; a comma list (8,32,128) runs the index workload once per size")
	genSeed := fs.Uint64("gen-seed", 1, "seed of the synthetic corpus (index documents, generated queries)")
	genDocs := fs.Int("gen-docs", 100_000, "size of the synthetic corpus the index workload cycles through")
	mix := fs.String("mix", "ping:1,retrieve:8,index:1", "mixed: workload:weight list")
	seed := fs.Uint64("seed", 1, "seed of the workload's random choices")
	fs.StringVar(&p.jsonOut, "json", "", "write the JSON result to `path` (- for stdout)")
	fs.BoolVar(&p.quiet, "quiet", false, "no progress on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, 0
		}
		return nil, 2
	}
	usage := func(msg string, a ...any) (*benchPlan, int) {
		fmt.Fprintf(stderr, "bench: "+msg+"\n", a...)
		return nil, 2
	}
	if len(p.targets) == 0 || fs.NArg() > 0 {
		return usage("at least one -target is needed")
	}
	for _, b := range strings.Split(*batchList, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(b))
		if err != nil || v <= 0 {
			return usage("-batch %q: want positive integers", *batchList)
		}
		p.batches = append(p.batches, v)
	}
	if len(p.batches) > 1 && p.workload != "index" {
		return usage("several -batch sizes need -workload index")
	}
	var err error
	if p.gen, err = gen.New(gen.Config{Seed: *genSeed, Docs: *genDocs, Queries: 1000}); err != nil {
		return usage("%v", err)
	}
	var retrieveOpts map[string]any
	if *opts != "" {
		if err := json.Unmarshal([]byte(*opts), &retrieveOpts); err != nil {
			return usage("-opts: %v", err)
		}
	}
	wl, err := p.workloadOf(*mix, *queries, *k, retrieveOpts)
	if err != nil {
		return usage("%v", err)
	}
	p.cfg = bench.Config{Workload: wl, Concurrency: *conc, Requests: *n, Duration: *dur, Warmup: *warmup, Timeout: *timeout, Seed: *seed}
	return p, 0
}

// workloadOf builds the plan's workload: one of ping, retrieve and index,
// or a weighted mix of them.
func (p *benchPlan) workloadOf(mix, queries string, k int, retrieveOpts map[string]any) (bench.Workload, error) {
	simple := func(name string) (bench.Workload, error) {
		switch name {
		case "ping":
			return bench.Ping{}, nil
		case "retrieve":
			qs := bench.GeneratedQueries(p.gen, 1000)
			if queries != "" {
				var err error
				if qs, err = bench.QueriesFromFile(queries); err != nil {
					return nil, err
				}
			}
			return &bench.Retrieve{Queries: qs, K: k, Options: retrieveOpts}, nil
		case "index":
			return &bench.Index{Gen: p.gen, Batch: p.batches[0]}, nil
		}
		return nil, fmt.Errorf("unknown workload %q (want ping, retrieve, index or mixed)", name)
	}
	if p.workload != "mixed" {
		return simple(p.workload)
	}
	var parts []bench.Weighted
	for _, part := range strings.Split(mix, ",") {
		name, w, _ := strings.Cut(strings.TrimSpace(part), ":")
		weight, err := strconv.Atoi(w)
		if err != nil {
			return nil, fmt.Errorf("-mix %q: weight of %s is not an integer", mix, name)
		}
		sub, err := simple(name)
		if err != nil {
			return nil, fmt.Errorf("-mix: %w", err)
		}
		parts = append(parts, bench.Weighted{Workload: sub, Weight: weight})
	}
	return bench.NewMixed(parts...)
}

// writeResultsJSON writes one result as JSON, or several as a JSON list.
func writeResultsJSON(w io.Writer, results []*bench.Result) error {
	if len(results) == 1 {
		return results[0].WriteJSON(w)
	}
	return writeJSON(w, results)
}

// writeResults prints the results as tables and writes them to the -json
// file when one is named; it returns the exit code.
func writeResults(results []*bench.Result, jsonOut string, stdout, stderr io.Writer) int {
	for i, res := range results {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprint(stdout, res.Table())
	}
	if jsonOut != "" {
		f, err := os.Create(jsonOut)
		if err == nil {
			err = writeResultsJSON(f, results)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
	}
	return 0
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// runOnce runs cfg with a progress bar on stderr unless quiet.
func runOnce(ctx context.Context, cfg bench.Config, quiet bool, stderr io.Writer) (*bench.Result, int) {
	var bar *progress.Bar
	if !quiet {
		if cfg.Requests == 0 && cfg.Duration == 0 {
			cfg.Duration = bench.DefaultDuration
		}
		bar = progress.New(stderr, "bench "+cfg.Workload.Name(), cfg.Requests, progress.WithUnit("ops"))
		cfg.Progress = func(p bench.Progress) { bar.Set(p.Done) }
	}
	res, err := bench.Run(ctx, cfg)
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return nil, 1
	}
	return res, 0
}
