package eval

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func ranking(ids ...string) []Ranked {
	out := make([]Ranked, len(ids))
	for i, id := range ids {
		out[i] = Ranked{DocID: id, Score: float64(len(ids) - i)}
	}
	return out
}

func mustMetrics(t *testing.T, list string) []Metric {
	t.Helper()
	ms, err := ParseMetrics(list)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// Hand-computed cases; the arithmetic is spelled out in each want.
func TestScoreQueryHand(t *testing.T) {
	l2 := math.Log2
	tests := []struct {
		name   string
		judged Judged
		rank   []Ranked
		want   map[string]float64
	}{
		{
			name:   "graded",
			judged: Judged{"d1": 3, "d2": 0, "d3": 2, "d4": 1, "d9": -1},
			rank:   ranking("d2", "d1", "d7", "d4", "d9", "d3"),
			want: map[string]float64{
				// DCG = 3/log2(3) + 1/log2(5) + 2/log2(7); IDCG = 3 + 2/log2(3) + 1/log2(4)
				"ndcg@10": (3/l2(3) + 1/l2(5) + 2/l2(7)) / (3 + 2/l2(3) + 1.0/2),
				// top 5 misses d3; IDCG@5 is the same three grades
				"ndcg@5":    (3/l2(3) + 1/l2(5)) / (3 + 2/l2(3) + 1.0/2),
				"ndcg@1":    0,
				"recall@5":  2.0 / 3,
				"recall@10": 1,
				"mrr@10":    1.0 / 2,
				"mrr@1":     0,
				"map":       (1.0/2 + 2.0/4 + 3.0/6) / 3,
				"map@4":     (1.0/2 + 2.0/4) / 3,
				"p@5":       2.0 / 5,
				"p@10":      3.0 / 10,
			},
		},
		{
			name:   "ideal ranking is 1",
			judged: Judged{"a": 2, "b": 1},
			rank:   ranking("a", "b", "c"),
			want:   map[string]float64{"ndcg@10": 1, "ndcg": 1, "map": 1, "mrr": 1, "recall@2": 1, "p@2": 1, "p@4": 0.5},
		},
		{
			name:   "ideal cut at k",
			judged: Judged{"a": 1, "b": 1, "c": 1},
			rank:   ranking("x", "a"),
			want: map[string]float64{
				"ndcg@2":   (1 / l2(3)) / (1 + 1/l2(3)),
				"recall@2": 1.0 / 3,
				"mrr":      0.5,
				"map":      (1.0 / 2) / 3,
			},
		},
		{
			name:   "no relevant judged",
			judged: Judged{"x": 0, "y": -1},
			rank:   ranking("x", "y"),
			want:   map[string]float64{"ndcg@10": 0, "recall@10": 0, "map": 0, "mrr": 0, "p@1": 0},
		},
		{
			name:   "empty ranking",
			judged: Judged{"a": 1},
			rank:   nil,
			want:   map[string]float64{"ndcg@10": 0, "recall@10": 0, "map": 0, "mrr@10": 0, "p@10": 0},
		},
		{
			name:   "duplicates count once at first place",
			judged: Judged{"a": 1, "b": 1},
			rank:   ranking("a", "a", "b"),
			want:   map[string]float64{"p@2": 1, "map": 1, "ndcg@2": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ms []Metric
			for k := range tt.want {
				m, err := ParseMetric(k)
				if err != nil {
					t.Fatal(err)
				}
				ms = append(ms, m)
			}
			got := ScoreQuery(tt.judged, tt.rank, ms)
			for k, w := range tt.want {
				if math.Abs(got[k]-w) > 1e-12 {
					t.Errorf("%s = %.15g, want %.15g", k, got[k], w)
				}
			}
		})
	}
}

// TestAgainstReference compares with figures written by the independent
// Python reference testdata/trec_eval_ref.py (see testdata/README.md).
func TestAgainstReference(t *testing.T) {
	for _, name := range []string{"small", "random"} {
		t.Run(name, func(t *testing.T) {
			qrels, err := ReadQrelsFile(filepath.Join("testdata", name+".qrels"))
			if err != nil {
				t.Fatal(err)
			}
			run, _, err := ReadRunFile(filepath.Join("testdata", name+".run"))
			if err != nil {
				t.Fatal(err)
			}
			run.TrecOrder()
			want := readExpected(t, filepath.Join("testdata", name+".expected.tsv"))
			var keys []string
			for k := range want["all"] {
				keys = append(keys, k)
			}
			got := Evaluate(qrels, run, mustMetrics(t, strings.Join(keys, ",")))
			if got.NumQueries != len(want)-1 {
				t.Fatalf("scored %d queries, reference has %d", got.NumQueries, len(want)-1)
			}
			checked := 0
			for qid, ms := range want {
				have := got.Mean
				if qid != "all" {
					have = got.PerQuery[qid]
				}
				for k, w := range ms {
					checked++
					if math.Abs(have[k]-w) > 1e-12 {
						t.Errorf("%s %s = %.15g, reference %.15g", qid, k, have[k], w)
					}
				}
			}
			t.Logf("%d figures match", checked)
		})
	}
}

func readExpected(t *testing.T, path string) map[string]map[string]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Split(sc.Text(), "\t")
		v, err := strconv.ParseFloat(p[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		if out[p[0]] == nil {
			out[p[0]] = map[string]float64{}
		}
		out[p[0]][p[1]] = v
	}
	return out
}

func TestTrecOrderBreaksTiesByDocIDDescending(t *testing.T) {
	run := Run{"q": {{"a", 1}, {"c", 2}, {"b", 2}}}
	run.TrecOrder()
	var ids []string
	for _, h := range run["q"] {
		ids = append(ids, h.DocID)
	}
	if got := strings.Join(ids, ","); got != "c,b,a" {
		t.Fatalf("order %s, want c,b,a", got)
	}
}

func TestEvaluateCompleteQuerySet(t *testing.T) {
	qrels := Qrels{"1": {"a": 1}, "2": {"b": 1}}
	run := Run{"1": ranking("a"), "99": ranking("b")}
	s := Evaluate(qrels, run, []Metric{{Recall, 10}})
	if s.NumQueries != 2 || s.Unranked != 1 || s.Mean["recall@10"] != 0.5 {
		t.Fatalf("got %+v", s)
	}
}

func TestParseMetric(t *testing.T) {
	tests := []struct {
		in      string
		want    Metric
		label   string
		wantErr bool
	}{
		{in: "ndcg@10", want: Metric{NDCG, 10}, label: "nDCG@10"},
		{in: " nDCG@10 ", want: Metric{NDCG, 10}, label: "nDCG@10"},
		{in: "R@100", want: Metric{Recall, 100}, label: "Recall@100"},
		{in: "map", want: Metric{MAP, 0}, label: "MAP"},
		{in: "MRR@10", want: Metric{MRR, 10}, label: "MRR@10"},
		{in: "P@5", want: Metric{Precision, 5}, label: "P@5"},
		{in: "p", wantErr: true},
		{in: "ndcg@0", wantErr: true},
		{in: "ndcg@x", wantErr: true},
		{in: "bleu", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			m, err := ParseMetric(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && (m != tt.want || m.Label() != tt.label) {
				t.Fatalf("got %v %q, want %v %q", m, m.Label(), tt.want, tt.label)
			}
		})
	}
	if MaxDepth(DefaultMetrics) != 0 || MaxDepth([]Metric{{NDCG, 10}, {Recall, 100}}) != 100 {
		t.Fatal("MaxDepth")
	}
}
