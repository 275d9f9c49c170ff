package evalcmd

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/eval"
)

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestScore(t *testing.T) {
	dir := t.TempDir()
	qrels := writeFile(t, dir, "qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t1\nq2\td3\t1\n")
	a := writeFile(t, dir, "a.run", "q1 Q0 d1 1 2.0 a\nq1 Q0 d9 2 1.0 a\n")
	small := writeFile(t, dir, "small.run", "q1 Q0 d9 1 2.0 s\nq1 Q0 d2 2 1.0 s\nq2 Q0 d3 1 1.0 s\n")
	var out, errb bytes.Buffer
	args := []string{"-qrels", qrels, "-run", "a=" + a + "," + small,
		"-metrics", "ndcg@10,recall@100,map", "-json", filepath.Join(dir, "r.json"),
		"-md", filepath.Join(dir, "r.md"), "-chart", filepath.Join(dir, "r.svg")}
	if code := Score(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep eval.Report
	b, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatal(err)
	}
	if len(rep.Modes) != 2 || rep.Modes[0].Mode.Name != "a" || rep.Modes[1].Mode.Name != "small" {
		t.Fatalf("modes %+v", rep.Modes)
	}
	// q1: d1 at rank 1 of two relevant → recall 1/2; q2 unranked → 0.
	if got := rep.Modes[0].Scores.Mean["recall@100"]; math.Abs(got-0.25) > 1e-9 {
		t.Fatalf("recall@100 %v, want 0.25", got)
	}
	if !strings.Contains(out.String(), "| a |") || !strings.Contains(errb.String(), "no ranking") {
		t.Fatalf("stdout %q stderr %q", out.String(), errb.String())
	}
	for _, p := range []string{"r.md", "r.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, p)); err != nil || fi.Size() == 0 {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if code := Score([]string{"-run", "x"}, &out, &errb); code != 2 {
		t.Fatalf("usage error exit %d", code)
	}
	if code := Score([]string{"-qrels", filepath.Join(dir, "none"), "-run", "x"}, &out, &errb); code != 1 {
		t.Fatalf("missing file exit %d", code)
	}
}
