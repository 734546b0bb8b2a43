package engine

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// Live control: the number of VUs of a running closed model (SetVUs) or the arrival rate of a
// running open model (SetRate) changed from outside the run, as Locust's user count and k6's
// externally-controlled executor allow. Control is rare: it takes a mutex and may spawn VUs; the
// VUs read its result with one atomic load per iteration (closed models) or per claimed arrival
// (open models), never a lock, allocation or channel operation.
//
// A change replaces the rest of the load model: after SetVUs(n) a ramping-vus run holds n VUs
// to its end, whatever its remaining stages said; after SetRate(r) a ramping-arrival-rate run
// holds r to its end. The run's length does not change. Each change is a metrics.RunEvent, put
// into the sample of the second it happened in (Sample.Events) and listed in Summary.Events.

// MaxRunEvents is the most changes one run takes: a further change is refused (ErrTooManyChanges).
const MaxRunEvents = 1000

// Control errors. Values out of range are a *plan.ValidationError naming the field ("vus",
// "rate") and the limit.
var (
	// ErrNotControllable: the run's executor has no VU count or rate to change (iteration-based
	// executors, concurrency-sweep), or the other kind is asked (a rate for a closed model).
	ErrNotControllable = errors.New("the run's load cannot be changed this way")
	// ErrNotRunning: the run has not started sending load, or is ending.
	ErrNotRunning = errors.New("the run is not sending load")
	// ErrTooManyChanges: the run has had MaxRunEvents changes already.
	ErrTooManyChanges = fmt.Errorf("a run takes at most %d load changes", MaxRunEvents)
)

// control is an Engine's live-control state.
type control struct {
	launched chan struct{}      // closed by Run once its executor has launched the VUs
	mu       sync.Mutex         // serializes changes, guards events and sent
	vus      atomic.Int64       // closed models: 0 while the profile rules, n+1 once n VUs are held
	events   []metrics.RunEvent // every change, in order
	sent     int                // events already handed to a sample (takeEvents)
}

func newControl() control { return control{launched: make(chan struct{})} }

// launchWait is how long a change waits for a run that is starting to have launched its VUs.
const launchWait = time.Second

// vuController is a closed-model executor whose VU count can be set while it runs: its VUs run
// profileLoop over prof.
type vuController interface {
	profile() *profile
}

// rateController is an open-model executor whose rate can be set while it runs.
type rateController interface {
	setRate(now time.Duration, perSecond float64) (from float64)
}

// SetVUs makes a running closed-model run (constant-vus, ramping-vus) hold n VUs from now to its
// end. VUs above n finish their current iteration and then wait (graceful, as a ramp-down); VUs
// beyond those spawned so far are started at once. by says who asked (metrics.RunEvent.By). It is
// safe to call from any goroutine while Run runs and returns the change recorded. Errors:
// ErrNotControllable, ErrNotRunning, ErrTooManyChanges, or a *plan.ValidationError for field
// "vus" when n is outside [0, plan.MaxVUs] (a server's own caps are its caller's to apply).
func (e *Engine) SetVUs(n int, by string) (metrics.RunEvent, error) {
	x, ok := e.exec.(vuController)
	if !ok {
		return metrics.RunEvent{}, fmt.Errorf("%w: %s has no VU count to change", ErrNotControllable, e.p.Load.Executor)
	}
	if n < 0 || n > plan.MaxVUs {
		return metrics.RunEvent{}, &plan.ValidationError{Fields: map[string]string{
			"vus": fmt.Sprintf("must be between 0 and %d VUs", plan.MaxVUs)}}
	}
	return e.change("vus", by, func(now time.Duration) (float64, error) {
		prof := x.profile()
		from := math.Floor(e.level(prof, now))
		e.ctl.vus.Store(int64(n) + 1)
		e.vusMu.Lock()
		have := len(e.vus)
		e.vusMu.Unlock()
		for range e.share(n) - have {
			if !e.spawnLive(func(v *vu) { v.profileLoop(prof) }) {
				return from, ErrNotRunning
			}
		}
		return from, nil
	}, float64(n))
}

// SetRate makes a running open-model run (constant-arrival-rate, ramping-arrival-rate) start
// iterations at rate per the plan's time_unit from now to its end; 0 pauses it. Its VUs stay
// bounded by max_vus (arrivals that find none free are dropped iterations, as always). by says
// who asked. Safe to call from any goroutine while Run runs; it returns the change recorded, with
// From and To per time_unit. Errors: ErrNotControllable, ErrNotRunning, ErrTooManyChanges, or a
// *plan.ValidationError for field "rate" when rate is negative, not finite or above the plan's
// bound (plan.Load.RateBound).
func (e *Engine) SetRate(rate float64, by string) (metrics.RunEvent, error) {
	x, ok := e.exec.(rateController)
	if !ok {
		return metrics.RunEvent{}, fmt.Errorf("%w: %s has no arrival rate to change", ErrNotControllable, e.p.Load.Executor)
	}
	perUnit, msg := e.p.Load.RateBound()
	if rate < 0 || math.IsNaN(rate) || rate > float64(perUnit) {
		return metrics.RunEvent{}, &plan.ValidationError{Fields: map[string]string{"rate": "must be at least 0 and " + msg}}
	}
	unit := float64(time.Second) / float64(e.p.Load.TimeUnit.D()) // time_units per second
	return e.change("rate", by, func(now time.Duration) (float64, error) {
		return x.setRate(now, rate*unit) / unit, nil
	}, rate)
}

// change applies one control change under the control lock, once the run has launched its VUs
// (waiting up to launchWait for a run that is starting) and while it has VUs left, and records
// its event. apply returns the value before the change.
func (e *Engine) change(kind, by string, apply func(now time.Duration) (float64, error), to float64) (metrics.RunEvent, error) {
	// a run just started: its executor launches the VUs first (a change waits for that)
	t := time.NewTimer(launchWait)
	defer t.Stop()
	select {
	case <-e.ctl.launched:
	case <-t.C:
		return metrics.RunEvent{}, ErrNotRunning
	}
	e.ctl.mu.Lock()
	defer e.ctl.mu.Unlock()
	if !e.sending() {
		return metrics.RunEvent{}, ErrNotRunning
	}
	if len(e.ctl.events) >= MaxRunEvents {
		return metrics.RunEvent{}, ErrTooManyChanges
	}
	now := e.now()
	if now >= e.endAt {
		return metrics.RunEvent{}, ErrNotRunning
	}
	from, err := apply(now)
	if err != nil {
		return metrics.RunEvent{}, err
	}
	ev := metrics.RunEvent{T: e.start.Add(now).UnixMilli(), ElapsedS: round(now.Seconds(), 3),
		Kind: kind, From: round(from, 3), To: to, By: by}
	e.ctl.events = append(e.ctl.events, ev)
	return ev, nil
}

// sending reports whether the run sends load: launched, not stopping, some VU still running.
func (e *Engine) sending() bool {
	return e.live.Load() > 0 && !e.stop.Load()
}

// spawnLive starts a VU as spawn does, but only while another VU still runs (so the wait group's
// count is above zero, as Run's wait needs); false when none is left.
func (e *Engine) spawnLive(loop func(*vu)) bool {
	e.vusMu.Lock()
	for {
		n := e.live.Load()
		if n == 0 || e.stop.Load() {
			e.vusMu.Unlock()
			return false
		}
		// counted only while another VU is: that VU has not reached its wg.Done, so the wait
		// group is above zero at startVU's Add
		if e.live.CompareAndSwap(n, n+1) {
			break
		}
	}
	e.startVU(loop) // unlocks
	return true
}

// level is the number of VUs a profile-driven run holds at elapsed time t: the profile's value,
// or the count set by SetVUs.
func (e *Engine) level(prof *profile, t time.Duration) float64 {
	if n := e.ctl.vus.Load(); n > 0 {
		return float64(n - 1)
	}
	return prof.value(t)
}

// nextActive is when VU i is next active (profile.nextActive); once SetVUs rules, an inactive VU
// looks again after parkStep. ok is false when it never is again (the VU may end).
func (e *Engine) nextActive(prof *profile, i int, t time.Duration) (time.Duration, bool) {
	if e.ctl.vus.Load() > 0 {
		return t + parkStep, true
	}
	at, ok := prof.nextActive(i, t)
	if !ok && e.controllable() {
		// SetVUs may raise the count later: the VU waits for that until the run's end.
		return t + parkStep, true
	}
	return at, ok
}

// controllable reports whether SetVUs applies to the run.
func (e *Engine) controllable() bool {
	_, ok := e.exec.(vuController)
	return ok
}

// takeEvents returns the changes not yet handed to a sample (nil when none), for the collector.
func (e *Engine) takeEvents() []metrics.RunEvent {
	e.ctl.mu.Lock()
	defer e.ctl.mu.Unlock()
	if e.ctl.sent == len(e.ctl.events) {
		return nil
	}
	out := append([]metrics.RunEvent(nil), e.ctl.events[e.ctl.sent:]...)
	e.ctl.sent = len(e.ctl.events)
	return out
}

// runEvents returns every change of the run, in order (empty, never nil).
func (e *Engine) runEvents() []metrics.RunEvent {
	e.ctl.mu.Lock()
	defer e.ctl.mu.Unlock()
	return append([]metrics.RunEvent{}, e.ctl.events...)
}

// Open models.

// setRate replaces the rest of the schedule from now with a constant rate (iterations per
// second) and returns the rate it had at now. The schedule's stages are cut at now — the stage
// holding now ends there, at the rate it had reached — so the iterations due before now keep
// their times; then one stage holds the new rate to the run's end. Iterations claimed but not yet
// due are planned again by their VUs (loop), on the new schedule, at once: the change wakes them.
func (a *arrival) setRate(now time.Duration, perSecond float64) float64 {
	old := a.cur()
	t0 := now.Seconds()
	end := a.e.endAt.Seconds()
	next := &schedule{}
	from := 0.0
	n0 := 0.0
	for _, s := range old.stages {
		if s.start >= t0 {
			break
		}
		if s.start+s.dur <= t0 {
			next.stages = append(next.stages, s)
			n0 = s.n1
			continue
		}
		tau := t0 - s.start
		r := s.r0 + (s.r1-s.r0)*tau/s.dur
		cut := rateStage{start: s.start, dur: tau, r0: s.r0, r1: r, n0: s.n0, n1: s.n0 + (s.r0+r)*tau/2}
		next.stages = append(next.stages, cut)
		from, n0 = r, cut.n1
	}
	if end > t0 {
		next.stages = append(next.stages, rateStage{start: t0, dur: end - t0, r0: perSecond, r1: perSecond,
			n0: n0, n1: n0 + perSecond*(end-t0)})
	}
	a.override.Store(next)
	a.wakeAll()
	return from
}

// cur is the schedule in force: the plan's, or the last one setRate made.
func (a *arrival) cur() *schedule {
	if s := a.override.Load(); s != nil {
		return s
	}
	return &a.sched
}

// due is when iteration i is due on sc; an iteration beyond the schedule is due at the run's end
// (never), in case a change (SetRate, which an open model takes at any moment of its run) brings
// it forward — as a closed model's VU beyond its profile waits for SetVUs (nextActive). The VU
// holding it parks (a VU that ended here would take its claimed iteration with it: a later
// SetRate's iterations of those numbers would be neither sent nor dropped, and the pool, which
// counts the VUs spawned, would stay short of them). The VU ends at the run's end (loop).
func (a *arrival) due(sc *schedule, i int64) time.Duration {
	if off, ok := sc.at(i); ok && off < a.e.endAt {
		return off
	}
	return a.e.endAt
}

// wakeupCap bounds the precise wakeups' gap once the rate has been set, so that a change to a
// higher rate is met on time.
func (a *arrival) wakeupCap(now, w time.Duration, ok bool) (time.Duration, bool) {
	if a.override.Load() == nil || a.e.stop.Load() || now >= a.e.endAt {
		return w, ok
	}
	if !ok {
		return now + parkStep, true
	}
	return min(w, now+parkStep), true
}

// Plan is the plan the engine runs (read-only: callers must not modify it).
func (e *Engine) Plan() *plan.Plan { return e.p }
