package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// TargetColumnPrefix starts the CSV columns of the run's monitors: one column per series,
// "target:<series id>" (e.g. "target:web1/cpu_percent"), after CSVHeader, in the order of the
// ids; a second without the series' value (a gap) is an empty cell. A run without monitors has
// none.
const TargetColumnPrefix = "target:"

// targetIDs are the series ids of every sample, sorted.
func targetIDs(samples []metrics.Sample) []string {
	var ids []string
	seen := map[string]bool{}
	for _, s := range samples {
		for id := range s.Target {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// targetCells are a sample's values of ids ("" for a gap).
func targetCells(s metrics.Sample, ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		if v, ok := s.Target[id]; ok {
			out[i] = strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	return out
}

// targetView is the report's Target section: the run's monitors (issue 15) — one chart per
// monitor and kind, as the run view's Target panel draws them (a gap second breaks the line), the
// summary's avg/max per series and the monitors' errors.
type targetView struct {
	Charts []chart
	Stats  []targetRow
	Errors []metrics.MonitorError
}

type targetRow struct {
	Monitor, Series, Avg, Max string
	Gaps, Seconds             int
}

// targetKind groups a preset metric into its chart; custom metrics have a chart each.
var targetKind = map[string]string{"cpu_percent": "cpu", "memory_used_bytes": "memory", "rss_bytes": "memory",
	"load1": "load", "net_in_bytes_per_s": "network", "net_out_bytes_per_s": "network", "tcp_conns": "tcp"}

// targetScale is how a unit is drawn: the axis's dictionary key and the factor from the value.
func targetScale(unit string) (axis string, factor float64) {
	switch unit {
	case metrics.UnitPercent:
		return "axis.pct", 1
	case metrics.UnitBytes:
		return "axis.mib", 1.0 / (1 << 20)
	case metrics.UnitBytesPerS:
		return "axis.kibps", 1.0 / 1024
	}
	return "axis.value", 1
}

// targetSection builds the section; nil for a run without monitors.
func targetSection(r Report, t func(string, ...any) string) *targetView {
	series := []metrics.MonitorSeries(nil)
	if r.Summary != nil {
		series = r.Summary.TargetSeries
	}
	if len(series) == 0 { // a run without a summary: the series its seconds name
		for _, id := range targetIDs(r.Samples) {
			mon, rest, _ := strings.Cut(id, "/")
			metric, label, _ := strings.Cut(rest, "/")
			series = append(series, metrics.MonitorSeries{ID: id, Monitor: mon, Metric: metric, Label: label})
		}
	}
	v := &targetView{}
	if r.Summary != nil {
		v.Errors = r.Summary.MonitorErrors
	}
	type group struct {
		key, monitor, kind, unit string
		ids                      []metrics.MonitorSeries
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, s := range series {
		kind, ok := targetKind[s.Metric]
		if !ok {
			kind = "custom:" + s.Metric
		}
		key := s.Monitor + "|" + kind
		g := byKey[key]
		if g == nil {
			g = &group{key: key, monitor: s.Monitor, kind: kind, unit: s.Unit}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.ids = append(g.ids, s)
	}
	xl := t("axis.elapsed")
	for i, g := range groups {
		axis, f := targetScale(g.unit)
		title := g.monitor + " · "
		if m, ok := strings.CutPrefix(g.kind, "custom:"); ok {
			title += m
		} else {
			title += t("target." + g.kind)
		}
		defs := make([]seriesDef, len(g.ids))
		for k, s := range g.ids {
			id, name := s.ID, cmp.Or(s.Label, s.Metric)
			defs[k] = seriesDef{name: name, colour: -1, y: func(smp metrics.Sample) float64 {
				if v, ok := smp.Target[id]; ok {
					return v * f
				}
				return math.NaN() // a gap: the monitor had no value
			}}
		}
		v.Charts = append(v.Charts, lineChart(fmt.Sprintf("target%d", i), title, t(axis), xl, r.Samples, defs, chartOpts{}))
	}
	if r.Summary != nil {
		for _, s := range r.Summary.Target {
			_, f := targetScale(s.Unit)
			name := s.Metric
			if s.Label != "" {
				name += " (" + s.Label + ")"
			}
			v.Stats = append(v.Stats, targetRow{Monitor: s.Monitor, Series: name, Avg: num(s.Avg * f), Max: num(s.Max * f),
				Gaps: s.Gaps, Seconds: s.Seconds + s.Gaps})
		}
	}
	if len(v.Charts) == 0 && len(v.Stats) == 0 && len(v.Errors) == 0 {
		return nil
	}
	return v
}
