package engine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
)

// What the open-model (arrival-rate) executors share: their run state and VU loop (arrival), and
// the plan-side rules of their VU pool (pre_allocated_vus, max_vus).

// dropTolerance is how late an open-model iteration may be claimed and still run: an iteration no
// VU could take within this time of its scheduled start found no free VU, and is counted as a
// dropped iteration (never silently delayed).
const dropTolerance = 10 * time.Millisecond

// wakeupGap is the least time between two precise wakeups (startWakeups): at rates above
// 1/wakeupGap the iterations due within one gap start together, at most wakeupGap late.
const wakeupGap = 500 * time.Microsecond

// arrival is the run state of an open model: iterations are numbered, and iteration i is due at
// start + sched.at(i) whatever the target does.
type arrival struct {
	e            *Engine
	sched        schedule
	preAllocated int
	maxVUs       int64
	next         atomic.Int64             // the next of this segment's iterations to claim (Segment.Global: its number in the run)
	pool         atomic.Int64             // VUs spawned
	waiting      atomic.Int64             // VUs holding a claimed, not yet due iteration
	dropped      atomic.Int64             // iterations the VUs dropped (reconcile)
	stopWakeups  func()                   // precise timer wakeups (wakeup_linux.go)
	override     atomic.Pointer[schedule] // the schedule SetRate made; nil: sched (control.go)
}

// newArrival prepares an open model's run over sched with the plan's VU pool.
func newArrival(e *Engine, sched schedule) *arrival {
	l := &e.p.Load
	// A segment's pool is its share of the plan's, at least one VU (it has arrivals to start).
	pre, peak := max(1, e.share(l.PreAllocatedVUs)), max(1, e.share(max(l.MaxVUs, l.PreAllocatedVUs)))
	return &arrival{e: e, sched: sched, preAllocated: pre, maxVUs: int64(max(peak, pre))}
}

func (a *arrival) launch(ctx context.Context) {
	e := a.e
	a.stopWakeups = startWakeups(a.nextWakeup, e.now, e.recoverWakeups)
	for i := 0; i < a.preAllocated && !e.stopping(ctx, i); i++ {
		a.pool.Add(1)
		e.spawn(a.loop)
	}
}

func (a *arrival) finish() {
	if a.stopWakeups != nil {
		a.stopWakeups()
	}
	a.reconcile()
}

// reconcile counts as dropped the iterations of this engine's segment that were due before the
// run stopped but that no VU started or dropped — due while every VU was still busy at the end,
// or claimed by a VU that woke after the stop — so that sent + dropped is exactly the schedule's
// count up to the stop (the planned end, or the moment of an early stop). It runs once the VUs
// are done (or abandoned, having started what they run).
func (a *arrival) reconcile() {
	e := a.e
	t := e.endAt
	if s := time.Duration(e.stopAt.Load()); s > 0 && s < t {
		t = s
	}
	want := e.opts.Segment.Count(dueBefore(a.cur(), t))
	var started int64
	e.vusMu.Lock()
	for _, v := range e.vus {
		started += v.arrivals.Load()
	}
	e.vusMu.Unlock()
	e.rec.DroppedN(want - started - a.dropped.Load()) // one add: at 1M/s that is millions
}

// dueBefore is the number of the run's iterations sc schedules before offset t: those i with
// sc.at(i) < t (index is within one of it; at decides).
func dueBefore(sc *schedule, t time.Duration) int64 {
	n := max(sc.index(t)-2, 0)
	for n > 0 {
		if at, ok := sc.at(n - 1); ok && at < t {
			break
		}
		n--
	}
	for {
		if at, ok := sc.at(n); !ok || at >= t {
			return n
		}
		n++
	}
}

func (a *arrival) allocatedVUs() int64 { return a.pool.Load() }

// loop runs one VU of the pool. Each free VU claims the next iteration number (one atomic add),
// sleeps until it is due, and runs it; latency is measured from the due time, so a stalled target
// shows up in the percentiles (coordinated omission corrected) while the service time (actual
// send → last byte) is kept beside it. When the last waiting VU starts work, another VU is added,
// up to max_vus, so that a VU is free for the next arrival.
func (a *arrival) loop(v *vu) {
	e := v.e
	for {
		if e.stop.Load() || v.state.Load() == abandoned {
			return
		}
		i := a.e.opts.Segment.Global(a.next.Add(1) - 1) // the run's iteration number
		sc := a.cur()
		due, ok := a.due(sc, i)
		now := e.now()
		if !ok || due >= e.endAt && now >= e.endAt {
			return
		}
		if wait := due - now; wait > 0 {
			a.waiting.Add(1)
			for wait > 0 && !e.stop.Load() {
				time.Sleep(min(wait, parkStep))
				if s := a.cur(); s != sc { // SetRate: plan the claimed iteration again
					sc = s
					due, _ = a.due(sc, i)
				}
				now = e.now()
				wait = due - now
			}
			if a.waiting.Add(-1) == 0 {
				a.grow()
			}
			if e.stop.Load() || due >= e.endAt {
				return
			}
		} else if -wait > dropTolerance {
			e.rec.Dropped()
			a.dropped.Add(1)
			continue
		} else if a.waiting.Load() == 0 {
			a.grow()
		}
		v.shard.Lag((now - due).Microseconds())
		v.arrivals.Add(1)
		v.iteration(due, now)
	}
}

// grow adds one VU to the pool unless it has max_vus already.
func (a *arrival) grow() {
	for {
		n := a.pool.Load()
		if n >= a.maxVUs {
			return
		}
		if a.pool.CompareAndSwap(n, n+1) {
			a.e.spawn(a.loop)
			return
		}
	}
}

// nextWakeup is the wakeup plan for startWakeups: the due time of the first iteration due after
// now, but no sooner than wakeupGap from now; false after the last iteration.
//
// The search looks at a bounded number of iterations: at rates where more than that fall within
// one nanosecond of rounding, it wakes after wakeupGap instead of walking them all (a stop must
// never wait for this loop).
func (a *arrival) nextWakeup(now time.Duration) (time.Duration, bool) {
	w, ok := a.nextDue(now)
	return a.wakeupCap(now, w, ok)
}

func (a *arrival) nextDue(now time.Duration) (time.Duration, bool) {
	e := a.e
	if e.stop.Load() {
		return 0, false
	}
	sc := a.cur()
	j := sc.index(now)
	for range 1024 {
		t, ok := sc.at(j)
		if !ok || t >= e.endAt {
			return 0, false
		}
		if t > now {
			return max(t, now+wakeupGap), true
		}
		j++
	}
	return now + wakeupGap, true
}

// Plan-side rules of the open models' VU pool.

// arrivalDefaults: max_vus defaults to pre_allocated_vus.
func arrivalDefaults(l *plan.Load) {
	if l.MaxVUs == 0 {
		l.MaxVUs = l.PreAllocatedVUs
	}
}

func arrivalPeakVUs(l *plan.Load) int { return max(l.MaxVUs, l.PreAllocatedVUs) }

func arrivalVUsField(l *plan.Load) string {
	if l.MaxVUs > l.PreAllocatedVUs {
		return "load.max_vus"
	}
	return "load.pre_allocated_vus"
}

// perSecond converts iterations per time_unit to iterations per second.
func perSecond(n int, l *plan.Load) float64 {
	return float64(n) * (float64(time.Second) / float64(l.TimeUnit))
}
