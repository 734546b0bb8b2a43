package compare

import "math"

// Run-to-run noise. Two runs of one plan against one target differ from each other by more than
// their seconds differ within a run: connection placement, the scheduler, CPU frequency, GC and
// the machine's other work are drawn once per run and stay for its whole length. A run's level
// is its true level plus a run effect u (sd τ) that no number of seconds averages away, so
// Var(run mean) = σ²_within·f/n + τ² — the variance components of repeated executions (A.
// Georges, D. Buytaert and L. Eeckhout, "Statistically Rigorous Java Performance Evaluation",
// OOPSLA 2007; T. Kalibera and R. Jones, "Rigorous Benchmarking in Reasonable Time", ISMM 2013).
// τ is estimable only from repeated runs; a single pair cannot show it. Compare therefore takes
// it, per metric family, as a measured multiple c of the metric's per-second variability on the
// log scale: τ = c·s, with s the standard deviation of the metric's per-second values about
// their run's mean (for a percentile, less the sampling variance of a one-second percentile),
// the larger of the two runs' — a quiet run beside a noisy one is itself a sign that the
// conditions changed between them. A noisy machine — a target sharing busy cores with its load
// generator — is noisy both from second to second and from run to run, and a quiet one in
// neither: the floor follows the noise of the runs at hand. docs/compare.md has the
// measurements behind c.

// runNoiseFactor is c for each metric with a run-to-run term, from runs measured on a busy 2-core
// machine (a loopback target of 2 ms and of 20 ms service time, 30 VUs, 10 and 8 runs of 12 s):
// the ratio of the between-run standard deviation of ln(metric) to its per-second standard
// deviation was at most 0.57 for throughput, 0.27 for p50, 0.45 for p90 and p95, and 0.96 for
// p99 (one slow run in eight); c is that, rounded up with a margin: throughput 0.6, central
// latency (p50) 0.5, tail latency (p90, p95) 0.8, p99 1. The error rate, a count of failures
// without a level that drifts between quiet runs, has none.
//
// The server's CPU per request takes throughput's c = 0.6, with s the relative standard
// deviation of its per-second observations (the linearised ratio, cpuPerRequestObs). Measured
// once (docs/compare.md: 10 runs of 12 s against nginx, a process monitor, the same busy machine)
// the ratio was 0.22 — between-run sd of ln(µs/request) 0.051 against per-second 0.23 — well
// under 0.6: its per-second values carry measurement noise that is no run effect (CPU time counted
// in scheduler ticks, 10 ms at USER_HZ 100; a scrape's second not aligned with the sample's), as a
// percentile's raw per-second spread does (there the sampling part is subtracted). 0.6 keeps a
// margin for a single target measured; its level moves between runs for throughput's reasons.
// subtracted). The server's memory has no term: its per-second values are nearly flat, so c·s
// would be about 0 whatever its run-to-run spread; its practical threshold
// (DefaultServerMemoryThreshold) is its noise allowance instead.
var runNoiseFactor = map[string]float64{"tps": 0.6, "p50": 0.5, "p90": 0.8, "p95": 0.8, "p99": 1,
	"server_cpu_us_per_request": 0.6}

// sampleVar is the sample variance of x (n − 1 in the denominator); 0 for fewer than 2 values.
func sampleVar(x []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	_, ss := lag1(x)
	return ss / float64(len(x)-1)
}

// lnGoodput is the log of each usable second's successful responses per second (seconds with
// none are left out: they have no log).
func lnGoodput(p *prepared) []float64 {
	out := make([]float64, 0, len(p.r.usable))
	for _, s := range p.r.usable {
		if g := goodput(s); g > 0 {
			out = append(out, math.Log(g))
		}
	}
	return out
}

// lnSecondPercentile is the log of percentile pc (0 < pc < 100) of each usable second's
// histogram, and the mean sampling variance of those logs: the distribution-free interval of a
// quantile from N values spans the order statistics of ranks N·q ± √(N·q(1−q)) for ±1 standard
// deviation (W. J. Conover, Practical Nonparametric Statistics, 3rd ed., Wiley, 1999, §3.2), so
// a second's sampling standard deviation of ln Q is half the log-distance between those two.
func lnSecondPercentile(p *prepared, pc float64) (logs []float64, sampling float64) {
	q := pc / 100
	out := make([]float64, 3)
	for _, s := range p.r.usable {
		if s.hist.total == 0 {
			continue
		}
		d := 100 * math.Sqrt(q*(1-q)/float64(s.hist.total))
		ps := []float64{math.Max(pc-d, 1e-9), pc, math.Min(pc+d, 100)}
		percentilesOf(s.hist.counts, s.hist.off, s.hist.total, ps, out)
		if out[0] <= 0 || out[1] <= 0 {
			continue
		}
		logs = append(logs, math.Log(out[1]))
		h := (math.Log(out[2]) - math.Log(out[0])) / 2
		sampling += h * h
	}
	if len(logs) > 0 {
		sampling /= float64(len(logs))
	}
	return logs, sampling
}

// runNoise is τ of the metric for this pair of runs: the standard deviation, on the log scale,
// of a run's level from run to run (see runNoiseFactor); 0 for metrics without one.
func (d metricDef) runNoise(p, base *prepared) float64 {
	c := runNoiseFactor[d.name]
	if c == 0 {
		return 0
	}
	perRun := func(r *prepared) float64 {
		if d.obs != nil { // relative variance of the observations ≈ variance of their log
			x := d.obs(r.r.usable)
			m := mean(x)
			if len(x) < 2 || m <= 0 {
				return 0
			}
			return sampleVar(x) / (m * m)
		}
		if d.test == testSeries {
			return sampleVar(lnGoodput(r))
		}
		x, sampling := lnSecondPercentile(r, bootPs[d.pct])
		return sampleVar(x) - sampling
	}
	return c * math.Sqrt(math.Max(0, math.Max(perRun(p), perRun(base))))
}
