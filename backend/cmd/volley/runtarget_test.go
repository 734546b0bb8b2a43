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
	for _, re := range []string{`(?m)^target +host cpu_percent +avg 47\.2%`, `(?m)^target +web rss_bytes nginx +avg 8\.0MiB +max 9\.0MiB +\(10 s, 0 gaps\)`,
		`(?m)^monitor error +bad: line 1: malformed \?\[31m +\(3 s\)`, `server CPU +server mem +server µs/req`, `1000\.0 +20% +8\.0MiB +2000\.0`, `(?m)^limit +none measured`} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("no %s in:\n%s", re, text)
		}
	}
	if strings.Contains(text, "cpu_percent 0") || strings.Contains(text, "\x1b") {
		t.Errorf("per-core line or control character in:\n%s", text)
	}
}
