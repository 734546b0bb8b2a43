package runs_test

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/runs"
	"github.com/volley-load/volley/backend/internal/store"
)

func stat(monitor, typ, rest string, avg, max float64) metrics.TargetStat {
	return metrics.TargetStat{MonitorSeries: metrics.MonitorSeries{ID: monitor + "/" + rest, Monitor: monitor, Type: typ},
		Avg: avg, Max: max, Seconds: 10}
}

// The server monitor rule on a summary: the first process monitor's processes summed (whatever
// the order of the series), else the first node monitor's host total; nothing else counts.
func TestServerCPUMaxFollowsTheServerMonitorRule(t *testing.T) {
	node := []metrics.TargetStat{
		stat("web1", "node", "cpu_percent", 40, 71.25),
		stat("web1", "node", "cpu_percent/0", 50, 99),
		stat("web1", "node", "memory_used_bytes", 1e9, 2e9),
	}
	nginx := []metrics.TargetStat{
		stat("nginx", "process", "cpu_percent/nginx", 60, 97.5),
		stat("nginx", "process", "rss_bytes/nginx", 1e7, 2e7),
		stat("nginx", "process", "cpu_percent/php-fpm", 20, 30.125),
	}
	custom := []metrics.TargetStat{stat("c", "custom", "cpu_percent/x", 500, 900)}
	for _, tc := range []struct {
		name   string
		target []metrics.TargetStat
		want   string
	}{
		{"none", nil, "null"},
		{"custom only", custom, "null"},
		{"node", append(append([]metrics.TargetStat{}, custom...), node...), "71.25"},
		{"process before node", append(append([]metrics.TargetStat{}, node...), nginx...), "127.625"},
		{"second node ignored", append(append([]metrics.TargetStat{}, node...),
			stat("web2", "node", "cpu_percent", 80, 100)), "71.25"},
		{"second process ignored", append(append([]metrics.TargetStat{}, nginx...),
			stat("other", "process", "cpu_percent/redis", 80, 180)), "127.625"},
	} {
		got := "null"
		if v := runs.ServerCPUMax(&metrics.Summary{Target: tc.target}); v != nil {
			got = fmt.Sprint(*v)
		}
		if got != tc.want {
			t.Errorf("%s: ServerCPUMax %s, want %s", tc.name, got, tc.want)
		}
	}
}

// A run ended through the StoreSink on a real SQLite file stores server_cpu_max from its
// summary's monitor figures; a run without monitors stores NULL. The list and the run read it.
func TestStoreSinkStoresServerCPUMax(t *testing.T) {
	ctx := t.Context()
	st, err := store.Open(filepath.Join(t.TempDir(), "volley.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := st.CreatePlan(ctx, "cpu", []byte(`{"name":"cpu"}`))
	if err != nil {
		t.Fatal(err)
	}
	sink := &runs.StoreSink{W: st, Log: slog.New(slog.DiscardHandler)}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	withMonitors := &metrics.Summary{Requests: 100, Successes: 100, DurationS: 1,
		Target: []metrics.TargetStat{stat("web1", "node", "cpu_percent", 30, 64.5),
			stat("nginx", "process", "cpu_percent/nginx", 90, 99.75)}}
	without := &metrics.Summary{Requests: 100, Successes: 100, DurationS: 1}
	var ids []int64
	for i, sum := range []*metrics.Summary{withMonitors, without} {
		r, err := st.CreateRun(ctx, p.ID, p.Name, p.Spec, t0.Add(time.Duration(i)*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
		sink.Start(r.ID, r.StartedAt)
		sink.Sample(r.ID, runner.NewSample(metrics.Sample{T: r.StartedAt.Add(time.Second).UnixMilli(), ElapsedS: 1,
			IntervalS: 1, Requests: 100, Target: map[string]float64{"nginx/cpu_percent/nginx": 99.75}}))
		sink.Finish(r.ID, runner.StatusFinished, r.StartedAt, r.StartedAt.Add(time.Second), sum, nil)
	}
	want := map[int64]string{ids[0]: "99.75", ids[1]: "null"}
	show := func(v *float64) string {
		if v == nil {
			return "null"
		}
		return fmt.Sprint(*v)
	}
	for _, id := range ids {
		r, err := st.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := show(runs.RunOf(r).ServerCPUMax); r.Status != store.StatusFinished || got != want[id] {
			t.Errorf("run %d: %s, server_cpu_max %s, want finished with %s", id, r.Status, got, want[id])
		}
	}
	list, _, err := st.ListRuns(ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list {
		if got := show(r.ServerCPUMax); got != want[r.ID] {
			t.Errorf("listed run %d: server_cpu_max %s, want %s", r.ID, got, want[r.ID])
		}
	}
	if len(list) != 2 {
		t.Errorf("%d runs listed, want 2", len(list))
	}
}
