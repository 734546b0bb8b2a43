package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/volley-load/volley/backend/internal/compare"
	"github.com/volley-load/volley/backend/internal/metrics"
)

// maxChartPoints bounds the points per line (LTTB-downsampled beyond), so an hour-long run still
// makes a small page.
const maxChartPoints = 1200

// Chart geometry (SVG user units; the SVG scales to the page width).
const (
	chartW, chartH           = 860.0, 280.0
	padL, padR, padT, padB   = 72.0, 16.0, 16.0, 44.0
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
	Name   string
	Class  string // s0, s1, s2: colours from the page's CSS
	Points string
}

// chart is what the template needs to draw one line chart.
type chart struct {
	ID, Title      string
	W, H           float64
	Left, Right    float64
	Top, Bottom    float64
	XLabelX        float64
	XLabelY        float64
	YLabelX        float64
	YLabelY        float64
	XTicks, YTicks []tick
	TickEnd        float64 // the lower end of the x axis' tick marks
	XLabel, YLabel string
	Lines          []line
	Empty          bool
}

type seriesDef struct {
	name string
	y    func(metrics.Sample) float64
}

// lineChart draws the series of samples against elapsed seconds, from 0 on the y axis.
func lineChart(id, title, yLabel string, samples []metrics.Sample, defs []seriesDef) chart {
	c := chart{ID: id, Title: title, W: chartW, H: chartH, Left: plotLeft, Right: plotRight, Top: plotTop,
		Bottom: plotBottom, XLabelX: plotLeft + plotW/2, XLabelY: xLabelY, YLabelX: yLabelX, YLabelY: plotTop + plotH/2,
		TickEnd: plotBottom + tickSz, XLabel: "elapsed time (s)", YLabel: yLabel}
	if len(samples) == 0 {
		c.Empty = true
		return c
	}
	x := make([]float64, len(samples))
	ys := make([][]float64, len(defs))
	for k := range defs {
		ys[k] = make([]float64, len(samples))
	}
	yMax := 0.0
	for i, s := range samples {
		x[i] = float64(s.ElapsedS)
		for k, d := range defs {
			v := d.y(s)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				v = 0
			}
			ys[k][i] = v
			yMax = max(yMax, v)
		}
	}
	idx := compare.Downsample(x, ys, maxChartPoints)
	xMin, xMax := math.Min(0, x[0]), x[len(x)-1] // seconds count from 1; the axis from 0
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
		var b strings.Builder
		for _, i := range idx {
			fmt.Fprintf(&b, "%s,%s ", strconv.FormatFloat(round2(px(x[i])), 'f', -1, 64), strconv.FormatFloat(round2(py(ys[k][i])), 'f', -1, 64))
		}
		c.Lines = append(c.Lines, line{Name: d.name, Class: fmt.Sprintf("s%d", k), Points: strings.TrimSpace(b.String())})
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
