// Package compare decides whether one load-test run differs from another: given 2–5 runs (their
// summaries, per-second samples and per-second latency histograms) and a baseline, it builds a
// delta table for throughput (TPS), latency percentiles (p50, p90, p95, p99, max), error rate and
// the load generator's CPU and RSS, with a verdict per metric and run: regression, improvement,
// no_change or inconclusive. It also warns when the runs did not apply the same load.
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
// A run with fewer than 10 usable seconds gets the verdict inconclusive on every metric, and so
// does a run known only by its summary (a `volley run --out` file): the tests below need
// seconds. The values in the table are computed over the usable seconds too, so that value,
// delta and verdict agree; a run with no usable second shows its summary's figures.
//
// # Throughput, error rate, client CPU and RSS: Mann-Whitney U
//
// Each usable second gives one observation (its requests per second; its error fraction, for
// seconds with at least one request; the generator's CPU % and RSS). The two runs' observations
// are compared with the two-sided Mann-Whitney U test (H. B. Mann and D. R. Whitney, "On a Test
// of Whether one of Two Random Variables is Stochastically Larger than the Other", Annals of
// Mathematical Statistics 18(1):50–60, 1947), which assumes no distribution shape. The p-value
// uses the normal approximation with the tie correction of the variance,
//
//	σ² = n₁n₂/12 · ((n+1) − Σ(t³−t) / (n(n−1)))   (t = size of each group of tied values)
//
// and a continuity correction of ½ (as R's wilcox.test with exact=FALSE, correct=TRUE, and
// SciPy's mannwhitneyu with method="asymptotic"). The test is significant at α = 0.01. The value
// shown is the mean over the usable seconds (for the error rate: errors / requests over them).
//
// # Latency percentiles: bootstrap of the difference
//
// A percentile of a run is the percentile of the merged histogram of its usable seconds (exact
// HdrHistogram merge, never an average of per-second percentiles). Its uncertainty comes from a
// percentile bootstrap (B. Efron, "Bootstrap Methods: Another Look at the Jackknife", Annals of
// Statistics 7(1):1–26, 1979; B. Efron and R. J. Tibshirani, An Introduction to the Bootstrap,
// Chapman & Hall, 1993, ch. 13): each resample draws the run's usable seconds with replacement,
// merges their histograms and takes the percentile; the baseline is resampled the same way,
// independently, and the 99 % confidence interval of the difference (run − baseline) is
// the 0.5 % and 99.5 % quantiles of the 2 000 resampled differences. Resampling whole seconds
// (not single requests) keeps the dependence between requests of the same second. The random
// generator (PCG) is seeded, so the same runs always give the same intervals.
//
// Two approximations keep this fast for long runs. The bootstrap merges histograms on a coarser
// grid of log-spaced buckets 1 % wide (values within 0.5 %, well under the 5 % floor below; the
// table's value and delta come from the exact histograms). A run with more than 600 usable
// seconds is resampled in 600 blocks of consecutive seconds (a non-overlapping block bootstrap:
// E. Carlstein, "The Use of Subseries Values for Estimating the Variance of a General Statistic
// from a Stationary Sequence", Annals of Statistics 14(3):1171–1179, 1986), which also respects
// the autocorrelation of neighbouring seconds. The maximum is reported the same way, but the
// bootstrap is known to be unreliable for a sample maximum (P. J. Bickel and D. A. Freedman,
// "Some Asymptotic Theory for the Bootstrap", Annals of Statistics 9(6):1196–1217, 1981): read
// its verdict as indicative.
//
// # Verdicts
//
// For every metric a change must be both statistically and practically significant:
//
//   - regression / improvement: the test rejects "no difference" (p < 0.01, or the 99 %
//     interval excludes 0) and the change reaches the practical floor — |Δ| ≥ 5 % of the
//     baseline for TPS and latency, ≥ 10 % for client CPU and RSS (noisier), and ≥ 0.001
//     absolute (0.1 percentage point) for the error rate, whose baseline is often 0. Higher is
//     better for TPS only; for the others an increase is a regression.
//   - no_change: not significant, or significant but under the floor.
//   - inconclusive: fewer than 10 usable seconds in either run, no per-second data, no latency
//     data, or a test that points the other way from the difference of values.
//
// Per-second observations of one run are not independent (load tests drift and autocorrelate), so
// the nominal α is optimistic; the practical floor and the warnings are the guard against calling
// noise a regression. Compare runs of the same plan against the same target.
//
// # Warnings
//
// Runs are comparable only under the same load: a warning is given when the executor differs,
// when the load parameters (VUs, rate, stages, iterations, levels…) differ, when a run's duration
// differs from the baseline's by more than 10 %, when the request sets differ (method and URL of
// each request, or the request names when only summaries are known), when seconds were left out
// as generator-bound, and when a run has too few seconds or none for the tests.
//
// # Downsampling
//
// LTTB and Downsample reduce a series to a number of points for charts with the
// Largest-Triangle-Three-Buckets algorithm (S. Steinarsson, "Downsampling Time Series for Visual
// Representation", MSc thesis, University of Iceland, 2013).
package compare
