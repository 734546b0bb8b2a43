package compare

import (
	"math"
	"slices"
	"sort"
)

// MannWhitney is kept for callers; Compare's verdicts no longer use it (see the package
// documentation). It is the two-sided Mann-Whitney U test of x against y (Mann & Whitney 1947) with the
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

// studentCDF is P(T ≤ t) for Student's t distribution with df > 0 degrees of freedom, through the
// regularized incomplete beta function: P(T > |t|) = ½·I_{df/(df+t²)}(df/2, ½) (Abramowitz &
// Stegun, Handbook of Mathematical Functions, 1964, 26.7.1 and 26.5.27).
func studentCDF(t, df float64) float64 {
	if math.IsInf(df, 1) || df > 1e7 {
		return 0.5 * math.Erfc(-t/math.Sqrt2)
	}
	tail := 0.5 * regIncBeta(df/2, 0.5, df/(df+t*t))
	if t < 0 {
		return tail
	}
	return 1 - tail
}

// studentQuantile is the q-quantile (0 < q < 1) of Student's t with df degrees of freedom, found
// by bisection on studentCDF (to 1e-10; called a few times per comparison).
func studentQuantile(q, df float64) float64 {
	if q == 0.5 {
		return 0
	}
	if q < 0.5 {
		return -studentQuantile(1-q, df)
	}
	lo, hi := 0.0, 1.0
	for studentCDF(hi, df) < q && hi < 1e12 {
		lo, hi = hi, hi*2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if studentCDF(mid, df) < q {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo < 1e-10*math.Max(1, hi) {
			break
		}
	}
	return (lo + hi) / 2
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), evaluated with the continued
// fraction of A&S 26.5.8 by the modified Lentz method (W. H. Press et al., Numerical Recipes,
// 3rd ed., 2007, §6.4).
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log1p(-x))
	if x > (a+1)/(a+b+2) { // the fraction converges fast on this side only
		return 1 - front*betaCF(b, a, 1-x)/b
	}
	return front * betaCF(a, b, x) / a
}

func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		num := fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm))
		for k := range 2 {
			d = 1 + num*d
			if math.Abs(d) < tiny {
				d = tiny
			}
			c = 1 + num/c
			if math.Abs(c) < tiny {
				c = tiny
			}
			d = 1 / d
			h *= d * c
			if k == 0 {
				num = -(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1))
			}
		}
		if math.Abs(d*c-1) < 1e-14 {
			break
		}
	}
	return h
}

// meanEstimate is a run's figure for a metric, the estimated variance of that figure and the
// degrees of freedom behind the variance.
type meanEstimate struct {
	m, v, df float64
}

// lag1 returns the sums behind the lag-1 autocorrelation of x: Σ(xₜ−x̄)(xₜ₊₁−x̄) and Σ(xₜ−x̄)².
func lag1(x []float64) (num, den float64) {
	m := mean(x)
	for i, v := range x {
		den += (v - m) * (v - m)
		if i+1 < len(x) {
			num += (v - m) * (x[i+1] - m)
		}
	}
	return num, den
}

// pooledAR1 estimates the lag-1 autocorrelation ρ shared by the per-second series (one per run,
// each about its own mean), corrected for the downward bias of the estimate in short series,
// E[ρ̂] ≈ ρ − (1+3ρ)/n (F. H. C. Marriott and J. A. Pope, "Bias in the Estimation of
// Autocorrelations", Biometrika 41(3/4):390–402, 1954), and clamped to [0, 0.8]: negative
// correlation is not credited, and stronger correlation than 0.8 is not estimable from a few
// dozen seconds. The series are pooled because both runs come from the same load on the same
// target, and a pooled estimate from 2n seconds is much steadier than one per run.
func pooledAR1(xs ...[]float64) float64 {
	var num, den float64
	n := math.MaxInt
	for _, x := range xs {
		a, b := lag1(x)
		num, den = num+a, den+b
		n = min(n, len(x))
	}
	if den == 0 || n < 4 {
		return 0
	}
	r := num / den
	r += (1 + 3*r) / float64(n) // first order only: solving for ρ would amplify the noise of r
	return math.Max(0, math.Min(0.8, r))
}

// ar1Mean estimates the variance of the mean of x, a series whose lag-1 autocorrelation is rho
// (an AR(1) process). With f = 1 + 2Σₖ(1 − k/n)ρᵏ the variance inflation of the mean,
// Var x̄ = σ²f/n, and E[s²] = σ²(n − f)/(n − 1), so Var x̄ ≈ s²·f·(n−1)/(n(n−f)); the degrees of
// freedom are those of the equivalent sample size n/f, less one (R. E. Bayley and J. M.
// Hammersley, "The 'Effective' Number of Independent Observations in an Autocorrelated Time
// Series", JRSS Suppl. 8(2):184–197, 1946; F. W. Zwiers and H. von Storch, "Taking Serial
// Correlation into Account in Tests of the Mean", Journal of Climate 8(2):336–351, 1995). m is
// the figure over the whole run (the mean, or a ratio of sums), given by the caller.
func ar1Mean(m float64, x []float64, rho float64) meanEstimate {
	n := float64(len(x))
	if len(x) < 2 {
		return meanEstimate{m: m}
	}
	f, rk := 1.0, 1.0
	for k := 1; k < len(x); k++ {
		rk *= rho
		if rk < 1e-9 {
			break
		}
		f += 2 * (1 - float64(k)/n) * rk
	}
	_, ss := lag1(x)
	s2 := ss / (n - 1)
	return meanEstimate{m: m, v: s2 * f * (n - 1) / (n * (n - f)), df: math.Max(1, n/f-1)}
}

// welch combines two independent estimates into the interval (level conf) of x − y, or of
// ln(x/y) when relative, with the Welch–Satterthwaite degrees of freedom (B. L. Welch, "The
// Generalization of 'Student's' Problem when Several Different Population Variances are
// Involved", Biometrika 34(1/2):28–35, 1947). The relative form uses the delta method,
// Var ln x̄ ≈ Var x̄ / x̄². It returns the point difference d, the half-width h (the interval is
// d ± h) and the two-sided p-value of "no difference"; ok is false when the variances cannot
// be estimated (no degrees of freedom) or a relative difference has a non-positive mean.
func welch(x, y meanEstimate, relative bool, conf float64) (d, h, p float64, ok bool) {
	if x.df <= 0 || y.df <= 0 {
		return 0, 0, 0, false
	}
	vx, vy := x.v, y.v
	d = x.m - y.m
	if relative {
		if x.m <= 0 || y.m <= 0 {
			return 0, 0, 0, false
		}
		d = math.Log(x.m / y.m)
		vx, vy = vx/(x.m*x.m), vy/(y.m*y.m)
	}
	se := math.Sqrt(vx + vy)
	if se == 0 {
		if d == 0 {
			return d, 0, 1, true
		}
		return d, 0, 0, true
	}
	df := (vx + vy) * (vx + vy) / (vx*vx/x.df + vy*vy/y.df)
	h = studentQuantile(1-(1-conf)/2, df) * se
	p = 2 * (1 - studentCDF(math.Abs(d)/se, df))
	return d, h, p, true
}

// zeroMeanP is the two-sided p-value of "the mean is 0" for an estimate whose mean is y.m: the
// one-sample t test on y.df degrees of freedom (0 when y has no variance and a mean other than 0).
func zeroMeanP(y meanEstimate) float64 {
	if y.v <= 0 || y.df <= 0 {
		if y.m == 0 {
			return 1
		}
		return 0
	}
	return 2 * (1 - studentCDF(math.Abs(y.m)/math.Sqrt(y.v), y.df))
}
