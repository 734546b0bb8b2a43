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
func coarsen(fine []fineCount, scratch []int64) chist {
	lo, hi := -1, -1
	var total int64
	for _, f := range fine {
		k := int(fineCoarse[f.i])
		scratch[k] += f.c
		total += f.c
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
		out = append(out, mergeAll(hs[i:min(i+size, len(hs))]))
	}
	return out
}

// blockLen is the block length of the moving-block bootstrap over n units: ⌊√n⌋, long enough for
// the correlation of neighbouring seconds and leaving enough blocks to resample (the n^(1/2)
// batch size of J. M. Flegal and G. L. Jones, "Batch Means and Spectral Variance Estimators in
// Markov Chain Monte Carlo", Annals of Statistics 38(2):1034–1070, 2010).
func blockLen(n int) int { return max(1, int(math.Sqrt(float64(n)))) }

// bootstrapPercentiles draws b resamples of a run and returns, per resample, the percentiles ps
// of its merged latency histogram: out[r][k]. A resample is two-stage (B. Efron and
// R. J. Tibshirani, An Introduction to the Bootstrap, 1993; A. C. Davison and D. V. Hinkley,
// Bootstrap Methods and their Application, 1997, §3.8 and §8.2):
//
//  1. seconds: a moving-block bootstrap (H. R. Künsch, "The Jackknife and the Bootstrap for
//     General Stationary Observations", Annals of Statistics 17(3):1217–1241, 1989) draws
//     ⌈n/ℓ⌉ blocks of ℓ = blockLen(n) consecutive units with replacement and merges their
//     histograms, which keeps the drift and autocorrelation of a run's latency;
//  2. requests: every bucket count c of the merged histogram is replaced by a Poisson(c) draw,
//     the Poisson bootstrap of the single requests (J. A. Hanley and B. MacGibbon, "Creating
//     non-parametric bootstrap samples using Poisson frequencies", Computer Methods and Programs
//     in Biomedicine 83(1):57–62, 2006), which gives short runs with few seconds a
//     request-level resolution. Resampling both levels over-estimates the variance a little
//     (Davison & Hinkley §3.8): the interval errs on the wide, cautious side.
//
// The work per resample is bounded by the units' bucket spans (at most MaxUnits units of the
// 1 %-wide coarse grid), not by the number of requests.
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
	l := blockLen(len(us))
	blocks := make([]chist, 0, len(us)-l+1)
	for j := 0; j+l <= len(us); j++ {
		blocks = append(blocks, mergeAll(us[j:j+l]))
	}
	draws := (len(us) + l - 1) / l
	acc := make([]int64, hi-lo+1)
	for r := range out {
		clear(acc)
		for range draws {
			if h := blocks[rng.IntN(len(blocks))]; h.total > 0 {
				h.mergeInto(acc, lo)
			}
		}
		var total int64
		for i, c := range acc {
			if c > 0 {
				acc[i] = poisson(rng, c)
				total += acc[i]
			}
		}
		out[r] = flat[r*len(ps) : (r+1)*len(ps)]
		percentilesOf(acc, lo, total, ps, out[r])
	}
	return out
}

// mergeAll merges histograms into one.
func mergeAll(hs []chist) chist {
	lo, hi := math.MaxInt, -1
	var total int64
	for _, h := range hs {
		if h.total > 0 {
			lo, hi = min(lo, h.off), max(hi, h.off+len(h.counts)-1)
			total += h.total
		}
	}
	if hi < 0 {
		return chist{}
	}
	m := chist{off: lo, counts: make([]int64, hi-lo+1), total: total}
	for _, h := range hs {
		if h.total > 0 {
			h.mergeInto(m.counts, lo)
		}
	}
	return m
}

// poisson draws from Poisson(lambda): by multiplying uniforms (D. E. Knuth, TAOCP vol. 2, 3.4.1)
// for small means, else from the normal approximation N(λ, λ), rounded and kept ≥ 0 (its error
// is under 1 % of the standard deviation from λ = 30 on).
func poisson(rng *rand.Rand, lambda int64) int64 {
	if lambda >= 30 {
		f := float64(lambda)
		return max(0, int64(math.Round(f+math.Sqrt(f)*rng.NormFloat64())))
	}
	limit := math.Exp(-float64(lambda))
	var k int64
	for p := rng.Float64(); p > limit; p *= rng.Float64() {
		k++
	}
	return k
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
