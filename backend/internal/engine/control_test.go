package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// controlled starts p's run in the background and returns its engine, a function that waits for
// its summary and the samples it sent.
func controlled(t *testing.T, p *plan.Plan) (*Engine, func() (*metrics.Summary, []metrics.Sample)) {
	t.Helper()
	var mu sync.Mutex
	var samples []metrics.Sample
	e, err := newEngine(p, Options{OnSample: func(s metrics.Sample) { mu.Lock(); samples = append(samples, s); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		sum *metrics.Summary
		err error
	}
	done := make(chan result, 1)
	go func() { s, err := e.Run(context.Background()); done <- result{s, err} }()
	return e, func() (*metrics.Summary, []metrics.Sample) {
		t.Helper()
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		mu.Lock()
		defer mu.Unlock()
		return r.sum, samples
	}
}

// controlledOpen starts a constant-arrival-rate run of rate/s for duration with pre (max) VUs
// against a target that answers "ok", and waits until it sends.
func controlledOpen(t *testing.T, rate, pre, max int, duration string) (*Engine, func() (*metrics.Summary, []metrics.Sample), *testutil.Target) {
	t.Helper()
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	p := mustPlan(t, fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],"load":{"executor":"constant-arrival-rate",
		"rate":%d,"duration":%q,"pre_allocated_vus":%d,"max_vus":%d}}`, tg.URL, rate, duration, pre, max))
	e, wait := controlled(t, p)
	waitSending(t, e)
	return e, wait, tg
}

// waitFor polls cond every millisecond until it holds or limit passes, and returns how long it
// took (limit+ when it never held).
func waitFor(limit time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			return time.Since(start), false
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start), true
}

// sending waits until the run has VUs running (SetVUs before that is ErrNotRunning).
func waitSending(t *testing.T, e *Engine) {
	t.Helper()
	if _, ok := waitFor(5*time.Second, e.sending); !ok {
		t.Fatal("the run never started sending")
	}
}

func fiveMsTarget(t *testing.T) *testutil.Target {
	return testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond)
		w.Write([]byte("ok"))
	})
}

// Raising a constant-vus run's VUs opens one connection per new VU at the target; lowering them
// lets the VUs above the count finish and park (their connections stay open, idle); each change
// is one event, in the sample of its second and in the summary.
func TestSetVUsRaisesAndLowersAConstantVUsRun(t *testing.T) {
	tg := fiveMsTarget(t)
	e, wait := controlled(t, mustPlan(t, constantVUs(tg.URL, 2, "3s")))
	waitSending(t, e)
	ev, err := e.SetVUs(8, "ann")
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != "vus" || ev.From != 2 || ev.To != 8 || ev.By != "ann" {
		t.Errorf("event = %+v, want vus 2 → 8 by ann", ev)
	}
	took, ok := waitFor(2*time.Second, func() bool { return tg.OpenConns() >= 8 })
	t.Logf("8 connections open %v after SetVUs(8)", took)
	if !ok {
		t.Fatalf("target holds %d connections 2 s after SetVUs(8), want 8", tg.OpenConns())
	}
	if _, err := e.SetVUs(1, "ann"); err != nil {
		t.Fatal(err)
	}
	if _, ok := waitFor(2*time.Second, func() bool { return e.rec.ActiveVUs() == 1 }); !ok {
		t.Fatalf("%d VUs active 2 s after SetVUs(1), want 1", e.rec.ActiveVUs())
	}
	sum, samples := wait()
	if len(sum.Events) != 2 || sum.Events[1].From != 8 || sum.Events[1].To != 1 {
		t.Fatalf("summary events = %+v, want 2 → 8 then 8 → 1", sum.Events)
	}
	var inSamples []metrics.RunEvent
	for _, s := range samples {
		for _, ev := range s.Events {
			inSamples = append(inSamples, ev)
			// the sample of the second the change happened in: (T-interval, T]
			if ev.T > s.T || float64(ev.T) <= float64(s.T)-s.IntervalS*1000 {
				t.Errorf("event at %d in the sample ending %d (%.3f s long)", ev.T, s.T, s.IntervalS)
			}
		}
	}
	if len(inSamples) != 2 {
		t.Errorf("samples hold %d events, want 2", len(inSamples))
	}
	if len(e.vus) != 8 {
		t.Errorf("%d VUs spawned, want 8 (the lowered ones are reused, not respawned)", len(e.vus))
	}
}

// The count set replaces the rest of a ramping-vus profile: a ramp to 6 VUs held at 2 instead.
func TestSetVUsReplacesTheRestOfARamp(t *testing.T) {
	tg := fiveMsTarget(t)
	p := mustPlan(t, fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],"load":{"executor":"ramping-vus","start_vus":1,
		"stages":[{"duration":"3s","target":1},{"duration":"1s","target":6},{"duration":"1s","target":6}]}}`, tg.URL))
	e, wait := controlled(t, p)
	waitSending(t, e)
	if ev, err := e.SetVUs(2, "cli"); err != nil || ev.From != 1 {
		t.Fatalf("SetVUs(2) = %+v, %v; want from 1", ev, err)
	}
	_, samples := wait()
	for _, s := range samples {
		if s.ActiveVUs > 2 {
			t.Errorf("second %d had %d VUs; the ramp to 6 was replaced by 2", s.ElapsedS, s.ActiveVUs)
		}
	}
	if n := len(samples); n == 0 || samples[n-1].ActiveVUs != 2 {
		t.Errorf("the last second should hold 2 VUs: %+v", samples)
	}
}

// Setting the rate of a constant-arrival-rate run: the target's request rate follows.
func TestSetRateChangesTheArrivals(t *testing.T) {
	e, wait, tg := controlledOpen(t, 20, 2, 20, "4s")
	ev, err := e.SetRate(200, "ann")
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != "rate" || ev.From != 20 || ev.To != 200 {
		t.Errorf("event = %+v, want rate 20 → 200", ev)
	}
	// The arrivals from the change to the end (about 2.5 s of the 4): every iteration due is
	// counted, as a request the target saw or as dropped by a machine too busy to hand it to a
	// VU in time (never lost), so their sum is the changed schedule's; a wall-clock window here
	// was at the mercy of a busy machine's scheduling.
	at, before := e.now(), tg.Requests()
	sum, _ := wait()
	want := 200 * (4 - at.Seconds())
	got := float64(tg.Requests() - before)
	t.Logf("after SetRate(200) at %.2f s: target %.0f requests, %d dropped, schedule %.0f", at.Seconds(), got, sum.DroppedIterations, want)
	if n := got + float64(sum.DroppedIterations); n < want-20 || n > want+20 || got < want/4 {
		t.Errorf("after the change to 200/s at %.2f s: target saw %.0f requests, %d dropped; the schedule has %.0f",
			at.Seconds(), got, sum.DroppedIterations, want)
	}
	if len(sum.Events) != 1 {
		t.Errorf("summary events = %+v", sum.Events)
	}
}

// A VU waiting for its claimed iteration wakes at the change of rate, and at the run's stop, rather
// than after its wait (parkStep before): the first iterations of a higher rate start on time
// instead of up to parkStep late (dropped beyond dropTolerance). The waits here are an hour long;
// without the wake they would outlast the test's limit.
func TestWaitingVUWakesAtTheChange(t *testing.T) {
	e, wait, tg := controlledOpen(t, 1, 1, 1, "3s")
	a := e.exec.(*arrival)
	v := &vu{}
	a.register(v)
	woke := func(change func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); a.sleep(v, time.Hour) }()
		change()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a VU waiting for its iteration did not wake at the change")
		}
	}
	woke(func() {
		if _, err := e.SetRate(5, "ann"); err != nil {
			t.Fatal(err)
		}
	})
	woke(a.stopped)
	if _, ok := waitFor(5*time.Second, func() bool { return tg.Requests() >= 2 }); !ok {
		t.Errorf("%d requests after the change to 5/s", tg.Requests())
	}
	wait()
}

// Rate 0 pauses an open model and a later rate resumes it, with the VUs it kept.
func TestSetRateZeroPausesAndResumes(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	p := mustPlan(t, fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],"load":{"executor":"ramping-arrival-rate",
		"start_rate":50,"stages":[{"duration":"4s","target":50}],"pre_allocated_vus":2,"max_vus":10}}`, tg.URL))
	e, wait := controlled(t, p)
	waitSending(t, e)
	if _, err := e.SetRate(0, "ann"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // requests already in flight finish
	paused := tg.Requests()
	time.Sleep(500 * time.Millisecond)
	if n := tg.Requests() - paused; n > 1 {
		t.Errorf("%d requests while paused (at most one claimed before the change may run)", n)
	}
	if _, err := e.SetRate(100, "ann"); err != nil {
		t.Fatal(err)
	}
	if _, ok := waitFor(2*time.Second, func() bool { return tg.Requests()-paused >= 50 }); !ok {
		t.Errorf("only %d requests in 2 s after resuming at 100/s", tg.Requests()-paused)
	}
	sum, _ := wait()
	if len(sum.Events) != 2 || sum.Events[1].From != 0 {
		t.Errorf("events = %+v", sum.Events)
	}
}

// What cannot be changed is refused with the reason.
func TestControlRefusals(t *testing.T) {
	tg := fiveMsTarget(t)
	iter := mustPlan(t, fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],"load":{"executor":"per-vu-iterations","vus":1,"iterations":1}}`, tg.URL))
	e, err := newEngine(iter, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.SetVUs(2, ""); !errors.Is(err, ErrNotControllable) {
		t.Errorf("SetVUs on per-vu-iterations: %v, want ErrNotControllable", err)
	}
	if _, err := e.SetRate(2, ""); !errors.Is(err, ErrNotControllable) {
		t.Errorf("SetRate on per-vu-iterations: %v, want ErrNotControllable", err)
	}

	e, wait := controlled(t, mustPlan(t, constantVUs(tg.URL, 1, "1s")))
	if _, err := e.SetRate(5, ""); !errors.Is(err, ErrNotControllable) {
		t.Errorf("SetRate on constant-vus: %v, want ErrNotControllable", err)
	}
	var ve *plan.ValidationError
	for _, n := range []int{-1, plan.MaxVUs + 1} {
		if _, err := e.SetVUs(n, ""); !errors.As(err, &ve) || ve.Fields["vus"] == "" {
			t.Errorf("SetVUs(%d): %v, want a validation error on vus", n, err)
		}
	}
	wait()
	if _, err := e.SetVUs(3, ""); !errors.Is(err, ErrNotRunning) {
		t.Errorf("SetVUs after the run: %v, want ErrNotRunning", err)
	}

	open := mustPlan(t, fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],"load":{"executor":"constant-arrival-rate",
		"rate":10,"duration":"1s","pre_allocated_vus":1}}`, tg.URL))
	e, err = newEngine(open, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.SetRate(10, ""); !errors.Is(err, ErrNotRunning) {
		t.Errorf("SetRate before the run: %v, want ErrNotRunning", err)
	}
	for _, r := range []float64{-1, math.NaN(), math.Inf(1), plan.MaxRatePerSecond + 1} {
		if _, err := e.SetRate(r, ""); !errors.As(err, &ve) || ve.Fields["rate"] == "" {
			t.Errorf("SetRate(%v): %v, want a validation error on rate", r, err)
		}
	}
}

// setRate keeps the schedule before the change and holds the new rate after it; the rate it
// reports is the one reached at the change, mid-ramp included.
func TestSetRateSplicesTheSchedule(t *testing.T) {
	e := &Engine{endAt: 10 * time.Second}
	ramp := newSchedule(0, []plan.Stage{{Duration: plan.Duration(10 * time.Second), Target: 100}}, time.Second)
	a := &arrival{e: e, sched: ramp}
	before := make([]time.Duration, 0, 125)
	for i := range int64(125) { // N(5 s) = 125 arrivals of the ramp 0 → 100/s
		d, _ := ramp.at(i)
		before = append(before, d)
	}
	if from := a.setRate(5*time.Second, 10); math.Abs(from-50) > 1e-9 {
		t.Errorf("rate at the change = %v, want 50", from)
	}
	sc := a.cur()
	for i := range int64(125) {
		if d, ok := sc.at(i); !ok || (d-before[i]).Abs() > time.Microsecond {
			t.Fatalf("iteration %d moved from %v to %v", i, before[i], d)
		}
	}
	for i, want := range map[int64]time.Duration{125: 5 * time.Second, 135: 6 * time.Second, 174: 9900 * time.Millisecond} {
		if d, ok := sc.at(i); !ok || (d-want).Abs() > time.Microsecond {
			t.Errorf("iteration %d at %v, want %v", i, d, want)
		}
	}
	if _, ok := sc.at(175); ok {
		t.Error("iteration 175 is past the end at 10/s")
	}
	if n := sc.index(7 * time.Second); n != 144 {
		t.Errorf("index(7s) = %d, want 144 (145 due by then)", n)
	}
	// an iteration beyond the schedule waits for the run's end once the rate has been set
	if d := a.due(sc, 500); d != e.endAt {
		t.Errorf("due(500) = %v; want the end %v", d, e.endAt)
	}
}
