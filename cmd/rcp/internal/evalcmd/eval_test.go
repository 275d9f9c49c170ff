package evalcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rcpgo/rcpgo/eval"
	"github.com/rcpgo/rcpgo/rcp"
)

// fakeServer answers index/add by echoing the ids and retrieve by ranking
// the stored documents that contain the query's first word.
type fakeServer struct {
	mu        sync.Mutex
	docs      []rcp.Document
	retrieves []map[string]any // params of each retrieve call
}

func (s *fakeServer) Call(_ context.Context, method string, params any) (json.RawMessage, error) {
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch method {
	case rcp.MethodIndexAdd:
		var p rcp.IndexAddParams
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, err
		}
		var res rcp.IndexAddResult
		for _, d := range p.Documents {
			s.docs = append(s.docs, d)
			res.IDs = append(res.IDs, d.ID)
		}
		return json.Marshal(res)
	case rcp.MethodRetrieve:
		var p struct {
			Query string `json:"query"`
			K     int    `json:"k"`
		}
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, err
		}
		var opts map[string]any
		if err := json.Unmarshal(b, &opts); err != nil {
			return nil, err
		}
		s.retrieves = append(s.retrieves, opts)
		word, _, _ := strings.Cut(strings.ToLower(p.Query), " ")
		res := rcp.RetrieveResult{IndexVersion: "snap-1"}
		for _, d := range s.docs {
			if len(res.Hits) < p.K && strings.Contains(strings.ToLower(d.Text), word) {
				res.Hits = append(res.Hits, rcp.Hit{ID: rcp.StringID(d.ID), Score: 1 / float64(len(res.Hits)+1)})
			}
		}
		return json.Marshal(res)
	}
	return nil, &rcp.Error{Code: rcp.CodeUnknownMethod, Message: method}
}

func TestEvalEndToEnd(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "tiny")
	if err := os.MkdirAll(filepath.Join(ds, "qrels"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, ds, "corpus.jsonl", `{"_id":"d1","title":"","text":"wing flutter"}`+"\n"+`{"_id":"d2","text":"boundary layer"}`+"\n")
	writeFile(t, ds, "queries.jsonl", `{"_id":"q1","text":"flutter of wings"}`+"\n"+`{"_id":"q2","text":"boundary"}`+"\n")
	writeFile(t, ds, "qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
	srv := &fakeServer{}
	dial := func(ctx context.Context, addr string) (eval.Caller, func() error, error) {
		if addr != "mem" {
			return nil, nil, errors.New("no such server")
		}
		return srv, func() error { return nil }, nil
	}
	modes := writeFile(t, dir, "modes.json", `[{"name":"from file","options":{"mode":"sparse"}}]`)
	var out, errb bytes.Buffer
	args := []string{"-target", "mem", "-dataset", ds, "-ingest",
		"-mode", `one 1={"mode":"sparse"}`, "-modes", modes, "-metrics", "ndcg@10,recall@100,mrr@10",
		"-json", filepath.Join(dir, "r.json"), "-md", filepath.Join(dir, "r.md"), "-chart", filepath.Join(dir, "r.png"),
		"-runs", filepath.Join(dir, "runs"), "-per-query"}
	if code := Main(args, &out, &errb, dial); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep eval.Report
	b, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.IndexVersion != "snap-1" || len(rep.Modes) != 2 || rep.Modes[0].Scores.Mean["recall@100"] != 1 ||
		len(rep.Modes[1].Scores.PerQuery) != 2 {
		t.Fatalf("report %+v", rep)
	}
	run, tag, err := eval.ReadRunFile(filepath.Join(dir, "runs", "tiny.one_1.run"))
	if err != nil || tag != "one_1" || len(run) != 2 {
		t.Fatalf("run file: %d queries, tag %q, %v", len(run), tag, err)
	}
	if !strings.Contains(out.String(), "| from file |") || !strings.Contains(errb.String(), "ingest tiny 100% 2/2 docs") {
		t.Fatalf("stdout %q\nstderr %q", out.String(), errb.String())
	}
	for _, p := range []string{"r.md", "r.png"} {
		if fi, err := os.Stat(filepath.Join(dir, p)); err != nil || fi.Size() == 0 {
			t.Fatalf("%s: %v", p, err)
		}
	}
	for _, bad := range [][]string{{}, {"-target", "mem"}, {"-target", "mem", "-dataset", "x", "-mode", "a={"}, {"-target", "mem", "-dataset", "x", "-metrics", "bleu"}} {
		if code := Main(bad, &out, &errb, dial); code != 2 {
			t.Errorf("Main(%q) = %d, want 2", bad, code)
		}
	}
	if code := Main([]string{"-target", "nowhere", "-dataset", ds, "-quiet"}, &out, &errb, dial); code != 1 {
		t.Errorf("dial failure: exit %d", code)
	}
}

// TestEvalUnitLevel: -unit and -level reach every retrieve of the modes
// that do not set them; a mode's own unit wins.
func TestEvalUnitLevel(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "tiny")
	if err := os.MkdirAll(filepath.Join(ds, "qrels"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, ds, "corpus.jsonl", `{"_id":"d1","text":"wing flutter"}`+"\n")
	writeFile(t, ds, "queries.jsonl", `{"_id":"q1","text":"flutter"}`+"\n")
	writeFile(t, ds, "qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
	srv := &fakeServer{}
	dial := func(context.Context, string) (eval.Caller, func() error, error) { return srv, nil, nil }
	var out, errb bytes.Buffer
	args := []string{"-target", "mem", "-dataset", ds, "-ingest", "-quiet", "-unit", "tree-node", "-level", "1",
		"-mode", "plain", "-mode", `doc={"unit":"document"}`}
	if code := Main(args, &out, &errb, dial); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if len(srv.retrieves) != 2 {
		t.Fatalf("%d retrieves", len(srv.retrieves))
	}
	if u, l := srv.retrieves[0]["unit"], srv.retrieves[0]["level"]; u != "tree-node" || l != 1.0 {
		t.Errorf("plain mode sent unit %v level %v", u, l)
	}
	if u, l := srv.retrieves[1]["unit"], srv.retrieves[1]["level"]; u != "document" || l != 1.0 {
		t.Errorf("doc mode sent unit %v level %v", u, l)
	}
	if code := Main([]string{"-target", "mem", "-dataset", ds, "-level", "-2"}, &out, &errb, dial); code != 2 {
		t.Errorf("-level -2: exit %d, want 2", code)
	}
}
