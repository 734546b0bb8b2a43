package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// The summary prints the monitors' series (not per core), their errors once and without control
// characters, and the capacity table's server columns and note.
func TestSummaryPrintsTarget(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	ser := func(id, typ, metric, label, unit string) metrics.MonitorSeries {
		return metrics.MonitorSeries{ID: id, Monitor: strings.Split(id, "/")[0], Type: typ, Metric: metric, Label: label, Unit: unit}
	}
	s := &metrics.Summary{
		Requests: 10, StatusCodes: map[string]int64{"200": 10},
		Target: []metrics.TargetStat{
			{MonitorSeries: ser("host/cpu_percent", "node", "cpu_percent", "", "percent"), Avg: 47.25, Max: 90, Seconds: 9, Gaps: 1},
			{MonitorSeries: ser("host/cpu_percent/0", "node", "cpu_percent", "0", "percent"), Avg: 50, Max: 95, Seconds: 9},
			{MonitorSeries: ser("web/rss_bytes/nginx", "process", "rss_bytes", "nginx", "bytes"), Avg: 8 << 20, Max: 9 << 20, Seconds: 10},
		},
		MonitorErrors:  []metrics.MonitorError{{Monitor: "bad", Message: "line 1: malformed \x1b[31m", Seconds: 3}},
		Sweep:          []metrics.SweepRow{{VUs: 1, RPS: 100, CPUPercent: 10, ClientCPUUsPerRequest: 1000, ServerCPUPercent: f(20), ServerMemoryBytes: f(8 << 20), ServerCPUUsPerRequest: f(2000)}},
		SweepLimitedBy: "none",
	}
	var out bytes.Buffer
	printSummary(&out, &plan.Plan{Name: "p"}, s)
	text := out.String()
	for _, re := range []string{`(?m)^target +avg +max$`, `(?m)^  host cpu_percent +47\.2% +90\.0% +\(9 s, 1 gaps\)$`, `(?m)^  web rss_bytes nginx +8\.0MiB +9\.0MiB +\(10 s, 0 gaps\)$`,
		`(?m)^  bad +error: line 1: malformed \?\[31m \(3 s\)$`, `server CPU +server mem +server µs/req`, `1000\.0 +20% +8\.0MiB +2000\.0`, `(?m)^limit +none measured`} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("no %s in:\n%s", re, text)
		}
	}
	if strings.Contains(text, "cpu_percent 0") || strings.Contains(text, "\x1b") {
		t.Errorf("per-core line or control character in:\n%s", text)
	}
}

// The monitors' long series names are a table of their own: the summary's columns are where they
// are without monitors, and the target table's own columns line up.
func TestSummaryTargetAlignment(t *testing.T) {
	base := metrics.Summary{Requests: 10, Successes: 10, StatusCodes: map[string]int64{"200": 10},
		Latency: metrics.Latency{Min: 1, Mean: 2, P50: 2, P90: 3, P95: 3, P99: 4, Max: 5}}
	var plain bytes.Buffer
	printSummary(&plain, &plan.Plan{Name: "p"}, &base)
	with := base
	with.Target = []metrics.TargetStat{
		{MonitorSeries: metrics.MonitorSeries{Monitor: "a-rather-long-monitor-name", Type: "process", Metric: "cpu_percent", Label: "php-fpm8.3", Unit: "percent"}, Avg: 5, Max: 123.4, Seconds: 10},
		{MonitorSeries: metrics.MonitorSeries{Monitor: "n", Type: "node", Metric: "load1", Unit: ""}, Avg: 0.5, Max: 1, Seconds: 10},
	}
	with.MonitorErrors = []metrics.MonitorError{{Monitor: "n", Message: "a long message that must not widen any column at all", Seconds: 1}}
	var out bytes.Buffer
	printSummary(&out, &plan.Plan{Name: "p"}, &with)
	// Every line of the summary without monitors is there unchanged, spaces included.
	for _, l := range strings.Split(strings.TrimSpace(plain.String()), "\n") {
		if !strings.Contains(out.String(), l+"\n") {
			t.Errorf("line %q changed; with monitors:\n%s", l, out.String())
		}
	}
	// The target table's avg and max columns start at the same offset on each line.
	var avgAt, maxAt []int
	for _, l := range strings.Split(out.String(), "\n") {
		if i := strings.Index(l, "avg"); strings.HasPrefix(l, "target") && i > 0 {
			avgAt, maxAt = append(avgAt, i), append(maxAt, strings.Index(l, "max"))
		}
		for _, v := range []string{" 5.0%", " 0.5"} {
			if i := strings.Index(l, v); strings.HasPrefix(l, "  ") && i > 0 {
				avgAt = append(avgAt, i+1)
				maxAt = append(maxAt, i+1+len(v)-1+strings.IndexFunc(l[i+len(v):], func(r rune) bool { return r != ' ' }))
			}
		}
	}
	if len(avgAt) != 3 || avgAt[0] != avgAt[1] || avgAt[1] != avgAt[2] || maxAt[0] != maxAt[1] || maxAt[1] != maxAt[2] {
		t.Errorf("target columns at %v / %v in:\n%s", avgAt, maxAt, out.String())
	}
}
