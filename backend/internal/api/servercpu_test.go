package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// The run list and detail carry server_cpu_max (null when unknown) and sort by it; an imported run
// file gets it from its summary's monitor figures by the server monitor rule.
func TestServerCPUMaxListedSortedAndImported(t *testing.T) {
	a, st := newStoreApp(t)
	p := mustPlanID(t, st, "cpu")
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cpu := func(v float64) *float64 { return &v }
	low := seedRun(t, st, p, t0, seeded{seconds: 2, rps: 100, medianMs: 2, cpuMax: cpu(42.5)}, 1)
	none := seedRun(t, st, p, t0.Add(time.Minute), seeded{seconds: 2, rps: 100, medianMs: 2}, 2)
	high := seedRun(t, st, p, t0.Add(2*time.Minute), seeded{seconds: 2, rps: 100, medianMs: 2, cpuMax: cpu(187.25)}, 3)
	ids := func(path string) string {
		_, got := a.do("GET", path, "")
		var out []any
		for _, it := range got["items"].([]any) {
			r := it.(map[string]any)
			out = append(out, r["id"], r["server_cpu_max"])
		}
		return fmt.Sprint(out)
	}
	for path, want := range map[string]string{
		"/api/runs?sort=server_cpu_max":           fmt.Sprint([]any{high, 187.25, low, 42.5, none, nil}),
		"/api/runs?sort=server_cpu_max&order=asc": fmt.Sprint([]any{none, nil, low, 42.5, high, 187.25}),
	} {
		if got := ids(path); got != want {
			t.Errorf("%s: [id server_cpu_max …] %s, want %s", path, got, want)
		}
	}
	runCases(t, a, []apiCase{
		{"detail", "GET", fmt.Sprintf("/api/runs/%d", high), "", 200, []string{`"server_cpu_max":187.25`}},
		{"detail unknown", "GET", fmt.Sprintf("/api/runs/%d", none), "", 200, []string{`"server_cpu_max":null`}},
	})

	// Imports: a file whose monitors had values, one without.
	f := importFile(t, "cpu import", 3, 5, 0.2, 7)
	f.Summary.Target = []metrics.TargetStat{
		{MonitorSeries: metrics.MonitorSeries{ID: "web1/cpu_percent", Monitor: "web1", Type: "node", Metric: "cpu_percent",
			Unit: metrics.UnitPercent}, Avg: 20, Max: 35.5, Seconds: 3},
		{MonitorSeries: metrics.MonitorSeries{ID: "nginx/cpu_percent/nginx", Monitor: "nginx", Type: "process", Metric: "cpu_percent",
			Label: "nginx", Unit: metrics.UnitPercent}, Avg: 60, Max: 91.5, Seconds: 3},
	}
	f.Summary.TargetSeries = []metrics.MonitorSeries{f.Summary.Target[0].MonitorSeries, f.Summary.Target[1].MonitorSeries}
	for _, tc := range []struct {
		body, want string
	}{{encodeFile(t, f), "91.5"}, {encodeFile(t, importFile(t, "cpu import", 3, 5, 0.2, 8)), "<nil>"}} {
		status, got := a.do("POST", "/api/runs/import", tc.body)
		if status != 201 {
			t.Fatalf("import: %d %v", status, got)
		}
		id := got["run"].(map[string]any)["id"]
		_, detail := a.do("GET", fmt.Sprintf("/api/runs/%v", id), "")
		if v := fmt.Sprint(detail["server_cpu_max"]); v != tc.want {
			t.Errorf("imported run %v: server_cpu_max %s, want %s", id, v, tc.want)
		}
	}
}
