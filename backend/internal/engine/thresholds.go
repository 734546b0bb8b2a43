package engine

import (
	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// thresholdValue extracts the observed value a threshold is judged on: latencies in ms from the
// run's merged histogram, error_rate as a fraction, rps per second. ok is false when there is no
// data to judge (no response for a latency threshold, no request for error_rate): the threshold
// then fails, because "nothing answered" must never pass "p(95)<200ms".
func thresholdValue(metric string, pct float64, s *metrics.Summary, lat *hdr.Histogram) (v float64, ok bool) {
	switch metric {
	case "p", "med", "avg", "min", "max":
		if lat.TotalCount() == 0 {
			return 0, false
		}
	case "error_rate":
		if s.Requests == 0 {
			return 0, false
		}
	}
	return thresholdMetric(metric, pct, s, lat), true
}

func thresholdMetric(metric string, pct float64, s *metrics.Summary, lat *hdr.Histogram) float64 {
	switch metric {
	case "p":
		return metrics.Percentile(lat, pct)
	case "med":
		return metrics.Percentile(lat, 50)
	case "avg":
		return s.Latency.Mean
	case "min":
		return s.Latency.Min
	case "max":
		return s.Latency.Max
	case "error_rate":
		return s.ErrorRate
	case "rps":
		return s.RPS
	}
	return 0
}
