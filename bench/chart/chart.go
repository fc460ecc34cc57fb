// Package chart draws peelbench's bar charts with gonum/plot. It lives
// apart from package bench, and runs in its own process (command
// peelplot), because gonum/plot's fonts and tables add live heap and
// pointer-holding globals to every garbage collection: linked into the
// measuring process they made allocation-heavy workloads measure 10–20%
// slower.
package chart

import (
	"errors"

	"github.com/peel-ml/peel/bench"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WritePlot draws rows as a bar chart on a log Y axis and saves it to
// path, in the format its extension names (.png, .svg, .pdf, ...). When
// some rows have both sides, each bar is the ratio of medians ours/peer
// of one workload, growing up or down from a reference line at 1 (below
// it ours is faster); otherwise each bar is our median time. Several
// thread counts give one bar per count, side by side. Workloads without
// a value (a side missing or failed) get no bar.
func WritePlot(path string, rows []bench.Row, title string) error {
	p, w, err := NewPlot(rows, title)
	if err != nil {
		return err
	}
	return p.Save(w, 5.5*vg.Inch, path)
}

// NewPlot builds the chart WritePlot saves, and the width it wants: 0.4
// inch a bar and 2 inches more, at least 6 inches (the height is 5.5
// inches). An empty title draws none. It fails when no row has a value
// to plot.
func NewPlot(rows []bench.Row, title string) (*plot.Plot, vg.Length, error) {
	ratios := false
	for _, r := range rows {
		if _, ok := r.Ratio(); ok {
			ratios = true
			break
		}
	}
	value := func(r bench.Row) (float64, bool) {
		if ratios {
			return r.Ratio()
		}
		if r.Ours == nil || r.Ours.Failed() || !(r.Ours.MedianNs > 0) {
			return 0, false
		}
		return r.Ours.MedianNs, true
	}

	// Workloads on X in order of first appearance, one series per thread
	// count.
	var names []string
	var threads []int
	col, ser := map[string]int{}, map[int]int{}
	type point struct{ x, s int }
	vals := map[point]float64{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		v, ok := value(r)
		if !ok {
			continue
		}
		x, ok := col[r.Workload]
		if !ok {
			x = len(names)
			col[r.Workload] = x
			names = append(names, r.Workload)
		}
		s, ok := ser[r.Threads]
		if !ok {
			s = len(threads)
			ser[r.Threads] = s
			threads = append(threads, r.Threads)
		}
		vals[point{x, s}] = v
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if len(names) == 0 {
		return nil, 0, errors.New("plot: no workload has a time to plot")
	}

	bars := &logBars{n: len(names)}
	for s, t := range threads {
		vs := make([]float64, len(names))
		for x := range vs {
			v, ok := vals[point{x, s}]
			if !ok {
				v = math.NaN()
			}
			vs[x] = v
		}
		bars.series = append(bars.series, barSeries{label: bench.ThreadsPhrase(t), vals: vs, color: palette[s%len(palette)]})
	}

	p := plot.New()
	p.Title.Text = title
	p.Y.Scale = plot.LogScale{}
	if ratios {
		lo, hi = math.Min(lo, 1), math.Max(hi, 1)
		bars.base, bars.ref = 1, true
		bars.format = bench.FormatRatio
		p.Y.Label.Text = "peel / peer (median)"
		p.Y.Tick.Marker = logTicks{format: func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }}
	} else {
		bars.format = bench.FormatNs
		p.Y.Label.Text = "median time per run"
		p.Y.Tick.Marker = logTicks{format: bench.FormatNs}
	}
	// The nearest 1, 2 or 5 × 10ⁿ around the values, with room for the
	// bars' labels.
	lo, hi = niceDown(lo/1.3), niceUp(hi*1.3)
	if !ratios {
		bars.base = lo
	}
	p.Add(bars)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	p.Y.Min, p.Y.Max = lo, hi
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 4
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YTop
	if len(threads) > 1 {
		for _, s := range bars.series {
			p.Legend.Add(s.label, swatch(s.color))
		}
		p.Legend.Top = true
		p.Legend.TextStyle.Font.Size = vg.Points(9)
		p.Legend.ThumbnailWidth = vg.Points(9)
	}
	width := max(6*vg.Inch, vg.Length(len(names)*len(threads))*0.4*vg.Inch+2*vg.Inch)
	return p, width, nil
}

// palette colors the thread counts' series.
var palette = []color.RGBA{
	color.RGBA{R: 0x3b, G: 0x6e, B: 0xb5, A: 0xff},
	color.RGBA{R: 0xe0, G: 0x7b, B: 0x39, A: 0xff},
	color.RGBA{R: 0x4c, G: 0x9f, B: 0x5a, A: 0xff},
	color.RGBA{R: 0xb5, G: 0x4a, B: 0x6e, A: 0xff},
}

type barSeries struct {
	label string
	vals  []float64 // NaN: no bar
	color color.RGBA
}

// logBars is a grouped bar chart whose bars grow from base (which may
// be inside the range, for ratios around 1) to their value, each
// labelled with format(value); ref draws a dashed line at base.
type logBars struct {
	n      int
	series []barSeries
	base   float64
	ref    bool
	format func(float64) string
}

// DataRange implements plot.DataRanger.
func (b *logBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = b.base, b.base
	for _, s := range b.series {
		for _, v := range s.vals {
			if v > 0 {
				ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
			}
		}
	}
	return -0.5, float64(b.n) - 0.5, ymin, ymax
}

// Plot implements plot.Plotter.
func (b *logBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	slot := (trX(1) - trX(0)) * 0.8 / vg.Length(len(b.series))
	lsty := draw.TextStyle{
		Color:   color.Black,
		Font:    font.From(plot.DefaultFont, 7),
		XAlign:  draw.XCenter,
		Handler: p.TextHandler,
	}
	y0 := trY(b.base)
	for k, s := range b.series {
		off := (vg.Length(k) - vg.Length(len(b.series)-1)/2) * slot
		for i, v := range s.vals {
			if !(v > 0) {
				continue
			}
			x := trX(float64(i)) + off
			y1 := trY(v)
			pts := []vg.Point{
				{X: x - slot/2, Y: y0}, {X: x + slot/2, Y: y0},
				{X: x + slot/2, Y: y1}, {X: x - slot/2, Y: y1},
			}
			c.FillPolygon(s.color, c.ClipPolygonY(pts))
			sty := lsty
			at := vg.Point{X: x, Y: y1 + 2}
			sty.YAlign = draw.YBottom
			if y1 < y0 {
				at.Y = y1 - 2
				sty.YAlign = draw.YTop
			}
			c.FillText(sty, at, b.format(v))
		}
	}
	if b.ref {
		c.StrokeLine2(draw.LineStyle{
			Color: color.Gray{Y: 0x40}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)},
		}, c.Min.X, y0, c.Max.X, y0)
	}
}

// swatch is a legend entry: a filled square.
type swatch color.RGBA

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(color.RGBA(s), []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}

// logTicks marks each power of ten and, when the range spans at most
// three decades, 2× and 5× each, labelled with format.
type logTicks struct{ format func(float64) string }

// Ticks implements plot.Ticker.
func (t logTicks) Ticks(min, max float64) []plot.Tick {
	if !(min > 0) || !(max > min) {
		return nil
	}
	lo, hi := math.Floor(math.Log10(min)), math.Ceil(math.Log10(max))
	steps := []float64{1, 2, 5}
	if hi-lo > 3 {
		steps = []float64{1}
	}
	var ticks []plot.Tick
	for e := lo; e <= hi; e++ {
		for _, m := range steps {
			v := m * math.Pow(10, e)
			// Round away the error of Pow so labels read "0.2", not
			// "0.20000000000000004".
			v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: t.format(v)})
		}
	}
	return ticks
}

// niceUp returns the least m×10ⁿ ≥ v with m in {1, 2, 5}; niceDown the
// greatest ≤ v (v > 0).
func niceUp(v float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v*(1-1e-12) {
			return m * e
		}
	}
	return 10 * e
}

func niceDown(v float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{5, 2, 1} {
		if m*e <= v*(1+1e-12) {
			return m * e
		}
	}
	return e
}
