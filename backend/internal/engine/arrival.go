package engine

import (
	"time"
)

// dropTolerance is how late an open-model iteration may be claimed and still run: an iteration no
// VU could take within this time of its scheduled start found no free VU, and is counted as a
// dropped iteration (never silently delayed).
const dropTolerance = 10 * time.Millisecond

// wakeupGap is the least time between two precise wakeups (startWakeups): at rates above
// 1/wakeupGap the iterations due within one gap start together, at most wakeupGap late.
const wakeupGap = 500 * time.Microsecond

// openLoop runs the arrival-rate executors (open model). Iterations are numbered; iteration i is
// due at start + schedule(i) whatever the target does. Each free VU claims the next number (one
// atomic add), sleeps until it is due, and runs it; latency is measured from the due time, so a
// stalled target shows up in the percentiles (coordinated omission corrected) while the service
// time (actual send → last byte) is kept beside it. When the last waiting VU starts work, another
// VU is added, up to max_vus, so that a VU is free for the next arrival.
func (v *vu) openLoop() {
	e := v.e
	for {
		if e.stop.Load() || v.state.Load() == abandoned {
			return
		}
		i := e.next.Add(1) - 1
		off, ok := e.sched.at(i)
		if !ok {
			return
		}
		due := off
		if due >= e.endAt {
			return
		}
		now := e.now()
		if wait := due - now; wait > 0 {
			e.waiting.Add(1)
			for wait > 0 && !e.stop.Load() {
				time.Sleep(min(wait, parkStep))
				now = e.now()
				wait = due - now
			}
			if e.waiting.Add(-1) == 0 {
				e.grow()
			}
			if e.stop.Load() {
				return
			}
		} else if -wait > dropTolerance {
			e.rec.Dropped()
			continue
		} else if e.waiting.Load() == 0 {
			e.grow()
		}
		v.shard.Lag((now - due).Microseconds())
		v.iteration(due, now)
	}
}

// grow adds one VU to an open-model pool unless it has max_vus already.
func (e *Engine) grow() {
	for {
		n := e.pool.Load()
		if n >= e.maxVUs {
			return
		}
		if e.pool.CompareAndSwap(n, n+1) {
			e.spawn((*vu).openLoop)
			return
		}
	}
}

// nextWakeup is the open model's wakeup plan for startWakeups: the due time of the first iteration
// due after now, but no sooner than wakeupGap from now; false after the last iteration.
//
// The search looks at a bounded number of iterations: at rates where more than that fall within
// one nanosecond of rounding, it wakes after wakeupGap instead of walking them all (a stop must
// never wait for this loop).
func (e *Engine) nextWakeup(now time.Duration) (time.Duration, bool) {
	if e.stop.Load() {
		return 0, false
	}
	j := e.sched.index(now)
	for range 1024 {
		t, ok := e.sched.at(j)
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
