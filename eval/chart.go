package eval

import (
	"errors"
	"fmt"
	"image/color"
)

// palette is colour-blind friendly (Okabe–Ito).
var palette = []color.RGBA{
	{0, 114, 178, 255}, {230, 159, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255},
	{86, 180, 233, 255}, {213, 94, 0, 255}, {240, 228, 66, 255}, {0, 0, 0, 255},
}

// Chart is what the chart of a report shows, for either renderer: the
// rcp CLI's (PNG or SVG files, drawn with gonum/plot in
// cmd/rcp/internal/evalchart) and the web console's (SVG drawn in the
// page). Two panels: grouped bars of the headline metrics per mode, and the
// recall@k curve of each mode on a log axis.
type Chart struct {
	Title string `json:"title"`
	// Metrics are the headline metrics of the bar panel (ChartMetrics),
	// Labels their display names (nDCG@10, R@100).
	Metrics []string `json:"metrics"`
	Labels  []string `json:"labels"`
	// MaxK is the deepest cutoff of any curve (at least 1), Ticks the
	// cutoffs of CurveKs up to it.
	MaxK  int         `json:"maxK"`
	Ticks []int       `json:"ticks"`
	Modes []ChartMode `json:"modes"`
}

// ChartMode is one mode of a Chart.
type ChartMode struct {
	Name  string `json:"name"`
	Color string `json:"color"` // #rrggbb
	// Values are the mode's mean scores, one per metric of Chart.Metrics.
	Values []float64    `json:"values"`
	Curve  []CurvePoint `json:"curve"`
}

// Chart returns what the report's chart shows. It fails when the report
// has no modes or a mode has no scores.
func (r *Report) Chart() (*Chart, error) {
	if len(r.Modes) == 0 {
		return nil, errors.New("eval: chart: the report has no modes")
	}
	c := &Chart{Title: r.title(), Metrics: r.ChartMetrics(), MaxK: 1}
	for _, k := range c.Metrics {
		c.Labels = append(c.Labels, labelOf(k))
	}
	for i, m := range r.Modes {
		if m == nil || m.Scores == nil {
			return nil, fmt.Errorf("eval: chart: modes[%d] has no scores", i)
		}
		rgba := palette[i%len(palette)]
		cm := ChartMode{Name: m.Mode.Name, Color: fmt.Sprintf("#%02x%02x%02x", rgba.R, rgba.G, rgba.B), Curve: m.RecallCurve}
		for _, k := range c.Metrics {
			cm.Values = append(cm.Values, m.Scores.Mean[k])
		}
		for _, pt := range m.RecallCurve {
			c.MaxK = max(c.MaxK, pt.K)
		}
		c.Modes = append(c.Modes, cm)
	}
	for _, k := range CurveKs {
		if k <= c.MaxK {
			c.Ticks = append(c.Ticks, k)
		}
	}
	return c, nil
}

// ChartMetrics picks the headline metrics of the bar panel: nDCG@10 and
// the deepest recall the report has (Recall@100 usually), else the first
// two metrics.
func (r *Report) ChartMetrics() []string {
	var out []string
	for _, k := range r.Metrics {
		if k == "ndcg@10" {
			out = append(out, k)
			break
		}
	}
	deepest, dk := "", 0
	for _, k := range r.Metrics {
		if m, err := ParseMetric(k); err == nil && m.Kind == Recall && m.K > dk {
			deepest, dk = k, m.K
		}
	}
	if deepest != "" {
		out = append(out, deepest)
	}
	for _, k := range r.Metrics {
		if len(out) >= 2 {
			break
		}
		if !contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

func (r *Report) title() string {
	t := r.Dataset
	if r.Split != "" {
		t += " (" + r.Split + ")"
	}
	return fmt.Sprintf("%s, %d queries", t, r.Queries)
}
