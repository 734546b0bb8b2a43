package compare

import (
	"math"
	"slices"
)

// LTTB picks at most threshold points of the series (x, y) that keep its visual shape, with the
// Largest-Triangle-Three-Buckets algorithm (S. Steinarsson, "Downsampling Time Series for Visual
// Representation", MSc thesis, University of Iceland, 2013, ch. 4.2): the first and last points
// are kept; the others are split into threshold−2 equal buckets, and from each bucket the point
// forming the largest triangle with the point kept from the previous bucket and the average of
// the next bucket is kept. It returns ascending indices into x. x must be ascending; with
// threshold ≥ len(x) every index is returned, with threshold < 3 only the first and the last.
func LTTB(x, y []float64, threshold int) []int {
	n := min(len(x), len(y))
	if threshold >= n {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	if threshold < 3 {
		return []int{0, n - 1}
	}
	out := make([]int, 0, threshold)
	out = append(out, 0)
	every := float64(n-2) / float64(threshold-2)
	a := 0
	for i := range threshold - 2 {
		// the average of the next bucket (the last point for the last bucket)
		avgStart := int(math.Floor(float64(i+1)*every)) + 1
		avgEnd := min(int(math.Floor(float64(i+2)*every))+1, n)
		if avgStart >= avgEnd {
			avgStart, avgEnd = n-1, n
		}
		var ax, ay float64
		for j := avgStart; j < avgEnd; j++ {
			ax += x[j]
			ay += y[j]
		}
		cnt := float64(avgEnd - avgStart)
		ax, ay = ax/cnt, ay/cnt
		// the point of this bucket with the largest triangle
		start := int(math.Floor(float64(i)*every)) + 1
		end := min(int(math.Floor(float64(i+1)*every))+1, n-1)
		best, bestArea := start, -1.0
		for j := start; j < end; j++ {
			area := math.Abs((x[a]-ax)*(y[j]-y[a]) - (x[a]-x[j])*(ay-y[a]))
			if area > bestArea {
				best, bestArea = j, area
			}
		}
		out = append(out, best)
		a = best
	}
	return append(out, n-1)
}

// Downsample picks at most n indices of a series sampled at x with several y series (for
// example requests per second and p95), by LTTB on each series with the largest per-series
// budget whose union of picked indices still has at most n points. The first and last indices
// are always kept; the result is ascending. With n ≥ len(x) every index is returned.
func Downsample(x []float64, ys [][]float64, n int) []int {
	if n >= len(x) || len(ys) == 0 {
		return LTTB(x, x, len(x))
	}
	if n < 2 {
		n = 2
	}
	union := func(b int) []int {
		var all []int
		for _, y := range ys {
			all = append(all, LTTB(x, y, b)...)
		}
		slices.Sort(all)
		return slices.Compact(all)
	}
	// k series of budget b share the first and last points: |union| ≤ k(b−2)+2 ≤ n.
	lo := max(2, (n-2)/len(ys)+2)
	best := union(lo)
	for hi := n; lo < hi; {
		mid := (lo + hi + 1) / 2
		if u := union(mid); len(u) <= n {
			best, lo = u, mid
		} else {
			hi = mid - 1
		}
	}
	return best
}
