package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rcpgo/rcpgo/eval"
	"github.com/rcpgo/rcpgo/rcp"
)

// datasetInfo describes one BEIR dataset under Options.Datasets.
type datasetInfo struct {
	Name   string   `json:"name"`
	Splits []string `json:"splits"`
}

// datasets lists the subdirectories of the datasets root that hold a BEIR
// dataset (corpus.jsonl, queries.jsonl and at least one qrels/*.tsv).
func (h *Handler) datasets() ([]datasetInfo, error) {
	if h.opts.Datasets == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(h.opts.Datasets)
	if err != nil {
		return nil, fmt.Errorf("datasets: %w", err)
	}
	var out []datasetInfo
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(h.opts.Datasets, e.Name())
		if !isFile(filepath.Join(dir, "corpus.jsonl")) || !isFile(filepath.Join(dir, "queries.jsonl")) {
			continue
		}
		qrels, _ := filepath.Glob(filepath.Join(dir, "qrels", "*.tsv"))
		if len(qrels) == 0 {
			continue
		}
		d := datasetInfo{Name: e.Name()}
		for _, q := range qrels {
			d.Splits = append(d.Splits, strings.TrimSuffix(filepath.Base(q), ".tsv"))
		}
		out = append(out, d)
	}
	return out, nil
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func (h *Handler) serveDatasets(w http.ResponseWriter, r *http.Request) {
	ds, err := h.datasets()
	if err != nil {
		apiError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeAPI(w, http.StatusOK, map[string]any{"enabled": h.opts.Datasets != "", "datasets": ds})
}

// evalRequest is the body of /console/api/eval.
type evalRequest struct {
	Dataset string      `json:"dataset"`
	Split   string      `json:"split"`
	Modes   []eval.Mode `json:"modes"`
	Metrics string      `json:"metrics"`
	K       int         `json:"k"`
	// MaxQueries evaluates only the first n judged queries (0: all).
	MaxQueries int `json:"maxQueries"`
	// Ingest adds the corpus first (BEIR ids: a re-run upserts).
	Ingest bool `json:"ingest"`
}

// decodeEvalRequest reads one evalRequest (at most 1 MiB, no unknown
// fields, nothing after it).
func decodeEvalRequest(r io.Reader) (evalRequest, error) {
	var req evalRequest
	dec := json.NewDecoder(io.LimitReader(r, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("bad eval request: %w", err)
	}
	if dec.More() {
		return req, errors.New("bad eval request: data after the JSON object")
	}
	return req, nil
}

// evalPlan is a validated evalRequest.
type evalPlan struct {
	ds      *eval.Dataset
	modes   []eval.Mode
	metrics []eval.Metric
	k       int
	ingest  bool
}

// plan validates req against the datasets root: the dataset must be one
// datasets() lists, so a request cannot name another directory.
func (h *Handler) plan(req evalRequest) (*evalPlan, error) {
	list, err := h.datasets()
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(list, func(d datasetInfo) bool { return d.Name == req.Dataset })
	if i < 0 {
		return nil, fmt.Errorf("dataset %q: not one of the datasets under the server's --ui-datasets directory", req.Dataset)
	}
	if req.Split == "" {
		req.Split = "test"
	}
	if !slices.Contains(list[i].Splits, req.Split) {
		return nil, fmt.Errorf("dataset %s has no split %q (have %v)", req.Dataset, req.Split, list[i].Splits)
	}
	if req.K < 0 || req.MaxQueries < 0 {
		return nil, errors.New("k and maxQueries must not be negative")
	}
	p := &evalPlan{modes: req.Modes, metrics: eval.DefaultMetrics, k: req.K, ingest: req.Ingest}
	if len(p.modes) == 0 {
		p.modes = []eval.Mode{{Name: "default"}}
	}
	for j, m := range p.modes {
		if strings.TrimSpace(m.Name) == "" {
			return nil, fmt.Errorf("modes[%d]: a name is required", j)
		}
	}
	if req.Metrics != "" {
		if p.metrics, err = eval.ParseMetrics(req.Metrics); err != nil {
			return nil, err
		}
	}
	if p.ds, err = eval.LoadBEIR(filepath.Join(h.opts.Datasets, req.Dataset), req.Split); err != nil {
		return nil, err
	}
	if req.MaxQueries > 0 && req.MaxQueries < len(p.ds.Queries) {
		p.ds.Queries = p.ds.Queries[:req.MaxQueries]
		keep := make(eval.Qrels, req.MaxQueries)
		for _, q := range p.ds.Queries {
			keep[q.ID] = p.ds.Qrels[q.ID]
		}
		p.ds.Qrels = keep
	}
	return p, nil
}

// evalEvent is one server-sent event of an evaluation.
type evalEvent struct {
	Type     string       `json:"type"` // progress, report or error
	Phase    string       `json:"phase,omitempty"`
	Mode     string       `json:"mode,omitempty"`
	Done     int64        `json:"done,omitempty"`
	Total    int64        `json:"total,omitempty"`
	Report   *eval.Report `json:"report,omitempty"`
	Chart    *eval.Chart  `json:"chart,omitempty"` // what the page draws
	Markdown string       `json:"markdown,omitempty"`
	Error    string       `json:"error,omitempty"`
}

// evalBusy allows one evaluation at a time per process: an evaluation
// saturates the engine, and two would each measure the other's load.
var evalBusy sync.Mutex

// serveEval runs an evaluation like `rcp eval` and streams its progress as
// server-sent events, ending with the report and its chart. The queries go
// to the RCP server in-process, over a session of their own.
func (h *Handler) serveEval(w http.ResponseWriter, r *http.Request) {
	if h.opts.Datasets == "" {
		apiError(w, http.StatusNotFound, "evaluation is disabled: start rcpd with --ui-datasets DIR")
		return
	}
	req, err := decodeEvalRequest(r.Body)
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	p, err := h.plan(req)
	if err != nil {
		apiError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	if !evalBusy.TryLock() {
		apiError(w, http.StatusConflict, "another evaluation is running")
		return
	}
	defer evalBusy.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	send := newEventWriter(w)
	rep, err := h.runEval(r.Context(), p, send)
	if err != nil {
		send(evalEvent{Type: "error", Error: err.Error()})
		return
	}
	ev := evalEvent{Type: "report", Report: rep, Markdown: rep.Markdown()}
	if c, err := rep.Chart(); err == nil {
		ev.Chart = c
	}
	send(ev)
}

// newEventWriter returns a serialised writer of SSE data frames.
func newEventWriter(w http.ResponseWriter) func(evalEvent) {
	var mu sync.Mutex
	flusher, _ := w.(http.Flusher)
	return func(ev evalEvent) {
		b, _ := json.Marshal(ev) // plain data: always encodes
		mu.Lock()
		defer mu.Unlock()
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// runEval ingests (optionally) and runs every mode, as eval.Main does.
func (h *Handler) runEval(ctx context.Context, p *evalPlan, send func(evalEvent)) (*eval.Report, error) {
	dial := func() (*rcp.Client, error) {
		return rcp.ConnectInProcess(ctx, h.opts.Server, &rcp.ClientOptions{
			Info: rcp.PeerInfo{Name: "rcpd-console-eval", Version: h.opts.Version}, Logger: h.opts.Logger})
	}
	c, err := dial()
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	if p.ingest {
		opt := eval.IngestOptions{BatchSize: 64, Concurrency: 2, Retries: 3,
			Retryable: func(err error) bool { return rcp.CodeOf(err).Retryable() },
			Progress: func(pr eval.Progress) {
				send(evalEvent{Type: "progress", Phase: "ingest", Done: pr.Done, Total: pr.Total})
			}}
		if _, err := eval.IngestFile(ctx, p.ds.CorpusPath, opt, eval.RCPIngest(clientCaller{c}, nil)); err != nil {
			return nil, err
		}
		// Capabilities are frozen per session (§13.2): reconnect to see
		// what the engine offers after the ingest.
		_ = c.Close()
		if c, err = dial(); err != nil {
			return nil, err
		}
	}
	seed := int64(1)
	rr := &eval.RCPRetriever{Caller: clientCaller{c}, Seed: &seed}
	runner := &eval.Runner{Retrieve: rr.Retrieve, K: p.k, Metrics: p.metrics, Concurrency: 4}
	rep := &eval.Report{Dataset: p.ds.Name, Split: p.ds.Split, Queries: len(p.ds.Queries), Started: time.Now().UTC().Truncate(time.Second)}
	for _, m := range p.metrics {
		rep.Metrics = append(rep.Metrics, m.String())
	}
	for _, mode := range p.modes {
		runner.Progress = func(pr eval.Progress) {
			send(evalEvent{Type: "progress", Phase: "query", Mode: mode.Name, Done: pr.Done, Total: pr.Total})
		}
		res, err := runner.RunMode(ctx, p.ds.Queries, p.ds.Qrels, mode)
		if err != nil {
			return nil, fmt.Errorf("mode %s: %w", mode.Name, err)
		}
		rep.Modes = append(rep.Modes, res)
	}
	rep.IndexVersion = rr.Pinned()
	return rep, nil
}

// clientCaller adapts *rcp.Client to eval.Caller.
type clientCaller struct{ c *rcp.Client }

func (cc clientCaller) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := cc.c.Call(ctx, method, params, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}
