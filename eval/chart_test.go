package eval

import (
	"reflect"
	"strings"
	"testing"
)

func chartReport() *Report {
	return &Report{Dataset: "d", Split: "test", Queries: 2, Metrics: []string{"mrr@10", "ndcg@10", "recall@10", "recall@100"},
		Modes: []*ModeResult{
			{Mode: Mode{Name: "a"}, Scores: &Scores{Mean: map[string]float64{"ndcg@10": 0.5, "recall@100": 0.9}},
				RecallCurve: []CurvePoint{{1, 0.1}, {10, 0.5}, {100, 0.9}}},
			{Mode: Mode{Name: "b"}, Scores: &Scores{Mean: map[string]float64{"ndcg@10": 0.25, "recall@100": 0.75}},
				RecallCurve: []CurvePoint{{1, 0.2}, {10, 0.4}}},
		}}
}

func TestChart(t *testing.T) {
	c, err := chartReport().Chart()
	if err != nil {
		t.Fatal(err)
	}
	want := &Chart{Title: "d (test), 2 queries", Metrics: []string{"ndcg@10", "recall@100"}, Labels: []string{"nDCG@10", "Recall@100"},
		MaxK: 100, Ticks: []int{1, 2, 3, 5, 10, 20, 30, 50, 100},
		Modes: []ChartMode{
			{Name: "a", Color: "#0072b2", Values: []float64{0.5, 0.9}, Curve: []CurvePoint{{1, 0.1}, {10, 0.5}, {100, 0.9}}},
			{Name: "b", Color: "#e69f00", Values: []float64{0.25, 0.75}, Curve: []CurvePoint{{1, 0.2}, {10, 0.4}}},
		}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("chart\n%+v\nwant\n%+v", c, want)
	}
}

func TestChartRefuses(t *testing.T) {
	if _, err := (&Report{}).Chart(); err == nil || !strings.Contains(err.Error(), "no modes") {
		t.Errorf("no modes: %v", err)
	}
	r := chartReport()
	r.Modes[1].Scores = nil
	if _, err := r.Chart(); err == nil || !strings.Contains(err.Error(), "modes[1] has no scores") {
		t.Errorf("no scores: %v", err)
	}
}
