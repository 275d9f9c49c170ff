package evalchart

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/eval"
)

func TestWriteFile(t *testing.T) {
	rep := &eval.Report{Dataset: "d", Queries: 2, Metrics: []string{"ndcg@10", "recall@100"},
		Modes: []*eval.ModeResult{
			{Mode: eval.Mode{Name: "bm25"}, Scores: &eval.Scores{Mean: map[string]float64{"ndcg@10": 0.5, "recall@100": 0.9}},
				RecallCurve: []eval.CurvePoint{{K: 1, Recall: 0.1}, {K: 10, Recall: 0.5}, {K: 100, Recall: 0.9}}},
			{Mode: eval.Mode{Name: "hybrid"}, Scores: &eval.Scores{Mean: map[string]float64{"ndcg@10": 0.6, "recall@100": 0.95}},
				RecallCurve: []eval.CurvePoint{{K: 1, Recall: 0.2}, {K: 10, Recall: 0.6}, {K: 100, Recall: 0.95}}},
		}}
	dir := t.TempDir()
	for name, magic := range map[string]string{"r.png": "\x89PNG", "r.svg": "<svg"} {
		p := filepath.Join(dir, name)
		if err := WriteFile(rep, p); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) < 10_000 || !bytes.Contains(b[:min(len(b), 512)], []byte(magic)) {
			t.Errorf("%s: %d bytes, %v", name, len(b), err)
		}
	}
	if err := WriteFile(rep, filepath.Join(dir, "r.gif")); err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Errorf("gif: %v", err)
	}
	if err := WriteFile(&eval.Report{}, filepath.Join(dir, "e.png")); err == nil || !strings.Contains(err.Error(), "no modes") {
		t.Errorf("empty report: %v", err)
	}
}
