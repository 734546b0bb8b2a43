package compare

import (
	"math"
	"slices"
	"strings"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// The target's side in a comparison (issue 15): the server's CPU and memory, from the run's
// monitors (metrics.Sample.Target). The server is the monitor the sweep's server columns use
// (engine's startTarget): the run's first process monitor, else its first node monitor. Its CPU is
// a node's host CPU (percent of all its cores) or a process monitor's processes summed (percent of
// one core); its memory a node's memory used or the processes' RSS summed.
//
// Like the generator's CPU and memory they follow the load — a slower target serves fewer
// requests and may burn less CPU — so they are shown with values and deltas, without a verdict
// (docs/compare.md). A comparison none of whose runs had a server monitor has no such rows.

// server is a run's server monitor; name "" when it has none.
type server struct {
	name string
	node bool
}

// serverOf picks the server from the summary's series list, or (a run without a summary) from a
// second's series ids: a monitor with rss_bytes series is a process monitor, one with
// memory_used_bytes or an unlabelled cpu_percent a node monitor; the first by name then.
func serverOf(series []metrics.MonitorSeries, ids map[string]float64) server {
	var order []string
	types := map[string]string{}
	for _, s := range series {
		if _, ok := types[s.Monitor]; !ok {
			order = append(order, s.Monitor)
		}
		types[s.Monitor] = s.Type
	}
	if len(series) == 0 {
		for id := range ids {
			mon, rest, _ := strings.Cut(id, "/")
			switch {
			case strings.HasPrefix(rest, "rss_bytes/"):
				types[mon] = "process"
			case (rest == "memory_used_bytes" || rest == "cpu_percent") && types[mon] != "process":
				types[mon] = "node"
			default:
				continue
			}
			if !slices.Contains(order, mon) {
				order = append(order, mon)
			}
		}
		slices.Sort(order)
	}
	for _, typ := range []string{"process", "node"} {
		for _, m := range order {
			if types[m] == typ {
				return server{name: m, node: typ == "node"}
			}
		}
	}
	return server{}
}

// figures are the server's CPU and memory in one second (ok false: no value, a gap).
func (sv server) figures(target map[string]float64) (cpu, mem float64, cpuOK, memOK bool) {
	if sv.name == "" {
		return
	}
	prefix := sv.name + "/"
	for id, v := range target {
		rest, ok := strings.CutPrefix(id, prefix)
		if !ok {
			continue
		}
		switch {
		case sv.node && rest == "cpu_percent":
			cpu, cpuOK = v, true
		case sv.node && rest == "memory_used_bytes":
			mem, memOK = v, true
		case !sv.node && strings.HasPrefix(rest, "cpu_percent/"):
			cpu, cpuOK = cpu+v, true
		case !sv.node && strings.HasPrefix(rest, "rss_bytes/"):
			mem, memOK = mem+v, true
		}
	}
	return
}

// summaryServer is a summary-only run's server CPU and memory: the averages of the server's
// series (processes summed); NaN when it had no server monitor.
func summaryServer(s *metrics.Summary, memory bool) float64 {
	sv := serverOf(s.TargetSeries, nil)
	if sv.name == "" {
		return math.NaN()
	}
	v, ok := 0.0, false
	for _, st := range s.Target {
		if st.Monitor != sv.name {
			continue
		}
		want := "cpu_percent"
		if memory {
			want = map[bool]string{true: "memory_used_bytes", false: "rss_bytes"}[sv.node]
		}
		if st.Metric == want && (sv.node == (st.Label == "")) {
			v, ok = v+st.Avg, true
		}
	}
	if !ok {
		return math.NaN()
	}
	return v
}

// meanWhere is the mean of f over the seconds where has holds (ok false: none).
func meanWhere(f func(second) float64, has func(second) bool) func([]second) (float64, bool) {
	return func(ss []second) (float64, bool) {
		var sum float64
		n := 0
		for _, s := range ss {
			if has(s) {
				sum += f(s)
				n++
			}
		}
		return sum / float64(max(n, 1)), n > 0
	}
}

// serverDefs are the server's rows, after the generator's.
var serverDefs = []metricDef{
	{name: "server_cpu_percent", unit: "percent", test: testNone, notJudged: followsLoadReason, followsLoad: true, optional: true,
		value:   meanWhere(func(s second) float64 { return s.srvCPU }, func(s second) bool { return s.srvCPUOK }),
		has:     func(s second) bool { return s.srvCPUOK },
		summary: func(s *metrics.Summary) float64 { return summaryServer(s, false) }},
	{name: "server_memory_bytes", unit: "bytes", test: testNone, notJudged: followsLoadReason, followsLoad: true, optional: true,
		value:   meanWhere(func(s second) float64 { return s.srvMem }, func(s second) bool { return s.srvMemOK }),
		has:     func(s second) bool { return s.srvMemOK },
		summary: func(s *metrics.Summary) float64 { return summaryServer(s, true) }},
}

// serverSecond fills a second's server figures from its sample.
func (r *Run) serverSecond(sec *second, s metrics.Sample) {
	if len(s.Target) == 0 {
		return
	}
	if !r.serverKnown {
		var series []metrics.MonitorSeries
		if r.Summary != nil {
			series = r.Summary.TargetSeries
		}
		r.srv, r.serverKnown = serverOf(series, s.Target), true
	}
	sec.srvCPU, sec.srvMem, sec.srvCPUOK, sec.srvMemOK = r.srv.figures(s.Target)
}
