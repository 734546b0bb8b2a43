package compare

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// Student's t quantiles from tables (R: qt(0.975, df), qt(0.995, df)).
func TestStudentQuantile(t *testing.T) {
	for _, c := range []struct{ q, df, want float64 }{
		{0.975, 1, 12.7062}, {0.975, 2, 4.3027}, {0.975, 4, 2.7764}, {0.975, 10, 2.2281},
		{0.975, 30, 2.0423}, {0.995, 5, 4.0321}, {0.95, 3, 2.3534}, {0.5, 7, 0}, {0.025, 10, -2.2281},
	} {
		if got := studentQuantile(c.q, c.df); math.Abs(got-c.want) > 2e-3*math.Max(1, math.Abs(c.want)) {
			t.Errorf("t(%g, df %g) = %.4f, want %.4f", c.q, c.df, got, c.want)
		}
	}
	if p := studentCDF(2.2281, 10); math.Abs(p-0.975) > 1e-4 {
		t.Errorf("P(T ≤ 2.2281 | df 10) = %.5f", p)
	}
	if p := studentCDF(1.96, math.Inf(1)); math.Abs(p-0.975) > 1e-3 {
		t.Errorf("normal limit %.4f", p)
	}
}

// The variance of the mean of an AR(1) series with ρ = 0.5 is three times that of independent
// values; ar1Mean recovers it on average, a plain s²/n does not.
func TestAR1MeanVariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n, reps, phi = 60, 2000, 0.5
	var means, est, naive []float64
	for range reps {
		x := make([]float64, n)
		v := rng.NormFloat64()
		for i := range x {
			v = phi*v + math.Sqrt(1-phi*phi)*rng.NormFloat64()
			x[i] = v
		}
		rho := pooledAR1(x)
		e := ar1Mean(mean(x), x, rho)
		means, est = append(means, e.m), append(est, e.v)
		_, ss := lag1(x)
		naive = append(naive, ss/(n-1)/n)
	}
	var trueVar float64
	for _, m := range means {
		trueVar += m * m
	}
	trueVar /= reps
	if r := mean(est) / trueVar; r < 0.8 || r > 1.3 {
		t.Errorf("ar1Mean variance / true variance = %.2f", r)
	}
	if r := mean(naive) / trueVar; r > 0.5 {
		t.Errorf("the naive variance should miss most of it: ratio %.2f", r)
	}
	if e := ar1Mean(0, []float64{0, 0, 0, 0}, 0); e.v != 0 || e.df != 3 {
		t.Errorf("constant series: %+v", e)
	}
}

func TestPoissonDraws(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, lambda := range []int64{1, 7, 29, 30, 500} {
		var s, s2 float64
		const n = 20000
		for range n {
			k := float64(poisson(rng, lambda))
			s, s2 = s+k, s2+k*k
		}
		m := s / n
		v := s2/n - m*m
		if math.Abs(m-float64(lambda)) > 0.05*float64(lambda)+0.05 || math.Abs(v-float64(lambda)) > 0.1*float64(lambda)+0.1 {
			t.Errorf("Poisson(%d): mean %.2f variance %.2f", lambda, m, v)
		}
	}
}

// The decide hint grows with the noise and is at least 1.5 times the current length.
func TestDecide(t *testing.T) {
	h := decide(-0.08, -0.2, 0.04, 0.05, 28, 0) // effect past the threshold, interval ±0.12
	if h.secs != 65 || h.code != "longer_run" || !strings.Contains(h.text, "65 s") {
		t.Errorf("decide: %+v", h)
	}
	if h := decide(0, -0.06, 0.06, 0.05, 28, 0); h.secs != 45 {
		t.Errorf("small overshoot: %+v", h)
	}
	if h := decide(0.049, -0.1, 0.2, 0.05, 28, 0); h.secs != 0 || h.code != "near_threshold" || !strings.Contains(h.text, "about the threshold") {
		t.Errorf("at the threshold: %+v", h)
	}
	if h := decide(0.2, -5, 5.4, 0.05, 28, 0); h.secs != 0 || h.code != "too_noisy" || !strings.Contains(h.text, "noise is too high") {
		t.Errorf("hopeless: %+v", h)
	}
	// half of the ±0.12 is run-to-run noise: only the rest shrinks with length, so more is needed
	if h := decide(-0.08, -0.2, 0.04, 0.05, 28, 0.06); h.code != "longer_run" || h.secs != 110 {
		t.Errorf("with run-to-run noise: %+v", h)
	}
	// run-to-run noise alone as wide as the effect: no length decides
	if h := decide(-0.08, -0.2, 0.04, 0.05, 28, 0.08); h.secs != 0 || h.code != "repeat_runs" || !strings.Contains(h.text, "repeat both runs") {
		t.Errorf("run-to-run noise too wide: %+v", h)
	}
}

// The run-to-run term follows the per-second noise of the noisier run: τ = c·s, with a
// percentile's one-second sampling noise taken out, and none for the error rate.
func TestRunNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	wild := noise{"wild", 0.2, 0.2, 0.3} // throughput and latency level wander by 20 % a second
	quiet := &prepared{r: syntheticRun(1, 120, 0, lowNoise, true, rng)}
	noisy := &prepared{r: syntheticRun(2, 120, 0, highNoise, true, rng)}
	wilder := &prepared{r: syntheticRun(3, 120, 0, wild, true, rng)}
	for _, d := range defs {
		c := runNoiseFactor[d.name]
		q, n, w := d.runNoise(quiet, quiet), d.runNoise(quiet, noisy), d.runNoise(wilder, quiet)
		if w != d.runNoise(quiet, wilder) {
			t.Errorf("%s: τ depends on which run is the baseline", d.name)
		}
		switch {
		case c == 0:
			if q != 0 || n != 0 || w != 0 {
				t.Errorf("%s: τ %g, %g, %g without a run-to-run term", d.name, q, n, w)
			}
		case d.name == "tps": // the per-second sd: 2 %, 5 %, 20 %
			if math.Abs(q/c-0.02) > 0.005 || math.Abs(n/c-0.05) > 0.01 || math.Abs(w/c-0.2) > 0.04 {
				t.Errorf("tps: s %.4f, %.4f, %.4f; want 0.02, 0.05, 0.2", q/c, n/c, w/c)
			}
		default:
			// the level wanders by 2 %, 5 %, 20 %; a percentile of 100 requests a second adds
			// sampling noise of 4–17 %, which must not count (its estimate is rough: within ±0.04)
			if q/c > 0.06 || n/c > 0.09 || math.Abs(w/c-0.2) > 0.05 {
				t.Errorf("%s: s %.4f, %.4f, %.4f; want about 0.02, 0.05, 0.2", d.name, q/c, n/c, w/c)
			}
		}
	}
}

// The cases: two 10 s runs of the same plan, the second 35 % slower in throughput, get
// verdicts and no load warning; CPU falling with the throughput is no improvement.
func TestTenSecondRunsWithAThroughputDrop(t *testing.T) {
	p := testPlan(t, `{"name":"a","requests":[{"url":"http://127.0.0.1:1/"}],"load":{"executor":"constant-vus","vus":10,"duration":"10s"}}`)
	mk := func(id int64, rps, latencyMs, dur float64, seed uint64) *Run {
		rng := rand.New(rand.NewPCG(seed, 1))
		r := NewRun(Meta{ID: id, Plan: p, Summary: &metrics.Summary{Executor: plan.ConstantVUs, DurationS: dur}})
		for sec := 1; sec <= 11; sec++ {
			h := metrics.NewHist()
			for range 300 {
				_ = h.RecordValue(int64(latencyMs * 1000 * math.Exp(0.3*rng.NormFloat64())))
			}
			x := rps * (1 + 0.02*rng.NormFloat64())
			r.AddSecond(metrics.Sample{ElapsedS: sec, RPS: x, Requests: int64(x), ActiveVUs: 10,
				Client: metrics.ClientSample{CPUPercent: x / 20}}, h)
		}
		return r
	}
	// the slower run drains a little longer after its 10 s: not a load difference
	res := mustCompare(t, []*Run{mk(1, 2000, 5, 10.1, 1), mk(2, 1300, 7.7, 11.4, 2)}, 0)
	v := verdicts(res, 1)
	if v["tps"] != Regression || v["p50"] != Regression || v["p95"] != Regression || v["error_rate"] != NoChange || v["cpu_percent"] != NotJudged {
		t.Errorf("verdicts %v", v)
	}
	for _, w := range res.Warnings {
		if w.Load {
			t.Errorf("load warning for the same load: %+v", w)
		}
	}
	tps := metricOf(res, "tps").Values[1]
	if math.Abs(*tps.Effect+0.35) > 0.02 || *tps.CILow > *tps.Effect || *tps.CIHigh < *tps.Effect || *tps.CIHigh > -0.05 {
		t.Errorf("tps effect %v [%v, %v]", *tps.Effect, *tps.CILow, *tps.CIHigh)
	}
}

// Closed models: fewer VUs achieved is a load difference; under an arrival rate it is not.
func TestConcurrencyDiffers(t *testing.T) {
	for _, c := range []struct {
		executor string
		want     bool
	}{{plan.ConstantVUs, true}, {plan.ConstantArrivalRate, false}} {
		mk := func(id int64, vus int64) *Run {
			r := NewRun(Meta{ID: id, Summary: &metrics.Summary{Executor: c.executor, DurationS: 20}})
			for sec := 1; sec <= 20; sec++ {
				r.AddSecond(metrics.Sample{ElapsedS: sec, RPS: 100, Requests: 100, ActiveVUs: vus}, nil)
			}
			return r
		}
		res := mustCompare(t, []*Run{mk(1, 10), mk(2, 6)}, 0)
		if got := hasWarning(res, "concurrency_differs", 2); got != c.want {
			t.Errorf("%s: concurrency_differs %v, want %v: %+v", c.executor, got, c.want, res.Warnings)
		}
	}
}

// A percentile interval whose lower end the widening pushes below −100 % keeps −100 % once the
// run-to-run term is added (no NaN reaches the JSON).
func TestRunNoiseKeepsWideIntervalsFinite(t *testing.T) {
	a := defaultSynth()
	a.seconds, a.recorded = 6, 2
	b := a
	b.scale = 0.02 // 50 times faster, from 2 requests a second: a ratio near −98 %, widely spread
	res := mustCompare(t, []*Run{makeRun(t, 1, a, 1), makeRun(t, 2, b, 2)}, 0)
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Metrics {
		if v := m.Values[1]; v.CILow != nil && (math.IsNaN(*v.CILow) || *v.CILow < -1 || *v.CIHigh < *v.CILow) {
			t.Errorf("%s: interval [%g, %g]", m.Metric, *v.CILow, *v.CIHigh)
		}
	}
}
