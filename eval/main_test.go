package eval

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScoreMain(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"-qrels", "testdata/random.qrels", "-run", "a=testdata/random.run,testdata/small.run",
		"-metrics", "ndcg@10,recall@100,map", "-json", filepath.Join(dir, "r.json"),
		"-md", filepath.Join(dir, "r.md"), "-chart", filepath.Join(dir, "r.svg")}
	if code := ScoreMain(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := readExpected(t, "testdata/random.expected.tsv")["all"]
	var rep Report
	b, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatal(err)
	}
	if len(rep.Modes) != 2 || rep.Modes[0].Mode.Name != "a" || rep.Modes[1].Mode.Name != "small" {
		t.Fatalf("modes %+v", rep.Modes)
	}
	if got := rep.Modes[0].Scores.Mean["ndcg@10"]; got != want["ndcg@10"] {
		t.Fatalf("ndcg@10 %v, reference %v", got, want["ndcg@10"])
	}
	if !strings.Contains(out.String(), "| a |") || !strings.Contains(errb.String(), "no ranking") {
		t.Fatalf("stdout %q stderr %q", out.String(), errb.String())
	}
	if code := ScoreMain([]string{"-run", "x"}, &out, &errb); code != 2 {
		t.Fatalf("usage error exit %d", code)
	}
	if code := ScoreMain([]string{"-qrels", "testdata/none", "-run", "x"}, &out, &errb); code != 1 {
		t.Fatalf("missing file exit %d", code)
	}
}
