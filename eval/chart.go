package eval

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// palette is colour-blind friendly (Okabe–Ito).
var palette = []color.RGBA{
	{0, 114, 178, 255}, {230, 159, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255},
	{86, 180, 233, 255}, {213, 94, 0, 255}, {240, 228, 66, 255}, {0, 0, 0, 255},
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

// WriteChartFile draws the chart to path; the extension picks the format
// (.png or .svg).
func (r *Report) WriteChartFile(path string) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("eval: chart: %w", err)
	}
	if err := r.WriteChart(f, format); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("eval: chart: %w", err)
	}
	return nil
}

// WriteChart draws two panels side by side — grouped bars of the headline
// metrics per mode, with their values, and the recall@k curve of each mode
// on a log axis — as "png" or "svg".
func (r *Report) WriteChart(w io.Writer, format string) error {
	if len(r.Modes) == 0 {
		return errors.New("eval: chart: the report has no modes")
	}
	bars, err := r.barPanel()
	if err != nil {
		return err
	}
	curve, err := r.curvePanel()
	if err != nil {
		return err
	}
	width, height := 11*vg.Inch, 4.6*vg.Inch
	var canvas vg.CanvasWriterTo
	switch format {
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(110))}
	case "svg":
		canvas = vgsvg.New(width, height)
	default:
		return fmt.Errorf("eval: chart: unknown format %q (want png or svg)", format)
	}
	dc := draw.New(canvas)
	// white background even for SVG viewers with dark themes
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Length(8), PadTop: vg.Length(6), PadBottom: vg.Length(4), PadLeft: vg.Length(6), PadRight: vg.Length(10)}
	cs := plot.Align([][]*plot.Plot{{bars, curve}}, tiles, dc)
	bars.Draw(cs[0][0])
	curve.Draw(cs[0][1])
	if _, err := canvas.WriteTo(w); err != nil {
		return fmt.Errorf("eval: chart: %w", err)
	}
	return nil
}

func (r *Report) title() string {
	t := r.Dataset
	if r.Split != "" {
		t += " (" + r.Split + ")"
	}
	return fmt.Sprintf("%s, %d queries", t, r.Queries)
}

func (r *Report) barPanel() (*plot.Plot, error) {
	keys := r.ChartMetrics()
	p := plot.New()
	p.Title.Text = r.title()
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Y.Label.Text = "score"
	n := len(r.Modes)
	// head room above 1.0 for the legend, one line per mode
	p.Y.Min, p.Y.Max = 0, 1.06+0.075*float64(n)
	p.Y.Tick.Marker = plot.ConstantTicks(fractionTicks())
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(6), -vg.Points(2)
	p.Legend.TextStyle.Font.Size = vg.Points(11)
	groupW := vg.Points(260) / vg.Length(len(keys))
	barW := min(groupW*0.8/vg.Length(n), vg.Points(48))
	for i, m := range r.Modes {
		vals := make(plotter.Values, len(keys))
		xys := make(plotter.XYs, len(keys))
		labels := make([]string, len(keys))
		for j, k := range keys {
			vals[j] = m.Scores.Mean[k]
			xys[j] = plotter.XY{X: float64(j), Y: vals[j]}
			labels[j] = fmt.Sprintf("%.3f", vals[j])
		}
		b, err := plotter.NewBarChart(vals, barW)
		if err != nil {
			return nil, fmt.Errorf("eval: chart: %w", err)
		}
		b.Color = palette[i%len(palette)]
		b.LineStyle.Width = 0
		off := (vg.Length(i) - vg.Length(n-1)/2) * barW
		b.Offset = off
		p.Add(b)
		p.Legend.Add(m.Mode.Name, b)
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
		if err != nil {
			return nil, fmt.Errorf("eval: chart: %w", err)
		}
		for t := range l.TextStyle {
			l.TextStyle[t].XAlign = draw.XCenter
			l.TextStyle[t].Font.Size = vg.Points(min(9, float64(barW)/3.2))
		}
		l.Offset = vg.Point{X: off, Y: vg.Points(2)}
		p.Add(l)
	}
	names := make([]string, len(keys))
	for j, k := range keys {
		names[j] = labelOf(k)
	}
	p.NominalX(names...)
	p.X.Tick.Label.Font.Size = vg.Points(12)
	p.X.Min, p.X.Max = -0.5, float64(len(keys))-0.5
	return p, nil
}

func (r *Report) curvePanel() (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Recall@k"
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "k (log scale)"
	p.Y.Label.Text = "recall"
	p.X.Scale = plot.LogScale{}
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = plot.ConstantTicks(fractionTicks())
	p.Add(plotter.NewGrid())
	var ticks []plot.Tick
	maxK := 1
	for _, m := range r.Modes {
		for _, pt := range m.RecallCurve {
			maxK = max(maxK, pt.K)
		}
	}
	for _, k := range CurveKs {
		if k <= maxK {
			ticks = append(ticks, plot.Tick{Value: float64(k), Label: fmt.Sprint(k)})
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = 1, float64(maxK)
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(6), vg.Points(6)
	p.Legend.TextStyle.Font.Size = vg.Points(11)
	for i, m := range r.Modes {
		if len(m.RecallCurve) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(m.RecallCurve))
		for j, pt := range m.RecallCurve {
			xys[j] = plotter.XY{X: float64(pt.K), Y: pt.Recall}
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("eval: chart: %w", err)
		}
		c := palette[i%len(palette)]
		line.Color, line.Width = c, vg.Points(2)
		points.Color, points.Shape = c, draw.CircleGlyph{}
		points.Radius = vg.Points(2.5)
		p.Add(line, points)
		p.Legend.Add(m.Mode.Name, line, points)
	}
	return p, nil
}

func fractionTicks() []plot.Tick {
	var t []plot.Tick
	for i := 0; i <= 10; i++ {
		v := float64(i) / 10
		label := ""
		if i%2 == 0 {
			label = fmt.Sprintf("%.1f", v)
		}
		t = append(t, plot.Tick{Value: v, Label: label})
	}
	return t
}
