// Package evalchart draws the chart of an eval report (eval.Chart) as PNG or
// SVG with gonum/plot, for `rcp eval -chart` and `rcp score -chart`. It lives
// under cmd/rcp so that only the rcp binary links a plotting library: rcpd's
// web console draws the same eval.Chart in the page.
package evalchart

import (
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

	"github.com/rcpgo/rcpgo/eval"
)

// WriteFile draws the report's chart to path; the extension picks the
// format (.png or .svg).
func WriteFile(r *eval.Report, path string) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("eval: chart: %w", err)
	}
	if err := Write(f, r, format); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("eval: chart: %w", err)
	}
	return nil
}

// Write draws two panels side by side — grouped bars of the headline
// metrics per mode, with their values, and the recall@k curve of each mode
// on a log axis — as "png" or "svg".
func Write(w io.Writer, r *eval.Report, format string) error {
	c, err := r.Chart()
	if err != nil {
		return err
	}
	bars, err := barPanel(c)
	if err != nil {
		return err
	}
	curve, err := curvePanel(c)
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

// rgba parses a mode's #rrggbb colour.
func rgba(hex string) color.RGBA {
	c := color.RGBA{A: 255}
	_, _ = fmt.Sscanf(hex, "#%02x%02x%02x", &c.R, &c.G, &c.B)
	return c
}

func barPanel(c *eval.Chart) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = c.Title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Y.Label.Text = "score"
	n := len(c.Modes)
	// head room above 1.0 for the legend, one line per mode
	p.Y.Min, p.Y.Max = 0, 1.06+0.075*float64(n)
	p.Y.Tick.Marker = plot.ConstantTicks(fractionTicks())
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(6), -vg.Points(2)
	p.Legend.TextStyle.Font.Size = vg.Points(11)
	groupW := vg.Points(260) / vg.Length(len(c.Metrics))
	barW := min(groupW*0.8/vg.Length(n), vg.Points(48))
	for i, m := range c.Modes {
		vals := make(plotter.Values, len(m.Values))
		xys := make(plotter.XYs, len(m.Values))
		labels := make([]string, len(m.Values))
		for j, v := range m.Values {
			vals[j] = v
			xys[j] = plotter.XY{X: float64(j), Y: v}
			labels[j] = fmt.Sprintf("%.3f", v)
		}
		b, err := plotter.NewBarChart(vals, barW)
		if err != nil {
			return nil, fmt.Errorf("eval: chart: %w", err)
		}
		b.Color = rgba(m.Color)
		b.LineStyle.Width = 0
		off := (vg.Length(i) - vg.Length(n-1)/2) * barW
		b.Offset = off
		p.Add(b)
		p.Legend.Add(m.Name, b)
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
	p.NominalX(c.Labels...)
	p.X.Tick.Label.Font.Size = vg.Points(12)
	p.X.Min, p.X.Max = -0.5, float64(len(c.Metrics))-0.5
	return p, nil
}

func curvePanel(c *eval.Chart) (*plot.Plot, error) {
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
	for _, k := range c.Ticks {
		ticks = append(ticks, plot.Tick{Value: float64(k), Label: fmt.Sprint(k)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = 1, float64(c.MaxK)
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(6), vg.Points(6)
	p.Legend.TextStyle.Font.Size = vg.Points(11)
	for _, m := range c.Modes {
		if len(m.Curve) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(m.Curve))
		for j, pt := range m.Curve {
			xys[j] = plotter.XY{X: float64(pt.K), Y: pt.Recall}
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("eval: chart: %w", err)
		}
		col := rgba(m.Color)
		line.Color, line.Width = col, vg.Points(2)
		points.Color, points.Shape = col, draw.CircleGlyph{}
		points.Radius = vg.Points(2.5)
		p.Add(line, points)
		p.Legend.Add(m.Name, line, points)
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
