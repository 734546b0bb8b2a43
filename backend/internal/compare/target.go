package compare

import (
	"fmt"
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
// The server's CPU % follows the load like the generator's — a slower target serves fewer
// requests and burns less CPU — so it is shown with values and deltas, without a verdict. Two rows
// are judged, with the machinery of TPS (per-second observations, the AR(1) variance, Welch's
// interval on the log scale): the CPU per request in µs (cpuPerRequest, the sweep's formula), which
// a run at another rate does not move, lower is better; and the memory's mean over the usable
// seconds, lower is better. A run or baseline without a server monitor, or whose monitor missed
// more than Options.MaxGapShare of the usable seconds, has no verdict on them (ReasonCode); gap
// seconds are left out and counted (Value.Gaps) — a missing value is never "no change"
// (docs/compare.md). A comparison none of whose runs had a server monitor has no such rows.

// server is a run's server monitor; name "" when it has none.
type server struct {
	name string
	node bool
}

// serverOf picks the server from the summary's series list, or (a run without a summary) from a
// second's series ids: a monitor with memory_used_bytes or an unlabelled cpu_percent is a node
// monitor, else one with rss_bytes or labelled cpu_percent series (one per process) a process
// monitor; the first by name then.
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
			case rest == "memory_used_bytes" || rest == "cpu_percent":
				types[mon] = "node"
			case (strings.HasPrefix(rest, "rss_bytes/") || strings.HasPrefix(rest, "cpu_percent/")) && types[mon] != "node":
				types[mon] = "process" // a node's per-core cpu_percent/N: replaced by its total's "node"
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

// figures are the server's CPU, the cores that CPU is of, and memory in one second (ok false: no
// value, a gap). cores is a node's count of per-core CPU series (at least 1), 1 for a process
// monitor, so cpu·cores is in percent of one core (engine's targetSide.attach, the same rule).
func (sv server) figures(target map[string]float64) (cpu, cores, mem float64, cpuOK, memOK bool) {
	if sv.name == "" {
		return
	}
	prefix := sv.name + "/"
	for id, v := range target {
		rest, ok := strings.CutPrefix(id, prefix)
		if !ok {
			continue
		}
		switch metrics.ServerPart(rest, sv.node) {
		case metrics.ServerCPU:
			cpu, cpuOK = cpu+v, true
		case metrics.ServerCore:
			cores++
		case metrics.ServerMemory:
			mem, memOK = mem+v, true
		}
	}
	return cpu, max(cores, 1), mem, cpuOK, memOK
}

// summaryServer is a summary-only run's server figure of part (metrics.ServerCPU or
// ServerMemory): the averages of the server's series (processes summed), and for the CPU the
// cores it is of (a node's per-core series counted; 1 for a process monitor); NaN when it had no
// server monitor or no such series.
func summaryServer(s *metrics.Summary, part int) (v, cores float64) {
	sv := serverOf(s.TargetSeries, nil)
	if sv.name == "" {
		return math.NaN(), 0
	}
	ok := false
	for _, st := range s.Target {
		rest, mine := strings.CutPrefix(st.ID, sv.name+"/")
		if !mine || st.Monitor != sv.name {
			continue
		}
		switch metrics.ServerPart(rest, sv.node) {
		case part:
			v, ok = v+st.Avg, true
		case metrics.ServerCore:
			cores++
		}
	}
	if !ok {
		return math.NaN(), 0
	}
	return v, max(cores, 1)
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

// cpuUs is a second's server CPU in µs of one core per second: percent of one core × 10⁴.
func cpuUs(s second) float64 { return s.srvCPU * s.srvCores * 1e4 }

// perRequestOK: the second has a server CPU value and requests to divide it by.
func perRequestOK(s second) bool { return s.srvCPUOK && s.rps > 0 }

// cpuPerRequest is the server's CPU time per request in µs over the seconds ss that have a CPU
// value and requests: Σ CPU µs ÷ Σ RPS, i.e. mean CPU % (in one-core units) × 10⁴ ÷ mean RPS —
// the formula of metrics.SweepRow.ServerCPUUsPerRequest (engine's targetSide.finish), a ratio of
// means, so a second with few requests does not weigh as much as a full one.
func cpuPerRequest(ss []second) (float64, bool) {
	var y, x float64
	for _, s := range ss {
		if perRequestOK(s) {
			y, x = y+cpuUs(s), x+s.rps
		}
	}
	if x <= 0 {
		return 0, false
	}
	return y / x, true
}

// cpuPerRequestObs are the per-second observations behind cpuPerRequest's variance: the ratio
// estimator R = ȳ/x̄ linearised, zᵢ = R + (yᵢ − R·xᵢ)/x̄ (yᵢ a second's CPU µs, xᵢ its RPS), whose
// mean is R and whose variance of the mean is the delta-method variance of R (W. G. Cochran,
// Sampling Techniques, 3rd ed., Wiley, 1977, §6.3). The AR(1) correction of ar1Mean applies to
// them as to any per-second series.
func cpuPerRequestObs(ss []second) []float64 {
	r, ok := cpuPerRequest(ss)
	if !ok {
		return nil
	}
	var x float64
	n := 0
	for _, s := range ss {
		if perRequestOK(s) {
			x, n = x+s.rps, n+1
		}
	}
	xm := x / float64(n)
	out := make([]float64, 0, n)
	for _, s := range ss {
		if perRequestOK(s) {
			out = append(out, r+(cpuUs(s)-r*s.rps)/xm)
		}
	}
	return out
}

func cpuGap(s second) bool { return !s.srvCPUOK }
func memGap(s second) bool { return !s.srvMemOK }

// serverDefs are the server's rows, after the generator's.
var serverDefs = []metricDef{
	{name: "server_cpu_percent", unit: "percent", test: testNone, notJudged: followsLoadReason, followsLoad: true, optional: true,
		value: meanWhere(func(s second) float64 { return s.srvCPU }, func(s second) bool { return s.srvCPUOK }),
		has:   func(s second) bool { return s.srvCPUOK }, gap: cpuGap,
		summary: func(s *metrics.Summary) float64 {
			v, _ := summaryServer(s, metrics.ServerCPU)
			return v
		}},
	{name: "server_cpu_us_per_request", unit: "µs/request", test: testSeries, relative: true, optional: true,
		value: cpuPerRequest, obs: cpuPerRequestObs, has: perRequestOK, gap: cpuGap,
		thr: func(o Options) float64 { return o.ServerCPUThreshold },
		summary: func(s *metrics.Summary) float64 {
			v, cores := summaryServer(s, metrics.ServerCPU)
			if s.RPS <= 0 {
				return math.NaN()
			}
			return v * cores * 1e4 / s.RPS
		}},
	{name: "server_memory_bytes", unit: "bytes", test: testSeries, relative: true, optional: true,
		value: meanWhere(func(s second) float64 { return s.srvMem }, func(s second) bool { return s.srvMemOK }),
		has:   func(s second) bool { return s.srvMemOK }, gap: memGap,
		thr: func(o Options) float64 { return o.ServerMemoryThreshold },
		summary: func(s *metrics.Summary) float64 {
			v, _ := summaryServer(s, metrics.ServerMemory)
			return v
		}},
}

// hasServer reports whether the run had a server monitor: one seen in its seconds, else named by
// its summary's series or its plan's monitors (a monitor that never answered leaves no series).
func (r *Run) hasServer() bool {
	if r.srv.name != "" {
		return true
	}
	if r.Summary != nil && serverOf(r.Summary.TargetSeries, nil).name != "" {
		return true
	}
	if r.Plan != nil {
		name, _ := metrics.ServerMonitor(r.Plan.Monitors)
		return name != ""
	}
	return false
}

// gaps counts the run's usable seconds without the server row's value (0 for other rows, and for a
// run without a server monitor: it has no value to miss).
func (d metricDef) gaps(p *prepared) int {
	n := 0
	if d.gap != nil && p.r.hasServer() {
		for _, s := range p.r.usable {
			if d.gap(s) {
				n++
			}
		}
	}
	return n
}

// serverNotComparable sets the verdict of a judged server row's value that cannot be tested
// and reports whether it did: a run or baseline without a server monitor, or with more gap
// seconds than Options.MaxGapShare of its usable seconds (or only gaps), is "none" with
// ReasonCode "no_monitor" or "monitor_gaps" — a missing value is never "no change"; a figure of 0
// has no relative change and is inconclusive.
func (d metricDef) serverNotComparable(v *Value, p, base *prepared, opt Options) bool {
	for _, c := range []struct {
		p    *prepared
		whom string
	}{{p, "this run"}, {base, "the baseline"}} {
		if !c.p.r.hasServer() {
			v.Verdict, v.ReasonCode = NotJudged, "no_monitor"
			v.Reason = "no server monitor in " + c.whom + ": not comparable"
			return true
		}
		g, u := d.gaps(c.p), len(c.p.r.usable)
		if g > 0 && (g == u || float64(g) > opt.MaxGapShare*float64(u)) {
			v.Verdict, v.ReasonCode = NotJudged, "monitor_gaps"
			v.Reason = fmt.Sprintf("monitor gaps: %d of the %d usable seconds of %s have no value (more than %g %%): not comparable",
				g, u, c.whom, opt.MaxGapShare*100)
			return true
		}
	}
	if v.Value != nil && v.Delta != nil && (*v.Value <= 0 || *v.Value-*v.Delta <= 0) {
		v.Verdict, v.Reason = Inconclusive, "a server figure of 0 in this run or the baseline: no relative change"
		return true
	}
	return false
}

// serverSecond fills a second's server figures from its sample. The server is chosen once: from
// the summary's series, else the plan's monitors (metrics.ServerMonitor, the engine's rule), else
// the first second whose series name one — a second in which the process monitor missed but a
// node monitor answered would otherwise make the node the server.
func (r *Run) serverSecond(sec *second, s metrics.Sample) {
	if len(s.Target) == 0 {
		return
	}
	if !r.serverKnown {
		var series []metrics.MonitorSeries
		if r.Summary != nil {
			series = r.Summary.TargetSeries
		}
		r.srv = serverOf(series, s.Target)
		if len(series) == 0 && r.Plan != nil {
			if name, node := metrics.ServerMonitor(r.Plan.Monitors); name != "" {
				r.srv = server{name: name, node: node}
			}
		}
		r.serverKnown = r.srv.name != ""
	}
	sec.srvCPU, sec.srvCores, sec.srvMem, sec.srvCPUOK, sec.srvMemOK = r.srv.figures(s.Target)
}
