package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/volley-load/volley/backend/internal/compare"
	"github.com/volley-load/volley/backend/internal/metrics"
)

// maxChartPoints bounds the points per line (LTTB-downsampled beyond, compare.Downsample), so an
// hour-long run still makes a light page: the plot is about 780 units wide, so 600 points are
// more than one per pixel of a printed page.
const maxChartPoints = 600

// maxEventMarks bounds the live-control events marked on each chart (the first ones are kept).
const maxEventMarks = 50

// Chart geometry (SVG user units; the SVG scales to the page width).
const (
	chartW, chartH           = 860.0, 250.0
	padL, padR, padT, padB   = 72.0, 16.0, 18.0, 44.0
	plotW, plotH             = chartW - padL - padR, chartH - padT - padB
	plotLeft, plotTop        = padL, padT
	plotRight, plotBottom    = padL + plotW, padT + plotH
	xLabelY, yLabelX, tickSz = chartH - 6, 16.0, 5.0
)

type tick struct {
	Pos   float64 // x for the x axis, y for the y axis
	Label string
}

type line struct {
	Name  string
	Class string // s0…s7: colours from the page's CSS
	Key   string // k0…k7: the same colour for the legend
	// Segments are the line's polylines' points: a value that is unknown (NaN: no successful
	// response in that second) breaks the line rather than drawing it at 0.
	Segments []string
}

// band is a shaded stretch of the x axis (seconds in which the generator was saturated).
type band struct{ X, W float64 }

// mark is a vertical line at one moment (a live-control event), with its label.
type mark struct {
	X     float64
	Label string
}

// chart is what the template needs to draw one line chart.
type chart struct {
	ID, Title      string
	W, H           float64
	Left, Right    float64
	Top, Bottom    float64
	PlotH          float64
	XLabelX        float64
	XLabelY        float64
	YLabelX        float64
	YLabelY        float64
	XTicks, YTicks []tick
	TickEnd        float64 // the lower end of the x axis' tick marks
	XLabel, YLabel string
	Lines          []line
	Bands          []band
	BandLabel      string
	Marks          []mark
	Empty          bool
}

type seriesDef struct {
	name string
	y    func(metrics.Sample) float64 // NaN: unknown in that second
	// colour is the line's colour, 0…7 (s0…s7 in the page's CSS); -1 takes the series' index
	colour int
}

// chartOpts are a chart's optional decorations.
type chartOpts struct {
	band      func(metrics.Sample) bool // seconds to shade
	bandLabel string
	events    []metrics.RunEvent
	eventText func(metrics.RunEvent) string
}

// lineChart draws the series of samples against elapsed seconds (xLabel), from 0 on the y axis.
func lineChart(id, title, yLabel, xLabel string, samples []metrics.Sample, defs []seriesDef, o chartOpts) chart {
	c := chart{ID: id, Title: title, W: chartW, H: chartH, Left: plotLeft, Right: plotRight, Top: plotTop,
		Bottom: plotBottom, PlotH: plotH, XLabelX: plotLeft + plotW/2, XLabelY: xLabelY, YLabelX: yLabelX, YLabelY: plotTop + plotH/2,
		TickEnd: plotBottom + tickSz, XLabel: xLabel, YLabel: yLabel, BandLabel: o.bandLabel}
	if len(samples) == 0 {
		c.Empty = true
		return c
	}
	x := make([]float64, len(samples))
	ys := make([][]float64, len(defs))
	sel := make([][]float64, len(defs)) // ys with unknowns as 0, for LTTB's choice of points
	for k := range defs {
		ys[k], sel[k] = make([]float64, len(samples)), make([]float64, len(samples))
	}
	yMax := 0.0
	for i, s := range samples {
		x[i] = float64(s.ElapsedS)
		for k, d := range defs {
			v := d.y(s)
			if math.IsInf(v, 0) {
				v = math.NaN()
			}
			ys[k][i] = v
			if !math.IsNaN(v) {
				sel[k][i] = v
				yMax = max(yMax, v)
			}
		}
	}
	idx := compare.Downsample(x, sel, maxChartPoints)
	xMin, xMax := math.Min(0, x[0]), x[len(x)-1] // seconds count from 1; the axis from 0
	for _, e := range o.events {
		xMax = max(xMax, e.ElapsedS)
	}
	if xMax <= xMin {
		xMax = xMin + 1
	}
	xStep := niceStep((xMax - xMin) / 6)
	yStep := niceStep(yMax / 5)
	if yMax <= 0 {
		yStep = 1
	}
	yTop := math.Ceil(yMax/yStep) * yStep
	if yTop <= 0 {
		yTop = yStep
	}
	px := func(v float64) float64 { return plotLeft + (v-xMin)/(xMax-xMin)*plotW }
	py := func(v float64) float64 { return plotBottom - v/yTop*plotH }
	for v := math.Ceil(xMin/xStep) * xStep; v <= xMax+xStep*1e-9; v += xStep {
		c.XTicks = append(c.XTicks, tick{Pos: round2(px(v)), Label: num(v)})
	}
	for v := 0.0; v <= yTop+yStep*1e-9; v += yStep {
		c.YTicks = append(c.YTicks, tick{Pos: round2(py(v)), Label: num(v)})
	}
	for k, d := range defs {
		col := k % 8
		if d.colour >= 0 {
			col = d.colour % 8
		}
		l := line{Name: d.name, Class: fmt.Sprintf("s%d", col), Key: fmt.Sprintf("k%d", col)}
		var b strings.Builder
		flush := func() {
			if b.Len() > 0 {
				l.Segments = append(l.Segments, strings.TrimSpace(b.String()))
				b.Reset()
			}
		}
		for _, i := range idx {
			if math.IsNaN(ys[k][i]) {
				flush()
				continue
			}
			fmt.Fprintf(&b, "%s,%s ", strconv.FormatFloat(round2(px(x[i])), 'f', -1, 64), strconv.FormatFloat(round2(py(ys[k][i])), 'f', -1, 64))
		}
		flush()
		c.Lines = append(c.Lines, l)
	}
	if o.band != nil {
		// one rectangle per run of flagged seconds; runs less than 2 units apart are merged, so
		// an hour of alternating seconds still makes at most plotW/2 rectangles
		for i, s := range samples {
			if !o.band(s) {
				continue
			}
			from, to := x[i]-s.IntervalS, x[i]
			if s.IntervalS <= 0 {
				from = x[i] - 1
			}
			from = max(from, xMin)
			if n := len(c.Bands); n > 0 {
				last := &c.Bands[n-1]
				if px(from)-(last.X+last.W) < 2 {
					last.W = round2(px(to) - last.X)
					continue
				}
			}
			c.Bands = append(c.Bands, band{X: round2(px(from)), W: round2(px(to) - px(from))})
		}
	}
	for i, e := range o.events {
		if i == maxEventMarks {
			break
		}
		c.Marks = append(c.Marks, mark{X: round2(px(e.ElapsedS)), Label: o.eventText(e)})
	}
	return c
}

// niceStep rounds a raw step up to 1, 2 or 5 × 10ⁿ.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// num formats an axis value: no trailing zeros, thousands as k.
func num(v float64) string {
	v = math.Round(v*1e6) / 1e6
	switch {
	case v >= 1e6 && math.Mod(v, 1e5) == 0:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e4 && math.Mod(v, 100) == 0:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
