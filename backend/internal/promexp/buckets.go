package promexp

import (
	"sort"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// LatencyBucketsUs is the fixed upper bounds, in microseconds, of the latency histogram that
// /metrics exports (volley_run_latency_seconds): 1 and 1.5 times every power of two of a
// millisecond from 0.25 ms to 65.536 s (0.25, 0.375, 0.5, 0.75, 1, 1.5, 2, 3, 4, 6, … 49.152 s,
// 65.536 s) — 37 bounds, then +Inf.
//
// Every bound is the first value of one of Volley's HDR sub-buckets (3 significant digits: a
// value of at most 11 significant bits, see metrics.SigFigs), so no HDR sub-bucket straddles a
// bound and each bucket's count is exact, not interpolated: bucket le=b counts the responses
// whose recorded latency is below b µs. Recorded latencies are whole microseconds, truncated, so
// that is every response that took less than b µs (Prometheus's "≤ b" differs only for a latency
// of exactly b µs to the nanosecond).
var LatencyBucketsUs = latencyBuckets()

func latencyBuckets() []int64 {
	var b []int64
	for us := int64(250); us <= 65_536_000; us *= 2 {
		b = append(b, us)
		if us*3/2 < 65_536_000 {
			b = append(b, us*3/2)
		}
	}
	return b
}

// bucketCounts adds the count of each HDR sub-bucket of h to the bucket of LatencyBucketsUs it
// falls in (out[i] for bound i, out[len] for +Inf: non-cumulative) and returns the total count.
// out must have len(LatencyBucketsUs)+1 elements.
func bucketCounts(h *hdr.Histogram, out []uint64) uint64 {
	var total uint64
	for i, c := range h.Export().Counts {
		if c <= 0 {
			continue
		}
		v := hdrValueAt(i)
		// The first bound above v; as bounds are sub-bucket starts, the whole sub-bucket
		// [v, v+unit) is below that bound and not below the one before.
		k := sort.Search(len(LatencyBucketsUs), func(j int) bool { return LatencyBucketsUs[j] > v })
		out[k] += uint64(c)
		total += uint64(c)
	}
	return total
}

// hdrValueAt is the lowest value of counts slot i of an HDR histogram with Volley's geometry
// (lowest value 1, 2048 sub-buckets): the inverse of metrics' countsIndex. Slots below 2048 are
// bucket 0 (unit 1); slot i ≥ 2048 is bucket i/1024 − 1, sub-bucket i − bucket·1024, value
// sub-bucket << bucket (hdrhistogram-go's valueFromIndex).
func hdrValueAt(i int) int64 {
	if i < 2048 {
		return int64(i)
	}
	bucket := i>>10 - 1
	sub := int64(i - bucket<<10)
	return sub << uint(bucket)
}

// boundsSeconds is LatencyBucketsUs in seconds, as Prometheus's le labels.
func boundsSeconds() []float64 {
	s := make([]float64, len(LatencyBucketsUs))
	for i, us := range LatencyBucketsUs {
		s[i] = float64(us) / 1e6
	}
	return s
}
