package compare

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// Verdict is the outcome for one metric of one run against the baseline.
type Verdict string

// Verdicts. Baseline marks the baseline's own row; NotJudged a metric shown without a verdict
// (one that follows the load, or has no reliable test).
const (
	Regression   Verdict = "regression"
	Improvement  Verdict = "improvement"
	NoChange     Verdict = "no_change"
	Inconclusive Verdict = "inconclusive"
	Baseline     Verdict = "baseline"
	NotJudged    Verdict = "none"
)

// Bounds and defaults of the method (see the package documentation).
const (
	MinRuns = 2
	MaxRuns = 5
	// MinSeconds is the fewest usable seconds a run needs for any verdict but inconclusive (the
	// fewest that estimate the noise and its autocorrelation at all).
	MinSeconds = 4
	// DefaultAlpha is 1 − DefaultConf: the two-sided error rate of the intervals.
	DefaultAlpha = 0.05
	// DefaultConf is the level of every confidence interval.
	DefaultConf      = 0.95
	DefaultResamples = 1000
	DefaultSeed      = 2013
	// DefaultThreshold is the practical threshold of TPS and latency: a relative change smaller
	// than this (5 %) is no change worth a verdict.
	DefaultThreshold = 0.05
	// DefaultErrorThreshold is the practical threshold of the error rate, absolute (0.1
	// percentage point), because a baseline error rate is often 0.
	DefaultErrorThreshold = 0.001
	// DefaultServerCPUThreshold is the practical threshold of the server's CPU per request (10 %):
	// wider than TPS's because the server's CPU includes work that is not per request (timers,
	// GC, logging; on a node the host's other processes), whose share per request moves with the
	// rate (docs/compare.md).
	DefaultServerCPUThreshold = 0.10
	// DefaultServerMemoryThreshold is the practical threshold of the server's memory (10 %): also
	// its noise allowance, since a server's RSS is nearly flat within a run but settles at another
	// level from run to run (allocator, GC heap sizing, caches), which its seconds cannot show.
	DefaultServerMemoryThreshold = 0.10
	// DefaultMaxGapShare is the largest share of a run's usable seconds the server monitor may
	// miss (gaps: no value) for its rows to be judged (10 %).
	DefaultMaxGapShare = 0.10
	// MaxUnits bounds the bootstrap's resampling units (longer runs are resampled in blocks).
	MaxUnits = 600
	// DurationTolerance is the relative duration (or concurrency) difference above which runs
	// are flagged as applying different loads.
	DurationTolerance = 0.10
)

// Options tune Compare; zero fields take the defaults above.
type Options struct {
	Alpha      float64 // 1 − Confidence, used when Confidence is 0
	Confidence float64 // level of the confidence intervals (default 0.95)
	Resamples  int     // bootstrap resamples (at least 1000 is sensible)
	Seed       uint64  // seed of the bootstrap's random generator
	// Threshold is the practical threshold of TPS and latency, a fraction of the baseline
	// (0.05 = 5 %). Values outside (0, 1] take DefaultThreshold.
	Threshold float64
	// ErrorThreshold is the practical threshold of the error rate, absolute (0.001 = 0.1
	// percentage point). Values outside (0, 1] take DefaultErrorThreshold.
	ErrorThreshold float64
	// ServerCPUThreshold is the practical threshold of the server's CPU per request, a fraction
	// of the baseline. Values outside (0, 1] take DefaultServerCPUThreshold.
	ServerCPUThreshold float64
	// ServerMemoryThreshold is the practical threshold of the server's memory, a fraction of the
	// baseline. Values outside (0, 1] take DefaultServerMemoryThreshold.
	ServerMemoryThreshold float64
	// MaxGapShare is the largest share of usable seconds without a server monitor value for
	// which the server's rows are still judged (the gap seconds left out); above it they are not
	// comparable. Values outside (0, 1] take DefaultMaxGapShare.
	MaxGapShare float64
}

func (o Options) withDefaults() Options {
	if o.Confidence <= 0 || o.Confidence >= 1 {
		o.Confidence = DefaultConf
		if o.Alpha > 0 && o.Alpha < 1 {
			o.Confidence = 1 - o.Alpha
		}
	}
	o.Alpha = 1 - o.Confidence
	if o.Resamples <= 0 {
		o.Resamples = DefaultResamples
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	if o.Threshold <= 0 || o.Threshold > 1 {
		o.Threshold = DefaultThreshold
	}
	if o.ErrorThreshold <= 0 || o.ErrorThreshold > 1 {
		o.ErrorThreshold = DefaultErrorThreshold
	}
	if o.ServerCPUThreshold <= 0 || o.ServerCPUThreshold > 1 {
		o.ServerCPUThreshold = DefaultServerCPUThreshold
	}
	if o.ServerMemoryThreshold <= 0 || o.ServerMemoryThreshold > 1 {
		o.ServerMemoryThreshold = DefaultServerMemoryThreshold
	}
	if o.MaxGapShare <= 0 || o.MaxGapShare > 1 {
		o.MaxGapShare = DefaultMaxGapShare
	}
	return o
}

// Meta describes a run. Summary and Plan may be nil when unknown.
type Meta struct {
	ID      int64
	Label   string // how to name the run (a file name); "" means "#<ID>"
	Summary *metrics.Summary
	Plan    *plan.Plan
}

// Name is the run's label.
func (m Meta) Name() string {
	if m.Label != "" {
		return m.Label
	}
	return fmt.Sprintf("#%d", m.ID)
}

// Run is a run prepared for comparison. Make one with NewRun and feed it its seconds in time
// order with AddSecond (or use FromStored / FromSummary). It keeps what the tests need — a few
// numbers and a coarse histogram per usable second, and one exact merged histogram — not the
// samples themselves, so long runs stay cheap.
type Run struct {
	Meta
	added   int
	pending *pendingSecond
	usable  []second
	bound   int
	missing int     // seconds left out because an agent's share was missing
	exact   []int64 // fine counts merged over the usable seconds; nil until one has a histogram
	scratch []int64
	ok      int64 // successful responses over every added second (requests − errors)
	// the run's server monitor (target.go), chosen at its first second with target values
	srv         server
	serverKnown bool
}

type pendingSecond struct {
	second
	bound   bool
	missing bool        // an agent's share of the load was missing in this second
	fine    []fineCount // non-zero counts of the second's histogram
}

// fineCount is one non-zero slot of a histogram's counts in metrics' geometry.
type fineCount struct {
	i int
	c int64
}

type second struct {
	rps, cpu, rss, vus float64
	requests, errors   int64
	hist               chist
	// the server's CPU and memory (target.go); ok false: no value this second
	srvCPU, srvCores, srvMem float64
	srvCPUOK, srvMemOK       bool
}

// NewRun starts a run with no seconds (a summary-only run unless seconds are added).
func NewRun(m Meta) *Run { return &Run{Meta: m} }

// AddSecond adds the run's next stored second and its latency histogram (nil if none). The first
// and the last second added, and generator-bound ones, are left out of the tests.
func (r *Run) AddSecond(s metrics.Sample, h *hdr.Histogram) {
	var fine []fineCount
	if h != nil && h.TotalCount() > 0 {
		for i, c := range countsOf(h) {
			if c != 0 {
				fine = append(fine, fineCount{i, c})
			}
		}
	}
	r.addSecond(s, fine)
}

func (r *Run) addSecond(s metrics.Sample, fine []fineCount) {
	if r.pending != nil && r.added > 1 { // the pending second is neither the first nor the last
		r.take(r.pending)
	}
	r.ok += s.Requests - s.Errors
	r.pending = &pendingSecond{second: second{rps: s.RPS, cpu: s.Client.CPUPercent, rss: float64(s.Client.RSSBytes),
		vus: float64(s.ActiveVUs), requests: s.Requests, errors: s.Errors}, bound: s.GeneratorBound, fine: fine,
		missing: s.MissingShare > 0}
	r.serverSecond(&r.pending.second, s) // target.go
	r.added++
}

func (r *Run) take(p *pendingSecond) {
	if p.missing { // part of the load was not generated: not the plan's load, whatever it measured
		r.missing++
		return
	}
	if p.bound {
		r.bound++
		return
	}
	sec := p.second
	if len(p.fine) > 0 {
		initCoarse()
		if r.exact == nil {
			r.exact = make([]int64, metrics.CountsLen)
			r.scratch = make([]int64, nCoarse)
		}
		for _, f := range p.fine {
			r.exact[f.i] += f.c
		}
		sec.hist = coarsen(p.fine, r.scratch)
	}
	r.usable = append(r.usable, sec)
}

// NoSuccess reports whether the run is known to have had no successful response: none in its
// added seconds, or (a run known by its summary only) neither successful requests counted nor a
// rate of them (RPS × (1 − error rate)) in its summary. Its latency is then unknown, and its
// throughput of successful responses 0.
func (r *Run) NoSuccess() bool {
	if r.added > 0 {
		return r.ok <= 0
	}
	s := r.Summary
	return s != nil && s.Requests-s.Errors <= 0 && s.RPS*(1-s.ErrorRate) <= 0
}

// Seconds is how many seconds were added; Usable how many the tests use; GeneratorBound how many
// were left out as generator-bound.
func (r *Run) Seconds() int        { return r.added }
func (r *Run) Usable() int         { return len(r.usable) }
func (r *Run) GeneratorBound() int { return r.bound }

// Result is the comparison. Threshold and ErrorThreshold are the practical thresholds used
// (fractions: 0.05 = 5 % of the baseline; 0.001 = 0.1 percentage point of error rate) and
// Confidence the level of the intervals.
type Result struct {
	Baseline       int64         `json:"baseline"`
	Threshold      float64       `json:"threshold"`
	ErrorThreshold float64       `json:"error_threshold"`
	Confidence     float64       `json:"confidence"`
	Metrics        []Metric      `json:"metrics"`
	Warnings       []Warning     `json:"warnings"`
	Seconds        []SecondsInfo `json:"seconds"`
}

// SecondsInfo says how many of a run's seconds the tests used.
type SecondsInfo struct {
	RunID          int64  `json:"run_id"`
	Label          string `json:"label,omitempty"`
	Stored         int    `json:"stored"`
	Usable         int    `json:"usable"`
	GeneratorBound int    `json:"generator_bound"`
	// MissingShare counts the seconds of a run over agents in which an agent's share was missing
	// (metrics.Sample.MissingShare > 0): they measured less than the plan's load and are left out.
	MissingShare int `json:"missing_share"`
}

// Metric is one row group of the delta table.
//
// EffectKind says how Value.Effect, CILow, CIHigh and Threshold are expressed: "relative" (a
// fraction of the baseline: −0.2 is 20 % lower) or "absolute" (in the metric's unit; the error
// rate). FollowsLoad marks a metric that moves with the throughput (the load generator's CPU and
// memory): it is shown without a verdict.
type Metric struct {
	Metric         string   `json:"metric"`
	Unit           string   `json:"unit"`
	HigherIsBetter bool     `json:"higher_is_better"`
	Test           string   `json:"test"`                // "autocorrelated-t", "bootstrap" or "none"
	FloorPct       *float64 `json:"floor_pct,omitempty"` // practical threshold, % of the baseline
	FloorAbs       *float64 `json:"floor_abs,omitempty"` // practical threshold, in the metric's unit
	EffectKind     string   `json:"effect_kind,omitempty"`
	Threshold      *float64 `json:"threshold,omitempty"` // practical threshold, in EffectKind's terms
	FollowsLoad    bool     `json:"follows_load,omitempty"`
	Values         []Value  `json:"values"` // one per run, in the given order
}

// Value is one run's figure for a metric. Value, Delta and DeltaPct are null when unknown
// (DeltaPct also when the baseline is 0). Effect is the difference from the baseline in the
// metric's EffectKind (relative: run/baseline − 1), CILow–CIHigh its confidence interval; CI is
// the same interval of run − baseline in the metric's unit. PValue is the two-sided p-value of
// the autocorrelated t test. An inconclusive value says in DecideHint what would decide it, with
// DecideCode naming the case for translation: "longer_run" (DecideSeconds is the run length, in
// seconds for both runs, that the observed noise calls for), "near_threshold" (the effect is
// about the threshold), "too_noisy" (no practical length would do), "repeat_runs" (the runs'
// run-to-run noise alone keeps the interval too wide: repeated runs decide, not longer ones;
// see runNoiseFactor), "per_second_data" (a run
// has no seconds) or "errors_rose" (an improvement withheld because the run's error rate rose,
// see withholdWhenErrorsRose). A value whose length cannot decide it (no request completed) has
// no hint. The latency of a run without a successful response is null, with the verdict "none".
type Value struct {
	RunID         int64       `json:"run_id"`
	Label         string      `json:"label,omitempty"`
	Value         *float64    `json:"value"`
	Delta         *float64    `json:"delta"`
	DeltaPct      *float64    `json:"delta_pct"`
	Verdict       Verdict     `json:"verdict"`
	Effect        *float64    `json:"effect,omitempty"`
	CILow         *float64    `json:"ci_low,omitempty"`
	CIHigh        *float64    `json:"ci_high,omitempty"`
	PValue        *float64    `json:"p_value,omitempty"`
	CI            *[2]float64 `json:"ci,omitempty"`
	N             int         `json:"n"` // usable seconds behind the test
	Reason        string      `json:"reason,omitempty"`
	DecideHint    string      `json:"decide_hint,omitempty"`
	DecideCode    string      `json:"decide_code,omitempty"`
	DecideSeconds int         `json:"decide_seconds,omitempty"`
	// ReasonCode names, for translation, why a server row's value has no verdict: "no_monitor"
	// (this run or the baseline had no server monitor) or "monitor_gaps" (more of its usable
	// seconds than Options.MaxGapShare had no monitor value).
	ReasonCode string `json:"reason_code,omitempty"`
	// Gaps counts the run's usable seconds without a value from the server monitor (server rows
	// only): left out of the figure and the test.
	Gaps int `json:"gaps,omitempty"`
}

// Warning says why runs may not be comparable. Load is true when the runs did not apply the
// same load (executor, load settings, duration, achieved concurrency or requests differ); the
// other warnings are about the data the tests could use.
type Warning struct {
	Code    string `json:"code"`
	RunID   int64  `json:"run_id,omitempty"`
	Load    bool   `json:"load,omitempty"`
	Message string `json:"message"`
}

const (
	testSeries = "autocorrelated-t"
	testBoot   = "bootstrap"
	testNone   = "none"
)

type metricDef struct {
	name, unit   string
	higherBetter bool
	test         string
	relative     bool // effect and threshold relative to the baseline, else absolute
	// notJudged: shown without a verdict, for this reason
	notJudged   string
	followsLoad bool
	// autocorrelated-t metrics: the figure of usable seconds ss (ok false: none)
	value func(ss []second) (float64, bool)
	// has: whether a second carries an observation (nil: every one)
	has func(second) bool
	// bootstrap metrics: the percentile (100 = max), index into bootPs
	pct int
	// the figure when a run has no usable second (NaN: none)
	summary func(*metrics.Summary) float64
	// optional: the row is left out when no run has a figure (the server's, target.go)
	optional bool
	// the server's rows (target.go): gap marks a usable second without the monitor's value
	// (nil: not a server row); obs, when set, gives the per-second observations of the test
	// (else value of each second); thr the practical threshold (else Threshold or
	// ErrorThreshold by relative)
	gap func(second) bool
	obs func(ss []second) []float64
	thr func(Options) float64
}

// bootPs are the percentiles the bootstrap computes per resample (ascending; 100 is the max).
var bootPs = []float64{50, 90, 95, 99}

const followsLoadReason = "follows the load (moves with the throughput): no verdict"

func withRequests(s second) bool { return s.requests > 0 }

// goodput is a second's successful responses per second: its request rate times the share of
// its requests that did not fail (a failed attempt, such as a refused connection, is no
// throughput).
func goodput(s second) float64 {
	if s.requests <= 0 {
		return s.rps
	}
	return s.rps * float64(s.requests-s.errors) / float64(s.requests)
}

var defs = []metricDef{
	{name: "tps", unit: "req/s", higherBetter: true, test: testSeries, relative: true,
		value:   meanOf(goodput),
		summary: func(s *metrics.Summary) float64 { return s.RPS * (1 - s.ErrorRate) }},
	{name: "p50", unit: "ms", test: testBoot, relative: true, pct: 0, summary: func(s *metrics.Summary) float64 { return s.Latency.P50 }},
	{name: "p90", unit: "ms", test: testBoot, relative: true, pct: 1, summary: func(s *metrics.Summary) float64 { return s.Latency.P90 }},
	{name: "p95", unit: "ms", test: testBoot, relative: true, pct: 2, summary: func(s *metrics.Summary) float64 { return s.Latency.P95 }},
	{name: "p99", unit: "ms", test: testBoot, relative: true, pct: 3, summary: func(s *metrics.Summary) float64 { return s.Latency.P99 }},
	{name: "max", unit: "ms", test: testNone, pct: 4,
		notJudged: "the maximum is a single request: no reliable test (Bickel & Freedman 1981), no verdict",
		summary:   func(s *metrics.Summary) float64 { return s.Latency.Max }},
	{name: "error_rate", unit: "fraction", test: testSeries, has: withRequests,
		value: func(ss []second) (float64, bool) {
			var req, errs int64
			for _, s := range ss {
				req += s.requests
				errs += s.errors
			}
			if req == 0 {
				return 0, false
			}
			return float64(errs) / float64(req), true
		},
		summary: func(s *metrics.Summary) float64 { return s.ErrorRate }},
	{name: "cpu_percent", unit: "% of one core", test: testNone, notJudged: followsLoadReason, followsLoad: true,
		value:   meanOf(func(s second) float64 { return s.cpu }),
		summary: func(s *metrics.Summary) float64 { return s.Client.CPUPercentAvg }},
	{name: "rss_bytes", unit: "bytes", test: testNone, notJudged: followsLoadReason, followsLoad: true,
		value:   meanOf(func(s second) float64 { return s.rss }),
		summary: func(s *metrics.Summary) float64 { return float64(s.Client.RSSBytesMax) }},
}

func meanOf(f func(second) float64) func([]second) (float64, bool) {
	return func(ss []second) (float64, bool) {
		if len(ss) == 0 {
			return 0, false
		}
		var s float64
		for _, x := range ss {
			s += f(x)
		}
		return s / float64(len(ss)), true
	}
}

// prepared is what Compare derives from a run once.
type prepared struct {
	r     *Run
	exact *hdr.Histogram // nil without latency data
	lat   metrics.Latency
	boot  [][]float64 // [resample][bootPs index]; nil when not bootstrapped
}

// Compare compares runs (2–5) against runs[baseline].
func Compare(runs []*Run, baseline int, opt Options) (*Result, error) {
	if len(runs) < MinRuns || len(runs) > MaxRuns {
		return nil, fmt.Errorf("compare: %d runs; compare %d to %d", len(runs), MinRuns, MaxRuns)
	}
	if baseline < 0 || baseline >= len(runs) {
		return nil, errors.New("compare: the baseline is not one of the runs")
	}
	for _, r := range runs {
		if r == nil {
			return nil, errors.New("compare: nil run")
		}
	}
	opt = opt.withDefaults()

	prep := make([]prepared, len(runs))
	var wg sync.WaitGroup
	for i, r := range runs {
		prep[i].r = r
		if r.exact != nil {
			prep[i].exact = metrics.HistFromCounts(r.exact)
			prep[i].lat = metrics.LatencyOf(prep[i].exact, 0)
		}
		if prep[i].exact == nil || len(r.usable) < MinSeconds {
			continue
		}
		wg.Add(1)
		go func() { // each run has its own seeded stream: the result does not depend on scheduling
			defer wg.Done()
			hs := make([]chist, len(r.usable))
			for k, s := range r.usable {
				hs[k] = s.hist
			}
			rng := rand.New(rand.NewPCG(opt.Seed, uint64(i)+1))
			prep[i].boot = bootstrapPercentiles(units(hs, MaxUnits), bootPs, opt.Resamples, rng)
		}()
	}
	wg.Wait()

	res := &Result{Baseline: runs[baseline].ID, Threshold: opt.Threshold, ErrorThreshold: opt.ErrorThreshold,
		Confidence: opt.Confidence, Metrics: make([]Metric, 0, len(defs))}
	for _, r := range runs {
		res.Seconds = append(res.Seconds, SecondsInfo{RunID: r.ID, Label: r.Label, Stored: r.added,
			Usable: len(r.usable), GeneratorBound: r.bound, MissingShare: r.missing})
	}
	for _, d := range append(defs, serverDefs...) {
		if d.optional && !anyValue(d, prep) {
			continue // no run had a server monitor (target.go)
		}
		m := Metric{Metric: d.name, Unit: d.unit, HigherIsBetter: d.higherBetter, Test: d.test, FollowsLoad: d.followsLoad}
		if d.notJudged == "" {
			thr := d.threshold(opt)
			m.Threshold = ptr(thr)
			if d.relative {
				m.EffectKind = "relative"
				m.FloorPct = ptr(thr * 100)
			} else {
				m.EffectKind = "absolute"
				m.FloorAbs = ptr(thr)
			}
		}
		base := &prep[baseline]
		bv, bok := d.valueOf(base)
		for i := range prep {
			p := &prep[i]
			v := Value{RunID: p.r.ID, Label: p.r.Label}
			val, ok := d.valueOf(p)
			if ok {
				v.Value = ptr(val)
			}
			if ok && bok {
				v.Delta = ptr(val - bv)
				if bv != 0 {
					v.DeltaPct = ptr((val - bv) / math.Abs(bv) * 100)
				}
			}
			v.Gaps = d.gaps(p)
			if i == baseline {
				v.Verdict = Baseline
				v.N = d.n(p)
				if ok {
					v.Delta, v.DeltaPct = ptr(0.0), ptr(0.0)
				}
			} else {
				d.judge(&v, p, base, opt)
			}
			m.Values = append(m.Values, v)
		}
		res.Metrics = append(res.Metrics, m)
	}
	withholdWhenErrorsRose(res, baseline, opt)
	res.Warnings = warnings(runs, baseline)
	return res, nil
}

func ptr[T any](v T) *T { return &v }

func (d metricDef) threshold(opt Options) float64 {
	if d.thr != nil {
		return d.thr(opt)
	}
	if d.relative {
		return opt.Threshold
	}
	return opt.ErrorThreshold
}

// latency reports whether the metric is a latency (a percentile or the maximum).
func (d metricDef) latency() bool { return d.value == nil }

// valueOf is the metric's figure for a run: over its usable seconds, else from its summary. A
// latency is unknown for a run without a successful response.
func (d metricDef) valueOf(p *prepared) (float64, bool) {
	if d.latency() && p.r.NoSuccess() {
		return 0, false
	}
	if len(p.r.usable) > 0 {
		if d.value != nil {
			if v, ok := d.value(p.r.usable); ok {
				return v, true
			}
		} else if p.exact != nil {
			return latencyAt(p.lat, d.pct), true
		}
	}
	if p.r.Summary != nil {
		if v := d.summary(p.r.Summary); !math.IsNaN(v) { // NaN: the summary has no such figure
			return v, true
		}
	}
	return 0, false
}

// anyValue reports whether some run has a figure for the metric.
func anyValue(d metricDef, prep []prepared) bool {
	for i := range prep {
		if _, ok := d.valueOf(&prep[i]); ok {
			return true
		}
	}
	return false
}

func latencyAt(l metrics.Latency, k int) float64 {
	return [...]float64{l.P50, l.P90, l.P95, l.P99, l.Max}[k]
}

// n is the number of usable seconds behind the metric's test for a run.
func (d metricDef) n(p *prepared) int {
	if d.has == nil {
		return len(p.r.usable)
	}
	n := 0
	for _, s := range p.r.usable {
		if d.has(s) {
			n++
		}
	}
	return n
}

// observations are the metric's per-second values of a run's usable seconds (those with an
// observation), in time order.
func (d metricDef) observations(p *prepared) []float64 {
	if d.obs != nil {
		return d.obs(p.r.usable)
	}
	out := make([]float64, 0, len(p.r.usable))
	for _, s := range p.r.usable {
		if d.has == nil || d.has(s) {
			v, _ := d.value([]second{s})
			out = append(out, v)
		}
	}
	return out
}

// estimates are the metric's figures for a run and the baseline with the variances of their
// means, from the per-second values and their pooled autocorrelation.
func (d metricDef) estimates(p, base *prepared) (x, y meanEstimate) {
	xo, yo := d.observations(p), d.observations(base)
	rho := pooledAR1(xo, yo)
	xm, _ := d.value(p.r.usable)
	ym, _ := d.value(base.r.usable)
	return ar1Mean(xm, xo, rho), ar1Mean(ym, yo, rho)
}

// direction turns a change of sign dir (+1 up, −1 down) into a verdict.
func (d metricDef) direction(dir float64) Verdict {
	if (dir > 0) == d.higherBetter {
		return Improvement
	}
	return Regression
}

// shortSeconds is the run length proposed for runs too short for any test.
const shortSeconds = 30

// hint is what would decide an inconclusive value (see Value).
type hint struct {
	code, text string
	secs       int
}

func longerRun(secs int) hint {
	return hint{"longer_run", fmt.Sprintf("run both runs for ≥ %d s", secs), secs}
}

func (d metricDef) judge(v *Value, p, base *prepared, opt Options) {
	v.N = d.n(p)
	nb := d.n(base)
	if d.latency() && (p.r.NoSuccess() || base.r.NoSuccess()) {
		v.Verdict, v.Reason = NotJudged, "no successful response: the latency is unknown, no verdict"
		return
	}
	if d.notJudged != "" {
		v.Verdict, v.Reason = NotJudged, d.notJudged
		return
	}
	if d.gap != nil && d.serverNotComparable(v, p, base, opt) {
		return
	}
	inconclusive := func(reason string, h hint) {
		v.Verdict, v.Reason, v.DecideHint, v.DecideCode, v.DecideSeconds = Inconclusive, reason, h.text, h.code, h.secs
	}
	switch {
	case p.r.added == 0 || base.r.added == 0:
		inconclusive("summary only (no per-second data)", hint{"per_second_data", "compare runs that carry per-second data", 0})
		return
	case (v.N == 0 || nb == 0) && len(p.r.usable) >= MinSeconds && len(base.r.usable) >= MinSeconds:
		// the load ran, but no request completed: a longer run would not change that
		inconclusive("no request completed in the usable seconds of this run or the baseline", hint{})
		return
	case v.N < MinSeconds || nb < MinSeconds:
		inconclusive(fmt.Sprintf("fewer than %d usable seconds (this run %d, baseline %d)", MinSeconds, v.N, nb), longerRun(shortSeconds))
		return
	case v.Delta == nil:
		inconclusive("no value to compare", hint{})
		return
	}
	bv := *v.Value - *v.Delta
	var eff, lo, hi float64
	// the run-to-run term: each run's level varies by τ (log scale) however long it ran, so the
	// difference of two runs by √2·τ; wRun is the part of the interval's half-width it makes
	tau := d.runNoise(p, base)
	zq := math.Sqrt2 * math.Erfinv(opt.Confidence)
	wRun := zq * math.Sqrt2 * tau
	if d.test == testSeries {
		x, y := d.estimates(p, base)
		x.v += tau * tau * x.m * x.m // Var ln x̄ gains τ²: Var x̄ gains τ²·x̄² (delta method)
		y.v += tau * tau * y.m * y.m
		switch {
		case d.relative && y.m <= 0:
			inconclusive("the baseline has no successful response per second: no relative change", hint{})
			return
		case d.relative && x.m <= 0:
			// Every usable second of the run is 0 (the target stopped answering): no ratio on the
			// log scale, but the run is 100 % below a baseline above 0, and a longer run cannot
			// change that. The p-value is that of the baseline's mean being 0.
			eff, lo, hi = -1, -1, -1
			v.PValue = ptr(zeroMeanP(y))
		default:
			dd, h, pv, ok := welch(x, y, d.relative, opt.Confidence)
			if !ok {
				inconclusive("too few seconds with data to estimate the noise", longerRun(shortSeconds))
				return
			}
			v.PValue = ptr(pv)
			eff, lo, hi = dd, dd-h, dd+h
			if d.relative {
				eff, lo, hi = math.Expm1(dd), math.Expm1(dd-h), math.Expm1(dd+h)
			}
		}
	} else {
		if p.boot == nil || base.boot == nil || bv <= 0 {
			inconclusive("no latency data", hint{})
			return
		}
		ratios := make([]float64, 0, len(p.boot))
		for k := range p.boot {
			a, b := p.boot[k][d.pct], base.boot[k][d.pct]
			if !math.IsNaN(a) && !math.IsNaN(b) && b > 0 {
				ratios = append(ratios, a/b-1)
			}
		}
		if len(ratios) == 0 {
			inconclusive("no latency data", hint{})
			return
		}
		eff = *v.Value/bv - 1
		lo, hi = percentileCI(ratios, opt.Confidence)
		// Widen the interval for what the blocks miss: correlation beyond a block, and the
		// narrowness of a percentile interval from few seconds (see widening).
		slices.Sort(ratios)
		med := quantile(ratios, 0.5)
		w := widening(levels(p), levels(base), opt.Confidence)
		lo, hi = med-(med-lo)*w, med+(hi-med)*w
		// add the run-to-run term to each half-width on the log scale, in quadrature (a lower
		// end at or below −100 % stays there: its log half-width is infinite)
		if med > -1 && wRun > 0 {
			lm := math.Log1p(med)
			hl, hh := math.Inf(1), math.Log1p(hi)-lm
			if lo > -1 {
				hl = lm - math.Log1p(lo)
			}
			lo = math.Expm1(lm - math.Hypot(hl, wRun))
			hi = math.Expm1(lm + math.Hypot(hh, wRun))
		}
	}
	v.Effect, v.CILow, v.CIHigh = ptr(eff), ptr(lo), ptr(hi)
	if d.relative {
		v.CI = &[2]float64{lo * bv, hi * bv}
	} else {
		v.CI = &[2]float64{lo, hi}
	}
	thr := d.threshold(opt)
	switch {
	case (lo > 0 && eff >= thr) || (hi < 0 && eff <= -thr):
		v.Verdict = d.direction(eff)
	case lo >= -thr && hi <= thr:
		v.Verdict = NoChange
	case (lo > 0 && eff < 0) || (hi < 0 && eff > 0):
		inconclusive("the interval and the measured difference point in opposite directions", hint{})
	default:
		reason := "the interval spans the threshold"
		if lo > 0 || hi < 0 {
			reason = "significant, but the interval spans the threshold"
		}
		inconclusive(reason, decide(eff, lo, hi, thr, min(v.N, nb), wRun))
	}
}

// MaxDecideSeconds is the longest run DecideHint proposes; beyond it the hint says the noise or
// the threshold must change instead.
const MaxDecideSeconds = 3600

// decide estimates the run length that would turn an inconclusive interval [lo, hi] around eff
// into a verdict, given the threshold thr, the n usable seconds behind it and wRun, the part of
// the half-width w that is run-to-run noise (w² = w_n² + wRun²; see runNoiseFactor). Only w_n
// shrinks with the run's length, as 1/√n, so n·w_n²/(target² − wRun²) usable seconds bring the
// half-width to target — |eff| (to exclude 0) when the effect reaches the threshold, thr − |eff|
// (to fit inside ±thr) when it does not. When wRun alone reaches 90 % of target no practical
// length decides it: the hint is "repeat_runs". Two seconds are added for the first and last, and the result is
// rounded up to 5 s and at least 1.5 times the current length.
func decide(eff, lo, hi, thr float64, n int, wRun float64) hint {
	w := (hi - lo) / 2
	a := math.Abs(eff)
	target := a
	if a < thr {
		target = thr - a
	}
	if target < thr/10 {
		return hint{"near_threshold", "the effect is about the threshold: a much longer run, or another threshold, decides", 0}
	}
	if wRun >= target*0.9 { // the length needed grows without bound as wRun nears target
		return hint{"repeat_runs", "the runs differ from run to run by more than a longer run can settle: repeat both runs (compare the repeats), or quieten the machine", 0}
	}
	wn, tn := w, target // the part that shrinks with length, and what it must shrink to
	if wRun > 0 {
		wn, tn = math.Sqrt(math.Max(0, w*w-wRun*wRun)), math.Sqrt(target*target-wRun*wRun)
	}
	need := float64(n) * (wn / tn) * (wn / tn)
	secs := int(math.Ceil(need)) + 2
	secs = max(secs, int(math.Ceil(1.5*float64(n+2))))
	secs = (secs + 4) / 5 * 5
	if secs > MaxDecideSeconds {
		return hint{"too_noisy", fmt.Sprintf("the noise is too high to decide within %d s: quieten the target or the generator, or raise the threshold", MaxDecideSeconds), 0}
	}
	return longerRun(secs)
}

// withholdWhenErrorsRose turns an improvement of TPS or latency into inconclusive (DecideCode
// "errors_rose") for a run whose error rate rose: its error-rate verdict is a regression, or its
// error rate exceeds the baseline's by more than the error threshold whatever the verdict (a run
// too short, or without completed requests, to test it). Failing fast is no improvement.
func withholdWhenErrorsRose(res *Result, baseline int, opt Options) {
	var errRate *Metric
	for i := range res.Metrics {
		if res.Metrics[i].Metric == "error_rate" {
			errRate = &res.Metrics[i]
		}
	}
	if errRate == nil {
		return
	}
	for i, e := range errRate.Values {
		if i == baseline || !(e.Verdict == Regression || (e.Delta != nil && *e.Delta > opt.ErrorThreshold)) {
			continue
		}
		for k := range res.Metrics {
			m := &res.Metrics[k]
			if v := &m.Values[i]; m.Metric != "error_rate" && v.Verdict == Improvement {
				v.Verdict, v.DecideSeconds = Inconclusive, 0
				v.Reason = "an improvement is not credited while the error rate rose"
				v.DecideCode, v.DecideHint = "errors_rose", "the error rate rose: fix the errors, then compare again"
			}
		}
	}
}

// AnyRegression reports whether some metric of some run is a regression.
func (r *Result) AnyRegression() bool {
	for _, m := range r.Metrics {
		for _, v := range m.Values {
			if v.Verdict == Regression {
				return true
			}
		}
	}
	return false
}

// levels is the per-second latency level of a run's usable seconds: the log of each second's
// mean latency (seconds without latency data are skipped).
func levels(p *prepared) []float64 {
	out := make([]float64, 0, len(p.r.usable))
	for _, s := range p.r.usable {
		if s.hist.total == 0 {
			continue
		}
		var sum float64
		for i, c := range s.hist.counts {
			sum += float64(c) * coarseMs(s.hist.off+i)
		}
		if sum > 0 {
			out = append(out, math.Log(sum/float64(s.hist.total)))
		}
	}
	return out
}

// widening is the factor applied to the half-widths of a latency bootstrap interval. A
// moving-block bootstrap with blocks of ℓ seconds estimates the variance with Bartlett weights
// up to lag ℓ (Künsch 1989): for an AR(1) level with lag-1 correlation ρ it sees
// f_ℓ = 1 + 2Σ_{k<ℓ}(1 − k/ℓ)ρᵏ of the long-run factor f = (1+ρ)/(1−ρ), so the half-widths are
// scaled by √(f/f_ℓ), with ρ the pooled, bias-corrected autocorrelation of the runs' per-second
// latency levels (pooledAR1). A percentile interval from n seconds is also as narrow as a normal
// one, where two runs of n/f effective seconds call for Student's t: the factor t_{df}/z with
// df = 2n/f − 2 (at least 2).
func widening(x, y []float64, conf float64) float64 {
	n := min(len(x), len(y))
	if n < 2 {
		return 1
	}
	rho := pooledAR1(x, y)
	f := (1 + rho) / (1 - rho)
	l := blockLen(n)
	fl, rk := 1.0, 1.0
	for k := 1; k < l; k++ {
		rk *= rho
		fl += 2 * (1 - float64(k)/float64(l)) * rk
	}
	q := 1 - (1-conf)/2
	df := math.Max(2, 2*float64(n)/f-2) // two runs of n/f effective seconds each
	z := math.Sqrt2 * math.Erfinv(2*q-1)
	return math.Sqrt(f/fl) * studentQuantile(q, df) / z
}
