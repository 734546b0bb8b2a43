package engine

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	seg "github.com/volley-load/volley/backend/internal/segment"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// Open models count iterations by their due second (arrival.go): each sample's started + dropped
// iterations are exactly the schedule's iterations due in the seconds it closes. The expected
// counts here come from the plan's rate, not from the engine's schedule: iteration i is due when
// the cumulative arrivals N(t) = ∫rate reach i, so the iterations due before t number ⌈N(t)⌉.

// dueRun is one engine's run: its summary, samples, and the times its windows are cut at.
type dueRun struct {
	sum     *metrics.Summary
	samples []metrics.Sample
	start   time.Time
	cut     time.Duration // the planned end, or the stop
	iv      time.Duration // the collector's interval: a "second"
}

// runDue runs js on one engine with segment g, cancelled after stopAfter (0: not at all).
func runDue(t *testing.T, js string, g seg.Segment, stopAfter time.Duration) *dueRun {
	t.Helper()
	r, err := startDue(mustPlan(t, js), Options{Segment: g}, stopAfter)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// startDue is runDue for any goroutine, with options o (their OnSample is set).
func startDue(p *plan.Plan, o Options, stopAfter time.Duration) (*dueRun, error) {
	r := &dueRun{}
	o.OnSample = func(s metrics.Sample) { r.samples = append(r.samples, s) }
	e, err := newEngine(p, o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if stopAfter > 0 {
		time.AfterFunc(stopAfter, cancel)
	}
	if r.sum, err = e.Run(ctx); err != nil {
		return nil, err
	}
	r.start, r.cut, r.iv = e.start, e.endAt, e.opts.Interval
	if s := time.Duration(e.stopAt.Load()); s < r.cut {
		r.cut = s
	}
	return r, nil
}

// windows returns the due-time window [from, to) each sample closes: its own second,
// [(k−1)·interval, k·interval) for ElapsedS k, and up to the cut for the last one (none past the
// cut).
func (r *dueRun) windows() [][2]time.Duration {
	var w [][2]time.Duration
	for k, s := range r.samples {
		from, to := min(time.Duration(s.ElapsedS-1)*r.iv, r.cut), min(time.Duration(s.ElapsedS)*r.iv, r.cut)
		if k == len(r.samples)-1 {
			to = r.cut
		}
		w = append(w, [2]time.Duration{from, to})
	}
	return w
}

// check checks that the samples are numbered 1, 2, 3, … (one per second, none skipped or
// repeated, whatever the collector's delays), compares each sample's started + dropped iterations
// with due(to) − due(from) for its window, and the totals with the summary's; it returns the
// iterations started and dropped.
func (r *dueRun) check(t *testing.T, name string, due func(time.Duration) int64) (started, dropped int64) {
	t.Helper()
	for k, w := range r.windows() {
		s := r.samples[k]
		if s.ElapsedS != k+1 {
			t.Errorf("%s: sample %d is second %d", name, k+1, s.ElapsedS)
		}
		want := due(w[1]) - due(w[0])
		if got := s.StartedIterations + s.DroppedIterations; got != want {
			t.Errorf("%s: second %d (due %v … %v): %d started + %d dropped = %d, the schedule has %d",
				name, s.ElapsedS, w[0], w[1], s.StartedIterations, s.DroppedIterations, got, want)
		}
		started += s.StartedIterations
		dropped += s.DroppedIterations
	}
	if started+dropped != due(r.cut) {
		t.Errorf("%s: %d started + %d dropped, the schedule has %d up to %v", name, started, dropped, due(r.cut), r.cut)
	}
	if dropped != r.sum.DroppedIterations || started != r.sum.Requests+r.sum.Interrupted {
		t.Errorf("%s: the seconds add up to %d started, %d dropped; the summary has %d sent + %d interrupted, %d dropped",
			name, started, dropped, r.sum.Requests, r.sum.Interrupted, r.sum.DroppedIterations)
	}
	return started, dropped
}

// reached compares the target's count with the summary: every success reached it, and at most
// every request sent (one that failed to connect on a machine too busy did not).
func (r *dueRun) reached(t *testing.T, name string, tg *testutil.Target) {
	t.Helper()
	if n := tg.Requests(); n < r.sum.Successes || n > r.sum.Requests {
		t.Errorf("%s: the target counted %d; the summary has %d sent, %d successes (errors %v)",
			name, n, r.sum.Requests, r.sum.Successes, r.sum.ErrorKinds)
	}
}

// constantDue is ⌈N(t)⌉ for a constant rate (per second): the iterations due before t.
func constantDue(rate int64) func(time.Duration) int64 {
	return func(t time.Duration) int64 { return (int64(t)*rate + int64(time.Second) - 1) / int64(time.Second) }
}

func fastTarget(t *testing.T) *testutil.Target {
	return testutil.NewTarget(t, func(http.ResponseWriter, *http.Request) {})
}

// constant-arrival-rate 2000/s for 3 s: 2000 due in every second, each started or dropped, and
// the target received every one started.
func TestOpenModelCountsByDueSecond(t *testing.T) {
	tg := fastTarget(t)
	r := runDue(t, fmt.Sprintf(`{"name":"due","requests":[{"url":%q}],
		"load":{"executor":"constant-arrival-rate","rate":2000,"duration":"3s","pre_allocated_vus":20,"max_vus":400},
		"http":{"timeout":"2s"}}`, tg.URL), seg.Whole, 0)
	started, dropped := r.check(t, "constant", constantDue(2000))
	r.reached(t, "constant", tg)
	t.Logf("%d started, %d dropped; per second %v", started, dropped, dueCounts(r.samples))
}

// A collector held 2.5 intervals at its tick for second 3 (the test hook stalls it; intervals of
// 200 ms, so a "second" is 200 ms and the schedule's 1000/s is 200 per second) still emits every
// second, numbered 1, 2, 3, … with none skipped or repeated, each with exactly its own
// iterations by due time. The seconds the stall passed before the tick's reading (3 and 4 at
// least) measured nothing: no requests, interval 0. The reading, with every request of the
// stall, is in the next sample, whose interval spans the time since the reading before.
func TestStalledCollectorEmitsEverySecond(t *testing.T) {
	const iv = 200 * time.Millisecond
	hold := 5 * iv / 2
	tg := fastTarget(t)
	defer SetPanicHookForTest(func(point string, k int) {
		if point == "collector" && k == 2 {
			time.Sleep(hold) // the stall itself, not a wait for something
		}
	})()
	r, err := startDue(mustPlan(t, fmt.Sprintf(`{"name":"due","requests":[{"url":%q}],
		"load":{"executor":"constant-arrival-rate","rate":1000,"duration":"2s","pre_allocated_vus":20,"max_vus":400},
		"http":{"timeout":"2s"}}`, tg.URL)), Options{Interval: iv}, 0)
	if err != nil {
		t.Fatal(err)
	}
	r.check(t, "stalled", constantDue(1000))
	r.reached(t, "stalled", tg)
	t.Logf("per second %v", dueCounts(r.samples))
	if len(r.samples) != 10 || r.sum.Seconds != 10 {
		t.Fatalf("%d samples, %d seconds in the summary; want 10 (2 s of 200 ms)", len(r.samples), r.sum.Seconds)
	}
	var requests int64
	prevT := r.start.UnixMilli() // the end of the reading before
	for k, s := range r.samples {
		requests += s.Requests
		if s.IntervalS == 0 {
			if s.Requests != 0 || s.RPS != 0 || s.Hist != "" || s.Latency.Max != 0 {
				t.Errorf("second %d measured nothing but holds %d requests, rps %v, latency %+v", s.ElapsedS, s.Requests, s.RPS, s.Latency)
			}
			if want := r.start.Add(time.Duration(s.ElapsedS) * iv).UnixMilli(); s.T != want {
				t.Errorf("second %d without a reading ends at %d, want its end %d", s.ElapsedS, s.T, want)
			}
			continue
		}
		// a reading covers the time since the one before: no gap, no overlap (T and interval_s in ms)
		if d := s.T - prevT - int64(math.Round(s.IntervalS*1000)); d < -1 || d > 1 {
			t.Errorf("second %d spans %.3f s but ends %d ms after the reading before", s.ElapsedS, s.IntervalS, s.T-prevT)
		}
		prevT = s.T
		if k == 2 || k == 3 {
			t.Errorf("second %d has a reading of its own (interval %.3f s): the stall held its tick", s.ElapsedS, s.IntervalS)
		}
	}
	if requests != r.sum.Requests {
		t.Errorf("the seconds hold %d requests, the summary %d", requests, r.sum.Requests)
	}
	// the first reading after the stall: at least the hold after the one before (at second 2)
	var after *metrics.Sample
	for k := 4; k < len(r.samples) && after == nil; k++ {
		if r.samples[k].IntervalS > 0 {
			after = &r.samples[k]
		}
	}
	if after == nil || after.IntervalS < hold.Seconds() || after.Requests == 0 ||
		math.Abs(after.RPS*after.IntervalS-float64(after.Requests)) > 1 { // interval_s to the ms
		t.Errorf("the reading after the stall: %+v", after)
	}
}

func dueCounts(samples []metrics.Sample) []string {
	var out []string
	for _, s := range samples {
		out = append(out, fmt.Sprintf("%d+%d", s.StartedIterations, s.DroppedIterations))
	}
	return out
}

// ramping-arrival-rate 0 → 999/s over 2 s, 999/s for 1 s, → 0 over 1 s: N(t) = 999t²/4, then
// 999 + 999(t − 2), then 1998 + 999τ − 999τ²/2 (τ = t − 3); per second ⌈N⌉ differences 250, 749,
// 999, 500.
func TestRampingArrivalCountsByDueSecond(t *testing.T) {
	tg := fastTarget(t)
	r := runDue(t, fmt.Sprintf(`{"name":"due","requests":[{"url":%q}],
		"load":{"executor":"ramping-arrival-rate","start_rate":0,"pre_allocated_vus":20,"max_vus":400,
		"stages":[{"duration":"2s","target":999},{"duration":"1s","target":999},{"duration":"1s","target":0}]},
		"http":{"timeout":"2s"}}`, tg.URL), seg.Whole, 0)
	n := func(d time.Duration) int64 {
		x := d.Seconds()
		var v float64
		switch {
		case x <= 2:
			v = 999 * x * x / 4
		case x <= 3:
			v = 999 + 999*(x-2)
		default:
			tau := min(x, 4) - 3
			v = 1998 + 999*tau - 999*tau*tau/2
		}
		return int64(math.Ceil(v))
	}
	r.check(t, "ramping", n)
	r.reached(t, "ramping", tg)
	t.Logf("per second %v", dueCounts(r.samples))
}

// Two VUs on a 20 ms target at 400/s: most iterations find no free VU and are dropped, each in its
// due second, the seconds still exact.
func TestOpenModelCountsByDueSecondScarceVUs(t *testing.T) {
	tg := testutil.NewTarget(t, func(http.ResponseWriter, *http.Request) { time.Sleep(20 * time.Millisecond) })
	r := runDue(t, fmt.Sprintf(`{"name":"due","requests":[{"url":%q}],
		"load":{"executor":"constant-arrival-rate","rate":400,"duration":"2s","pre_allocated_vus":2,"max_vus":2,
		"graceful_stop":"3s"},"http":{"timeout":"2s"}}`, tg.URL), seg.Whole, 0)
	started, dropped := r.check(t, "scarce", constantDue(400))
	if dropped < 400 || started == 0 {
		t.Errorf("%d started, %d dropped: want most of the 800 dropped", started, dropped)
	}
	r.reached(t, "scarce", tg)
	t.Logf("per second %v", dueCounts(r.samples))
}

// A run cancelled mid-second: the seconds before are whole, the last one holds the iterations due
// before the stop, and none due after it is counted.
func TestOpenModelCountsByDueSecondEarlyStop(t *testing.T) {
	tg := fastTarget(t)
	r := runDue(t, fmt.Sprintf(`{"name":"due","requests":[{"url":%q}],
		"load":{"executor":"constant-arrival-rate","rate":1000,"duration":"4s","pre_allocated_vus":20,"max_vus":400},
		"http":{"timeout":"2s"}}`, tg.URL), seg.Whole, 1500*time.Millisecond)
	if r.cut >= 4*time.Second {
		t.Fatalf("the run was not stopped early (cut %v)", r.cut)
	}
	r.check(t, "early stop", constantDue(1000))
	r.reached(t, "early stop", tg)
	t.Logf("stopped at %v; per second %v", r.cut, dueCounts(r.samples))
}

// Three engines with segments 2:1:1 of 3000/s for 2 s: the parts own the iterations in blocks of
// 2 (arrival.blockOf), each part's seconds hold exactly its share (1500/750/750 of the 3000 due),
// and the parts' seconds add up to the whole schedule's.
func TestSegmentsCountByDueSecond(t *testing.T) {
	tg := fastTarget(t)
	weights := []int{2, 1, 1}
	sq, err := seg.New(weights...)
	if err != nil {
		t.Fatal(err)
	}
	js := fmt.Sprintf(`{"name":"due","requests":[{"url":%q}],
		"load":{"executor":"constant-arrival-rate","rate":3000,"duration":"2s","pre_allocated_vus":20,"max_vus":400},
		"http":{"timeout":"2s"}}`, tg.URL)
	blocks := blocked(newSchedule(3000, []plan.Stage{st(2*time.Second, 3000)}, time.Second), sq, 0).blockOf
	if b := blocks(0, seg.PageBlocks*4); b != 2 {
		t.Fatalf("block %d at 3000/s, want 2", b)
	}
	runs := make([]*dueRun, len(weights))
	errs := make([]error, len(weights))
	var wg sync.WaitGroup
	for j := range weights {
		p := mustPlan(t, js)
		wg.Go(func() { runs[j], errs[j] = startDue(p, Options{Segment: sq.Segment(j)}, 0) })
	}
	wg.Wait()
	for j, err := range errs {
		if err != nil {
			t.Fatalf("part %d: %v", j, err)
		}
	}
	whole := constantDue(3000)
	var sent, succeeded, total int64
	perSec := map[int]int64{}
	aligned := true
	for j, r := range runs {
		// the part's share of the iterations due before d: of the first n numbers, the ones it owns
		g := sq.Segment(j).InBlocks(blocks)
		started, dropped := r.check(t, fmt.Sprintf("part %d", j), func(d time.Duration) int64 { return g.Count(whole(d)) })
		sent, succeeded, total = sent+r.sum.Requests, succeeded+r.sum.Successes, total+started+dropped
		for k, w := range r.windows() {
			s := r.samples[k]
			perSec[s.ElapsedS] += s.StartedIterations + s.DroppedIterations
			// a whole second's 3000 are 375 periods of 4 blocks of 2: 2·w of each 8 are the part's
			if w[1]-w[0] == time.Second && s.StartedIterations+s.DroppedIterations != int64(750*weights[j]) {
				t.Errorf("part %d, second %d: %d iterations, want %d", j, s.ElapsedS, s.StartedIterations+s.DroppedIterations, 750*weights[j])
			}
			aligned = aligned && w[0] == time.Duration(k)*time.Second && w[1] == min(r.cut, time.Duration(k+1)*time.Second)
		}
		t.Logf("part %d: per second %v", j, dueCounts(r.samples))
	}
	// The parts end when their last iteration is done (each at its own cut, ≤ 2 s): whatever the
	// cuts, every iteration of the 6000 is some part's, counted once.
	if n := tg.Requests(); total != 6000 || n < succeeded || n > sent {
		t.Errorf("the parts counted %d iterations (want 6000); the target %d, the parts sent %d (%d successes)",
			total, n, sent, succeeded)
	}
	for k := 1; aligned && k <= 2; k++ {
		if perSec[k] != 3000 {
			t.Errorf("second %d: the parts add up to %d, the whole schedule has 3000", k, perSec[k])
		}
	}
}

// A ramp from rate 0 has its first iteration due at its start (at(0) was 0/0 = NaN, a due time
// of −292 years: always dropped, and out of every second).
func TestRampFromZeroFirstIterationAtStart(t *testing.T) {
	ramp := newSchedule(0, []plan.Stage{{Duration: plan.Duration(2 * time.Second), Target: 999}}, time.Second)
	if d, ok := ramp.at(0); !ok || d != 0 {
		t.Errorf("at(0) = %v, %v; want 0, true", d, ok)
	}
	if d, ok := ramp.at(250); !ok || d < time.Second || d > time.Second+time.Millisecond { // N(1 s) = 249.75
		t.Errorf("at(250) = %v, want just after 1 s", d)
	}
}

// closeBefore at the end of second 1 of 10/s (iterations 0–9 due in it): of those, 0–3 started,
// 4 is held by a VU that has not started it (its thread descheduled, say), 5 is being claimed by
// a VU that publishes its number a moment later, 6–9 are unclaimed. The collector counts 4–9 as
// dropped in second 1 (taking 4's and 5's claims: their VUs' own settle then fails, and they do
// not run them), and the next claim is 10, the first of second 2.
func TestCloseBeforeTakesUnstartedClaims(t *testing.T) {
	e := &Engine{endAt: 3 * time.Second, opts: Options{Interval: time.Second}, rec: metrics.NewRecorder(2)}
	a := &arrival{e: e, sched: newSchedule(10, []plan.Stage{{Duration: plan.Duration(3 * time.Second), Target: 10}}, time.Second)}
	vus := []*vu{{shard: e.rec.Shard(0)}, {shard: e.rec.Shard(1)}, {shard: e.rec.Shard(0)}}
	e.listed.Store(&vus)
	due := func(k int64) time.Duration { d, _ := a.sched.at(k); return d }
	for k := range int64(4) {
		vus[0].claim.Store(k + 1)
		if !a.settle(vus[0], k, due(k), true) {
			t.Fatalf("iteration %d not started", k)
		}
	}
	vus[1].claim.Store(4 + 1)
	vus[2].claim.Store(claiming)
	a.next.Store(6)
	published := make(chan struct{})
	go func() {
		time.Sleep(20 * time.Millisecond)
		vus[2].claim.Store(5 + 1)
		close(published)
	}()
	a.closeBefore(time.Second)
	<-published
	if a.settle(vus[1], 4, due(4), true) || a.settle(vus[2], 5, due(5), false) {
		t.Error("a VU ran (or counted) an iteration the collector had dropped")
	}
	if k := a.next.Add(1) - 1; k != 10 {
		t.Errorf("the next claim is %d, want 10", k)
	}
	if started, dropped := e.rec.TakeDue(1, 1); started != 4 || dropped != 6 {
		t.Errorf("second 1: %d started, %d dropped; want 4, 6", started, dropped)
	}
	c := metrics.NewCounts()
	if e.rec.Read(c); c.Dropped != 6 {
		t.Errorf("%d dropped in total, want 6", c.Dropped)
	}
}

// setRateRun runs a constant-arrival-rate plan of rate/s for 3 s with pre VUs (max_vus max), changes
// the rate to to/s at about 1.3 s (mid-second: not a synchronisation, any moment will do), and checks
// that every second holds exactly the iterations due in it on the schedule as changed: N(t) = rate·t
// before the change at t₀, rate·t₀ + to·(t − t₀) after.
func setRateRun(t *testing.T, name string, rate, pre, max, to int) {
	t.Helper()
	tg := fastTarget(t)
	r := &dueRun{}
	e, err := newEngine(mustPlan(t, fmt.Sprintf(`{"name":"due","requests":[{"url":%q}],
		"load":{"executor":"constant-arrival-rate","rate":%d,"duration":"3s","pre_allocated_vus":%d,"max_vus":%d},
		"http":{"timeout":"2s"}}`, tg.URL, rate, pre, max)), Options{OnSample: func(s metrics.Sample) { r.samples = append(r.samples, s) }})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var err error
		r.sum, err = e.Run(context.Background())
		done <- err
	}()
	waitSending(t, e)
	time.Sleep(1300*time.Millisecond - e.now())
	if _, err := e.SetRate(float64(to), "t"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r.start, r.cut, r.iv = e.start, min(e.endAt, time.Duration(e.stopAt.Load())), e.opts.Interval
	stages := e.exec.(*arrival).cur().stages
	t0 := stages[len(stages)-1].start // the change, in seconds since the start
	n := func(d time.Duration) int64 {
		x := d.Seconds()
		if x <= t0 {
			return int64(math.Ceil(float64(rate) * x))
		}
		return int64(math.Ceil(float64(rate)*t0 + float64(to)*(x-t0)))
	}
	r.check(t, name, n)
	r.reached(t, name, tg)
	t.Logf("rate changed at %.3f s; per second %v", t0, dueCounts(r.samples))
}

// SetRate from 200/s to 500/s mid-run: the seconds hold exactly the iterations due in them on the
// schedule as changed, the iterations claimed before the change but due after it planned again and
// counted where they ran.
func TestSetRateCountsByDueSecond(t *testing.T) { setRateRun(t, "set rate", 200, 10, 200, 500) }

// SetRate after the plan's schedule ran short of the pool's claims — 2 iterations/s and 20
// pre-allocated VUs, most of which claim an iteration number beyond the plan's 6 — counts every
// iteration of the changed schedule as sent or dropped, second by second: the VUs holding those
// numbers wait for a change (the run's end at most) instead of ending with them (the numbers were
// lost: 14 iterations of the change's first moments were neither sent nor dropped, and the pool
// was short of the VUs that ended).
func TestSetRateAfterTheScheduleRanOut(t *testing.T) {
	setRateRun(t, "set rate after the schedule ran out", 2, 20, 20, 200)
}
