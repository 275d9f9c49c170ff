package evalcmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rcpgo/rcpgo/cmd/rcp/internal/evalchart"
	"github.com/rcpgo/rcpgo/eval"
)

// Score is the `rcp score` command: it scores TREC run files
// against qrels, like trec_eval, and writes the report. It returns the exit
// status (0 ok, 1 failure, 2 usage). Example:
//
//	score -qrels qrels/test.tsv -run bm25=bm25.run,hybrid=hybrid.run \
//	      -metrics ndcg@10,recall@100 -json report.json -md report.md -chart report.png
func Score(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("score", flag.ContinueOnError)
	fs.SetOutput(stderr)
	qrelsPath := fs.String("qrels", "", "qrels file (BEIR tsv or TREC) `path`")
	runs := fs.String("run", "", "comma-separated run files, each `[name=]path`")
	metrics := fs.String("metrics", "", "comma-separated metrics (default ndcg@10,recall@10,recall@50,recall@100,mrr@10,map,map@100,p@10)")
	dataset := fs.String("dataset", "", "dataset name for the report (default: the qrels file's directory)")
	jsonOut := fs.String("json", "", "write the JSON report to `path` (- or a bare --json: stdout, instead of the Markdown table)")
	mdOut := fs.String("md", "", "write the Markdown table to `path`")
	chartOut := fs.String("chart", "", "write the chart to `path` (.png or .svg)")
	rankOrder := fs.Bool("rank-order", false, "use the rank column order instead of trec_eval's score order")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *qrelsPath == "" || *runs == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "score: -qrels and -run are required")
		fs.Usage()
		return 2
	}
	ms := eval.DefaultMetrics
	if *metrics != "" {
		var err error
		if ms, err = eval.ParseMetrics(*metrics); err != nil {
			fmt.Fprintln(stderr, "score:", err)
			return 2
		}
	}
	qrels, err := eval.ReadQrelsFile(*qrelsPath)
	if err != nil {
		fmt.Fprintln(stderr, "score:", err)
		return 1
	}
	var names []string
	var loaded []eval.Run
	for _, spec := range strings.Split(*runs, ",") {
		name, path, ok := strings.Cut(spec, "=")
		if !ok {
			path = name
			name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		}
		run, _, err := eval.ReadRunFile(path)
		if err != nil {
			fmt.Fprintln(stderr, "score:", err)
			return 1
		}
		if !*rankOrder {
			run.TrecOrder()
		}
		names = append(names, name)
		loaded = append(loaded, run)
	}
	if *dataset == "" {
		*dataset = filepath.Base(filepath.Dir(filepath.Dir(*qrelsPath)))
	}
	rep := eval.ScoreRuns(*dataset, qrels, names, loaded, ms)
	md := rep.Markdown()
	if err := writeReport(stdout, *jsonOut, md, rep.WriteJSON); err != nil {
		fmt.Fprintln(stderr, "score:", err)
		return 1
	}
	if *mdOut != "" {
		if err := os.WriteFile(*mdOut, []byte(md), 0o644); err != nil {
			fmt.Fprintln(stderr, "score:", err)
			return 1
		}
	}
	if *chartOut != "" {
		if err := evalchart.WriteFile(rep, *chartOut); err != nil {
			fmt.Fprintln(stderr, "score:", err)
			return 1
		}
	}
	for _, m := range rep.Modes {
		if m.Scores.Unranked > 0 {
			fmt.Fprintf(stderr, "score: %s: %d judged queries have no ranking and score 0\n", m.Mode.Name, m.Scores.Unranked)
		}
	}
	return 0
}
