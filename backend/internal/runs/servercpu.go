package runs

import (
	"math"
	"slices"
	"strings"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// ServerCPUMax is the target server's CPU % at its busiest second over the run (the runs'
// server_cpu_max, History's column), from the summary's monitor figures (Summary.Target) by the
// server monitor rule (metrics.ServerMonitor, metrics.ServerPart): a node monitor's host
// cpu_percent maximum (of all its cores), or for a process monitor the sum of its processes'
// cpu_percent maxima (100 = one core; with several processes an upper bound of their busiest
// common second, since the summary keeps each series' own maximum). Monitors are taken in the
// order of their first value; nil when no process or node monitor had a value. Rounded to 3
// decimals, as the summary's figures are.
func ServerCPUMax(sum *metrics.Summary) *float64 {
	var mons []plan.Monitor
	for _, st := range sum.Target {
		if !slices.ContainsFunc(mons, func(m plan.Monitor) bool { return m.Name == st.Monitor }) {
			mons = append(mons, plan.Monitor{Name: st.Monitor, Type: st.Type})
		}
	}
	name, node := metrics.ServerMonitor(mons)
	if name == "" {
		return nil
	}
	var cpu float64
	var found bool
	for _, st := range sum.Target {
		rest, ok := strings.CutPrefix(st.ID, name+"/")
		if ok && st.Monitor == name && st.Seconds > 0 && metrics.ServerPart(rest, node) == metrics.ServerCPU {
			cpu += st.Max
			found = true
		}
	}
	if !found {
		return nil
	}
	return ptr(math.Round(cpu*1000) / 1000)
}
