package compare

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// Verdict is the outcome for one metric of one run against the baseline.
type Verdict string

// Verdicts. Baseline marks the baseline's own row.
const (
	Regression   Verdict = "regression"
	Improvement  Verdict = "improvement"
	NoChange     Verdict = "no_change"
	Inconclusive Verdict = "inconclusive"
	Baseline     Verdict = "baseline"
)

// Bounds and defaults of the method (see the package documentation).
const (
	MinRuns = 2
	MaxRuns = 5
	// MinSeconds is the fewest usable seconds a run needs for any verdict but inconclusive.
	MinSeconds       = 10
	DefaultAlpha     = 0.01
	DefaultConf      = 0.99
	DefaultResamples = 2000
	DefaultSeed      = 2013
	// MaxUnits bounds the bootstrap's resampling units (longer runs are resampled in blocks).
	MaxUnits = 600
	// DurationTolerance is the relative duration difference above which runs are flagged.
	DurationTolerance = 0.10
)

// Options tune Compare; zero fields take the defaults above.
type Options struct {
	Alpha      float64 // significance level of the Mann-Whitney tests
	Confidence float64 // level of the bootstrap intervals
	Resamples  int     // bootstrap resamples (at least 1000 is sensible)
	Seed       uint64  // seed of the bootstrap's random generator
}

func (o Options) withDefaults() Options {
	if o.Alpha <= 0 || o.Alpha >= 1 {
		o.Alpha = DefaultAlpha
	}
	if o.Confidence <= 0 || o.Confidence >= 1 {
		o.Confidence = DefaultConf
	}
	if o.Resamples <= 0 {
		o.Resamples = DefaultResamples
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
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
	exact   []int64 // fine counts merged over the usable seconds; nil until one has a histogram
	scratch []int64
}

type pendingSecond struct {
	rps, cpu, rss    float64
	requests, errors int64
	bound            bool
	h                *hdr.Histogram
}

type second struct {
	rps, cpu, rss    float64
	requests, errors int64
	hist             chist
}

// NewRun starts a run with no seconds (a summary-only run unless seconds are added).
func NewRun(m Meta) *Run { return &Run{Meta: m} }

// AddSecond adds the run's next stored second and its latency histogram (nil if none). The first
// and the last second added, and generator-bound ones, are left out of the tests.
func (r *Run) AddSecond(s metrics.Sample, h *hdr.Histogram) {
	if r.pending != nil && r.added > 1 { // the pending second is neither the first nor the last
		r.take(r.pending)
	}
	r.pending = &pendingSecond{rps: s.RPS, cpu: s.Client.CPUPercent, rss: float64(s.Client.RSSBytes),
		requests: s.Requests, errors: s.Errors, bound: s.GeneratorBound, h: h}
	r.added++
}

func (r *Run) take(p *pendingSecond) {
	if p.bound {
		r.bound++
		return
	}
	sec := second{rps: p.rps, cpu: p.cpu, rss: p.rss, requests: p.requests, errors: p.errors}
	if p.h != nil && p.h.TotalCount() > 0 {
		initCoarse()
		counts := countsOf(p.h)
		if r.exact == nil {
			r.exact = make([]int64, metrics.CountsLen)
			r.scratch = make([]int64, nCoarse)
		}
		for i, c := range counts {
			r.exact[i] += c
		}
		sec.hist = coarsen(counts, r.scratch)
	}
	r.usable = append(r.usable, sec)
}

// Seconds is how many seconds were added; Usable how many the tests use; GeneratorBound how many
// were left out as generator-bound.
func (r *Run) Seconds() int        { return r.added }
func (r *Run) Usable() int         { return len(r.usable) }
func (r *Run) GeneratorBound() int { return r.bound }

// Result is the comparison.
type Result struct {
	Baseline int64         `json:"baseline"`
	Metrics  []Metric      `json:"metrics"`
	Warnings []Warning     `json:"warnings"`
	Seconds  []SecondsInfo `json:"seconds"`
}

// SecondsInfo says how many of a run's seconds the tests used.
type SecondsInfo struct {
	RunID          int64  `json:"run_id"`
	Label          string `json:"label,omitempty"`
	Stored         int    `json:"stored"`
	Usable         int    `json:"usable"`
	GeneratorBound int    `json:"generator_bound"`
}

// Metric is one row group of the delta table.
type Metric struct {
	Metric         string   `json:"metric"`
	Unit           string   `json:"unit"`
	HigherIsBetter bool     `json:"higher_is_better"`
	Test           string   `json:"test"`                // "mann-whitney" or "bootstrap"
	FloorPct       *float64 `json:"floor_pct,omitempty"` // practical floor, % of the baseline
	FloorAbs       *float64 `json:"floor_abs,omitempty"` // practical floor, in the metric's unit
	Values         []Value  `json:"values"`              // one per run, in the given order
}

// Value is one run's figure for a metric. Value, Delta and DeltaPct are null when unknown
// (DeltaPct also when the baseline is 0). PValue comes with Mann-Whitney metrics, CI (the
// interval of run − baseline, in the metric's unit) with bootstrap ones.
type Value struct {
	RunID    int64       `json:"run_id"`
	Label    string      `json:"label,omitempty"`
	Value    *float64    `json:"value"`
	Delta    *float64    `json:"delta"`
	DeltaPct *float64    `json:"delta_pct"`
	Verdict  Verdict     `json:"verdict"`
	PValue   *float64    `json:"p_value,omitempty"`
	CI       *[2]float64 `json:"ci,omitempty"`
	N        int         `json:"n"` // usable seconds behind the test
	Reason   string      `json:"reason,omitempty"`
}

// Warning says why runs may not be comparable.
type Warning struct {
	Code    string `json:"code"`
	RunID   int64  `json:"run_id,omitempty"`
	Message string `json:"message"`
}

const (
	testMW   = "mann-whitney"
	testBoot = "bootstrap"
)

type metricDef struct {
	name, unit   string
	higherBetter bool
	test         string
	floorRel     float64 // fraction of the baseline
	floorAbs     float64
	// Mann-Whitney metrics: the per-second observation (ok false: the second has none) and the
	// value over usable seconds.
	obs   func(second) (float64, bool)
	value func([]second) (float64, bool)
	// bootstrap metrics: the percentile (100 = max), index into bootPs
	pct int
	// the figure when a run has no usable second
	summary func(*metrics.Summary) float64
}

// bootPs are the percentiles the bootstrap computes per resample (ascending; 100 is the max).
var bootPs = []float64{50, 90, 95, 99, 100}

var defs = []metricDef{
	{name: "tps", unit: "req/s", higherBetter: true, test: testMW, floorRel: 0.05,
		obs:     func(s second) (float64, bool) { return s.rps, true },
		value:   meanOf(func(s second) float64 { return s.rps }),
		summary: func(s *metrics.Summary) float64 { return s.RPS }},
	{name: "p50", unit: "ms", test: testBoot, floorRel: 0.05, pct: 0, summary: func(s *metrics.Summary) float64 { return s.Latency.P50 }},
	{name: "p90", unit: "ms", test: testBoot, floorRel: 0.05, pct: 1, summary: func(s *metrics.Summary) float64 { return s.Latency.P90 }},
	{name: "p95", unit: "ms", test: testBoot, floorRel: 0.05, pct: 2, summary: func(s *metrics.Summary) float64 { return s.Latency.P95 }},
	{name: "p99", unit: "ms", test: testBoot, floorRel: 0.05, pct: 3, summary: func(s *metrics.Summary) float64 { return s.Latency.P99 }},
	{name: "max", unit: "ms", test: testBoot, floorRel: 0.05, pct: 4, summary: func(s *metrics.Summary) float64 { return s.Latency.Max }},
	{name: "error_rate", unit: "fraction", test: testMW, floorAbs: 0.001,
		obs: func(s second) (float64, bool) {
			if s.requests <= 0 {
				return 0, false
			}
			return float64(s.errors) / float64(s.requests), true
		},
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
	{name: "cpu_percent", unit: "% of one core", test: testMW, floorRel: 0.10,
		obs:     func(s second) (float64, bool) { return s.cpu, true },
		value:   meanOf(func(s second) float64 { return s.cpu }),
		summary: func(s *metrics.Summary) float64 { return s.Client.CPUPercentAvg }},
	{name: "rss_bytes", unit: "bytes", test: testMW, floorRel: 0.10,
		obs:     func(s second) (float64, bool) { return s.rss, true },
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

	res := &Result{Baseline: runs[baseline].ID, Metrics: make([]Metric, 0, len(defs))}
	for _, r := range runs {
		res.Seconds = append(res.Seconds, SecondsInfo{RunID: r.ID, Label: r.Label, Stored: r.added,
			Usable: len(r.usable), GeneratorBound: r.bound})
	}
	for _, d := range defs {
		m := Metric{Metric: d.name, Unit: d.unit, HigherIsBetter: d.higherBetter, Test: d.test}
		if d.floorRel > 0 {
			m.FloorPct = ptr(d.floorRel * 100)
		}
		if d.floorAbs > 0 {
			m.FloorAbs = ptr(d.floorAbs)
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
	res.Warnings = warnings(runs, baseline)
	return res, nil
}

func ptr[T any](v T) *T { return &v }

// valueOf is the metric's figure for a run: over its usable seconds, else from its summary.
func (d metricDef) valueOf(p *prepared) (float64, bool) {
	if len(p.r.usable) > 0 {
		if d.test == testMW {
			if v, ok := d.value(p.r.usable); ok {
				return v, true
			}
		} else if p.exact != nil {
			return latencyAt(p.lat, d.pct), true
		}
	}
	if p.r.Summary != nil {
		return d.summary(p.r.Summary), true
	}
	return 0, false
}

func latencyAt(l metrics.Latency, k int) float64 {
	return [...]float64{l.P50, l.P90, l.P95, l.P99, l.Max}[k]
}

// n is the number of usable seconds behind the metric's test for a run.
func (d metricDef) n(p *prepared) int {
	if d.test == testBoot || d.obs == nil {
		return len(p.r.usable)
	}
	n := 0
	for _, s := range p.r.usable {
		if _, ok := d.obs(s); ok {
			n++
		}
	}
	return n
}

func (d metricDef) observations(p *prepared) []float64 {
	out := make([]float64, 0, len(p.r.usable))
	for _, s := range p.r.usable {
		if v, ok := d.obs(s); ok {
			out = append(out, v)
		}
	}
	return out
}

// passesFloor reports whether a change is large enough to matter.
func (d metricDef) passesFloor(delta, base float64) bool {
	if d.floorAbs > 0 && math.Abs(delta) < d.floorAbs {
		return false
	}
	if d.floorRel > 0 {
		if base == 0 {
			return delta != 0
		}
		return math.Abs(delta)/math.Abs(base) >= d.floorRel
	}
	return true
}

// direction turns a significant change of sign dir (+1 up, −1 down) into a verdict.
func (d metricDef) direction(dir float64) Verdict {
	if (dir > 0) == d.higherBetter {
		return Improvement
	}
	return Regression
}

func (d metricDef) judge(v *Value, p, base *prepared, opt Options) {
	v.N = d.n(p)
	nb := d.n(base)
	switch {
	case p.r.added == 0 || base.r.added == 0:
		v.Verdict, v.Reason = Inconclusive, "summary only (no per-second data)"
		return
	case v.N < MinSeconds || nb < MinSeconds:
		v.Verdict = Inconclusive
		v.Reason = fmt.Sprintf("fewer than %d usable seconds (this run %d, baseline %d)", MinSeconds, v.N, nb)
		return
	case v.Delta == nil:
		v.Verdict, v.Reason = Inconclusive, "no value to compare"
		return
	}
	delta := *v.Delta
	bv := *v.Value - delta
	if d.test == testMW {
		_, z, pv := MannWhitney(d.observations(p), d.observations(base))
		v.PValue = ptr(pv)
		switch {
		case pv >= opt.Alpha || !d.passesFloor(delta, bv):
			v.Verdict = NoChange
		case z*delta <= 0:
			v.Verdict, v.Reason = Inconclusive, "the test and the difference of means point in opposite directions"
		default:
			v.Verdict = d.direction(delta)
		}
		return
	}
	if p.boot == nil || base.boot == nil {
		v.Verdict, v.Reason = Inconclusive, "no latency data"
		return
	}
	diffs := make([]float64, 0, len(p.boot))
	for k := range p.boot {
		a, b := p.boot[k][d.pct], base.boot[k][d.pct]
		if !math.IsNaN(a) && !math.IsNaN(b) {
			diffs = append(diffs, a-b)
		}
	}
	if len(diffs) == 0 {
		v.Verdict, v.Reason = Inconclusive, "no latency data"
		return
	}
	lo, hi := percentileCI(diffs, opt.Confidence)
	v.CI = &[2]float64{lo, hi}
	switch {
	case lo <= 0 && hi >= 0, !d.passesFloor(delta, bv):
		v.Verdict = NoChange
	case lo*delta <= 0: // the interval excludes 0 on the other side of the exact difference
		v.Verdict, v.Reason = Inconclusive, "the interval and the exact difference point in opposite directions"
	default:
		v.Verdict = d.direction(delta)
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
