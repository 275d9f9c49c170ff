package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Report gathers the results of every mode run on one dataset.
type Report struct {
	Dataset string    `json:"dataset"`
	Split   string    `json:"split,omitempty"`
	Queries int       `json:"queries"`
	Metrics []string  `json:"metrics"`
	Started time.Time `json:"started"`
	// IndexVersion is the snapshot every query was served from, when the
	// server reports one (spec §7.7.1).
	IndexVersion string        `json:"indexVersion,omitempty"`
	Modes        []*ModeResult `json:"modes"`
}

// CurvePoint is one point of a recall@k curve.
type CurvePoint struct {
	K      int     `json:"k"`
	Recall float64 `json:"recall"`
}

// CurveKs are the cutoffs of the recall curve, capped at the run depth.
var CurveKs = []int{1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 500, 1000}

// RecallCurve returns mean recall@k at each of CurveKs up to depth.
func RecallCurve(qrels Qrels, run Run, depth int) []CurvePoint {
	var ms []Metric
	for _, k := range CurveKs {
		if k <= depth {
			ms = append(ms, Metric{Recall, k})
		}
	}
	s := Evaluate(qrels, run, ms)
	out := make([]CurvePoint, len(ms))
	for i, m := range ms {
		out[i] = CurvePoint{K: m.K, Recall: s.Mean[m.String()]}
	}
	return out
}

// ScoreRuns builds a report from finished runs (read from TREC run files,
// say), one mode per run, named by names.
func ScoreRuns(dataset string, qrels Qrels, names []string, runs []Run, metrics []Metric) *Report {
	if len(metrics) == 0 {
		metrics = DefaultMetrics
	}
	rep := &Report{Dataset: dataset, Queries: len(qrels), Started: time.Now().UTC()}
	for _, m := range metrics {
		rep.Metrics = append(rep.Metrics, m.String())
	}
	for i, run := range runs {
		depth := 0
		for _, l := range run {
			depth = max(depth, len(l))
		}
		rep.Modes = append(rep.Modes, &ModeResult{
			Mode:        Mode{Name: names[i]},
			K:           depth,
			Scores:      Evaluate(qrels, run, metrics),
			RecallCurve: RecallCurve(qrels, run, depth),
			Run:         run,
		})
	}
	return rep
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Markdown renders a table: one row per mode, one column per metric, the
// best value of each column in bold, then latency and throughput when the
// modes were run live.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**", r.Dataset)
	if r.Split != "" {
		fmt.Fprintf(&b, " (%s)", r.Split)
	}
	fmt.Fprintf(&b, ", %d queries\n\n", r.Queries)
	live := false
	for _, m := range r.Modes {
		live = live || m.QPS > 0
	}
	head := []string{"mode"}
	for _, k := range r.Metrics {
		head = append(head, labelOf(k))
	}
	if live {
		head = append(head, "p50 ms", "p95 ms", "q/s", "errors")
	}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for i := range head {
		if i == 0 {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteByte('\n')
	best := map[string]float64{}
	for _, k := range r.Metrics {
		for _, m := range r.Modes {
			best[k] = max(best[k], m.Scores.Mean[k])
		}
	}
	for _, m := range r.Modes {
		row := []string{mdEscape(m.Mode.Name)}
		for _, k := range r.Metrics {
			v := m.Scores.Mean[k]
			cell := fmt.Sprintf("%.4f", v)
			if len(r.Modes) > 1 && v == best[k] && v > 0 {
				cell = "**" + cell + "**"
			}
			row = append(row, cell)
		}
		if live {
			row = append(row, fmt.Sprintf("%.1f", m.Latency.P50Ms), fmt.Sprintf("%.1f", m.Latency.P95Ms),
				fmt.Sprintf("%.1f", m.QPS), fmt.Sprint(m.Failures))
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	return b.String()
}

func labelOf(key string) string {
	if m, err := ParseMetric(key); err == nil {
		return m.Label()
	}
	return key
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
