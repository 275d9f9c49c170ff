// Package evalcmd holds the `rcp eval` and `rcp score` commands: flag
// parsing over package eval.
package evalcmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/cmd/rcp/internal/evalchart"
	"github.com/rcpgo/rcpgo/eval"
	"github.com/rcpgo/rcpgo/internal/progress"
	"github.com/rcpgo/rcpgo/rcp"
)

// Dialer connects to the server named on the command line and returns its
// eval.Caller and a close function.
type Dialer func(ctx context.Context, target string) (eval.Caller, func() error, error)

// modeList is a repeatable -mode flag: name or name=JSON options.
type modeList []eval.Mode

func (m *modeList) String() string { return fmt.Sprint(*m) }

func (m *modeList) Set(v string) error {
	name, js, ok := strings.Cut(v, "=")
	mode := eval.Mode{Name: strings.TrimSpace(name)}
	if mode.Name == "" {
		return errors.New("empty mode name")
	}
	if ok {
		if err := json.Unmarshal([]byte(js), &mode.Options); err != nil {
			return fmt.Errorf("mode %s: options must be a JSON object: %w", mode.Name, err)
		}
	}
	*m = append(*m, mode)
	return nil
}

// setDefault sets option key to v in every mode whose options lack it, when
// on. Modes share no options map afterwards.
func (m modeList) setDefault(key string, v any, on bool) {
	if !on {
		return
	}
	for i := range m {
		if _, ok := m[i].Options[key]; ok {
			continue
		}
		opts := make(eval.Options, len(m[i].Options)+1)
		maps.Copy(opts, m[i].Options)
		opts[key] = v
		m[i].Options = opts
	}
}

// Main is the `rcp eval` command: it optionally ingests
// a BEIR dataset into the server, runs its queries under each -mode with a
// fixed seed and a pinned index snapshot, and writes the report. The
// Markdown table goes to stdout, progress to stderr. It returns 0 ok,
// 1 failure, 2 usage. Example:
//
//	eval -target :7400 -dataset ../shared/datasets/scifact -ingest \
//	     -mode 'bm25={"mode":"sparse"}' -mode 'hybrid={"mode":"hybrid","fusion":{"method":"rrf"}}' \
//	     -json out/scifact.json -md out/scifact.md -chart out/scifact.png -runs out/
func Main(args []string, stdout, stderr io.Writer, dial Dialer) int {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", "", "server `address`")
	dataset := fs.String("dataset", "", "BEIR dataset `directory` (corpus.jsonl, queries.jsonl, qrels/)")
	split := fs.String("split", "test", "qrels split")
	var modes modeList
	fs.Var(&modes, "mode", "`name[=JSON]` retrieve options to evaluate; repeatable (default: one mode with no options)")
	modesFile := fs.String("modes", "", "comma list of presets (sparse, dense, hybrid, hybrid-rrf, hybrid-weighted, hybrid-convex, hybrid-mmr), or a JSON file with [{\"name\":…, \"options\":{…}}, …]")
	metrics := fs.String("metrics", "", "comma-separated metrics (default ndcg@10,recall@10,recall@50,recall@100,mrr@10,map,map@100,p@10)")
	unit := fs.String("unit", "", "retrieve `unit` for every mode that does not set one (e.g. document, tree-node); summary hits (tree-node, community) score as their provenance.leaves' documents")
	level := fs.Int("level", -1, "retrieve `level` for every mode that does not set one (tree-node/community: 1 = the first summary level; -1: not sent)")
	k := fs.Int("k", 0, "ranking depth (default: deepest metric cutoff)")
	conc := fs.Int("c", 4, "queries in flight")
	seed := fs.Int64("seed", 1, "retrieve seed (spec §7.7.1)")
	indexVersion := fs.String("index-version", "", "snapshot to pin (default: the first one served)")
	maxErrors := fs.Int("max-errors", 0, "failed queries tolerated per mode (they score 0)")
	ingest := fs.Bool("ingest", false, "add the corpus to the server first (ids are the BEIR ids: re-running upserts)")
	batch := fs.Int("batch", 64, "ingest: documents per index/add")
	ingestConc := fs.Int("ingest-c", 2, "ingest: batches in flight")
	limit := fs.Int64("limit", 0, "ingest: stop after this many documents (0: all)")
	jsonOut := fs.String("json", "", "write the JSON report to `path` (- or a bare --json: stdout, instead of the Markdown table)")
	mdOut := fs.String("md", "", "write the Markdown table to `path`")
	chartOut := fs.String("chart", "", "write the chart to `path` (.png or .svg)")
	runsDir := fs.String("runs", "", "write one TREC run file per mode into `directory`")
	perQuery := fs.Bool("per-query", false, "keep per-query figures in the JSON report")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usage := func(msg string, a ...any) int {
		fmt.Fprintf(stderr, "eval: "+msg+"\n", a...)
		return 2
	}
	if *target == "" || *dataset == "" || fs.NArg() > 0 {
		return usage("-target and -dataset are required")
	}
	if *modesFile != "" {
		b, err := os.ReadFile(*modesFile)
		if err != nil {
			return usage("%v", err)
		}
		var fromFile []eval.Mode
		if err := json.Unmarshal(b, &fromFile); err != nil {
			return usage("-modes %s: %v", *modesFile, err)
		}
		modes = append(modes, fromFile...)
	}
	if len(modes) == 0 {
		modes = modeList{{Name: "default"}}
	}
	if *level < -1 {
		return usage("-level %d: must be ≥ 0", *level)
	}
	modes.setDefault("unit", *unit, *unit != "")
	modes.setDefault("level", *level, *level >= 0)
	ms := eval.DefaultMetrics
	if *metrics != "" {
		var err error
		if ms, err = eval.ParseMetrics(*metrics); err != nil {
			return usage("%v", err)
		}
	}
	ds, err := eval.LoadBEIR(*dataset, *split)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "eval:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, closeFn, err := dial(ctx, *target)
	if err != nil {
		return fail(err)
	}
	defer func() {
		if closeFn != nil {
			closeFn()
		}
	}()
	newBar := func(label, unit string, total int64) *progress.Bar {
		if *quiet {
			return nil
		}
		return progress.New(stderr, label, total, progress.WithUnit(unit))
	}

	if *ingest {
		bar := newBar("ingest "+ds.Name, "docs", 0)
		opt := eval.IngestOptions{BatchSize: *batch, Concurrency: *ingestConc, Limit: *limit, Retries: 3,
			Retryable: func(err error) bool { return rcp.CodeOf(err).Retryable() }}
		if bar != nil {
			opt.Progress = func(p eval.Progress) { bar.SetTotal(p.Total); bar.Set(p.Done) }
		}
		_, err := eval.IngestFile(ctx, ds.CorpusPath, opt, eval.RCPIngest(c, nil))
		if bar != nil {
			bar.Finish()
		}
		if err != nil {
			return fail(err)
		}
		// Capabilities are frozen per session (§13.2): an engine that can
		// offer more after the ingest (a dense encoder fitted on the new
		// corpus) shows it only to a new session, so reconnect.
		if closeFn != nil {
			closeFn()
		}
		if c, closeFn, err = dial(ctx, *target); err != nil {
			return fail(err)
		}
	}

	rr := &eval.RCPRetriever{Caller: c, Seed: seed, IndexVersion: *indexVersion}
	runner := &eval.Runner{Retrieve: rr.Retrieve, K: *k, Metrics: ms, Concurrency: *conc, MaxErrors: *maxErrors, KeepPerQuery: *perQuery}
	rep := &eval.Report{Dataset: ds.Name, Split: ds.Split, Queries: len(ds.Queries), Started: time.Now().UTC().Truncate(time.Second)}
	for _, m := range ms {
		rep.Metrics = append(rep.Metrics, m.String())
	}
	for _, mode := range modes {
		bar := newBar(mode.Name, "queries", int64(len(ds.Queries)))
		if bar != nil {
			runner.Progress = func(p eval.Progress) { bar.Set(p.Done) }
		}
		res, err := runner.RunMode(ctx, ds.Queries, ds.Qrels, mode)
		if bar != nil {
			bar.Finish()
		}
		if err != nil {
			return fail(err)
		}
		rep.Modes = append(rep.Modes, res)
		if *runsDir != "" {
			if err := writeRunFile(*runsDir, ds.Name, mode.Name, res.Run); err != nil {
				return fail(err)
			}
		}
	}
	rep.IndexVersion = rr.Pinned()
	md := rep.Markdown()
	if err := writeReport(stdout, *jsonOut, md, rep.WriteJSON); err != nil {
		return fail(err)
	}
	if *mdOut != "" {
		if err := os.WriteFile(*mdOut, []byte(md), 0o644); err != nil {
			return fail(err)
		}
	}
	if *chartOut != "" {
		if err := evalchart.WriteFile(rep, *chartOut); err != nil {
			return fail(err)
		}
	}
	return 0
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func writeRunFile(dir, dataset, mode string, run eval.Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tag := unsafeName.ReplaceAllString(mode, "_")
	return writeFileWith(filepath.Join(dir, dataset+"."+tag+".run"), func(w io.Writer) error { return eval.WriteRun(w, run, tag) })
}

// writeReport prints the Markdown table on stdout, and the JSON report to
// jsonPath; with jsonPath "-" the JSON takes stdout's place (the table then
// goes only to -md), so `--json | jq` reads one JSON document.
func writeReport(stdout io.Writer, jsonPath, md string, writeJSON func(io.Writer) error) error {
	if jsonPath == "-" {
		return writeJSON(stdout)
	}
	if _, err := io.WriteString(stdout, md); err != nil {
		return err
	}
	if jsonPath == "" {
		return nil
	}
	return writeFileWith(jsonPath, writeJSON)
}

func writeFileWith(path string, fn func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
