// Package metrics owns what Volley measures: latency histograms, the per-second Sample, the run
// Summary, and the lock-free Recorder the engine writes into on its hot path.
//
// Latencies are kept in HDR histograms (HdrHistogram, Gil Tene's log-linear layout: 3 significant
// digits, 1 µs to 1 h) so that percentiles over any span come from merged counts, never from
// averaged percentiles. Recording uses cumulative atomic counters laid out exactly like
// hdrhistogram-go's counts array; once per second the collector reads them and subtracts the
// previous reading, which yields that second's histogram, importable with hdrhistogram.Import.
// Every recorded value lands in exactly one second, and the run total is the last reading.
//
// The package imports only the standard library and hdrhistogram-go.
package metrics

import (
	"encoding/base64"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry: values are microseconds from 1 µs to 1 hour, 3 significant digits.
const (
	LowestUs  = 1
	HighestUs = 3_600_000_000
	SigFigs   = 3

	// With SigFigs = 3 the sub-bucket count is 2048 (the smallest power of two ≥ 2·10³).
	subBucketHalfCountMagnitude = 10
	subBucketHalfCount          = 1 << subBucketHalfCountMagnitude
	subBucketMask               = 2*subBucketHalfCount - 1
)

// CountsLen is the length of a histogram's counts array with the geometry above.
var CountsLen = len(hdr.New(LowestUs, HighestUs, SigFigs).Export().Counts)

// countsIndex maps a value in µs to its slot, following hdrhistogram-go's countsIndexFor for a
// unit magnitude of 0 (lowest value 1): bucket = ⌈log2(v|mask)⌉ − 11, sub-bucket = v >> bucket,
// slot = (bucket+1)·1024 + sub-bucket − 1024. A test checks it against the library.
func countsIndex(v int64) int {
	if v < LowestUs {
		v = 0
	} else if v > HighestUs {
		v = HighestUs
	}
	bucket := 64 - bits.LeadingZeros64(uint64(v|subBucketMask)) - (subBucketHalfCountMagnitude + 1)
	sub := int(v >> uint(bucket))
	return (bucket+1)<<subBucketHalfCountMagnitude + sub - subBucketHalfCount
}

// AtomicHist is a cumulative, lock-free histogram: Record may run from any goroutine; Read copies
// the totals so far. It never resets — interval histograms are differences of two readings.
type AtomicHist struct {
	counts []uint64
	sumUs  atomic.Uint64 // exact sum, for an exact mean
}

// NewAtomicHist allocates one (≈ CountsLen × 8 bytes, about 190 KB).
func NewAtomicHist() *AtomicHist { return &AtomicHist{counts: make([]uint64, CountsLen)} }

// Record adds one value in microseconds. It does not allocate and takes no lock.
func (h *AtomicHist) Record(us int64) {
	atomic.AddUint64(&h.counts[countsIndex(us)], 1)
	if us > 0 {
		h.sumUs.Add(uint64(us))
	}
}

// AddTo adds the cumulative counts into dst (len CountsLen) and returns the cumulative µs sum.
func (h *AtomicHist) AddTo(dst []int64) uint64 {
	for i := range h.counts {
		if c := atomic.LoadUint64(&h.counts[i]); c != 0 {
			dst[i] += int64(c)
		}
	}
	return h.sumUs.Load()
}

// NewHist returns an empty hdrhistogram with Volley's geometry.
func NewHist() *hdr.Histogram { return hdr.New(LowestUs, HighestUs, SigFigs) }

// HistFromCounts builds an hdrhistogram from a counts array in Volley's geometry.
func HistFromCounts(counts []int64) *hdr.Histogram {
	return hdr.Import(&hdr.Snapshot{
		LowestTrackableValue:  LowestUs,
		HighestTrackableValue: HighestUs,
		SignificantFigures:    SigFigs,
		Counts:                counts,
	})
}

// EncodeHist serialises a histogram with Volley's geometry in the standard compressed HdrHistogram
// V2 form (base64), so that histograms from several generators or seconds can be merged exactly
// later. It is HistEncoder's format; the collector keeps one HistEncoder instead of calling this.
func EncodeHist(h *hdr.Histogram) (string, error) {
	if h.LowestTrackableValue() != LowestUs || h.HighestTrackableValue() != HighestUs || h.SignificantFigures() != SigFigs {
		return "", fmt.Errorf("histogram geometry %d–%d/%d is not Volley's", h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures())
	}
	var e HistEncoder
	return e.Encode(h.Export().Counts), nil
}

// DecodeHist reverses EncodeHist.
func DecodeHist(s string) (*hdr.Histogram, error) {
	if _, err := base64.StdEncoding.DecodeString(s); err != nil {
		return nil, fmt.Errorf("histogram is not base64: %w", err)
	}
	return hdr.Decode([]byte(s))
}

// Latency is a latency distribution in milliseconds.
type Latency struct {
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P75   float64 `json:"p75"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P99_9 float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

var latencyPercentiles = []float64{50, 75, 90, 95, 99, 99.9}

// LatencyOf computes the distribution of h (values in µs). sumUs, when non-zero, gives the exact
// mean; otherwise the histogram's bucket mean is used. An empty histogram yields zeros.
func LatencyOf(h *hdr.Histogram, sumUs uint64) Latency {
	n := h.TotalCount()
	if n == 0 {
		return Latency{}
	}
	v := h.ValueAtPercentilesSlice(latencyPercentiles)
	mean := h.Mean()
	if sumUs > 0 {
		mean = float64(sumUs) / float64(n)
	}
	return Latency{
		Min: ms(h.Min()), Mean: round3(mean / 1000),
		P50: ms(v[0]), P75: ms(v[1]), P90: ms(v[2]), P95: ms(v[3]), P99: ms(v[4]), P99_9: ms(v[5]),
		Max: ms(h.Max()),
	}
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of h in milliseconds.
func Percentile(h *hdr.Histogram, p float64) float64 {
	if h.TotalCount() == 0 {
		return 0
	}
	return ms(h.ValueAtPercentile(p))
}

func ms(us int64) float64 { return round3(float64(us) / 1000) }

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// SumFits says whether sumUs, a histogram's exact µs sum (0: not kept), fits its counts: the
// mean it gives lies between the least value of its lowest non-empty slot and the greatest of
// its highest (any above, when that is the last slot, which holds every value past HighestUs).
// A sum with no latency counted does not fit. A sum that does not fit would show a mean below
// the minimum or above the maximum; callers drop it (the buckets' mean) or refuse what holds it.
func SumFits(counts []int64, sumUs uint64) bool {
	if sumUs == 0 {
		return true
	}
	st := HistStat{First: -1, Last: -1}
	for i, c := range counts {
		if c > 0 {
			if st.First < 0 {
				st.First = i
			}
			st.Last = i
			st.N += c
		}
	}
	return st.SumFits(sumUs)
}

// SumFits is SumFits of the histogram st was read of (HistDecoder.Stat).
func (st HistStat) SumFits(sumUs uint64) bool {
	if sumUs == 0 {
		return true
	}
	if st.First < 0 || st.N <= 0 {
		return false
	}
	lo, hi := indexValue(st.First), indexValue(st.Last+1)-1 // (the slot after last begins past its greatest value)
	sum, n := float64(sumUs), float64(st.N)
	return sum >= n*float64(lo) && (st.Last >= CountsLen-1 || sum <= n*float64(hi))
}
