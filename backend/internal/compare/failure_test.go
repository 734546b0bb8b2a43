package compare

import (
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// failingRun is a run of n seconds in which every second has active VUs and `requests`
// attempts, every one of them failed (requests 0: the target hangs, nothing completes). With
// zeroHist each second records latencies of 0 ms (a refused connection timed by the client).
func failingRun(t *testing.T, id int64, n int, requests int64, zeroHist bool) *Run {
	t.Helper()
	r := NewRun(Meta{ID: id, Summary: &metrics.Summary{Requests: requests * int64(n), Errors: requests * int64(n),
		RPS: float64(requests), ErrorRate: 1, DurationS: float64(n)}})
	for sec := 1; sec <= n; sec++ {
		var h = metrics.NewHist()
		if zeroHist {
			for range requests {
				if err := h.RecordValue(0); err != nil {
					t.Fatal(err)
				}
			}
		}
		r.AddSecond(metrics.Sample{ElapsedS: sec, RPS: float64(requests), Requests: requests, Errors: requests, ActiveVUs: 50}, h)
	}
	return r
}

func checkNoLongerRunHint(t *testing.T, res *Result) {
	t.Helper()
	for _, m := range res.Metrics {
		if v := m.Values[1]; v.DecideCode == "longer_run" || v.DecideSeconds != 0 {
			t.Errorf("%s: suggests a longer run (%s, %d s) where length cannot decide: %+v", m.Metric, v.DecideHint, v.DecideSeconds, v)
		}
	}
}

func checkLatencyUnknown(t *testing.T, res *Result) {
	t.Helper()
	for _, name := range []string{"p50", "p90", "p95", "p99", "max"} {
		v := metricOf(res, name).Values[1]
		if v.Value != nil || v.Delta != nil || v.DeltaPct != nil || v.Verdict != NotJudged || v.Reason == "" {
			t.Errorf("%s of a run without a successful response: %+v, want null values and no verdict", name, v)
		}
	}
}

// A 14 s baseline against a run whose target hangs: VUs are active every second, nothing
// completes. The seconds are data (TPS 0): a TPS regression, not "too few seconds".
func TestCompareHangingTargetIsTPSRegression(t *testing.T) {
	s := defaultSynth()
	s.seconds, s.rps = 14, 30000
	res := mustCompare(t, []*Run{makeRun(t, 1, s, 1), failingRun(t, 2, 14, 0, false)}, 0)
	tps := metricOf(res, "tps").Values[1]
	if tps.Verdict != Regression || tps.Effect == nil || *tps.Effect != -1 || *tps.DeltaPct != -100 || tps.PValue == nil || *tps.PValue >= 0.05 {
		t.Errorf("tps: %+v, want a −100 %% regression", tps)
	}
	if !res.AnyRegression() {
		t.Error("no regression: the CI gate would pass a target that stopped answering")
	}
	if v := metricOf(res, "error_rate").Values[1]; v.Verdict == NoChange || v.Verdict == Improvement {
		t.Errorf("error rate without a completed request: %+v", v)
	}
	checkNoLongerRunHint(t, res)
	checkLatencyUnknown(t, res)
	if !hasWarning(res, "no_success", 2) || hasWarning(res, "no_success", 1) {
		t.Errorf("warnings %+v, want no_success for run 2 only", res.Warnings)
	}
	for _, w := range res.Warnings {
		if w.Code == "no_success" && w.Load {
			t.Errorf("no_success is flagged as a load difference: %+v", w)
		}
	}
}

// A dead target (every attempt refused, fast) against a good run: no improvement anywhere, TPS
// (successful responses per second) a regression, latency unknown.
func TestCompareDeadTargetIsNoImprovement(t *testing.T) {
	s := defaultSynth()
	s.seconds = 30
	for _, zeroHist := range []bool{false, true} {
		res := mustCompare(t, []*Run{makeRun(t, 1, s, 1), failingRun(t, 2, 30, 1266, zeroHist)}, 0)
		for _, m := range res.Metrics {
			if m.Values[1].Verdict == Improvement {
				t.Errorf("zeroHist %v: %s called an improvement: %+v", zeroHist, m.Metric, m.Values[1])
			}
		}
		if v := verdicts(res, 1); v["tps"] != Regression || v["error_rate"] != Regression {
			t.Errorf("zeroHist %v: verdicts %v, want tps and error_rate regressions", zeroHist, v)
		}
		checkLatencyUnknown(t, res)
		if !hasWarning(res, "no_success", 2) {
			t.Errorf("zeroHist %v: warnings %+v", zeroHist, res.Warnings)
		}
	}
}

// A run that serves more successful responses, faster, while its error rate rose from 1 % to
// 10 %: the TPS and latency improvements are withheld (inconclusive, errors_rose).
func TestCompareImprovementWithheldWhenErrorsRose(t *testing.T) {
	s := defaultSynth()
	fast := s
	fast.rps, fast.scale, fast.errRate = 1500, 0.5, 0.10
	res := mustCompare(t, []*Run{makeRun(t, 1, s, 1), makeRun(t, 2, fast, 2)}, 0)
	if v := metricOf(res, "error_rate").Values[1]; v.Verdict != Regression {
		t.Fatalf("error rate: %+v", v)
	}
	for _, name := range []string{"tps", "p50", "p90", "p95"} {
		v := metricOf(res, name).Values[1]
		if v.Verdict != Inconclusive || v.DecideCode != "errors_rose" || v.DecideHint == "" || v.Effect == nil {
			t.Errorf("%s: %+v, want an improvement withheld as inconclusive/errors_rose", name, v)
		}
	}
	// The same run without the errors is an improvement: the rule is what withheld it.
	fast.errRate = s.errRate
	if v := verdicts(mustCompare(t, []*Run{makeRun(t, 1, s, 1), makeRun(t, 2, fast, 2)}, 0), 1); v["tps"] != Improvement || v["p50"] != Improvement {
		t.Errorf("without the errors: %v", v)
	}
}
