package compare

import (
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// targetRun is a run of n seconds at 1000 req/s whose target values come from tv(i).
func targetRun(id int64, n int, sum *metrics.Summary, tv func(i int) map[string]float64) *Run {
	r := NewRun(Meta{ID: id, Summary: sum})
	for i := range n {
		r.AddSecond(metrics.Sample{ElapsedS: i + 1, IntervalS: 1, RPS: 1000, Requests: 1000, Target: tv(i)}, nil)
	}
	return r
}

func metricRow(res *Result, name string) *Metric {
	for i := range res.Metrics {
		if res.Metrics[i].Metric == name {
			return &res.Metrics[i]
		}
	}
	return nil
}

// The server's CPU and memory are compared without a verdict, like the generator's: means over
// the usable seconds that have a value (gaps left out), processes of a process monitor summed.
func TestServerRowsFollowTheLoad(t *testing.T) {
	base := targetRun(1, 10, nil, func(i int) map[string]float64 {
		if i == 4 {
			return map[string]float64{"host/cpu_percent": 99} // the process monitor's gap second
		}
		return map[string]float64{"nginx/cpu_percent/nginx": 30, "nginx/cpu_percent/worker": 20,
			"nginx/rss_bytes/nginx": 1000, "host/cpu_percent": 99, "host/memory_used_bytes": 5}
	})
	run := targetRun(2, 10, nil, func(int) map[string]float64 {
		return map[string]float64{"nginx/cpu_percent/nginx": 80, "nginx/rss_bytes/nginx": 3000}
	})
	res, err := Compare([]*Run{base, run}, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		base, run float64
	}{{"server_cpu_percent", 50, 80}, {"server_memory_bytes", 1000, 3000}} {
		m := metricRow(res, c.name)
		if m == nil {
			t.Fatalf("no %s row: %+v", c.name, res.Metrics)
		}
		if !m.FollowsLoad || m.Test != testNone || m.Values[1].Verdict != NotJudged {
			t.Errorf("%s: follows_load %v, test %s, verdict %s; want no verdict", c.name, m.FollowsLoad, m.Test, m.Values[1].Verdict)
		}
		if b, r := m.Values[0].Value, m.Values[1].Value; b == nil || r == nil || *b != c.base || *r != c.run {
			t.Errorf("%s: values %v %v, want %v %v", c.name, b, r, c.base, c.run)
		}
		if m.Values[0].N != 7 { // 10 seconds − first, last − the gap
			t.Errorf("%s: n = %d, want 7", c.name, m.Values[0].N)
		}
	}

	// Without any server monitor there are no server rows.
	plain := func(id int64) *Run { return targetRun(id, 6, nil, func(int) map[string]float64 { return nil }) }
	res, err = Compare([]*Run{plain(3), plain(4)}, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m := metricRow(res, "server_cpu_percent"); m != nil {
		t.Errorf("server row without monitors: %+v", m)
	}
}

// A run known by its summary only takes the server's averages from Summary.Target.
func TestServerRowsFromSummary(t *testing.T) {
	sum := &metrics.Summary{Requests: 100, RPS: 10,
		TargetSeries: []metrics.MonitorSeries{{ID: "web/cpu_percent", Monitor: "web", Type: "node", Metric: "cpu_percent", Unit: "percent"}},
		Target: []metrics.TargetStat{
			{MonitorSeries: metrics.MonitorSeries{ID: "web/cpu_percent", Monitor: "web", Type: "node", Metric: "cpu_percent"}, Avg: 42, Max: 60},
			{MonitorSeries: metrics.MonitorSeries{ID: "web/cpu_percent/0", Monitor: "web", Type: "node", Metric: "cpu_percent", Label: "0"}, Avg: 90, Max: 99},
		}}
	res, err := Compare([]*Run{FromSummary(1, "a", sum), FromSummary(2, "b", &metrics.Summary{Requests: 100, RPS: 10})}, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := metricRow(res, "server_cpu_percent")
	if m == nil || m.Values[0].Value == nil || *m.Values[0].Value != 42 || m.Values[1].Value != nil {
		t.Fatalf("server CPU from summaries: %+v", m)
	}
	if metricRow(res, "server_memory_bytes") != nil {
		t.Errorf("a memory row without a memory series")
	}
}
