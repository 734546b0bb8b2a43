package main

import (
	"fmt"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/report"
)

// printByName writes the summary's per-request table: one row per request name (a plan with one
// name has one), with its counts, rate, latency percentiles, checks and the p95 of each phase
// of its requests (metrics.Timing). A name without any response (report.HasLatency; a 503 is a
// response) shows "—" for its times, never 0.
func printByName(tw *tabwriter.Writer, s *metrics.Summary) {
	if len(s.ByName) == 0 {
		return
	}
	fmt.Fprintf(tw, "\nrequest\treqs\trps\terrors\tp50 ms\tp95 ms\tp99 ms\tchecks ✓/✗\tconnect p95\ttls p95\twait p95\treceive p95\t\n")
	for _, name := range slices.Sorted(maps.Keys(s.ByName)) {
		n := s.ByName[name]
		t := func(v float64) string {
			if !report.HasLatency(n.Latency, nil) {
				return "—"
			}
			return fmt.Sprintf("%.3f", v)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%d\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t\n", name, n.Requests, n.RPS, n.Errors,
			t(n.Latency.P50), t(n.Latency.P95), t(n.Latency.P99), n.ChecksPassed, n.ChecksFailed,
			t(n.Timing.Connect.P95), t(n.Timing.TLS.P95), t(n.Timing.Wait.P95), t(n.Timing.Receive.P95))
	}
	fmt.Fprintln(tw)
}
