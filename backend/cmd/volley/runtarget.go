package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// printTarget prints the run's monitors in the summary as a table of their own, set apart by
// blank lines so that its long series names do not widen the summary's columns (an empty line
// ends tabwriter's column blocks): one line per series but the per-core CPU ones, then each
// monitor error once. It reports whether it printed anything (the block then ends with a blank line).
func printTarget(w io.Writer, s *metrics.Summary) bool {
	if len(s.Target) == 0 && len(s.MonitorErrors) == 0 {
		return false
	}
	fmt.Fprintf(w, "\ntarget\tavg\tmax\n")
	for _, t := range s.Target {
		if t.Type == "node" && t.Metric == "cpu_percent" && t.Label != "" {
			continue // per core: in the samples and the UI
		}
		name := t.Monitor + " " + t.Metric
		if t.Label != "" {
			name += " " + t.Label
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t(%d s, %d gaps)\n", printable(name), targetValue(t.Avg, t.Unit), targetValue(t.Max, t.Unit), t.Seconds, t.Gaps)
	}
	for _, e := range s.MonitorErrors {
		// the message may quote a hostile endpoint's bytes: no terminal control sequences
		fmt.Fprintf(w, "  %s\terror: %s (%d s)\n", printable(e.Monitor), printable(e.Message), e.Seconds)
	}
	fmt.Fprintln(w)
	return true
}

func targetValue(v float64, unit string) string {
	switch unit {
	case metrics.UnitPercent:
		return fmt.Sprintf("%.1f%%", v)
	case metrics.UnitBytes:
		return mib(uint64(max(v, 0)))
	case metrics.UnitBytesPerS:
		return mib(uint64(max(v, 0))) + "/s"
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

// serverHead and serverCols are the capacity table's server columns, when a monitor measured them.
func serverHead(s *metrics.Summary) string {
	for _, r := range s.Sweep {
		if r.ServerCPUPercent != nil || r.ServerMemoryBytes != nil {
			return "\tclient µs/req\tserver CPU\tserver mem\tserver µs/req"
		}
	}
	return ""
}

func serverCols(s *metrics.Summary, r metrics.SweepRow) string {
	if serverHead(s) == "" {
		return ""
	}
	f := func(p *float64, format string) string {
		if p == nil {
			return "—"
		}
		return fmt.Sprintf(format, *p)
	}
	mem := "—"
	if r.ServerMemoryBytes != nil {
		mem = mib(uint64(max(*r.ServerMemoryBytes, 0)))
	}
	return fmt.Sprintf("\t%.1f\t%s\t%s\t%s", r.ClientCPUUsPerRequest, f(r.ServerCPUPercent, "%.0f%%"), mem, f(r.ServerCPUUsPerRequest, "%.1f"))
}
