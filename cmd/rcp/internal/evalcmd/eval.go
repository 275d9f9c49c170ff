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
	"github.com/rcpgo/rcpgo/cmd/rcp/internal/settle"
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
	p, code := parseEval(args, stderr)
	if p == nil {
		return code
	}
	ds, err := eval.LoadBEIR(p.dataset, p.split)
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
	c, closeFn, err := dial(ctx, p.target)
	if err != nil {
		return fail(err)
	}
	defer func() {
		if closeFn != nil {
			closeFn()
		}
	}()
	newBar := func(label, unit string, total int64) *progress.Bar {
		if p.quiet {
			return nil
		}
		return progress.New(stderr, label, total, progress.WithUnit(unit))
	}
	if p.ingest {
		if c, closeFn, err = p.ingestCorpus(ctx, ds, c, closeFn, dial, newBar); err != nil {
			return fail(err)
		}
	}
	rep, err := p.run(ctx, ds, c, newBar)
	if err != nil {
		return fail(err)
	}
	if err := p.write(stdout, rep); err != nil {
		return fail(err)
	}
	return 0
}

// evalPlan is a checked rcp eval command line.
type evalPlan struct {
	target, dataset, split, indexVersion string
	modes                                modeList
	metrics                              []eval.Metric
	k, conc, maxErrors                   int
	seed                                 int64
	ingest                               bool
	batch, ingestConc                    int
	limit                                int64
	settleFor                            time.Duration
	stderr                               io.Writer
	jsonOut, mdOut, chartOut, runsDir    string
	perQuery, quiet                      bool
}

// parseEval parses and checks the command line (modes from -mode and
// -modes, with the -unit and -level defaults applied). It returns nil and
// the exit code when the command ends here (-h, a usage error).
func parseEval(args []string, stderr io.Writer) (*evalPlan, int) {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	p := &evalPlan{stderr: stderr}
	fs.StringVar(&p.target, "target", "", "server `address`")
	fs.StringVar(&p.dataset, "dataset", "", "BEIR dataset `directory` (corpus.jsonl, queries.jsonl, qrels/)")
	fs.StringVar(&p.split, "split", "test", "qrels split")
	fs.Var(&p.modes, "mode", "`name[=JSON]` retrieve options to evaluate; repeatable (default: one mode with no options)")
	modesFile := fs.String("modes", "", "comma list of presets (sparse, dense, hybrid, hybrid-rrf, hybrid-weighted, hybrid-convex, hybrid-mmr), or a JSON file with [{\"name\":…, \"options\":{…}}, …]")
	metrics := fs.String("metrics", "", "comma-separated metrics (default ndcg@10,recall@10,recall@50,recall@100,mrr@10,map,map@100,p@10)")
	unit := fs.String("unit", "", "retrieve `unit` for every mode that does not set one (e.g. document, tree-node); summary hits (tree-node, community) score as their provenance.leaves' documents")
	level := fs.Int("level", -1, "retrieve `level` for every mode that does not set one (tree-node/community: 1 = the first summary level; -1: not sent)")
	fs.IntVar(&p.k, "k", 0, "ranking depth (default: deepest metric cutoff)")
	fs.IntVar(&p.conc, "c", 4, "queries in flight")
	fs.Int64Var(&p.seed, "seed", 1, "retrieve seed (spec §7.7.1)")
	fs.StringVar(&p.indexVersion, "index-version", "", "snapshot to pin (default: the first one served)")
	fs.IntVar(&p.maxErrors, "max-errors", 0, "failed queries tolerated per mode (they score 0)")
	fs.BoolVar(&p.ingest, "ingest", false, "add the corpus to the server first (ids are the BEIR ids: re-running upserts)")
	fs.IntVar(&p.batch, "batch", 64, "ingest: documents per index/add")
	fs.IntVar(&p.ingestConc, "ingest-c", 2, "ingest: batches in flight")
	fs.Int64Var(&p.limit, "limit", 0, "ingest: stop after this many documents (0: all)")
	fs.DurationVar(&p.settleFor, "settle-timeout", time.Hour, "ingest: how long to wait for the server to derive its dense index, graph and tree from the corpus before measuring")
	fs.StringVar(&p.jsonOut, "json", "", "write the JSON report to `path` (- or a bare --json: stdout, instead of the Markdown table)")
	fs.StringVar(&p.mdOut, "md", "", "write the Markdown table to `path`")
	fs.StringVar(&p.chartOut, "chart", "", "write the chart to `path` (.png or .svg)")
	fs.StringVar(&p.runsDir, "runs", "", "write one TREC run file per mode into `directory`")
	fs.BoolVar(&p.perQuery, "per-query", false, "keep per-query figures in the JSON report")
	fs.BoolVar(&p.quiet, "quiet", false, "no progress on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, 0
		}
		return nil, 2
	}
	usage := func(msg string, a ...any) (*evalPlan, int) {
		fmt.Fprintf(stderr, "eval: "+msg+"\n", a...)
		return nil, 2
	}
	if p.target == "" || p.dataset == "" || fs.NArg() > 0 {
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
		p.modes = append(p.modes, fromFile...)
	}
	if len(p.modes) == 0 {
		p.modes = modeList{{Name: "default"}}
	}
	if *level < -1 {
		return usage("-level %d: must be ≥ 0", *level)
	}
	p.modes.setDefault("unit", *unit, *unit != "")
	p.modes.setDefault("level", *level, *level >= 0)
	p.metrics = eval.DefaultMetrics
	if *metrics != "" {
		var err error
		if p.metrics, err = eval.ParseMetrics(*metrics); err != nil {
			return usage("%v", err)
		}
	}
	return p, 0
}

// ingestCorpus adds the dataset's corpus to the server, then reconnects:
// capabilities are frozen per session (§13.2), and an engine that can
// offer more after the ingest (a dense encoder fitted on the new corpus)
// shows it only to a new session. It returns the connection to use and
// its close function.
func (p *evalPlan) ingestCorpus(ctx context.Context, ds *eval.Dataset, c eval.Caller, closeFn func() error, dial Dialer,
	newBar func(label, unit string, total int64) *progress.Bar) (eval.Caller, func() error, error) {
	bar := newBar("ingest "+ds.Name, "docs", 0)
	opt := eval.IngestOptions{BatchSize: p.batch, Concurrency: p.ingestConc, Limit: p.limit, Retries: 3,
		Retryable: func(err error) bool { return rcp.CodeOf(err).Retryable() }}
	if bar != nil {
		opt.Progress = func(pr eval.Progress) { bar.SetTotal(pr.Total); bar.Set(pr.Done) }
	}
	_, err := eval.IngestFile(ctx, ds.CorpusPath, opt, eval.RCPIngest(c, nil))
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return c, closeFn, err
	}
	// The engine derives its dense index (graph, tree) from the new corpus
	// in the background: measure once that has settled, so that every mode
	// is offered and answers from a current structure.
	if err := p.settle(ctx, c); err != nil {
		return c, closeFn, err
	}
	if closeFn != nil {
		closeFn()
	}
	return dial(ctx, p.target)
}

// settle waits until the server has derived everything from the corpus
// (rcpd's x-rcpgo/readiness), at most -settle-timeout.
func (p *evalPlan) settle(ctx context.Context, c eval.Caller) error {
	ctx, cancel := context.WithTimeout(ctx, p.settleFor)
	defer cancel()
	var w io.Writer = p.stderr
	if p.quiet {
		w = nil
	}
	info := func(ctx context.Context) (rcp.Meta, error) {
		raw, err := c.Call(ctx, rcp.MethodInfo, nil)
		switch rcp.CodeOf(err) {
		case 0:
		case rcp.CodeUnknownMethod, rcp.CodeMethodNotFound, rcp.CodeCapabilityMissing:
			return nil, nil // a caller that is no RCP server answers no readiness: nothing to wait for
		default:
			return nil, err
		}
		var res rcp.InitializeResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("info: %w", err)
		}
		return res.Meta, nil
	}
	_, err := settle.Wait(ctx, info, w, settle.Poll)
	return err
}

// run evaluates every mode and gathers the report, writing each mode's
// run file when asked.
func (p *evalPlan) run(ctx context.Context, ds *eval.Dataset, c eval.Caller, newBar func(label, unit string, total int64) *progress.Bar) (*eval.Report, error) {
	rr := &eval.RCPRetriever{Caller: c, Seed: &p.seed, IndexVersion: p.indexVersion}
	runner := &eval.Runner{Retrieve: rr.Retrieve, K: p.k, Metrics: p.metrics, Concurrency: p.conc, MaxErrors: p.maxErrors, KeepPerQuery: p.perQuery}
	rep := &eval.Report{Dataset: ds.Name, Split: ds.Split, Queries: len(ds.Queries), Started: time.Now().UTC().Truncate(time.Second)}
	for _, m := range p.metrics {
		rep.Metrics = append(rep.Metrics, m.String())
	}
	for _, mode := range p.modes {
		bar := newBar(mode.Name, "queries", int64(len(ds.Queries)))
		if bar != nil {
			runner.Progress = func(pr eval.Progress) { bar.Set(pr.Done) }
		}
		res, err := runner.RunMode(ctx, ds.Queries, ds.Qrels, mode)
		if bar != nil {
			bar.Finish()
		}
		if err != nil {
			return nil, err
		}
		rep.Modes = append(rep.Modes, res)
		if p.runsDir != "" {
			if err := writeRunFile(p.runsDir, ds.Name, mode.Name, res.Run); err != nil {
				return nil, err
			}
		}
	}
	rep.IndexVersion = rr.Pinned()
	return rep, nil
}

// write writes the report: JSON or the Markdown table to stdout or files,
// and the chart.
func (p *evalPlan) write(stdout io.Writer, rep *eval.Report) error {
	md := rep.Markdown()
	if err := writeReport(stdout, p.jsonOut, md, rep.WriteJSON); err != nil {
		return err
	}
	if p.mdOut != "" {
		if err := os.WriteFile(p.mdOut, []byte(md), 0o644); err != nil {
			return err
		}
	}
	if p.chartOut != "" {
		return evalchart.WriteFile(rep, p.chartOut)
	}
	return nil
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
