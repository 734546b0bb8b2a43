// Package compare decides whether one load-test run differs from another: given 2–5 runs (their
// summaries, per-second samples and per-second latency histograms) and a baseline, it builds a
// delta table for throughput (TPS), latency percentiles (p50, p90, p95, p99, max), error rate,
// the load generator's CPU and RSS and, with a server monitor, the target's CPU, CPU per request
// and memory (target.go), with per metric and run an effect, its confidence interval
// and a verdict: regression, improvement, no_change or inconclusive (none for metrics that
// follow the load). It also warns when the runs did not apply the same load.
//
// The package is pure computation (no HTTP, no database): the API and the `volley compare`
// command feed it decoded runs (FromStored, FromSummary, or NewRun + AddSecond).
//
// # Which seconds count
//
// A run is a time series of one-second samples. The first and the last stored second are left
// out (ramp-up and drain: partial seconds, connections being opened or requests cut off), and so
// is every second flagged generator_bound (the load generator's CPU was saturated, so that second
// may describe the generator rather than the target). What remains are the run's usable seconds.
// A run with fewer than MinSeconds (4) usable seconds gets the verdict inconclusive on every
// metric, and so does a run known only by its summary (a `volley run --out` file without
// seconds): the tests below need seconds. The values in the table are computed over the usable
// seconds too, so that value, effect and verdict agree; a run with no usable second shows its
// summary's figures.
//
// # Effect, interval and verdict
//
// Every judged metric gets an effect — the difference from the baseline, relative for TPS and
// latency (run/baseline − 1), absolute for the error rate (whose baseline is often 0) — and its
// confidence interval [ci_low, ci_high] at level Confidence (default 95 %). With the practical
// threshold T (Options.Threshold, default 5 % of the baseline; Options.ErrorThreshold, default
// 0.1 percentage point, for the error rate):
//
//   - regression / improvement: the interval excludes 0 (the change is significant) and the
//     effect reaches ±T (it is large enough to matter). Higher is better for TPS only.
//   - no_change: the whole interval lies within ±T. This is the two one-sided tests procedure
//     for equivalence (D. J. Schuirmann, "A Comparison of the Two One-Sided Tests Procedure and
//     the Power Approach for Assessing the Equivalence of Average Bioavailability", Journal of
//     Pharmacokinetics and Biopharmaceutics 15(6):657–680, 1987) at level (1 − Confidence)/2:
//     "not significant" alone is never "no change". Two runs with no error at all have the
//     interval [0, 0]: no change.
//   - inconclusive: anything else — the interval spans the threshold, or the runs are too short.
//     DecideHint (with DecideCode and DecideSeconds) says what would decide it: the run length at
//     which the observed noise would give an interval narrow enough (half-widths shrink as 1/√n),
//     or that the effect sits on the threshold, or that the noise is too high for any practical
//     length, or that only repeated runs decide (the runs' run-to-run noise, below).
//
// The load generator's CPU and memory follow the load — a slower target serves fewer requests and
// costs the generator less — so they are shown without a verdict (NotJudged, FollowsLoad), as is
// the maximum latency, a single request for which no resampling test is reliable (P. J. Bickel
// and D. A. Freedman, "Some Asymptotic Theory for the Bootstrap", Annals of Statistics
// 9(6):1196–1217, 1981).
//
// # Throughput and error rate: a t interval corrected for autocorrelation
//
// Each usable second gives one observation (its successful responses per second — failed
// attempts such as refused connections are no throughput —; its error fraction, for seconds with
// requests). A second in which VUs were active but nothing completed is an observation of 0, and
// a run whose every usable second is 0 is 100 % below a baseline above 0 (a regression). Neighbouring seconds are alike (caches, GC, connection reuse), so the
// plain s²/n under-estimates the variance of a run's mean. The lag-1 autocorrelation ρ is
// estimated from both runs' series pooled, each about its own mean, corrected for its small-sample
// bias (Marriott & Pope 1954) and kept within [0, 0.8]; the variance of each mean is then
// s²·f·(n−1)/(n(n−f)) with f = 1 + 2Σₖ(1 − k/n)ρᵏ, on n/f − 1 degrees of freedom (the effective
// sample size of Bayley & Hammersley 1946; Zwiers & von Storch 1995). The two runs combine as in
// Welch's test (Welch 1947), on the log scale for TPS (delta method), giving the interval of the
// effect and a p-value.
//
// # Latency percentiles: a two-stage bootstrap of the histograms
//
// A percentile of a run is the percentile of the merged histogram of its usable seconds (exact
// HdrHistogram merge, never an average of per-second percentiles). Its interval comes from a
// percentile bootstrap (B. Efron, "Bootstrap Methods: Another Look at the Jackknife", Annals of
// Statistics 7(1):1–26, 1979) of the ratio run/baseline, each run resampled independently
// (Options.Resamples, default 1 000, seeded PCG: the same runs always give the same intervals) in
// two stages: a moving-block bootstrap of the seconds (blocks of ⌊√n⌋ seconds: H. R. Künsch, "The
// Jackknife and the Bootstrap for General Stationary Observations", Annals of Statistics
// 17(3):1217–1241, 1989), then a Poisson bootstrap of the single requests inside the merged
// histogram (each bucket count c redrawn as Poisson(c): Hanley & MacGibbon 2006). The request
// stage gives short runs request-level resolution; the work per resample depends on the
// histograms' bucket spans, never on the number of requests. The interval's half-widths are then
// widened by √(f/f_ℓ)·t/z: f/f_ℓ is what blocks of ℓ seconds miss of the correlation of the
// per-second latency level (AR(1) with the pooled ρ, as above), and t/z the Student correction
// for the effective number of seconds.
//
// Two approximations keep this fast for long runs. The bootstrap merges histograms on a coarser
// grid of log-spaced buckets 1 % wide (values within 0.5 %, well under the 5 % threshold; the
// table's value and effect come from the exact histograms). A run with more than 600 usable
// seconds is first grouped into 600 units of consecutive seconds.
//
// # Run-to-run noise
//
// Two runs of one plan differ from each other by more than their seconds differ within a run
// (connection placement, scheduler, CPU frequency, GC, the machine's other work are drawn once
// per run). A run's level carries a run effect of standard deviation τ that no length averages
// away — the variance components of repeated executions (A. Georges, D. Buytaert and L.
// Eeckhout, "Statistically Rigorous Java Performance Evaluation", OOPSLA 2007; T. Kalibera and
// R. Jones, "Rigorous Benchmarking in Reasonable Time", ISMM 2013) — so the difference of two
// runs gains the variance 2τ². One pair cannot estimate τ; it is taken per metric family as
// τ = c·s on the log scale, s the per-second standard deviation of the metric in the noisier run
// (less the sampling variance of a one-second percentile), c measured on a busy machine (0.6 TPS,
// 0.5 p50, 0.8 p90 and p95, 1 p99; see runNoiseFactor). TPS adds τ² to each run's variance
// before Welch's test; a percentile adds the term in quadrature to each half-width of its
// bootstrap interval on the log scale. When that term alone keeps an interval too wide,
// DecideCode is "repeat_runs": no run length decides, repeated runs do.
//
// # Power
//
// TestStatisticalPower compares synthetic pairs of runs with known effects (0–50 %), lengths (10,
// 30, 120 s), autocorrelated noise and a run effect; on equal runs no metric is called a
// regression in more than 5 % of the pairs, and a 20 % change between 30 s runs is found in at
// least 95 % of them on TPS and p50 (p95 in low noise). docs/compare.md has the table.
//
// # Warnings
//
// Runs are comparable only under the same load. A warning with Load set is given when the
// executor differs, when the load parameters (VUs, rate, stages, iterations, levels…) differ,
// when one run stopped before its planned end and the other did not (without plans: durations
// more than 10 % apart), when a closed model (VU executors) achieved a mean concurrency more than
// 10 % apart, and when the request sets differ (method and URL of each request, or the request
// names when only summaries are known). Differences in the results — throughput, latency, a
// slower run draining its last requests a little longer — are not load differences. Other
// warnings are about the data: seconds left out as generator-bound, too few seconds, no seconds.
//
// # Downsampling
//
// LTTB and Downsample reduce a series to a number of points for charts with the
// Largest-Triangle-Three-Buckets algorithm (S. Steinarsson, "Downsampling Time Series for Visual
// Representation", MSc thesis, University of Iceland, 2013).
package compare
