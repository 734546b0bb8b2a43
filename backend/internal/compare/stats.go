package compare

import (
	"math"
	"slices"
	"sort"
)

// MannWhitney is the two-sided Mann-Whitney U test of x against y (Mann & Whitney 1947) with the
// normal approximation, the tie correction of the variance and a continuity correction of ½.
// u is U for x: the number of pairs (xᵢ, yⱼ) with xᵢ > yⱼ, ties counting ½; u > n₁n₂/2 means x
// tends to be larger. z is the standardised statistic (signed like u − n₁n₂/2). With an empty
// sample, or when every value is tied (zero variance), p is 1.
func MannWhitney(x, y []float64) (u, z, p float64) {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return 0, 0, 1
	}
	type obs struct {
		v   float64
		inX bool
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range x {
		all = append(all, obs{v, true})
	}
	for _, v := range y {
		all = append(all, obs{v, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	n := float64(n1 + n2)
	var r1, ties float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		// ranks i+1 … j share their average
		avg := float64(i+1+j) / 2
		for k := i; k < j; k++ {
			if all[k].inX {
				r1 += avg
			}
		}
		if t := float64(j - i); t > 1 {
			ties += t*t*t - t
		}
		i = j
	}
	f1, f2 := float64(n1), float64(n2)
	u = r1 - f1*(f1+1)/2
	mu := f1 * f2 / 2
	sigma2 := f1 * f2 / 12 * ((n + 1) - ties/(n*(n-1)))
	if sigma2 <= 0 {
		return u, 0, 1
	}
	d := u - mu
	switch {
	case d > 0.5:
		d -= 0.5
	case d < -0.5:
		d += 0.5
	default:
		d = 0
	}
	z = d / math.Sqrt(sigma2)
	p = math.Min(1, math.Erfc(math.Abs(z)/math.Sqrt2))
	return u, z, p
}

// quantile is the q-quantile (0 ≤ q ≤ 1) of sorted values, interpolating linearly between order
// statistics (Hyndman & Fan type 7, the default of R and NumPy).
func quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := q * float64(n-1)
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// percentileCI is the central confidence interval (level conf) of draws.
func percentileCI(draws []float64, conf float64) (lo, hi float64) {
	s := slices.Clone(draws)
	slices.Sort(s)
	a := (1 - conf) / 2
	return quantile(s, a), quantile(s, 1-a)
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
