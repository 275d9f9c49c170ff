package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/internal/shared"
)

func TestMainEndToEnd(t *testing.T) {
	srv := &rcpServer{idx: newBM25(), version: "snap-1"}
	dial := func(ctx context.Context, addr string) (Caller, func() error, error) {
		if addr != "mem" {
			return nil, nil, errors.New("no such server")
		}
		return srv, func() error { return nil }, nil
	}
	dir := t.TempDir()
	modes := filepath.Join(dir, "modes.json")
	if err := os.WriteFile(modes, []byte(`[{"name":"bm25 b=0","options":{"k1":1.2,"b":0}}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	args := []string{"-target", "mem", "-dataset", shared.Path(t, "datasets", "cranfield"), "-ingest", "-batch", "300",
		"-mode", `bm25 0.9/0.4={"k1":0.9,"b":0.4}`, "-modes", modes, "-metrics", "ndcg@10,recall@100,mrr@10",
		"-json", filepath.Join(dir, "r.json"), "-md", filepath.Join(dir, "r.md"), "-chart", filepath.Join(dir, "r.png"),
		"-runs", filepath.Join(dir, "runs"), "-per-query"}
	if code := Main(args, &out, &errb, dial); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep Report
	b, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.IndexVersion != "snap-1" || len(rep.Modes) != 2 || math.Abs(rep.Modes[0].Scores.Mean["ndcg@10"]-0.3276) > 5e-5 ||
		len(rep.Modes[1].Scores.PerQuery) != 225 {
		t.Fatalf("report %+v", rep)
	}
	run, tag, err := ReadRunFile(filepath.Join(dir, "runs", "cranfield.bm25_0.9_0.4.run"))
	if err != nil || tag != "bm25_0.9_0.4" || len(run) != 225 {
		t.Fatalf("run file: %d queries, tag %q, %v", len(run), tag, err)
	}
	if !strings.Contains(out.String(), "| bm25 b=0 |") || !strings.Contains(errb.String(), "ingest cranfield 100% 1400/1400 docs") {
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
	if code := Main([]string{"-target", "nowhere", "-dataset", shared.Path(t, "datasets", "cranfield"), "-quiet"}, &out, &errb, dial); code != 1 {
		t.Errorf("dial failure: exit %d", code)
	}
}
