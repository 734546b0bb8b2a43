package engine

import (
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
)

// closedLoop runs constant-vus, per-vu-iterations and shared-iterations: the VU starts its next
// iteration as soon as the previous one ends (closed model), so latency is measured from the
// moment the VU begins each request.
func (v *vu) closedLoop() {
	e := v.e
	e.rec.VUStarted()
	defer e.rec.VUStopped()
	l := e.p.Load
	for it := 0; ; it++ {
		if e.stop.Load() || v.state.Load() == abandoned {
			return
		}
		now := e.now()
		if now >= e.endAt {
			return
		}
		switch l.Executor {
		case plan.PerVUIterations:
			if it >= l.Iterations {
				return
			}
		case plan.SharedIterations:
			if e.next.Add(1) > int64(l.Iterations) {
				return
			}
		}
		v.iteration(now, now)
		v.pause()
	}
}

// outOfFilesPause is how long a closed-model VU waits after its connect failed for want of file
// descriptors (too_many_open_files). Retrying at once cannot succeed until other sockets close: a
// run with more VUs than the open-files limit allows otherwise spins through millions of such
// failures a second, burning the CPU and memory the working VUs need. Target failures (refused,
// timed out, reset) are not paused: they are the target's answer and are counted as they come.
const outOfFilesPause = 100 * time.Millisecond

// pause holds a closed-model VU after an iteration that ran out of file descriptors.
func (v *vu) pause() {
	if !v.outOfFiles {
		return
	}
	v.outOfFiles = false
	for d := outOfFilesPause; d > 0 && !v.e.stop.Load(); d -= parkStep {
		time.Sleep(min(d, parkStep))
	}
}

// parkStep bounds how long a parked VU sleeps before it looks at the stop flag again.
const parkStep = 50 * time.Millisecond

// profileLoop runs ramping-vus and concurrency-sweep: VU i works while the profile's value is at
// least i+1, finishing its current iteration before it parks (k6's graceful ramp-down), and
// sleeps until the profile next reaches it.
func (v *vu) profileLoop() {
	e := v.e
	active := false
	defer func() {
		if active {
			e.rec.VUStopped()
		}
	}()
	for {
		if e.stop.Load() || v.state.Load() == abandoned {
			return
		}
		elapsed := e.now()
		if elapsed >= e.endAt {
			return
		}
		if e.prof.value(elapsed) >= float64(v.id+1) {
			if !active {
				active = true
				e.rec.VUStarted()
			}
			v.iteration(elapsed, elapsed)
			v.pause()
			continue
		}
		if active {
			active = false
			e.rec.VUStopped()
		}
		at, ok := e.prof.nextActive(v.id, elapsed)
		if !ok {
			return
		}
		time.Sleep(min(at-elapsed, parkStep))
	}
}
