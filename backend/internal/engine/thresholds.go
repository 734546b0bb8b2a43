package engine

import (
	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// thresholdValue extracts the observed value a threshold is judged on: latencies in ms from the
// run's merged histogram, error_rate as a fraction, rps per second.
func thresholdValue(metric string, pct float64, s *metrics.Summary, lat *hdr.Histogram) float64 {
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
