package compare

import (
	"math"
	"math/rand/v2"
	"sync"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// The bootstrap's coarse grid: bucket 0 holds 0 µs, bucket c ≥ 1 holds [step^(c−1), step^c) µs.
const coarseStep = 1.01

var (
	lnStep     = math.Log(coarseStep)
	coarseOnce sync.Once
	fineCoarse []int32 // fine (HdrHistogram counts) index → coarse bucket
	nCoarse    int
)

// fineValue is the lowest value (µs) of slot i of a counts array in metrics' geometry (lowest
// trackable value 1, 3 significant digits: 2048 sub-buckets), and the slot's width.
func fineValue(i int) (v, width int64) {
	bucket := i>>10 - 1
	sub := i&1023 + 1024
	if bucket < 0 {
		bucket, sub = 0, sub-1024
	}
	return int64(sub) << bucket, int64(1) << bucket
}

func coarseIndex(us float64) int {
	if us < 1 {
		return 0
	}
	return int(math.Log(us)/lnStep) + 1
}

// coarseMs is the representative value of coarse bucket c (its geometric middle), in ms.
func coarseMs(c int) float64 {
	if c == 0 {
		return 0
	}
	return math.Exp((float64(c)-0.5)*lnStep) / 1000
}

func initCoarse() {
	coarseOnce.Do(func() {
		fineCoarse = make([]int32, metrics.CountsLen)
		for i := range fineCoarse {
			v, w := fineValue(i)
			mid := float64(v)
			if w > 1 {
				mid += float64(w) / 2
			}
			fineCoarse[i] = int32(coarseIndex(mid))
		}
		nCoarse = int(fineCoarse[len(fineCoarse)-1]) + 1
	})
}

// chist is a histogram on the coarse grid, stored densely between its lowest and highest
// non-empty bucket.
type chist struct {
	off    int
	counts []int64
	total  int64
}

// coarsen maps fine counts (metrics' geometry) onto the coarse grid; scratch has nCoarse slots
// and is left zeroed.
func coarsen(fine []int64, scratch []int64) chist {
	lo, hi := -1, -1
	var total int64
	for i, c := range fine {
		if c == 0 {
			continue
		}
		k := int(fineCoarse[i])
		scratch[k] += c
		total += c
		if lo < 0 || k < lo {
			lo = k
		}
		if k > hi {
			hi = k
		}
	}
	if lo < 0 {
		return chist{}
	}
	out := chist{off: lo, counts: make([]int64, hi-lo+1), total: total}
	copy(out.counts, scratch[lo:hi+1])
	clear(scratch[lo : hi+1])
	return out
}

// mergeInto adds h into acc, whose slot 0 is coarse bucket base.
func (h chist) mergeInto(acc []int64, base int) {
	dst := acc[h.off-base : h.off-base+len(h.counts)]
	for i, c := range h.counts {
		dst[i] += c
	}
}

// percentilesOf fills out with the percentiles ps (0 < p ≤ 100; 100 is the maximum) of the coarse
// counts acc (slot 0 = bucket base, total values), in ms. ps must be ascending.
func percentilesOf(acc []int64, base int, total int64, ps []float64, out []float64) {
	if total == 0 {
		for k := range out {
			out[k] = math.NaN()
		}
		return
	}
	k := 0
	var cum int64
	for i, c := range acc {
		if c == 0 {
			continue
		}
		cum += c
		for k < len(ps) && cum >= rank(ps[k], total) {
			out[k] = coarseMs(base + i)
			k++
		}
		if k == len(ps) {
			return
		}
	}
}

// rank is the number of values at or below the p-th percentile, as hdrhistogram-go counts it.
func rank(p float64, total int64) int64 {
	r := p/100*float64(total) + 0.5
	if r < 1 {
		return 1
	}
	if r >= float64(total) {
		return total
	}
	return int64(r)
}

// units groups usable seconds' histograms into at most maxUnits resampling units (consecutive
// blocks of equal length when there are more seconds than that).
func units(hs []chist, maxUnits int) []chist {
	if len(hs) <= maxUnits {
		return hs
	}
	size := (len(hs) + maxUnits - 1) / maxUnits
	out := make([]chist, 0, maxUnits)
	for i := 0; i < len(hs); i += size {
		blk := hs[i:min(i+size, len(hs))]
		lo, hi := math.MaxInt, -1
		var total int64
		for _, h := range blk {
			if h.total == 0 {
				continue
			}
			lo, hi = min(lo, h.off), max(hi, h.off+len(h.counts)-1)
			total += h.total
		}
		if hi < 0 {
			out = append(out, chist{})
			continue
		}
		m := chist{off: lo, counts: make([]int64, hi-lo+1), total: total}
		for _, h := range blk {
			if h.total > 0 {
				h.mergeInto(m.counts, lo)
			}
		}
		out = append(out, m)
	}
	return out
}

// bootstrapPercentiles resamples us (with replacement, len(us) draws per resample) b times and
// returns, per resample, the percentiles ps of the merged histogram: out[r][k].
func bootstrapPercentiles(us []chist, ps []float64, b int, rng *rand.Rand) [][]float64 {
	lo, hi := math.MaxInt, -1
	for _, h := range us {
		if h.total > 0 {
			lo, hi = min(lo, h.off), max(hi, h.off+len(h.counts)-1)
		}
	}
	out := make([][]float64, b)
	flat := make([]float64, b*len(ps))
	if hi < 0 {
		for r := range out {
			out[r] = flat[r*len(ps) : (r+1)*len(ps)]
			percentilesOf(nil, 0, 0, ps, out[r])
		}
		return out
	}
	acc := make([]int64, hi-lo+1)
	n := len(us)
	for r := range out {
		clear(acc)
		var total int64
		for range n {
			h := us[rng.IntN(n)]
			if h.total > 0 {
				h.mergeInto(acc, lo)
				total += h.total
			}
		}
		out[r] = flat[r*len(ps) : (r+1)*len(ps)]
		percentilesOf(acc, lo, total, ps, out[r])
	}
	return out
}

// countsOf returns h's counts in metrics' geometry (re-recording a histogram of another shape).
func countsOf(h *hdr.Histogram) []int64 {
	s := h.Export()
	if len(s.Counts) <= metrics.CountsLen && s.LowestTrackableValue == metrics.LowestUs && s.SignificantFigures == metrics.SigFigs {
		return s.Counts
	}
	m := metrics.NewHist()
	m.Merge(h)
	return m.Export().Counts
}
