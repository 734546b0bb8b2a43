package engine

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

func mustPlan(t testing.TB, js string) *plan.Plan {
	t.Helper()
	p, err := plan.Parse([]byte(js))
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return p
}

func run(t *testing.T, p *plan.Plan) (*metrics.Summary, []metrics.Sample) {
	t.Helper()
	var samples []metrics.Sample
	e, err := newEngine(p, Options{OnSample: func(s metrics.Sample) { samples = append(samples, s) }})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sum, samples
}

func constantVUs(url string, vus int, dur string) string {
	return fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],"load":{"executor":"constant-vus","vus":%d,"duration":%q},"http":{"timeout":"2s"}}`, url, vus, dur)
}

func checkOrdered(t *testing.T, l metrics.Latency) {
	t.Helper()
	v := []float64{l.Min, l.P50, l.P75, l.P90, l.P95, l.P99, l.P99_9, l.Max}
	for i := 1; i < len(v); i++ {
		if v[i] < v[i-1] {
			t.Errorf("percentiles out of order: %+v", l)
		}
	}
}

func TestFixedDelayServerGivesItsLatency(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte("ok"))
	})
	probe := testutil.StartSchedProbe(t)
	sum, samples := run(t, mustPlan(t, constantVUs(tg.URL, 10, "3s")))
	d := probe.Stop() // the target's 20 ms sleep ends as late as a wakeup
	if hi := 23 + ms(d.P99); sum.Latency.P50 < 20 || sum.Latency.P50 > hi {
		t.Errorf("p50 = %.3f ms, want 20–%.4g (%v)", sum.Latency.P50, hi, d)
	}
	if sum.Errors != 0 || sum.Requests == 0 {
		t.Errorf("requests %d errors %d %v", sum.Requests, sum.Errors, sum.ErrorKinds)
	}
	if got := sum.Requests + sum.Interrupted; got != tg.Requests() {
		t.Errorf("volley counted %d (+%d interrupted), target saw %d", sum.Requests, sum.Interrupted, tg.Requests())
	}
	var perSecond int64
	for _, s := range samples {
		perSecond += s.Requests
	}
	if perSecond != sum.Requests {
		t.Errorf("samples add up to %d, summary says %d", perSecond, sum.Requests)
	}
	// A sample per second; a collector tick delayed past the next one emits the seconds it passed
	// (interval_s 0) before its reading, whose interval_s spans them: the intervals cover the run.
	var covered float64
	for _, s := range samples {
		covered += s.IntervalS
	}
	if len(samples) == 0 || covered < 2.95 || covered > 3+ms(d.Max)/1000+0.05 {
		t.Errorf("%d samples cover %.3f s of a 3 s run", len(samples), covered)
	}
	checkOrdered(t, sum.Latency)
	if sum.StatusCodes["200"] != sum.Requests {
		t.Errorf("status codes %v", sum.StatusCodes)
	}
	if sum.BytesIn <= sum.BodyBytesIn || sum.BodyBytesIn != 2*sum.Requests || sum.BytesOut == 0 {
		t.Errorf("bytes in %d body %d out %d", sum.BytesIn, sum.BodyBytesIn, sum.BytesOut)
	}
	if tg.Conns() != 10 {
		t.Errorf("target saw %d connections for 10 keep-alive VUs", tg.Conns())
	}
}

func TestConnectionRefusedIsCountedAsSuch(t *testing.T) {
	addr := testutil.ClosedPort(t)
	sum, _ := run(t, mustPlan(t, constantVUs("http://"+addr+"/", 4, "1s")))
	if sum.Requests == 0 || sum.ErrorKinds["connect_refused"] != sum.Requests || len(sum.ErrorKinds) != 1 {
		t.Errorf("requests %d kinds %v", sum.Requests, sum.ErrorKinds)
	}
	if sum.Successes != 0 || sum.Latency.Max != 0 {
		t.Errorf("refused requests have no latency: %+v", sum.Latency)
	}
}

func TestServerErrorsAreStatus5xx(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	sum, _ := run(t, mustPlan(t, constantVUs(tg.URL, 2, "1s")))
	if sum.Requests == 0 || sum.ErrorKinds["status_5xx"] != sum.Requests || sum.StatusCodes["500"] != sum.Requests {
		t.Errorf("requests %d kinds %v codes %v", sum.Requests, sum.ErrorKinds, sum.StatusCodes)
	}
	if sum.Latency.P50 <= 0 {
		t.Errorf("5xx responses still have latency: %+v", sum.Latency)
	}
	if sum.Requests+sum.Interrupted != tg.Requests() {
		t.Errorf("volley %d target %d", sum.Requests, tg.Requests())
	}
}

func TestRunEndsOnTimeAgainstSlowTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s run")
	}
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(700 * time.Millisecond)
	})
	js := fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],"load":{"vus":5,"duration":"10s"},"http":{"timeout":"2s"}}`, tg.URL)
	probe := testutil.StartSchedProbe(t)
	start := time.Now()
	sum, _ := run(t, mustPlan(t, js))
	took := time.Since(start)
	if limit := 12*time.Second + probe.Stop().Slack(testutil.StopChain); took > limit {
		t.Errorf("10 s run with a 2 s timeout took %v (limit %v)", took, limit)
	}
	if took < 10*time.Second {
		t.Errorf("run stopped early: %v", took)
	}
	if sum.Requests+sum.Interrupted != tg.Requests() {
		t.Errorf("volley %d+%d target %d", sum.Requests, sum.Interrupted, tg.Requests())
	}
}

func TestGraceCutsOffAndCountsInterrupted(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		select { // answers after the 10 s timeout, unless the request is cut off
		case <-time.After(20 * time.Second):
		case <-r.Context().Done():
		}
	})
	js := fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],"load":{"vus":3,"duration":"1s","graceful_stop":"500ms"},"http":{"timeout":"10s"}}`, tg.URL)
	start := time.Now()
	sum, _ := run(t, mustPlan(t, js))
	// 1 s + 500 ms of grace on a quiet machine; a run that waited for its requests instead would
	// see them time out at 10 s (and count 3 errors, not 3 interrupted).
	took := time.Since(start)
	t.Logf("returned after %v", took)
	if took >= 10*time.Second {
		t.Errorf("grace of 500ms not honoured: %v", took)
	}
	if sum.Interrupted != 3 || sum.Requests != 0 || sum.Errors != 0 {
		t.Errorf("want 3 interrupted, 0 requests; got %+v", sum)
	}
}

func TestStopByContext(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	p := mustPlan(t, constantVUs(tg.URL, 2, "1m"))
	e, err := newEngine(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	probe := testutil.StartSchedProbe(t)
	start := time.Now()
	sum, _ := e.Run(ctx)
	if took, limit := time.Since(start), 3*time.Second+probe.Stop().Slack(testutil.StopChain); took > limit {
		t.Errorf("stop took %v (limit %v)", took, limit)
	}
	if sum.Requests == 0 || sum.Requests+sum.Interrupted != tg.Requests() {
		t.Errorf("volley %d target %d", sum.Requests, tg.Requests())
	}
}

func TestPerVUIterations(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	js := fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],"load":{"executor":"per-vu-iterations","vus":3,"iterations":7}}`, tg.URL)
	sum, _ := run(t, mustPlan(t, js))
	if sum.Requests != 21 || tg.Requests() != 21 {
		t.Errorf("want 21, volley %d target %d", sum.Requests, tg.Requests())
	}
}

func TestThresholdsEvaluated(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { time.Sleep(5 * time.Millisecond) })
	js := fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],"load":{"executor":"per-vu-iterations","vus":2,"iterations":20},
		"thresholds":["p(95)<1s","p(50)<1ms","error_rate<1%%"]}`, tg.URL)
	sum, _ := run(t, mustPlan(t, js))
	ok := map[string]bool{}
	for _, th := range sum.Thresholds {
		ok[th.Expr] = th.OK
	}
	if !ok["p(95)<1s"] || ok["p(50)<1ms"] || !ok["error_rate<1%"] || sum.ThresholdsOK() {
		t.Errorf("thresholds %+v", sum.Thresholds)
	}
}

// The last sample covers the last second plus the drain, not a sliver of drain with an
// extrapolated rate; seconds are whole and add up; each shows the VUs that ran in it.
func TestSamplesCoverWholeSeconds(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { time.Sleep(2 * time.Millisecond) })
	sum, samples, d := runSamplesProbed(t, mustPlan(t, constantVUs(tg.URL, 4, "3s")))
	// One sample per second, numbered 1, 2, 3. A tick that ends past the next one (on a busy
	// machine the first tick's read of the recorder, the first touch of every shard's histograms,
	// was measured at 1.1-2.7 s with wakeups under 0.1 s late) emits the seconds it passed
	// without a reading of their own (interval 0), then its reading, whose interval spans them.
	empty, span := 0, 0.0
	for _, s := range samples {
		span += s.IntervalS
		if s.IntervalS == 0 {
			empty++
		}
	}
	if empty > 0 {
		t.Logf("%d of %d seconds without a reading of their own (%v)", empty, len(samples), d.probe)
	}
	if len(samples) != 3 || span < 2.9 || span > 3.3+d.worst/1000 {
		t.Fatalf("%d samples over %.3f s for a 3 s run: %+v", len(samples), span, samples)
	}
	// The readings follow each other from the start (the first one's beginning): second k's
	// ends within the k-th second after the start, an empty second at its end. The last one
	// holds the drain, and the one before it what came before the last, however late it was read.
	var start int64
	for _, s := range samples {
		if s.IntervalS > 0 {
			start = s.T - int64(math.Round(s.IntervalS*1000))
			break
		}
	}
	for i, s := range samples {
		at, k := s.T-start, int64(s.ElapsedS)
		end := at >= k*1000-2 && at <= (k+1)*1000+2
		if s.IntervalS == 0 {
			end = s.Requests == 0 && at >= k*1000-2 && at <= k*1000+2
		} else if i >= len(samples)-2 {
			end = at >= (k-1)*1000
		}
		if s.ElapsedS != i+1 || !end {
			t.Errorf("sample %d: elapsed %d ends %d ms after the start, interval %.3f, %d requests", i, s.ElapsedS, at, s.IntervalS, s.Requests)
		}
		if s.RPS > 4*1000/2*1.2 { // 4 VUs × ≤ 500/s each
			t.Errorf("sample %d: rps %.0f is impossible", i, s.RPS)
		}
		if s.ActiveVUs != 4 { // the last one too, though the VUs have stopped when it is read
			t.Errorf("sample %d: %d active VUs, want 4 (%+v)", i, s.ActiveVUs, s)
		}
	}
	if sum.Seconds != len(samples) {
		t.Errorf("summary seconds %d, %d samples", sum.Seconds, len(samples))
	}
}

// "Nothing answered" must never pass a latency threshold.
func TestLatencyThresholdWithoutResponsesFails(t *testing.T) {
	addr := testutil.ClosedPort(t)
	js := fmt.Sprintf(`{"name":"t","requests":[{"url":"http://%s/"}],"load":{"vus":2,"duration":"1s"},
		"thresholds":["p(95)<100ms","avg<100ms","rps>0"]}`, addr)
	sum, _ := run(t, mustPlan(t, js))
	for _, th := range sum.Thresholds {
		switch th.Expr {
		case "p(95)<100ms", "avg<100ms":
			if th.OK || th.Value != nil {
				t.Errorf("%s passed or has a value without any response: %+v", th.Expr, th)
			}
		case "rps>0":
			if !th.OK || th.Value == nil {
				t.Errorf("rps>0 should pass (refusals are requests): %+v", th)
			}
		}
	}
	if sum.ThresholdsOK() {
		t.Error("run passed its thresholds with no response at all")
	}
}

func TestPerNameStatistics(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(20 * time.Millisecond)
		}
		if r.URL.Path == "/bad" {
			w.WriteHeader(500)
		}
	})
	js := fmt.Sprintf(`{"name":"t","requests":[
		{"name":"fast","url":"%[1]s/fast","weight":2},
		{"name":"slow","url":"%[1]s/slow","weight":1},
		{"name":"bad","url":"%[1]s/bad","weight":1}],
		"load":{"executor":"shared-iterations","vus":4,"iterations":400}}`, tg.URL)
	sum, samples, d := runSamplesProbed(t, mustPlan(t, js))
	fast, slow, bad := sum.ByName["fast"], sum.ByName["slow"], sum.ByName["bad"]
	if fast.Requests+slow.Requests+bad.Requests != 400 || sum.Requests != 400 || tg.Requests() != 400 {
		t.Fatalf("by name %+v, total %d, target %d", sum.ByName, sum.Requests, tg.Requests())
	}
	between(t, "fast share", float64(fast.Requests)/400, 0.42, 0.58)
	if bad.Errors != bad.Requests || fast.Errors != 0 || slow.Errors != 0 {
		t.Errorf("errors by name %+v", sum.ByName)
	}
	between(t, "slow p50 ms", slow.Latency.P50, 20, 25+d.typical) // the target's sleep and the answer wake late
	if fast.Latency.P50 >= 20 {
		t.Errorf("fast p50 %.2f ms", fast.Latency.P50)
	}
	var perSecond int64
	for _, s := range samples {
		for _, n := range s.ByName {
			perSecond += n.Requests
		}
	}
	if perSecond != 400 {
		t.Errorf("per-second by-name requests add up to %d", perSecond)
	}
}

func TestSweepKnee(t *testing.T) {
	// A target that serves at most 4 requests at a time, 20 ms each: 200/s at best. Levels 1 and 2
	// are below capacity; 8 reaches it (twice the target's slots, so a VU's turnaround between
	// answer and next request — stretched by a busy machine's scheduling delay — never leaves a
	// slot idle); 16 only adds queueing.
	sem := make(chan struct{}, 4)
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		sem <- struct{}{}
		time.Sleep(20 * time.Millisecond)
		<-sem
	})
	js := fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],"load":{"executor":"concurrency-sweep","levels":[1,2,8,16],"step_duration":"1s"}}`, tg.URL)
	probe := testutil.StartSchedProbe(t)
	sum, _ := run(t, mustPlan(t, js))
	d := probe.Stop()
	t.Log(d)
	if len(sum.Sweep) != 4 {
		t.Fatalf("rows %+v", sum.Sweep)
	}
	knee := 0
	for _, r := range sum.Sweep {
		if r.Knee {
			knee = r.VUs
		}
	}
	// The knee is a property of the target only while the machine adds little to its 20 ms: with
	// 1% of wakeups over a quarter of it late, the steps measure the machine (a step may even see
	// no request at all), and the rows are only logged.
	if d.P99 >= 5*time.Millisecond {
		t.Logf("1%% of wakeups over %v late: the knee (%d VUs) is not checked: %+v", d.P99, knee, sum.Sweep)
		return
	}
	if knee != 8 {
		t.Errorf("knee at %d VUs, want 8: %+v", knee, sum.Sweep)
	}
	if sum.Sweep[3].P50 < 1.5*sum.Sweep[2].P50 {
		t.Errorf("latency should climb past the knee: %+v", sum.Sweep)
	}
}

// A hosts entry listing several addresses spreads VUs over them (VU i → address i mod n), and
// the URL's host still goes into the Host header.
func TestHostsSpreadVUsOverAddresses(t *testing.T) {
	var hostA, hostB atomic.Value
	a := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { hostA.Store(r.Host) })
	b := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { hostB.Store(r.Host) })
	js := fmt.Sprintf(`{"name":"t","requests":[{"url":"http://svc.test:8000/"}],"load":{"vus":4,"duration":"1s"},
		"http":{"hosts":{"svc.test":"%s, %s"}}}`, strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://"))
	sum, _ := run(t, mustPlan(t, js))
	if a.Conns() != 2 || b.Conns() != 2 || sum.Errors != 0 {
		t.Errorf("connections %d + %d, errors %v", a.Conns(), b.Conns(), sum.ErrorKinds)
	}
	if hostA.Load() != "svc.test:8000" || hostB.Load() != "svc.test:8000" {
		t.Errorf("Host headers %q %q", hostA.Load(), hostB.Load())
	}
	if sum.Client.HeapAllocsPerRequest <= 0 { // the in-process net/http targets allocate too
		t.Errorf("heap allocs per request not reported: %v", sum.Client.HeapAllocsPerRequest)
	}
}

// A hosts key with a port applies to that port only and wins over the bare name.
func TestHostsKeyWithAPort(t *testing.T) {
	a := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	b := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	js := fmt.Sprintf(`{"name":"t","requests":[{"name":"p8080","url":"http://svc.test:8080/"},{"name":"p9090","url":"http://svc.test:9090/"}],
		"load":{"executor":"per-vu-iterations","vus":1,"iterations":10},"flow":"sequence",
		"http":{"hosts":{"svc.test:8080":%q,"svc.test":%q}}}`, strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://"))
	sum, _ := run(t, mustPlan(t, js))
	if sum.Errors != 0 || a.Requests() != 10 || b.Requests() != 10 {
		t.Errorf("errors %v; requests to the :8080 mapping %d, to the bare name's %d (want 10 each)", sum.ErrorKinds, a.Requests(), b.Requests())
	}
}

func TestSweepSaysWhatLimited(t *testing.T) {
	rows := []metrics.SweepRow{{VUs: 1}, {VUs: 10, Knee: true}, {VUs: 50, GeneratorBoundSeconds: 2}}
	if got := limitedBy(rows); got != "target" {
		t.Errorf("knee level without saturated seconds: %q", got)
	}
	rows[1].GeneratorBoundSeconds = 1
	if got := limitedBy(rows); got != "generator" {
		t.Errorf("knee level with saturated seconds: %q", got)
	}
	rows[1].Knee = false // no knee: judge the last level
	if got := limitedBy(rows); got != "generator" {
		t.Errorf("last level: %q", got)
	}
	rows[2].GeneratorBoundSeconds = 0 // no knee, generator never saturated: no limit reached yet
	if got := limitedBy(rows); got != "" {
		t.Errorf("still growing: %q", got)
	}
}
