package engine

import (
	"fmt"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// thresholdSource is what thresholds are judged on: the whole run's or one request name's
// cumulative figures.
type thresholdSource struct {
	lat              *hdr.Histogram
	latSum           uint64
	requests, errors int64
	durationS        float64
}

// value extracts the observed value of a rule: latencies in ms from the merged histogram,
// error_rate as a fraction, rps per second. ok is false when there is no data to judge (no
// response for a latency rule, no request for error_rate): the threshold then fails, because
// "nothing answered" must never pass "p(95)<200ms".
func (s thresholdSource) value(r plan.Rule) (v float64, ok bool) {
	switch r.Metric {
	case "p", "med", "avg", "min", "max":
		if s.lat.TotalCount() == 0 {
			return 0, false
		}
	case "error_rate":
		if s.requests == 0 {
			return 0, false
		}
	}
	switch r.Metric {
	case "p":
		return metrics.Percentile(s.lat, r.Percentile), true
	case "med":
		return metrics.Percentile(s.lat, 50), true
	case "avg":
		return metrics.LatencyOf(s.lat, s.latSum).Mean, true
	case "min":
		return metrics.LatencyOf(s.lat, s.latSum).Min, true
	case "max":
		return metrics.LatencyOf(s.lat, s.latSum).Max, true
	case "error_rate":
		return float64(s.errors) / float64(s.requests), true
	case "rps":
		if s.durationS <= 0 {
			return 0, false
		}
		return float64(s.requests) / s.durationS, true
	}
	return 0, false
}

// source returns the figures a rule looks at, from cumulative counts t after durationS seconds.
func (c *collector) source(rule thresholdRule, t *metrics.Counts, lat *hdr.Histogram, durationS float64) thresholdSource {
	if rule.name >= 0 && c.e.names != nil {
		counts := make([]metrics.NameCount, len(c.e.names.Names))
		c.e.names.Read(counts)
		n := counts[rule.name]
		return thresholdSource{lat: c.e.names.Hist(rule.name), requests: n.Successes + n.Errors,
			errors: n.Errors, durationS: durationS}
	}
	return thresholdSource{lat: lat, latSum: t.LatSum, requests: t.Requests, errors: t.Errors(), durationS: durationS}
}

// thresholdRules are c's thresholds, a rule on a request name bound to its index in names (the
// engine's name order; -1, the whole run, for a plan with one name).
func thresholdRules(c *plan.Compiled, names []string) []thresholdRule {
	var out []thresholdRule
	for i, t := range c.Plan.Thresholds {
		tr := thresholdRule{rule: c.Thresholds[i], label: t.Label(), name: -1, abort: t.AbortOnFail}
		if t.Request != "" && len(names) > 1 {
			for j, n := range names {
				if n == t.Request {
					tr.name = j
				}
			}
		}
		out = append(out, tr)
	}
	return out
}

// evaluate judges every threshold on a run's cumulative state f (lat: f.Latency's histogram).
func evaluate(rules []thresholdRule, f *Final, lat *hdr.Histogram) []metrics.ThresholdResult {
	out := make([]metrics.ThresholdResult, 0, len(rules))
	for _, th := range rules {
		r := metrics.ThresholdResult{Expr: th.label}
		src := thresholdSource{lat: lat, latSum: f.Latency.SumUs, requests: f.Requests,
			errors: f.Requests - f.Successes, durationS: f.DurationS}
		if th.name >= 0 && th.name < len(f.Names) {
			n := f.Names[th.name]
			src = thresholdSource{lat: n.Latency.hist(), requests: n.Successes + n.Errors, errors: n.Errors,
				durationS: src.durationS}
		}
		if v, ok := src.value(th.rule); ok {
			r.Value, r.OK = &v, th.rule.Pass(v)
		}
		out = append(out, r)
	}
	return out
}

// checkAbort stops the run when a threshold marked abort_on_fail fails on the data so far.
// Thresholds without data yet are not judged early.
func (c *collector) checkAbort(t *metrics.Counts, elapsedS float64) {
	var lat *hdr.Histogram
	for _, th := range c.e.thresholds {
		if !th.abort {
			continue
		}
		if lat == nil {
			lat = metrics.HistFromCounts(t.Lat)
		}
		v, ok := c.source(th, t, lat, elapsedS).value(th.rule)
		if ok && !th.rule.Pass(v) {
			c.e.abort(fmt.Sprintf("threshold %s failed after %.0fs (value %g)", th.label, elapsedS, v))
			return
		}
	}
}
