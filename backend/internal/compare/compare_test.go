package compare

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// shape of a synthetic run
type synth struct {
	seconds   int
	rps       float64 // mean requests per second
	rpsCV     float64 // per-second sd of the requests per second, relative (0.03 if 0)
	recorded  int     // latencies recorded per second
	medianMs  float64 // lognormal latency, σ = 0.4
	scale     float64 // multiplies every latency (1 if 0)
	errRate   float64
	cpu       float64
	rss       float64
	boundEach int // every boundEach-th second is generator-bound (0: none)
}

func defaultSynth() synth {
	return synth{seconds: 60, rps: 1000, recorded: 400, medianMs: 5, errRate: 0.01, cpu: 80, rss: 64 << 20}
}

// makeRun builds a run second by second, as the engine would have stored it.
func makeRun(t testing.TB, id int64, s synth, seed uint64) *Run {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	scale := s.scale
	if scale == 0 {
		scale = 1
	}
	sum := &metrics.Summary{Executor: plan.ConstantVUs, DurationS: float64(s.seconds), RPS: s.rps, ErrorRate: s.errRate}
	r := NewRun(Meta{ID: id, Summary: sum})
	for sec := 1; sec <= s.seconds; sec++ {
		h := metrics.NewHist()
		for range s.recorded {
			us := s.medianMs * 1000 * math.Exp(0.4*rng.NormFloat64()) * scale
			if err := h.RecordValue(int64(us)); err != nil {
				t.Fatal(err)
			}
		}
		cv := s.rpsCV
		if cv == 0 {
			cv = 0.03
		}
		rps := s.rps * (1 + cv*rng.NormFloat64())
		req := int64(math.Round(rps))
		errs := int64(0)
		for range req / 10 { // errors ~ Binomial(req, errRate), drawn in blocks of 10 requests
			if rng.Float64() < s.errRate*10 {
				errs++
			}
		}
		smp := metrics.Sample{ElapsedS: sec, RPS: rps, Requests: req, Errors: errs,
			Client: metrics.ClientSample{CPUPercent: s.cpu * (1 + 0.05*rng.NormFloat64()), RSSBytes: uint64(s.rss * (1 + 0.02*rng.NormFloat64()))}}
		if s.boundEach > 0 && sec%s.boundEach == 0 {
			smp.GeneratorBound = true
		}
		r.AddSecond(smp, h)
	}
	return r
}

func mustCompare(t testing.TB, runs []*Run, baseline int) *Result {
	t.Helper()
	res, err := Compare(runs, baseline, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func verdicts(res *Result, runIdx int) map[string]Verdict {
	out := map[string]Verdict{}
	for _, m := range res.Metrics {
		out[m.Metric] = m.Values[runIdx].Verdict
	}
	return out
}

func metricOf(res *Result, name string) Metric {
	for _, m := range res.Metrics {
		if m.Metric == name {
			return m
		}
	}
	return Metric{}
}

func TestIdenticalDistributionsNoChange(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		a := makeRun(t, 1, defaultSynth(), seed)
		b := makeRun(t, 2, defaultSynth(), seed+100)
		res := mustCompare(t, []*Run{a, b}, 0)
		for metric, v := range verdicts(res, 1) {
			want := []Verdict{NoChange}
			switch metric {
			case "max", "cpu_percent", "rss_bytes":
				want = []Verdict{NotJudged}
			case "p99", "error_rate": // their intervals are wider than the thresholds here
				want = []Verdict{NoChange, Inconclusive}
			case "tps", "p95": // with the run-to-run term (TPS: 3 % a second, c = 0.6) about as wide
				want = []Verdict{NoChange, Inconclusive}
			}
			if !slices.Contains(want, v) {
				m := metricOf(res, metric)
				js, _ := json.Marshal(m)
				t.Errorf("seed %d: %s: %s, want %v: %s", seed, metric, v, want, js)
			}
		}
		if v := verdicts(res, 0)["p95"]; v != Baseline {
			t.Errorf("baseline row verdict %s", v)
		}
	}
}

func TestP95ShiftOf20PercentIsRegression(t *testing.T) {
	a := makeRun(t, 1, defaultSynth(), 1)
	slow := defaultSynth()
	slow.scale = 1.2
	b := makeRun(t, 2, slow, 2)
	res := mustCompare(t, []*Run{a, b}, 0)
	v := verdicts(res, 1)
	for _, m := range []string{"p50", "p90", "p95", "p99"} {
		if v[m] != Regression {
			t.Errorf("%s: %s, want regression", m, v[m])
		}
	}
	if (v["tps"] != NoChange && v["tps"] != Inconclusive) || v["error_rate"] == Regression || v["error_rate"] == Improvement {
		t.Errorf("unchanged metrics: %v", v)
	}
	p95 := metricOf(res, "p95").Values[1]
	if p95.DeltaPct == nil || math.Abs(*p95.DeltaPct-20) > 3 || p95.CI == nil || p95.CI[0] <= 0 ||
		p95.Effect == nil || math.Abs(*p95.Effect*100-*p95.DeltaPct) > 1e-9 || *p95.CILow <= 0.05 || *p95.CIHigh >= 0.35 {
		t.Errorf("p95 row: %+v ci %v", p95, p95.CI)
	}
	if p95.N != 58 {
		t.Errorf("p95 used %d seconds, want 58 (60 minus first and last)", p95.N)
	}
	// The other way round it is an improvement.
	res = mustCompare(t, []*Run{b, a}, 0)
	if v := verdicts(res, 1)["p95"]; v != Improvement {
		t.Errorf("faster run: p95 %s, want improvement", v)
	}
}

func TestFiveSecondsInconclusive(t *testing.T) {
	short := defaultSynth()
	short.seconds = 5
	slow := short
	slow.scale = 1.5
	slow.rps = 500
	res := mustCompare(t, []*Run{makeRun(t, 1, short, 1), makeRun(t, 2, slow, 2)}, 0)
	for metric, v := range verdicts(res, 1) {
		if v != Inconclusive && v != NotJudged {
			t.Errorf("%s: %s, want inconclusive", metric, v)
		}
	}
	if m := metricOf(res, "tps").Values[1]; m.Reason == "" || m.Delta == nil || *m.Delta > -400 || m.DecideSeconds != 30 {
		t.Errorf("tps row: %+v", m)
	}
	if !hasWarning(res, "few_seconds", 1) || !hasWarning(res, "few_seconds", 2) {
		t.Errorf("warnings: %+v", res.Warnings)
	}
}

func TestTPSDropIsRegression(t *testing.T) {
	low := defaultSynth()
	low.rps = 800
	res := mustCompare(t, []*Run{makeRun(t, 1, defaultSynth(), 1), makeRun(t, 2, low, 2)}, 0)
	tps := metricOf(res, "tps")
	v := tps.Values[1]
	if v.Verdict != Regression || v.PValue == nil || *v.PValue >= 0.01 || !tps.HigherIsBetter || *v.CIHigh >= -0.05 {
		t.Errorf("tps: %+v p %v", v, v.PValue)
	}
	if v.DeltaPct == nil || math.Abs(*v.DeltaPct+20) > 2 {
		t.Errorf("tps delta %v", v.DeltaPct)
	}
	if got := verdicts(res, 1)["p95"]; got != NoChange && got != Inconclusive {
		t.Errorf("p95 %s", got)
	}
	if !res.AnyRegression() {
		t.Error("AnyRegression false")
	}
}

// A change that is statistically clear but under the practical floor is no_change. The runs'
// throughput varies 0.5 % a second, so that its run-to-run term (0.3 %) leaves a 2 % change clear.
func TestSmallShiftUnderFloorIsNoChange(t *testing.T) {
	a := defaultSynth()
	a.seconds, a.recorded, a.rpsCV = 200, 600, 0.005
	b := a
	b.scale = 1.02
	b.rps = 1020
	res := mustCompare(t, []*Run{makeRun(t, 1, a, 1), makeRun(t, 2, b, 2)}, 0)
	v := verdicts(res, 1)
	if v["p50"] != NoChange || v["tps"] != NoChange {
		t.Errorf("2%% shifts: %v", v)
	}
	if p := metricOf(res, "tps").Values[1].PValue; p == nil || *p >= 0.05 {
		t.Errorf("the 2%% TPS shift should be significant (p %v) yet under the threshold", p)
	}
	// With a threshold of 1 % the same shifts are big enough to matter (p50: or within its
	// run-to-run term, estimated from 600 requests a second).
	res, err := Compare([]*Run{makeRun(t, 1, a, 1), makeRun(t, 2, b, 2)}, 0, Options{Threshold: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if v := verdicts(res, 1); (v["p50"] != Regression && v["p50"] != Inconclusive) || v["tps"] != Improvement || res.Threshold != 0.01 ||
		*metricOf(res, "tps").Threshold != 0.01 || *metricOf(res, "tps").FloorPct != 1 {
		t.Errorf("2%% shifts at a 1%% threshold: %v", v)
	}
}

func TestErrorRateAndClientMetrics(t *testing.T) {
	bad := defaultSynth()
	bad.errRate = 0.05
	bad.cpu = 120
	bad.rss = 32 << 20
	res := mustCompare(t, []*Run{makeRun(t, 1, defaultSynth(), 1), makeRun(t, 2, bad, 2)}, 0)
	v := verdicts(res, 1)
	if v["error_rate"] != Regression || v["cpu_percent"] != NotJudged || v["rss_bytes"] != NotJudged {
		t.Errorf("verdicts %v", v)
	}
	if m := metricOf(res, "cpu_percent"); !m.FollowsLoad || m.Threshold != nil || m.Values[1].Effect != nil {
		t.Errorf("cpu row: %+v", m)
	}
	// Errors at 0 % against 0 % are no change.
	clean := defaultSynth()
	clean.errRate = 0
	res = mustCompare(t, []*Run{makeRun(t, 1, clean, 1), makeRun(t, 2, clean, 2)}, 0)
	if e := metricOf(res, "error_rate").Values[1]; e.Verdict != NoChange || *e.Effect != 0 || *e.CILow != 0 || *e.CIHigh != 0 {
		t.Errorf("0 %% vs 0 %% errors: %+v", e)
	}
}

// The first and last second and generator-bound seconds do not count: wild values there change
// nothing.
func TestEdgeAndGeneratorBoundSecondsLeftOut(t *testing.T) {
	s := defaultSynth()
	a := makeRun(t, 1, s, 1)
	rng := rand.New(rand.NewPCG(7, 7))
	b := NewRun(Meta{ID: 2})
	for sec := 1; sec <= 64; sec++ {
		h := metrics.NewHist()
		smp := metrics.Sample{ElapsedS: sec, Client: metrics.ClientSample{CPUPercent: 80, RSSBytes: 64 << 20}}
		wild := sec == 1 || sec == 64 || sec%10 == 0
		smp.GeneratorBound = sec%10 == 0
		for range 400 {
			us := 5000 * math.Exp(0.4*rng.NormFloat64())
			if wild {
				us *= 50
			}
			_ = h.RecordValue(int64(us))
		}
		smp.RPS = 1000 * (1 + 0.03*rng.NormFloat64())
		if wild {
			smp.RPS = 10
		}
		smp.Requests = int64(smp.RPS)
		smp.Errors = smp.Requests / 100
		b.AddSecond(smp, h)
	}
	res := mustCompare(t, []*Run{a, b}, 0)
	if got := res.Seconds[1]; got.Stored != 64 || got.GeneratorBound != 6 || got.Usable != 56 {
		t.Errorf("seconds: %+v", got)
	}
	v := verdicts(res, 1)
	for _, m := range []string{"tps", "p50", "p95", "p99", "error_rate"} {
		if v[m] != NoChange && v[m] != Inconclusive {
			t.Errorf("%s: %s", m, v[m])
		}
	}
	if !hasWarning(res, "generator_bound", 2) {
		t.Errorf("no generator_bound warning: %+v", res.Warnings)
	}
}

func hasWarning(res *Result, code string, runID int64) bool {
	for _, w := range res.Warnings {
		if w.Code == code && w.RunID == runID {
			return true
		}
	}
	return false
}

func testPlan(t *testing.T, js string) *plan.Plan {
	t.Helper()
	p, err := plan.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestShapeWarnings(t *testing.T) {
	base := testPlan(t, `{"name":"a","requests":[{"url":"http://127.0.0.1:1/"}],"load":{"executor":"constant-vus","vus":10,"duration":"60s"}}`)
	moreVUs := testPlan(t, `{"name":"a","requests":[{"url":"http://127.0.0.1:1/"}],"load":{"executor":"constant-vus","vus":20,"duration":"60s"}}`)
	open := testPlan(t, `{"name":"a","requests":[{"url":"http://127.0.0.1:1/"}],"load":{"executor":"constant-arrival-rate","rate":100,"duration":"60s","pre_allocated_vus":10}}`)
	otherReq := testPlan(t, `{"name":"a","requests":[{"url":"http://127.0.0.1:1/"},{"method":"POST","url":"http://127.0.0.1:1/x"}],"load":{"executor":"constant-vus","vus":10,"duration":"60s"}}`)
	run := func(id int64, p *plan.Plan, dur float64) *Run {
		r := makeRun(t, id, defaultSynth(), uint64(id))
		r.Plan = p
		r.Summary.DurationS = dur
		return r
	}
	same := run(2, base, 61)
	res := mustCompare(t, []*Run{run(1, base, 60), same}, 0)
	if len(res.Warnings) != 0 {
		t.Errorf("same shape: %+v", res.Warnings)
	}
	res = mustCompare(t, []*Run{run(1, base, 60), run(2, moreVUs, 60), run(3, open, 60), run(4, otherReq, 60), run(5, base, 45)}, 0)
	for _, w := range []struct {
		code string
		run  int64
		text string
	}{
		{"load_differs", 2, "vus 20 (baseline 10)"},
		{"executor_differs", 3, "constant-arrival-rate"},
		{"requests_differ", 4, "POST http://127.0.0.1:1/x"},
		{"duration_differs", 5, "stopped before its planned end"},
	} {
		found := false
		for _, got := range res.Warnings {
			if got.Code == w.code && got.RunID == w.run && strings.Contains(got.Message, w.text) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s warning for run %d mentioning %q in %+v", w.code, w.run, w.text, res.Warnings)
		}
	}
	if len(res.Warnings) != 4 {
		t.Errorf("%d warnings, want 4: %+v", len(res.Warnings), res.Warnings)
	}
}

func TestSummaryOnly(t *testing.T) {
	a := FromSummary(1, "a.json", &metrics.Summary{RPS: 1000, ErrorRate: 0.01, Executor: "constant-vus", DurationS: 30,
		Latency: metrics.Latency{P50: 1, P90: 2, P95: 3, P99: 4, Max: 10}, ByName: map[string]metrics.NameStats{"home": {}}})
	b := FromSummary(2, "b.json", &metrics.Summary{RPS: 500, ErrorRate: 0.02, Executor: "constant-vus", DurationS: 30,
		Latency: metrics.Latency{P50: 2, P90: 2, P95: 6, P99: 4, Max: 10}, ByName: map[string]metrics.NameStats{"login": {}}})
	res := mustCompare(t, []*Run{a, b}, 0)
	for metric, v := range verdicts(res, 1) {
		if v != Inconclusive && v != NotJudged {
			t.Errorf("%s: %s", metric, v)
		}
	}
	p95 := metricOf(res, "p95").Values[1]
	if *p95.Value != 6 || *p95.Delta != 3 || *p95.DeltaPct != 100 || !strings.Contains(p95.Reason, "summary only") {
		t.Errorf("p95: %+v", p95)
	}
	if !hasWarning(res, "summary_only", 1) || !hasWarning(res, "requests_differ", 2) {
		t.Errorf("warnings %+v", res.Warnings)
	}
	if res.AnyRegression() {
		t.Error("a summary-only comparison claims a regression")
	}
}

func TestCompareArguments(t *testing.T) {
	r := makeRun(t, 1, synth{seconds: 3, recorded: 1, medianMs: 1, rps: 1}, 1)
	for name, tc := range map[string]struct {
		runs []*Run
		base int
	}{
		"one run":      {[]*Run{r}, 0},
		"six runs":     {[]*Run{r, r, r, r, r, r}, 0},
		"bad baseline": {[]*Run{r, r}, 2},
		"nil run":      {[]*Run{r, nil}, 0},
	} {
		if _, err := Compare(tc.runs, tc.base, Options{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestDeterministic(t *testing.T) {
	slow := defaultSynth()
	slow.scale = 1.05
	runs := []*Run{makeRun(t, 1, defaultSynth(), 1), makeRun(t, 2, slow, 2), makeRun(t, 3, defaultSynth(), 3)}
	a, b := mustCompare(t, runs, 0), mustCompare(t, runs, 0)
	if !reflect.DeepEqual(a, b) {
		t.Error("two comparisons of the same runs differ")
	}
	if _, err := json.Marshal(a); err != nil { // no NaN or Inf may leak into JSON
		t.Error(err)
	}
}

// A long run is resampled in blocks; the verdicts still come out, in reasonable time.
func TestLongRuns(t *testing.T) {
	long := defaultSynth()
	long.seconds, long.recorded = 800, 30
	slow := long
	slow.scale = 1.3
	start := time.Now()
	res := mustCompare(t, []*Run{makeRun(t, 1, long, 1), makeRun(t, 2, slow, 2)}, 0)
	if v := verdicts(res, 1); v["p95"] != Regression || (v["tps"] != NoChange && v["tps"] != Inconclusive) {
		t.Errorf("verdicts %v", v)
	}
	t.Logf("compare of two %d-second runs: %s", long.seconds, time.Since(start))
}

func BenchmarkCompareHourLongRuns(b *testing.B) {
	long := defaultSynth()
	long.seconds, long.recorded = 3600, 100
	runs := []*Run{makeRun(b, 1, long, 1), makeRun(b, 2, long, 2)}
	for b.Loop() {
		if _, err := Compare(runs, 0, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestMannWhitney(t *testing.T) {
	// No ties: R's wilcox.test(1:5, 6:10, exact=FALSE) gives W = 0, p = 0.01219.
	u, z, p := MannWhitney([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10})
	if u != 0 || z >= 0 || math.Abs(p-0.01219) > 5e-5 {
		t.Errorf("U %v z %v p %v", u, z, p)
	}
	if _, _, p := MannWhitney([]float64{3, 3, 3}, []float64{3, 3}); p != 1 {
		t.Errorf("all tied: p %v", p)
	}
	if _, _, p := MannWhitney(nil, []float64{1}); p != 1 {
		t.Errorf("empty: p %v", p)
	}
	// With ties: U equals the pair count, and the tie-corrected variance equals the exact
	// variance of U over every split of the pooled values (enumerated).
	x := []float64{1, 2, 2, 3, 5}
	y := []float64{2, 3, 3, 4, 4}
	u, z, _ = MannWhitney(x, y)
	if want := pairU(x, y); u != want {
		t.Errorf("U %v, want %v", u, want)
	}
	pooled := append(slices.Clone(x), y...)
	var us []float64
	var rec func(start int, pick []int)
	rec = func(start int, pick []int) {
		if len(pick) == len(x) {
			var a, b []float64
			for i, v := range pooled {
				if slices.Contains(pick, i) {
					a = append(a, v)
				} else {
					b = append(b, v)
				}
			}
			us = append(us, pairU(a, b))
			return
		}
		for i := start; i < len(pooled); i++ {
			rec(i+1, append(slices.Clone(pick), i))
		}
	}
	rec(0, nil)
	mu := mean(us)
	var v float64
	for _, x := range us {
		v += (x - mu) * (x - mu)
	}
	v /= float64(len(us))
	d := u - mu
	if d > 0.5 {
		d -= 0.5
	} else if d < -0.5 {
		d += 0.5
	}
	if wantZ := d / math.Sqrt(v); math.Abs(z-wantZ) > 1e-9 {
		t.Errorf("z %v, want %v (exact permutation variance %v)", z, wantZ, v)
	}
}

func pairU(x, y []float64) float64 {
	var u float64
	for _, a := range x {
		for _, b := range y {
			switch {
			case a > b:
				u++
			case a == b:
				u += 0.5
			}
		}
	}
	return u
}

func TestFineValueMatchesLibrary(t *testing.T) {
	for _, v := range []int64{1, 2, 500, 2047, 2048, 2049, 4095, 4096, 12345, 1_000_000, 123_456_789, metrics.HighestUs} {
		h := metrics.NewHist()
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
		for i, c := range h.Export().Counts {
			if c == 0 {
				continue
			}
			lo, w := fineValue(i)
			if v < lo || v >= lo+w {
				t.Errorf("value %d in slot %d, which fineValue says holds [%d, %d)", v, i, lo, lo+w)
			}
		}
	}
	// The coarse grid stays within 0.5 % of the values it stands for.
	initCoarse()
	for _, us := range []float64{150, 999, 5000, 77777, 3e6} {
		if got := coarseMs(coarseIndex(us)) * 1000; math.Abs(got-us)/us > 0.006 {
			t.Errorf("%v µs → %v", us, got)
		}
	}
}

func TestLTTB(t *testing.T) {
	n := 1000
	x, y := make([]float64, n), make([]float64, n)
	for i := range n {
		x[i], y[i] = float64(i), math.Sin(float64(i)/50)
	}
	y[333] = 50 // a spike must survive
	idx := LTTB(x, y, 100)
	if len(idx) != 100 || idx[0] != 0 || idx[99] != n-1 || !slices.IsSorted(idx) || !slices.Contains(idx, 333) {
		t.Errorf("LTTB: %d points, first %d last %d, spike kept %v", len(idx), idx[0], idx[len(idx)-1], slices.Contains(idx, 333))
	}
	if got := LTTB(x[:10], y[:10], 50); len(got) != 10 {
		t.Errorf("threshold above length: %v", got)
	}
	if got := LTTB(x, y, 2); !slices.Equal(got, []int{0, n - 1}) {
		t.Errorf("threshold 2: %v", got)
	}
	y2 := make([]float64, n)
	y2[777] = -20
	for _, pts := range []int{3, 4, 10, 99, 500} {
		d := Downsample(x, [][]float64{y, y2}, pts)
		if len(d) > pts || d[0] != 0 || d[len(d)-1] != n-1 || !slices.IsSorted(d) {
			t.Errorf("Downsample(%d): %d points", pts, len(d))
		}
		if pts >= 10 && (!slices.Contains(d, 333) || !slices.Contains(d, 777)) {
			t.Errorf("Downsample(%d) lost a spike", pts)
		}
		if pts >= 10 && len(d) < pts*3/4 {
			t.Errorf("Downsample(%d) used only %d points", pts, len(d))
		}
	}
	if d := Downsample(x[:5], [][]float64{y[:5]}, 10); len(d) != 5 {
		t.Errorf("short series: %v", d)
	}
}

func TestFromStored(t *testing.T) {
	h := metrics.NewHist()
	_ = h.RecordValue(1500)
	enc, _ := metrics.EncodeHist(h)
	var secs []StoredSecond
	for i := 1; i <= 12; i++ {
		data, _ := json.Marshal(metrics.Sample{ElapsedS: i, RPS: 100, Requests: 100})
		secs = append(secs, StoredSecond{Data: data, Hist: []byte(enc)})
	}
	r, err := FromStored(7, []byte(`{"rps":99,"executor":"constant-vus"}`), []byte(`{"name":"x","load":{"executor":"constant-vus","vus":3}}`), secs)
	if err != nil {
		t.Fatal(err)
	}
	if r.Usable() != 10 || r.Seconds() != 12 || r.Summary.RPS != 99 || r.Plan.Load.VUs != 3 {
		t.Errorf("run: usable %d seconds %d %+v", r.Usable(), r.Seconds(), r.Meta)
	}
	if _, err := FromStored(7, nil, nil, []StoredSecond{{Data: []byte(`{}`), Hist: []byte("!!")}}); err == nil {
		t.Error("a bad histogram was accepted")
	}
	if _, err := FromStored(7, []byte(`[`), nil, nil); err == nil {
		t.Error("a bad summary was accepted")
	}
}

// A run over agents that lost one: its seconds with a missing share measured less than the plan's
// load, so they are left out and named, never read as a throughput drop or "no change".
func TestMissingShareSecondsLeftOut(t *testing.T) {
	s := defaultSynth()
	a := makeRun(t, 1, s, 1)
	rng := rand.New(rand.NewPCG(3, 3))
	b := NewRun(Meta{ID: 2, Summary: &metrics.Summary{Executor: plan.ConstantVUs, Degraded: true, LostAgents: []string{"gen-2"}}})
	for sec := 1; sec <= 60; sec++ {
		h := metrics.NewHist()
		for range 400 {
			_ = h.RecordValue(int64(5000 * math.Exp(0.4*rng.NormFloat64())))
		}
		smp := metrics.Sample{ElapsedS: sec, RPS: 1000 * (1 + 0.03*rng.NormFloat64()), Client: metrics.ClientSample{CPUPercent: 80, RSSBytes: 64 << 20}}
		if sec > 30 { // gen-2 (half the load) lost after second 30
			smp.RPS /= 2
			smp.MissingShare, smp.MissingAgents = 0.5, []string{"gen-2"}
		}
		smp.Requests = int64(smp.RPS)
		smp.Errors = smp.Requests / 100
		b.AddSecond(smp, h)
	}
	res := mustCompare(t, []*Run{a, b}, 0)
	if got := res.Seconds[1]; got.Stored != 60 || got.MissingShare != 29 || got.Usable != 29 { // seconds 1 and 60 are edges
		t.Errorf("seconds: %+v, want 60 stored, 29 with a missing share (31–59), 29 usable (2–30)", got)
	}
	if v := verdicts(res, 1)["tps"]; v == Regression {
		t.Errorf("tps: %s — the lost agent's half of the load read as a throughput drop", v)
	}
	if !hasWarning(res, "missing_share", 2) {
		t.Errorf("no missing_share warning: %+v", res.Warnings)
	}
	for _, w := range res.Warnings {
		if w.Code == "missing_share" && !strings.Contains(w.Message, "gen-2") {
			t.Errorf("warning does not name the lost agent: %q", w.Message)
		}
	}
}
