package engine

import (
	"strings"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/monitor"
)

// targetSide is the collector's view of the run's monitors (package monitor): it attaches each
// second's values to the sample and gathers the sweep levels' server columns.
type targetSide struct {
	set    *monitor.Set  // nil without monitors
	server string        // the monitor whose CPU and memory are the sweep's server columns; "" none
	node   bool          // server is a node monitor (host CPU of all cores) rather than a process one
	levels []ServerLevel // per sweep level
	now    serverSecond  // this second's server figures (set by attach)
}

type serverSecond struct {
	cpu, mem       float64
	cores          float64 // cores the CPU % is of: a node's core count; 1 for a process monitor
	hasCPU, hasMem bool
}

// startTarget starts the plan's monitors with the run, through the engine's target policy.
func startTarget(e *Engine) targetSide {
	t := targetSide{set: monitor.Start(e.p.Monitors, e.p.Secrets, e.policy)}
	t.server, t.node = metrics.ServerMonitor(t.set.Monitors())
	return t
}

// attach puts the monitors' values and new errors into the second's sample.
func (t *targetSide) attach(s *metrics.Sample, now time.Time) {
	t.now = serverSecond{}
	if t.set == nil {
		return
	}
	s.Target, s.TargetErrors = t.set.Read(now)
	if t.server == "" {
		return
	}
	prefix := t.server + "/"
	for id, v := range s.Target {
		rest, ok := strings.CutPrefix(id, prefix)
		if !ok {
			continue
		}
		switch metrics.ServerPart(rest, t.node) {
		case metrics.ServerCPU:
			t.now.cpu += v
			t.now.hasCPU = true
		case metrics.ServerCore:
			t.now.cores++
		case metrics.ServerMemory:
			t.now.mem += v
			t.now.hasMem = true
		}
	}
	if !t.node {
		t.now.cores = 1
	}
}

// addLevel adds this second's server figures to sweep level i of n.
func (t *targetSide) addLevel(i, n int) {
	if t.levels == nil {
		t.levels = make([]ServerLevel, n)
	}
	a := &t.levels[i]
	if t.now.hasCPU {
		a.CPU += t.now.cpu
		a.Cores += max(t.now.cores, 1)
		a.NCPU++
	}
	if t.now.hasMem {
		a.Mem += t.now.mem
		a.NMem++
	}
}

// final stops the monitors and returns what they saw (nil without monitors).
func (t *targetSide) final() *FinalMonitors {
	if t.set == nil {
		return nil
	}
	t.set.Stop()
	m := &FinalMonitors{Server: t.server != "", ServerLevels: t.levels}
	m.Series, m.Target, m.Errors = t.set.Summary()
	return m
}

// applyMonitors fills the summary's target fields and the sweep's client and server columns
// (m: nil without monitors).
func applyMonitors(s *metrics.Summary, m *FinalMonitors) {
	for i := range s.Sweep {
		if r := &s.Sweep[i]; r.RPS > 0 {
			r.ClientCPUUsPerRequest = round(r.CPUPercent*1e4/r.RPS, 1) // CPUPercent is of one core
		}
	}
	if m == nil {
		return
	}
	s.TargetSeries, s.Target, s.MonitorErrors = m.Series, m.Target, m.Errors
	for i := range s.Sweep {
		if i >= len(m.ServerLevels) {
			break
		}
		r, a := &s.Sweep[i], m.ServerLevels[i]
		if a.NCPU > 0 {
			cpu := round(a.CPU/float64(a.NCPU), 1)
			r.ServerCPUPercent = &cpu
			if r.RPS > 0 {
				// CPU% of `cores` cores → core-seconds per second = cpu/100 × cores; per request in µs.
				us := round(a.CPU/float64(a.NCPU)*(a.Cores/float64(a.NCPU))*1e4/r.RPS, 1)
				r.ServerCPUUsPerRequest = &us
			}
		}
		if a.NMem > 0 {
			mem := round(a.Mem/float64(a.NMem), 0)
			r.ServerMemoryBytes = &mem
		}
	}
	if len(s.Sweep) > 0 && m.Server {
		s.SweepLimitedBy = limitedByMeasured(s.Sweep)
	}
}

// Target saturation: a level's server CPU at or above serverBusy of the cores its monitor sees (a
// node monitor's percent is already of all its cores) or of one core (a process monitor: a
// single-threaded server such as one nginx worker is saturated at 100 % of one core).
const serverBusy = 90.0

// latencyRise: past the knee, latency "rises with flat TPS" when a later level's p50 is at least
// this factor of the knee's while its throughput grew by less than 1/kneeShare (about 5 %) over
// the knee's, or fell.
const latencyRise = 1.2

// limitedByMeasured is limitedBy with the server's columns (SweepRow.ServerCPUPercent), for a
// sweep with a server monitor. At the knee (or the last level without one):
//   - "generator" when any of that level's seconds found the generator saturated;
//   - "target" when the server's CPU there is ≥ 90 % (see serverBusy), or when a later level
//     shows latency rising (p50 ≥ 1.2 × the knee's) with throughput flat or falling (at most
//     1/0.95 ≈ 1.05 × the knee's);
//   - "none" otherwise: neither side was measured at its limit within the levels tried.
func limitedByMeasured(rows []metrics.SweepRow) string {
	at := len(rows) - 1
	for i, r := range rows {
		if r.Knee {
			at = i
			break
		}
	}
	r := rows[at]
	if r.GeneratorBoundSeconds > 0 {
		return metrics.LimitedByGenerator
	}
	if r.ServerCPUPercent != nil && *r.ServerCPUPercent >= serverBusy {
		return metrics.LimitedByTarget
	}
	for _, later := range rows[at+1:] {
		if r.P50 > 0 && later.P50 >= latencyRise*r.P50 && later.RPS*kneeShare <= r.RPS {
			return metrics.LimitedByTarget
		}
	}
	return metrics.LimitedByNone
}
