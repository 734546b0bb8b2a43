package engine

import (
	"context"
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
)

// Executors. Each lives in one file, executor_NAME.go, whose init function registers it with
// register: its plan side (fields, defaults, validation, length, peak VUs, model: plan.ExecutorSpec)
// and its run side (build: the run state of one run, whose launch starts the VUs). This file holds
// what closed-model executors share (closedLoop, profileLoop); arrival.go what open models share.

// executor is one run of a load model, made by its registration's build in New.
type executor interface {
	// launch starts the first VUs (Engine.spawnEach, Engine.spawn). It is called once, by Run,
	// and gives up spawning when the run is being stopped.
	launch(ctx context.Context)
}

// finisher is an executor that runs something besides its VUs (open models: precise wakeups):
// finish ends it, once, after the VUs have ended or been abandoned.
type finisher interface {
	finish()
}

// stopWaker is an executor whose VUs wait for a change as well as for time (open models: arrival.go):
// stopped wakes them when the run stops.
type stopWaker interface {
	stopped()
}

// dueCloser is an executor whose iterations are counted by due second (open models: arrival.go);
// the collector closes the seconds with it.
type dueCloser interface {
	closeBefore(t time.Duration)
	cut() time.Duration
}

// vuPool is an executor that reports the VUs it has allocated, busy or not, as its active VUs
// (open models, as k6 reports them); the others report the VUs running iterations.
type vuPool interface {
	allocatedVUs() int64
}

// stepper is an executor that holds VU levels one step each (concurrency-sweep): the collector
// adds each second to the level it began in, and the summary gets a capacity table, one row per
// level (collector.sweepRows).
type stepper interface {
	steps() (levels []int, step time.Duration)
}

// builders are the registered executors' run sides, by name.
var builders = map[string]func(e *Engine) executor{}

// register registers an executor with package plan (spec) and the engine (build). It is meant
// for init functions and panics on a duplicate name.
func register(spec plan.ExecutorSpec, build func(e *Engine) executor) {
	plan.RegisterExecutor(spec)
	builders[spec.Name] = build
}

// Load fields that several executors take, as plan.LoadField values for their registrations.
var (
	fieldVUs             = plan.LoadField{Name: "vus", Kind: plan.IntField, Required: true, HelpKey: "editor.vus"}
	fieldDuration        = plan.LoadField{Name: "duration", Kind: plan.DurationField, Required: true, HelpKey: "editor.duration"}
	fieldStages          = plan.LoadField{Name: "stages", Kind: plan.StagesField, Required: true, HelpKey: "editor.stages"}
	fieldMaxDuration     = plan.LoadField{Name: "max_duration", Kind: plan.DurationField, Default: "10m", HelpKey: "editor.maxDuration"}
	fieldTimeUnit        = plan.LoadField{Name: "time_unit", Kind: plan.DurationField, Default: "1s", HelpKey: "editor.timeUnit"}
	fieldPreAllocatedVUs = plan.LoadField{Name: "pre_allocated_vus", Kind: plan.IntField, Required: true, HelpKey: "editor.preAllocated"}
	fieldMaxVUs          = plan.LoadField{Name: "max_vus", Kind: plan.IntField, HelpKey: "editor.maxVus"}
)

// Field paths that set an executor's peak VUs or length (plan.ExecutorSpec.VUsField, LengthField).
func stagesPath(*plan.Load) string      { return "load.stages" }
func maxDurationPath(*plan.Load) string { return "load.max_duration" }

// spawnEach starts n VUs running loop, giving up when the run is being stopped.
func (e *Engine) spawnEach(ctx context.Context, n int, loop func(*vu)) {
	for i := 0; i < n && !e.stopping(ctx, i); i++ {
		e.spawn(loop)
	}
}

// closedLoop runs a closed-model VU: it starts its next iteration as soon as the previous one
// ends, so latency is measured from the moment the VU begins each request. more reports whether
// the VU may start its it-th iteration (0-based; nil: every one until the end).
func (v *vu) closedLoop(more func(it int) bool) {
	e := v.e
	e.rec.VUStarted()
	defer e.rec.VUStopped()
	for it := 0; ; it++ {
		if e.stop.Load() || v.state.Load() == abandoned {
			return
		}
		now := e.now()
		if now >= e.endAt {
			return
		}
		if more != nil && !more(it) {
			return
		}
		v.iteration(now, now)
		v.pause()
	}
}

// outOfFilesPause is how long a closed-model VU waits after its connect failed for want of file
// descriptors (too_many_open_files). Retrying at once cannot succeed until other sockets close: a
// run with more VUs than the open-files limit allows otherwise spins through millions of such
// failures a second, burning the CPU and memory the working VUs need.
const outOfFilesPause = 100 * time.Millisecond

// Backoff of a closed-model VU whose connections keep failing at once (connect_refused,
// blocked_target: a dead port or a refused address answers in microseconds, so one VU would
// otherwise dial ~10 000 times a second): after its n-th failure in a row it waits
// connFailPauseMin·2^(n-1), at most connFailPauseMax — 1, 2, 4 … 64, then 100 ms — and the first
// request that gets a connection resets it. Every attempt is still sent and counted; only the
// pace of a VU that cannot connect drops (to ~10 attempts a second). Open models are not paused:
// their arrivals are scheduled, and each one is counted as it comes.
const (
	connFailPauseMin = time.Millisecond
	connFailPauseMax = 100 * time.Millisecond
)

// pause holds a closed-model VU after an iteration that ran out of file descriptors, or whose
// connection failed at once (connFails in a row, see connFailPauseMin). The pause ends early when
// the run stops, and never outlasts the run's duration.
func (v *vu) pause() {
	var d time.Duration
	switch {
	case v.outOfFiles:
		v.outOfFiles = false
		d = outOfFilesPause
	case v.connFails > 0:
		d = min(connFailPauseMin<<(v.connFails-1), connFailPauseMax)
	default:
		return
	}
	d = min(d, v.e.endAt-v.e.now())
	for ; d > 0 && !v.e.stop.Load(); d -= parkStep {
		time.Sleep(min(d, parkStep))
	}
}

// parkStep bounds how long a parked VU sleeps before it looks at the stop flag again.
const parkStep = 50 * time.Millisecond

// launchProfile starts one VU per unit of the profile's peak (of this engine's segment), each
// running profileLoop.
func (e *Engine) launchProfile(ctx context.Context, prof *profile) {
	e.spawnEach(ctx, e.share(prof.peak()), func(v *vu) { v.profileLoop(prof) })
}

// share is how many of the run's first n numbered units (VUs, iterations) this engine's segment
// owns: n on a single machine.
func (e *Engine) share(n int) int { return int(e.opts.Segment.Count(int64(n))) }

// profileLoop runs a VU of a closed model whose VU count follows a profile (constant-vus,
// ramping-vus, concurrency-sweep): VU i (its number in the whole run) works while the profile's
// value — or the count SetVUs set (Engine.level) — is at least i+1, finishing its current iteration before it parks (k6's
// graceful ramp-down), and sleeps until the profile next reaches it. A VU of a run SetVUs
// applies to waits to the run's end rather than ending early, as the count may rise again.
func (v *vu) profileLoop(prof *profile) {
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
		if e.level(prof, elapsed) >= float64(v.gid+1) {
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
		at, ok := e.nextActive(prof, v.gid, elapsed)
		if !ok {
			return
		}
		time.Sleep(min(at-elapsed, parkStep))
	}
}
