package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/internal/testutil/shared"
	"github.com/rcpgo/rcpgo/rcp"
)

// bm25 is a tiny in-memory BM25 index used as a real retrieval function in
// these tests (lower-cased alphanumeric tokens, no stemming).
type bm25 struct {
	mu       sync.Mutex
	ids      []string
	tf       []map[string]int
	length   []int
	seen     map[string]int
	postings map[string][]posting // built on the first retrieve after a change
	avg      float64
}

type posting struct {
	doc int
	tf  float64
}

func newBM25() *bm25 { return &bm25{seen: map[string]int{}} }

func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
}

// add upserts docs by id (re-adding an id replaces it).
func (x *bm25) add(_ context.Context, docs []Doc) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.postings = nil
	for _, d := range docs {
		tf := map[string]int{}
		toks := tokens(d.Body())
		for _, t := range toks {
			tf[t]++
		}
		if i, ok := x.seen[d.ID]; ok {
			x.tf[i], x.length[i] = tf, len(toks)
			continue
		}
		x.seen[d.ID] = len(x.ids)
		x.ids = append(x.ids, d.ID)
		x.tf = append(x.tf, tf)
		x.length = append(x.length, len(toks))
	}
	return nil
}

func (x *bm25) index() (map[string][]posting, float64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.postings == nil {
		x.postings = map[string][]posting{}
		total := 0
		for i, tf := range x.tf {
			total += x.length[i]
			for t, f := range tf {
				x.postings[t] = append(x.postings[t], posting{i, float64(f)})
			}
		}
		x.avg = float64(total) / float64(len(x.tf))
	}
	return x.postings, x.avg
}

func (x *bm25) retrieve(_ context.Context, query string, k int, opts Options) ([]Ranked, error) {
	k1, b := opts["k1"].(float64), opts["b"].(float64)
	postings, avg := x.index()
	n := float64(len(x.ids))
	score := make([]float64, len(x.ids))
	for _, t := range tokens(query) {
		ps := postings[t]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			score[p.doc] += idf * p.tf * (k1 + 1) / (p.tf + k1*(1-b+b*float64(x.length[p.doc])/avg))
		}
	}
	var out []Ranked
	for i, s := range score {
		if s > 0 {
			out = append(out, Ranked{x.ids[i], s})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].DocID < out[j].DocID
	})
	return out[:min(k, len(out))], nil
}

// TestRunnerCranfieldBM25 ingests Cranfield into the toy BM25 and evaluates
// two parameter sets end to end. Set EVAL_REPORT_DIR to keep the outputs.
func TestRunnerCranfieldBM25(t *testing.T) {
	ds, err := LoadBEIR(shared.Path(t, "datasets", "cranfield"), "test")
	if err != nil {
		t.Fatal(err)
	}
	idx := newBM25()
	var calls atomic.Int64
	var last Progress
	st, err := IngestFile(context.Background(), ds.CorpusPath, IngestOptions{
		BatchSize: 100, Concurrency: 2, Progress: func(p Progress) { last = p },
	}, func(ctx context.Context, docs []Doc) error {
		calls.Add(1)
		return idx.add(ctx, docs)
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Docs != 1400 || st.Batches != 14 || calls.Load() != 14 || len(idx.ids) != 1400 || last.Done != 1400 || last.Total != 1400 {
		t.Fatalf("ingest %+v, %d calls, %d docs indexed, last progress %+v", st, calls.Load(), len(idx.ids), last)
	}
	// A second ingest upserts: same ids, no growth.
	if _, err := IngestFile(context.Background(), ds.CorpusPath, IngestOptions{BatchSize: 500, Limit: 700}, idx.add); err != nil || len(idx.ids) != 1400 {
		t.Fatalf("re-ingest: %v, %d docs", err, len(idx.ids))
	}

	var progressCalls atomic.Int64
	r := &Runner{Retrieve: idx.retrieve, Concurrency: 2, KeepPerQuery: true,
		Progress: func(p Progress) { progressCalls.Add(1) }}
	rep, err := r.Run(context.Background(), ds, []Mode{
		{Name: "bm25 k1=0.9 b=0.4", Options: Options{"k1": 0.9, "b": 0.4}},
		{Name: "bm25 k1=1.2 b=0.75", Options: Options{"k1": 1.2, "b": 0.75}},
		{Name: "bm25 b=0 (no length norm)", Options: Options{"k1": 1.2, "b": 0.0}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if progressCalls.Load() != 3*225 {
		t.Fatalf("%d progress calls, want %d", progressCalls.Load(), 3*225)
	}
	for _, m := range rep.Modes {
		nd := m.Scores.Mean["ndcg@10"]
		t.Logf("%-28s nDCG@10 %.4f  R@100 %.4f  MRR@10 %.4f", m.Mode.Name, nd, m.Scores.Mean["recall@100"], m.Scores.Mean["mrr@10"])
		// Lucene with stemming scores 0.35 (README); unstemmed BM25 lands near 0.3.
		if nd < 0.25 || nd > 0.45 || m.K != 100 || m.Scores.NumQueries != 225 || len(m.RecallCurve) != 9 {
			t.Errorf("%s: implausible result %+v", m.Mode.Name, m)
		}
		// The report's figures are those of the run file written and read back.
		var buf bytes.Buffer
		if err := WriteRun(&buf, m.Run, "bm25"); err != nil {
			t.Fatal(err)
		}
		back, _, err := ReadRun(&buf)
		if err != nil {
			t.Fatal(err)
		}
		again := Evaluate(ds.Qrels, back, DefaultMetrics)
		for k, v := range m.Scores.Mean {
			if math.Abs(again.Mean[k]-v) > 1e-12 {
				t.Errorf("%s: %s from run file %v, live %v", m.Mode.Name, k, again.Mean[k], v)
			}
		}
	}

	dir := os.Getenv("EVAL_REPORT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var decoded Report
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil || len(decoded.Modes) != 3 {
		t.Fatalf("JSON report does not decode: %v", err)
	}
	md := rep.Markdown()
	if !strings.Contains(md, "| mode | nDCG@10 |") || strings.Count(md, "\n") != 7 || !strings.Contains(md, "**") {
		t.Fatalf("markdown:\n%s", md)
	}
	if c, err := rep.Chart(); err != nil || len(c.Modes) != 3 || strings.Join(c.Labels, ",") != "nDCG@10,Recall@100" || c.MaxK != 100 {
		t.Fatalf("chart %+v: %v", c, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cranfield.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cranfield.json"), js.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fixedQueries(n int) ([]Query, Qrels) {
	qs := make([]Query, n)
	qrels := Qrels{}
	for i := range qs {
		id := string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		qs[i] = Query{ID: id, Text: id}
		qrels[id] = Judged{id: 1}
	}
	return qs, qrels
}

func TestRunnerBoundsConcurrency(t *testing.T) {
	qs, qrels := fixedQueries(40)
	var inFlight, peak atomic.Int64
	reached := make(chan struct{})
	var once sync.Once
	r := &Runner{Concurrency: 3, K: 5, Metrics: []Metric{{MRR, 0}}, Retrieve: func(ctx context.Context, q string, k int, _ Options) ([]Ranked, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == 3 {
			once.Do(func() { close(reached) })
		}
		select { // hold the first calls until all three workers are in
		case <-reached:
		case <-time.After(5 * time.Second):
		}
		if k != 5 {
			return nil, errors.New("wrong k")
		}
		time.Sleep(2 * time.Millisecond)
		// answer the query id second, and more than k hits
		return []Ranked{{"other", 2}, {q, 1}, {"o2", 0}, {"o3", 0}, {"o4", 0}, {"o5", 0}, {"o6", 0}}, nil
	}}
	res, err := r.RunMode(context.Background(), qs, qrels, Mode{Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if peak.Load() != 3 {
		t.Errorf("peak concurrency %d, want 3", peak.Load())
	}
	if res.Scores.Mean["mrr"] != 0.5 || len(res.Run["a"]) != 5 || res.Latency.P50Ms < 2 || res.QPS <= 0 {
		t.Fatalf("result %+v", res)
	}
}

func TestRunnerErrors(t *testing.T) {
	qs, qrels := fixedQueries(30)
	boom := errors.New("boom")
	failing := func(ctx context.Context, q string, k int, _ Options) ([]Ranked, error) {
		if q == "c" || q == "d" {
			return nil, boom
		}
		return []Ranked{{q, 1}}, nil
	}
	_, err := (&Runner{Retrieve: failing, Concurrency: 2}).RunMode(context.Background(), qs, qrels, Mode{Name: "m"})
	if !errors.Is(err, ErrTooManyErrors) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v, want ErrTooManyErrors", err)
	}
	res, err := (&Runner{Retrieve: failing, MaxErrors: 2}).RunMode(context.Background(), qs, qrels, Mode{Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failures != 2 || math.Abs(res.Scores.Mean["recall@10"]-28.0/30) > 1e-12 {
		t.Fatalf("failures %d, recall %v", res.Failures, res.Scores.Mean["recall@10"])
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&Runner{Retrieve: failing}).RunMode(ctx, qs, qrels, Mode{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	slow := func(ctx context.Context, q string, k int, _ Options) ([]Ranked, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	_, err = (&Runner{Retrieve: slow, QueryTimeout: time.Millisecond}).RunMode(context.Background(), qs, qrels, Mode{})
	if !errors.Is(err, ErrTooManyErrors) || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("timeout: %v", err)
	}
}

func TestIngestRetriesAndFailure(t *testing.T) {
	var corpus strings.Builder
	for i := 0; i < 25; i++ {
		fmt.Fprintf(&corpus, "{\"_id\": %d, \"text\": \"t\"}\n", i)
	}
	flaky := errors.New("flaky")
	var attempts atomic.Int64
	var got []string
	var mu sync.Mutex
	st, err := Ingest(context.Background(), strings.NewReader(corpus.String()),
		IngestOptions{BatchSize: 10, Retries: 2, Backoff: time.Millisecond},
		func(_ context.Context, docs []Doc) error {
			if attempts.Add(1) == 2 { // the second batch fails once
				return flaky
			}
			mu.Lock()
			for _, d := range docs {
				got = append(got, d.ID)
			}
			mu.Unlock()
			return nil
		})
	if err != nil || st.Docs != 25 || st.Batches != 3 || st.Retries != 1 || len(got) != 25 {
		t.Fatalf("stats %+v, err %v, %d docs", st, err, len(got))
	}
	if got[0] != "0" || got[10] != "10" {
		t.Fatalf("ids %v", got)
	}
	_, err = Ingest(context.Background(), strings.NewReader(corpus.String()),
		IngestOptions{BatchSize: 10, Retries: 3, Retryable: func(error) bool { return false }},
		func(context.Context, []Doc) error { return flaky })
	if !errors.Is(err, flaky) {
		t.Fatalf("err %v, want flaky", err)
	}
	_, err = Ingest(context.Background(), strings.NewReader("{bad json}\n"), IngestOptions{}, func(context.Context, []Doc) error { return nil })
	if err == nil {
		t.Fatal("bad corpus accepted")
	}
}

// rcpServer puts the toy BM25 behind an RCP-shaped Caller: params and
// results go through JSON as they would on the wire.
type rcpServer struct {
	idx     *bm25
	version string
	calls   []map[string]any
	mu      sync.Mutex
}

func (s *rcpServer) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	switch method {
	case rcp.MethodIndexAdd:
		var p rcp.IndexAddParams
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, err
		}
		docs := make([]Doc, len(p.Documents))
		ids := make([]string, len(p.Documents))
		for i, d := range p.Documents {
			docs[i], ids[i] = Doc{ID: d.ID, Text: d.Text}, d.ID
		}
		_ = s.idx.add(ctx, docs)
		return json.Marshal(rcp.IndexAddResult{IDs: ids})
	case rcp.MethodRetrieve:
		var p map[string]any
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.calls = append(s.calls, p)
		s.mu.Unlock()
		if v, ok := p["indexVersion"]; ok && v != s.version {
			return nil, &rcp.Error{Code: rcp.CodeBackendUnavailable, Message: "snapshot gone"}
		}
		hits, _ := s.idx.retrieve(ctx, p["query"].(string), int(p["k"].(float64)), Options{"k1": p["k1"], "b": p["b"]})
		res := rcp.RetrieveResult{IndexVersion: s.version}
		for _, h := range hits {
			res.Hits = append(res.Hits, rcp.Hit{ID: rcp.StringID(h.DocID), Score: h.Score})
		}
		return json.Marshal(res)
	}
	return nil, &rcp.Error{Code: rcp.CodeUnknownMethod, Message: method}
}

func TestRCPAdapters(t *testing.T) {
	ds, err := LoadBEIR(shared.Path(t, "datasets", "cranfield"), "test")
	if err != nil {
		t.Fatal(err)
	}
	srv := &rcpServer{idx: newBM25(), version: "v1"}
	if _, err := IngestFile(context.Background(), ds.CorpusPath, IngestOptions{BatchSize: 200}, RCPIngest(srv, nil)); err != nil {
		t.Fatal(err)
	}
	seed := int64(7)
	rr := &RCPRetriever{Caller: srv, Seed: &seed}
	r := &Runner{Retrieve: rr.Retrieve, Concurrency: 1}
	res, err := r.RunMode(context.Background(), ds.Queries, ds.Qrels, Mode{Name: "bm25", Options: Options{"k1": 0.9, "b": 0.4}})
	if err != nil {
		t.Fatal(err)
	}
	// the same figure as the direct call in TestRunnerCranfieldBM25
	if got := res.Scores.Mean["ndcg@10"]; math.Abs(got-0.3276) > 5e-5 {
		t.Fatalf("nDCG@10 through RCP %.4f, direct 0.3276", got)
	}
	if rr.Pinned() != "v1" || srv.calls[0]["seed"] != 7.0 || srv.calls[0]["indexVersion"] != nil || srv.calls[1]["indexVersion"] != "v1" {
		t.Fatalf("pinning: %q, first call %v, second %v", rr.Pinned(), srv.calls[0], srv.calls[1])
	}
	srv.version = "v2" // the snapshot moves: a pinned run must fail, not drift
	if _, err := rr.Retrieve(context.Background(), "flow", 10, Options{"k1": 0.9, "b": 0.4}); rcp.CodeOf(err) != rcp.CodeBackendUnavailable {
		t.Fatalf("err %v, want BackendUnavailable", err)
	}
	srv.version = "v3"
	chunkSrv := CallerFunc(func(ctx context.Context, m string, p any) (json.RawMessage, error) {
		return json.RawMessage(`{"hits":[{"id":1,"score":2,"chunk":{"docId":"d9","index":0}}],"indexVersion":"v3"}`), nil
	})
	if _, err := (&RCPRetriever{Caller: chunkSrv, IndexVersion: "v2"}).Retrieve(context.Background(), "q", 1, nil); err == nil {
		t.Fatal("a result from another snapshot was accepted")
	}
	hits, err := (&RCPRetriever{Caller: chunkSrv}).Retrieve(context.Background(), "q", 1, nil)
	if err != nil || len(hits) != 1 || hits[0].DocID != "d9" {
		t.Fatalf("chunk hit: %v %v", hits, err)
	}
	bad := CallerFunc(func(ctx context.Context, m string, p any) (json.RawMessage, error) {
		return json.RawMessage(`{"ids":["x"]}`), nil
	})
	if err := RCPIngest(bad, nil)(context.Background(), []Doc{{ID: "a"}}); err == nil || !strings.Contains(err.Error(), `"a" as "x"`) {
		t.Fatalf("id mismatch: %v", err)
	}
}

// CallerFunc adapts a function to Caller (test helper).
type CallerFunc func(ctx context.Context, method string, params any) (json.RawMessage, error)

func (f CallerFunc) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return f(ctx, method, params)
}

// TestRCPRetrieverSummaryLeaves: a tree-node or community hit is scored as
// the documents of its provenance.leaves (chunk unit D#cN → D), in leaf
// order, each document once at its first place; before this a summary hit
// scored as its own id ("t1.0"), which no qrels name.
func TestRCPRetrieverSummaryLeaves(t *testing.T) {
	srv := CallerFunc(func(ctx context.Context, m string, p any) (json.RawMessage, error) {
		return json.RawMessage(`{"hits":[
			{"id":"t1.4","score":3,"unit":"tree-node","level":1,"provenance":{"leaves":["d2#c1","d1","d2#c0","x#cap"]}},
			{"id":"c0.2","score":2,"unit":"community","level":0,"provenance":{"leaves":["d1#c3","d3#c0"]}},
			{"id":"d4#c2","score":1,"unit":"chunk","chunk":{"docId":"d4","index":2}},
			{"id":"t1.5","score":0.5,"unit":"tree-node","level":1}]}`), nil
	})
	got, err := (&RCPRetriever{Caller: srv}).Retrieve(context.Background(), "q", 10, Options{"unit": "tree-node", "level": 1})
	if err != nil {
		t.Fatal(err)
	}
	want := []Ranked{{"d2", 3}, {"d1", 3}, {"x#cap", 3}, {"d3", 2}, {"d4", 1}, {"t1.5", 0.5}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ranked %v, want %v", got, want)
	}
	for leaf, doc := range map[string]string{"a#c12": "a", "a#c": "a#c", "#c1": "#c1", "a#b#c0": "a#b", "a": "a", "a#c1x": "a#c1x"} {
		if got := LeafDocID(leaf); got != doc {
			t.Errorf("LeafDocID(%q) = %q, want %q", leaf, got, doc)
		}
	}
}
