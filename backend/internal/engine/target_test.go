package engine

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// A process monitor whose "nginx" burns 95 % of a core: every sample carries its value, the
// summary lists the series, and the sweep's rows get the server columns and name the target.
func TestMonitorsInSamplesAndSweep(t *testing.T) {
	start := time.Now()
	mon := testutil.NewTarget(t, func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE volley_process_cpu_seconds_total counter\nvolley_process_cpu_seconds_total{process=\"nginx\"} %g\n"+
			"# TYPE volley_process_resident_memory_bytes gauge\nvolley_process_resident_memory_bytes{process=\"nginx\"} 5e+06\n", 0.95*time.Since(start).Seconds())
	})
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, _ *http.Request) { time.Sleep(5 * time.Millisecond) })
	js := fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],"load":{"executor":"concurrency-sweep","levels":[1,2],"step_duration":"2s"},
		"monitors":[{"type":"process","name":"srv","url":%q}]}`, tg.URL, mon.URL+"/metrics")
	sum, samples := run(t, mustPlan(t, js))
	const id = "srv/cpu_percent/nginx"
	with := 0
	for _, s := range samples {
		if v, ok := s.Target[id]; ok {
			with++
			if math.Abs(v-95) > 10 {
				t.Errorf("second %d: %s = %v, want 95 ± 10", s.ElapsedS, id, v)
			}
		}
		if len(s.TargetErrors) > 0 {
			t.Errorf("second %d: errors %+v", s.ElapsedS, s.TargetErrors)
		}
	}
	if with < len(samples)-2 {
		t.Errorf("%d of %d samples have %s", with, len(samples), id)
	}
	// By id, not position: the CPU rate needs two readings, and a run whose CPU series began a
	// second after its memory listed the memory first.
	stats := map[string]metrics.TargetStat{}
	for _, st := range sum.Target {
		stats[st.ID] = st
	}
	if len(sum.TargetSeries) != 2 || len(sum.Target) != 2 || stats[id].Seconds != with || stats["srv/rss_bytes/nginx"].Avg != 5e6 {
		t.Errorf("series %+v stats %+v", sum.TargetSeries, sum.Target)
	}
	for _, r := range sum.Sweep {
		if r.ServerCPUPercent == nil || math.Abs(*r.ServerCPUPercent-95) > 10 || r.ServerMemoryBytes == nil || *r.ServerMemoryBytes != 5e6 {
			t.Fatalf("row %+v", r)
		}
		if want := *r.ServerCPUPercent * 1e4 / r.RPS; r.ServerCPUUsPerRequest == nil || math.Abs(*r.ServerCPUUsPerRequest-want) > 0.001*want {
			t.Errorf("server µs/request %v, want %v", r.ServerCPUUsPerRequest, want)
		}
		if want := r.CPUPercent * 1e4 / r.RPS; math.Abs(r.ClientCPUUsPerRequest-want) > 0.1 {
			t.Errorf("client µs/request %v, want %v", r.ClientCPUUsPerRequest, want)
		}
	}
	if sum.SweepLimitedBy != metrics.LimitedByTarget {
		t.Errorf("limited by %q with the server at 95 %%", sum.SweepLimitedBy)
	}
}

func TestLimitedByMeasured(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	rows := []metrics.SweepRow{{VUs: 1, RPS: 100, P50: 10, ServerCPUPercent: f(40)}, {VUs: 4, RPS: 200, P50: 20, ServerCPUPercent: f(60)}}
	if got := limitedByMeasured(rows); got != metrics.LimitedByNone {
		t.Errorf("still growing, server at 60 %%: %q", got)
	}
	rows[1].ServerCPUPercent = f(92)
	if got := limitedByMeasured(rows); got != metrics.LimitedByTarget {
		t.Errorf("server at 92 %%: %q", got)
	}
	rows[1].GeneratorBoundSeconds = 1
	if got := limitedByMeasured(rows); got != metrics.LimitedByGenerator {
		t.Errorf("generator saturated: %q", got)
	}
	// The knee at 4 VUs with the server idle: latency rising with flat TPS past it is the target.
	rows = append(rows, metrics.SweepRow{VUs: 16, RPS: 198, P50: 80, ServerCPUPercent: f(30)})
	rows[1].Knee, rows[1].GeneratorBoundSeconds, rows[1].ServerCPUPercent = true, 0, f(30)
	if got := limitedByMeasured(rows); got != metrics.LimitedByTarget {
		t.Errorf("latency rising with flat TPS: %q", got)
	}
	rows[2].RPS = 150 // throughput falling past the knee counts as flat
	if got := limitedByMeasured(rows); got != metrics.LimitedByTarget {
		t.Errorf("latency rising with falling TPS: %q", got)
	}
	rows[2].P50 = 21 // flat latency too: nothing measured at its limit
	if got := limitedByMeasured(rows); got != metrics.LimitedByNone {
		t.Errorf("flat latency: %q", got)
	}
	rows[2].RPS, rows[2].P50 = 400, 80 // throughput still growing past the "knee": not flat
	if got := limitedByMeasured(rows); got != metrics.LimitedByNone {
		t.Errorf("growing TPS: %q", got)
	}
}

// Monitors that hang, flood or answer garbage leave the run's throughput alone (within 2 % of a
// run without monitors, widened by the scheduling delay measured) and show their errors.
func TestHostileMonitorsDoNotSlowTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("two 3 s runs")
	}
	const delay = 20 * time.Millisecond
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, _ *http.Request) { time.Sleep(delay) })
	release := make(chan struct{})
	hang := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	flood := "http://" + testutil.EndlessBodyTarget(t) + "/metrics"
	garbage := testutil.NewTarget(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("node_cpu_seconds_total{cpu=\"0\" 1\n"))
	})
	base := constantVUs(tg.URL, 10, "3s")
	hostile := strings.TrimSuffix(base, "}") + fmt.Sprintf(`,"monitors":[{"type":"node","name":"hang","url":%q},{"type":"node","name":"flood","url":%q},{"type":"node","name":"garbage","url":%q}]}`,
		hang.URL+"/metrics", flood, garbage.URL+"/metrics")
	// The two runs go side by side, so that the machine's other load (this test shares two cores
	// with whatever else runs) stretches both alike.
	probe := testutil.StartSchedProbe(t)
	var plain *metrics.Summary
	done := make(chan struct{})
	go func() {
		defer close(done)
		e, err := newEngine(mustPlan(t, base), Options{})
		if err == nil {
			plain, err = e.Run(context.Background())
		}
		if err != nil {
			t.Error(err)
		}
	}()
	sum, samples := run(t, mustPlan(t, hostile))
	<-done
	d := probe.Stop()
	if plain == nil {
		t.FailNow()
	}
	// Each request takes the target's 20 ms plus the machine's lateness on its two wakeups (the
	// target's answer, the VU's next send): the runs may differ by that lateness at p50 on each.
	margin := 0.02 + 2*float64(d.P50)/float64(delay)
	ratio := float64(sum.Requests) / float64(plain.Requests)
	t.Logf("without monitors %d requests, with hostile ones %d (ratio %.4f, margin %.4f; %v)", plain.Requests, sum.Requests, ratio, margin, d)
	if ratio < 1-margin {
		t.Errorf("hostile monitors slowed the run: %d requests against %d", sum.Requests, plain.Requests)
	}
	// Nor its collector (a second folded into the next one would show as a missing sample) or end.
	if sum.Seconds < plain.Seconds-1 || sum.DurationS > plain.DurationS+d.Slack(testutil.StopChain).Seconds()+0.05 {
		t.Errorf("with hostile monitors %d seconds in %.3f s, without %d in %.3f s", sum.Seconds, sum.DurationS, plain.Seconds, plain.DurationS)
	}
	want := map[string]string{"hang": "timeout after 800ms", "flood": "body over 4 MiB", "garbage": "line 1: malformed exposition"}
	got := map[string]string{}
	for _, e := range sum.MonitorErrors {
		got[e.Monitor] = e.Message
		if e.Seconds < 1 {
			t.Errorf("%+v", e)
		}
	}
	// A monitor's error is shown in the sample where it starts or its message changes, never
	// again while it stays the same (the flood's may change between its two messages below).
	shown, last := map[string]int{}, map[string]string{}
	for _, s := range samples {
		for _, e := range s.TargetErrors {
			shown[e.Monitor]++
			if e.Message == last[e.Monitor] {
				t.Errorf("%s: %q shown again at %d", e.Monitor, e.Message, s.ElapsedS)
			}
			last[e.Monitor] = e.Message
		}
		if len(s.Target) > 0 {
			t.Errorf("values from hostile monitors: %v", s.Target)
		}
	}
	for m, w := range want {
		// Reading 4 MiB within 800 ms may fail on a machine this busy (and under -race): then the
		// flood is cut off by the deadline instead, as bounded.
		if !strings.HasPrefix(got[m], w) && (m != "flood" || !strings.HasPrefix(got[m], "timeout after 800ms")) {
			t.Errorf("%s: error %q, want %q… (all: %+v)", m, got[m], w, sum.MonitorErrors)
		}
		if shown[m] < 1 || (m != "flood" && shown[m] != 1) {
			t.Errorf("%s: shown in %d samples, want once", m, shown[m])
		}
	}
}
