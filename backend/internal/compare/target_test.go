package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
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

// The server's CPU % is compared without a verdict, like the generator's: means over the usable
// seconds that have a value (gaps left out), processes of a process monitor summed. Its memory
// has a verdict (TestServerMemoryVerdict) but the same figure.
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
	res, err := Compare([]*Run{base, run}, 0, Options{MaxGapShare: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		base, run float64
		follows   bool
	}{{"server_cpu_percent", 50, 80, true}, {"server_memory_bytes", 1000, 3000, false}} {
		m := metricRow(res, c.name)
		if m == nil {
			t.Fatalf("no %s row: %+v", c.name, res.Metrics)
		}
		if m.FollowsLoad != c.follows || (m.Values[1].Verdict == NotJudged) != c.follows {
			t.Errorf("%s: follows_load %v, test %s, verdict %s; want follows_load %v", c.name, m.FollowsLoad, m.Test, m.Values[1].Verdict, c.follows)
		}
		if b, r := m.Values[0].Value, m.Values[1].Value; b == nil || r == nil || *b != c.base || *r != c.run {
			t.Errorf("%s: values %v %v, want %v %v", c.name, b, r, c.base, c.run)
		}
		if m.Values[0].N != 7 || m.Values[0].Gaps != 1 { // 10 seconds − first, last − the gap
			t.Errorf("%s: n = %d, gaps %d, want 7 and 1", c.name, m.Values[0].N, m.Values[0].Gaps)
		}
	}

	// Without any server monitor there are no server rows.
	plain := func(id int64) *Run { return targetRun(id, 6, nil, func(int) map[string]float64 { return nil }) }
	res, err = Compare([]*Run{plain(3), plain(4)}, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"server_cpu_percent", "server_cpu_us_per_request", "server_memory_bytes"} {
		if m := metricRow(res, name); m != nil {
			t.Errorf("server row without monitors: %+v", m)
		}
	}
}

// serverRun is a run of n seconds whose second i runs at rps(i) req/s with a process monitor
// "srv" reporting us(i) µs of CPU per request (CPU % = us·rps/10⁴) and mem(i) bytes of RSS; a
// second for which us or mem returns NaN has no such value (a gap).
func serverRun(id int64, n int, rps, us, mem func(i int) float64) *Run {
	r := NewRun(Meta{ID: id})
	for i := range n {
		x := rps(i)
		tv := map[string]float64{}
		if u := us(i); !math.IsNaN(u) {
			tv["srv/cpu_percent/nginx"] = u * x / 1e4
		}
		if m := mem(i); !math.IsNaN(m) {
			tv["srv/rss_bytes/nginx"] = m
		}
		r.AddSecond(metrics.Sample{ElapsedS: i + 1, IntervalS: 1, RPS: x, Requests: int64(x), Target: tv}, nil)
	}
	return r
}

// noisy is a seeded series around level with relative per-second noise sd (independent seconds).
func noisy(seed uint64, level, sd float64) func(int) float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	vals := map[int]float64{}
	return func(i int) float64 {
		if v, ok := vals[i]; ok {
			return v
		}
		vals[i] = level * (1 + sd*rng.NormFloat64())
		return vals[i]
	}
}

func constant(v float64) func(int) float64 { return func(int) float64 { return v } }

func serverVerdict(t *testing.T, metric string, opt Options, runs ...*Run) Value {
	t.Helper()
	res, err := Compare(runs, 0, opt)
	if err != nil {
		t.Fatal(err)
	}
	m := metricRow(res, metric)
	if m == nil {
		t.Fatalf("no %s row", metric)
	}
	return m.Values[1]
}

func fmtValue(v Value) string {
	f := func(p *float64) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprintf("%.4g", *p)
	}
	return fmt.Sprintf("%s value %s effect %s [%s, %s] n %d gaps %d reason %q %s", v.Verdict, f(v.Value), f(v.Effect),
		f(v.CILow), f(v.CIHigh), v.N, v.Gaps, v.Reason, v.ReasonCode)
}

// The server's CPU per request: the sweep's formula over the usable seconds, judged like TPS
// (lower is better). 30 s runs at 1000 req/s ± 3 % per second, 200 µs per request ± 4 %.
func TestServerCPUPerRequestVerdict(t *testing.T) {
	const n = 30
	rps := func(seed uint64) func(int) float64 { return noisy(seed, 1000, 0.03) }
	mem := constant(50 << 20)
	base := serverRun(1, n, rps(1), noisy(2, 200, 0.04), mem)

	cases := []struct {
		name string
		run  *Run
		want Verdict
		eff  float64 // the effect the interval must hold
	}{
		{"20 % more CPU per request", serverRun(2, n, rps(3), noisy(4, 240, 0.04), mem), Regression, 0.2},
		{"20 % less CPU per request", serverRun(2, n, rps(3), noisy(4, 160, 0.04), mem), Improvement, -0.2},
		{"the same distribution", serverRun(2, n, rps(5), noisy(6, 200, 0.04), mem), NoChange, 0},
		// twice the rate, twice the CPU %: the same cost per request
		{"twice the rate, same µs/request", serverRun(2, n, noisy(7, 2000, 0.03), noisy(8, 200, 0.04), mem), NoChange, 0},
	}
	for _, c := range cases {
		v := serverVerdict(t, "server_cpu_us_per_request", Options{}, base, c.run)
		t.Logf("%s: %s", c.name, fmtValue(v))
		if v.Verdict != c.want || v.CILow == nil || *v.CILow > c.eff || *v.CIHigh < c.eff {
			t.Errorf("%s: %s; want %s with %+.0f %% inside the interval", c.name, fmtValue(v), c.want, c.eff*100)
		}
		if v.N != n-2 || v.Gaps != 0 {
			t.Errorf("%s: n %d gaps %d, want %d and 0", c.name, v.N, v.Gaps, n-2)
		}
	}

	// The rate change: the CPU % doubled, shown without a verdict; per request it did not move.
	res, err := Compare([]*Run{base, cases[3].run}, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m := metricRow(res, "server_cpu_percent"); m.Values[1].Verdict != NotJudged || *m.Values[1].DeltaPct < 90 {
		t.Errorf("server CPU %%: %s, want about +100 %% without a verdict", fmtValue(m.Values[1]))
	}
	m := metricRow(res, "server_cpu_us_per_request")
	if m.Unit != "µs/request" || m.HigherIsBetter || m.Test != testSeries || *m.Threshold != DefaultServerCPUThreshold {
		t.Errorf("row: %+v", m)
	}
	if b := *m.Values[0].Value; math.Abs(b-200) > 200*0.03 {
		t.Errorf("baseline µs/request %.1f, want about 200", b)
	}
}

// Over many seeded pairs of 30 s runs (4 % per-second noise of the CPU per request, 3 % of the
// rate): equal runs are a regression or an improvement in at most 5 % of the pairs, and mostly
// no_change; 20 % more CPU per request is a regression in at least 95 %.
func TestServerCPUPerRequestPower(t *testing.T) {
	const pairs, n = 60, 30
	count := func(effect float64) map[Verdict]int {
		out := map[Verdict]int{}
		for k := range uint64(pairs) {
			base := serverRun(1, n, noisy(100+k, 1000, 0.03), noisy(200+k, 200, 0.04), constant(1<<20))
			run := serverRun(2, n, noisy(300+k, 1000, 0.03), noisy(400+k, 200*(1+effect), 0.04), constant(1<<20))
			out[serverVerdict(t, "server_cpu_us_per_request", Options{Resamples: 10}, base, run).Verdict]++
		}
		return out
	}
	eq, up := count(0), count(0.2)
	t.Logf("equal runs: %v; +20 %%: %v (of %d pairs)", eq, up, pairs)
	if fp := eq[Regression] + eq[Improvement]; fp > pairs*5/100 || eq[NoChange] < pairs/2 {
		t.Errorf("equal runs: %v", eq)
	}
	if up[Regression] < pairs*95/100 {
		t.Errorf("+20 %%: %v", up)
	}
}

// A node monitor's CPU % is of all its cores: per request it counts in one-core units, as the
// sweep's column does (4 cores at 25 % = one core busy).
func TestServerCPUPerRequestNodeCores(t *testing.T) {
	r := NewRun(Meta{ID: 1})
	for i := range 6 {
		r.AddSecond(metrics.Sample{ElapsedS: i + 1, IntervalS: 1, RPS: 500, Requests: 500, Target: map[string]float64{
			"web/cpu_percent": 25, "web/cpu_percent/0": 20, "web/cpu_percent/1": 30, "web/cpu_percent/2": 25,
			"web/cpu_percent/3": 25, "web/memory_used_bytes": 1e9}}, nil)
	}
	v := serverVerdict(t, "server_cpu_us_per_request", Options{}, r, r)
	if v.Value == nil || *v.Value != 25*4*1e4/500.0 { // 1 core-second per second over 500 requests: 2000 µs
		t.Errorf("node µs/request: %s, want 2000", fmtValue(v))
	}
}

// A missing value is never "no change": a run without a server monitor, or one whose monitor
// missed too many seconds, is not comparable, with a reason; a few gap seconds are left out and
// counted.
func TestServerRowsWithoutData(t *testing.T) {
	const n = 30
	mem := constant(50 << 20)
	base := serverRun(1, n, constant(1000), noisy(2, 200, 0.04), mem)
	none := serverRun(2, n, constant(1000), constant(math.NaN()), constant(math.NaN()))
	gappy := func(every int) *Run { // a CPU and memory gap every `every` seconds, the same figures otherwise
		cpu, m := noisy(2, 200, 0.04), mem
		gap := func(f func(int) float64) func(int) float64 {
			return func(i int) float64 {
				if i%every == 0 {
					return math.NaN()
				}
				return f(i)
			}
		}
		return serverRun(3, n, constant(1000), gap(cpu), gap(m))
	}

	for _, metric := range []string{"server_cpu_us_per_request", "server_memory_bytes"} {
		v := serverVerdict(t, metric, Options{}, base, none)
		if v.Verdict != NotJudged || v.ReasonCode != "no_monitor" || v.Value != nil || !strings.Contains(v.Reason, "this run") {
			t.Errorf("%s, run without a monitor: %s", metric, fmtValue(v))
		}
		v = serverVerdict(t, metric, Options{}, none, base) // the baseline has none
		if v.Verdict != NotJudged || v.ReasonCode != "no_monitor" || !strings.Contains(v.Reason, "the baseline") {
			t.Errorf("%s, baseline without a monitor: %s", metric, fmtValue(v))
		}
		// a gap every 3rd second: 9 of 28 usable seconds, over 10 %
		v = serverVerdict(t, metric, Options{}, base, gappy(3))
		if v.Verdict != NotJudged || v.ReasonCode != "monitor_gaps" || v.Gaps != 9 || !strings.Contains(v.Reason, "9 of the 28") {
			t.Errorf("%s, many gaps: %s", metric, fmtValue(v))
		}
		// a gap every 10th: 2 of 28 seconds, left out; the rest is the baseline's own figures
		v = serverVerdict(t, metric, Options{}, base, gappy(10))
		if v.Verdict != NoChange || v.Gaps != 2 || v.N != 26 {
			t.Errorf("%s, two gaps: %s; want no_change over 26 seconds", metric, fmtValue(v))
		}
		// the same run tolerated with a larger MaxGapShare
		v = serverVerdict(t, metric, Options{MaxGapShare: 0.5}, base, gappy(3))
		if v.Verdict != NoChange || v.Gaps != 9 {
			t.Errorf("%s, gaps allowed: %s", metric, fmtValue(v))
		}
	}
	// A monitor in the plan that never answered: every second a gap, not "no monitor".
	dead := serverRun(4, n, constant(1000), constant(math.NaN()), constant(math.NaN()))
	dead.Plan = &plan.Plan{Monitors: []plan.Monitor{{Name: "srv", Type: plan.MonitorProcess}}}
	v := serverVerdict(t, "server_cpu_us_per_request", Options{}, base, dead)
	if v.Verdict != NotJudged || v.ReasonCode != "monitor_gaps" || v.Gaps != n-2 {
		t.Errorf("a monitor that never answered: %s", fmtValue(v))
	}
}

// The server is the plan's (the first process monitor), even when its first second had only the
// node monitor's values; without a plan, a second whose process monitor reports CPU but no RSS
// still names it.
func TestServerChosenOnce(t *testing.T) {
	tv := func(i int) map[string]float64 {
		if i == 0 {
			return map[string]float64{"host/cpu_percent": 50, "host/memory_used_bytes": 1e9}
		}
		return map[string]float64{"host/cpu_percent": 50, "host/memory_used_bytes": 1e9, "nginx/cpu_percent/nginx": 20, "nginx/rss_bytes/nginx": 1e6}
	}
	// the plan is known when the seconds are added (FromStored and FromSamples set it first)
	r := NewRun(Meta{ID: 1, Plan: &plan.Plan{Monitors: []plan.Monitor{{Name: "host", Type: plan.MonitorNode}, {Name: "nginx", Type: plan.MonitorProcess}}}})
	for i := range 6 {
		r.AddSecond(metrics.Sample{ElapsedS: i + 1, IntervalS: 1, RPS: 1000, Requests: 1000, Target: tv(i)}, nil)
	}
	if r.srv != (server{name: "nginx"}) {
		t.Errorf("server with a plan: %+v, want the process monitor nginx", r.srv)
	}
	cpuOnly := targetRun(2, 3, nil, func(int) map[string]float64 { return map[string]float64{"srv/cpu_percent/nginx": 20} })
	if cpuOnly.srv != (server{name: "srv"}) || !cpuOnly.usable[0].srvCPUOK {
		t.Errorf("server from a CPU-only second: %+v", cpuOnly.srv)
	}
	node := targetRun(3, 3, nil, func(int) map[string]float64 { return map[string]float64{"h/cpu_percent/0": 20, "h/cpu_percent": 20} })
	if node.srv != (server{name: "h", node: true}) {
		t.Errorf("node server: %+v", node.srv)
	}
}

// The server's memory: the mean over the usable seconds, higher is worse, a 10 % threshold.
func TestServerMemoryVerdict(t *testing.T) {
	const n = 30
	cpu, rps := noisy(2, 200, 0.04), constant(1000)
	base := serverRun(1, n, rps, cpu, noisy(1, 100<<20, 0.01))
	for _, c := range []struct {
		name  string
		level float64
		want  Verdict
	}{{"+20 %", 120 << 20, Regression}, {"−20 %", 80 << 20, Improvement}, {"+2 %", 102 << 20, NoChange}} {
		v := serverVerdict(t, "server_memory_bytes", Options{}, base, serverRun(2, n, rps, cpu, noisy(3, c.level, 0.01)))
		t.Logf("memory %s: %s", c.name, fmtValue(v))
		if v.Verdict != c.want {
			t.Errorf("memory %s: %s, want %s", c.name, fmtValue(v), c.want)
		}
	}
	// a leak: 100 MiB rising by 4 MiB a second against a flat 100 MiB (a trend: the AR(1) model
	// sees strongly correlated seconds, a wide interval)
	leak := serverRun(2, n, rps, cpu, func(i int) float64 { return float64(100<<20 + i*4<<20) })
	v := serverVerdict(t, "server_memory_bytes", Options{}, base, leak)
	t.Logf("memory leak: %s", fmtValue(v))
	if v.Verdict != Regression {
		t.Errorf("a leak: %s, want regression", fmtValue(v))
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
	// per request: 42 % of the node's one core (one per-core series) at 10 req/s = 42 000 µs;
	// summary-only runs have no per-second data: inconclusive, never no_change
	us := metricRow(res, "server_cpu_us_per_request")
	if us == nil || us.Values[0].Value == nil || *us.Values[0].Value != 42*1e4/10 {
		t.Fatalf("server µs/request from summaries: %+v", us)
	}
	if v := us.Values[1]; v.Verdict != NotJudged || v.ReasonCode != "no_monitor" {
		t.Errorf("a summary without a monitor: %s", fmtValue(v))
	}
	res, err = Compare([]*Run{FromSummary(1, "a", sum), FromSummary(2, "b", sum)}, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v := metricRow(res, "server_cpu_us_per_request").Values[1]; v.Verdict != Inconclusive || v.DecideCode != "per_second_data" {
		t.Errorf("two summaries: %s, want inconclusive (per-second data)", fmtValue(v))
	}
}
