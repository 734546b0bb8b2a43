package engine

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
	seg "github.com/volley-load/volley/backend/internal/segment"
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
	seg          seg.Blocked               // the engine's segment in blocks (blockOf): which iteration numbers are its own
	blockCache   atomic.Pointer[[2]uint64] // blockOf's last page: its first number + 1, its block
	sched        schedule
	preAllocated int
	maxVUs       int64
	next         atomic.Int64             // the next of this segment's iterations to claim (Segment.Global: its number in the run)
	pool         atomic.Int64             // VUs spawned
	waiting      atomic.Int64             // VUs holding a claimed, not yet due iteration
	stopWakeups  func()                   // precise timer wakeups (wakeup_linux.go)
	override     atomic.Pointer[schedule] // the schedule SetRate made; nil: sched (control.go)
	// sleepers are the pool's VUs (register), which a change or the stop wakes (wakeAll); wakeMu
	// guards the list, taken once per VU and once per change, never per iteration.
	wakeMu   sync.Mutex
	sleepers []*vu
}

// newArrival prepares an open model's run over sched with the plan's VU pool.
func newArrival(e *Engine, sched schedule) *arrival {
	l := &e.p.Load
	// A segment's pool is its share of the plan's, at least one VU (it has arrivals to start).
	pre, peak := max(1, e.share(l.PreAllocatedVUs)), max(1, e.share(max(l.MaxVUs, l.PreAllocatedVUs)))
	a := &arrival{e: e, sched: sched, preAllocated: pre, maxVUs: int64(max(peak, pre))}
	a.seg = e.opts.Segment.InBlocks(a.blockOf)
	return a
}

// blockOf is how many consecutive iterations of the run's iterations lo … hi−1 (a page of
// segment.Blocked) an agent owns together: as many as the plan's schedule, at its lowest rate over
// those iterations, puts within one wakeupGap — rounded down to a block size the page allows, at
// most maxIterationBlock. A single machine starts the iterations due within a gap on one wakeup
// (nextDue); split one by one over n agents, each agent's own iterations would be n times further
// apart, each on a wakeup of its own — n times the wakeups (and their CPU) for the same load. In
// blocks, each agent starts its block on one wakeup, and the agents' wakeups together are about the
// single machine's. The lowest rate keeps every block within about one gap of the schedule, so an
// agent never carries the whole rate for longer than a single machine batches it (its share of
// the VU pool is enough). It depends on the plan alone (not on SetRate): every agent computes the
// same blocks. One page's answer is cached (pages are hundreds of iterations).
func (a *arrival) blockOf(lo, hi int64) int64 {
	key := uint64(lo) + 1
	if c := a.blockCache.Load(); c != nil && c[0] == key {
		return int64(c[1])
	}
	b := int64(1)
	if r, ok := a.sched.minRate(lo, hi); ok {
		want := min(math.Ceil(float64(r*wakeupGap.Seconds())-1e-9), maxIterationBlock)
		for _, n := range blockSizes {
			if float64(n) <= want {
				b = n
			}
		}
	}
	a.blockCache.Store(&[2]uint64{key, uint64(b)})
	return b
}

// blockSizes are the block sizes a page allows (the divisors of segment.PageBlocks up to
// maxIterationBlock), ascending.
var blockSizes = []int64{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96}

// maxIterationBlock bounds the block (192 000/s and more share blocks of 96).
const maxIterationBlock = 96

// register gives v its own wake channel and lists it for wakeAll (once, as the VU starts).
func (a *arrival) register(v *vu) {
	v.woken = make(chan struct{}, 1)
	a.wakeMu.Lock()
	a.sleepers = append(a.sleepers, v)
	a.wakeMu.Unlock()
}

// wakeAll wakes every VU waiting for a claimed iteration (a new schedule, or the run's stop): a
// non-blocking send on each VU's own channel, so the VUs share no channel or lock as they wait.
// A VU not waiting keeps the wake for its next wait, which then ends at once and plans again.
func (a *arrival) wakeAll() {
	a.wakeMu.Lock()
	defer a.wakeMu.Unlock()
	for _, v := range a.sleepers {
		select {
		case v.woken <- struct{}{}:
		default:
		}
	}
}

// stopped wakes the waiting VUs when the run stops (Engine.Run): they end at once.
func (a *arrival) stopped() { a.wakeAll() }

// sleep waits d, or less if wakeAll wakes v meanwhile. The VU's timer is made once and reused:
// no allocation per wait.
func (a *arrival) sleep(v *vu, d time.Duration) {
	if v.wake == nil {
		v.wake = time.NewTimer(d)
	} else {
		v.wake.Reset(d)
	}
	select {
	case <-v.wake.C:
	case <-v.woken:
		v.wake.Stop()
	}
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
// run's cut (the planned end, or the moment of an early stop) but that no VU claimed — due while
// every VU was still busy at the end — in their due seconds, and waits (bounded) for the VUs
// holding a claimed one (closeBefore), so that sent + dropped is exactly the schedule's count up
// to the cut, second by second. It runs once the VUs are done (or abandoned, having started what
// they run).
func (a *arrival) reconcile() { a.closeBefore(a.cut()) }

// Counting by due second. Every iteration of the schedule is counted once, as started or as
// dropped, in the second its due time falls in (metrics.Shard.StartedDue), by whoever decides
// it first. A VU publishes the iteration it claimed in vu.claim (claiming before the atomic add
// that claims it, its number + 1 after, settling while it counts it, 0 once counted) and decides
// it with a compare-and-swap from its number to settling (settle). The collector closes a second
// once it is more than dropTolerance over (closeBefore): an iteration due in it that no VU has
// claimed, or that a VU claimed and has not started yet, can no longer start within
// dropTolerance of its due time, so the collector counts it as dropped itself — the unclaimed
// ones by claiming them all at once (a compare-and-swap on the claim counter), the claimed ones by
// taking each VU's claim (a compare-and-swap to 0; the VU's own then fails, and it does not run
// the iteration). It waits only for VUs in the middle of claiming or settling (a few
// instructions), then takes the second's counts.

// vu.claim while the VU claims an iteration whose number it does not know yet, and while it
// counts the one it decided.
const (
	claiming = -1
	settling = -2
)

// maxSettle bounds how long closeBefore waits for VUs in the middle of claiming or settling: a VU
// held up there longer (its thread descheduled) counts its iteration in a later sample
// (metrics.Recorder.TakeDue's late counts), never twice and never not at all.
const maxSettle = 500 * time.Millisecond

// cut is when the run's schedule ends as far as the run goes: the planned end, or an earlier stop.
// Iterations due at or after it are no part of the run: they are neither started nor counted.
func (a *arrival) cut() time.Duration {
	t := a.e.endAt
	if s := time.Duration(a.e.stopAt.Load()); s > 0 && s < t {
		t = s
	}
	return t
}

// second is the due second (1 = the first; the collector's interval) of a due time.
func (a *arrival) second(due time.Duration) int64 { return int64(due/a.e.opts.Interval) + 1 }

// settle decides iteration k, which v claimed, due at due: unless closeBefore has counted it as
// dropped already, it counts it as started (start) or dropped in its due second and releases the
// claim. It reports whether the VU is to run it: start, not taken by closeBefore, and due before
// the cut (one due at or after the cut is no part of the run, and is not counted).
func (a *arrival) settle(v *vu, k int64, due time.Duration, start bool) bool {
	if !v.claim.CompareAndSwap(k+1, settling) {
		return false // closeBefore counted it as dropped: too late to start
	}
	ok := due < a.cut()
	if ok && start {
		v.shard.StartedDue(a.second(due))
	} else if ok {
		v.shard.DroppedDue(a.second(due))
		a.e.rec.Dropped()
	}
	v.claim.Store(0)
	return ok && start
}

// closeBefore makes every iteration of this engine's segment due before t decided, so that the
// counts of the seconds before t are complete; t ≤ now − dropTolerance, so none of them can still
// start on time. It claims the ones no VU has claimed, and takes the claims of VUs that have not
// started theirs yet, and counts them all as dropped in their due seconds; it waits, at most
// maxSettle, for VUs in the middle of claiming or settling. Safe to call concurrently with the
// VUs and with itself.
func (a *arrival) closeBefore(t time.Duration) {
	e := a.e
	t = min(t, a.cut()) // a stop later than this is later than t: t ≤ now − dropTolerance
	sc := a.cur()
	hi := a.seg.Count(dueBefore(sc, t)) // this segment's iterations 0 … hi−1 are due before t
	for {
		c := a.next.Load()
		if c >= hi {
			break
		}
		if a.next.CompareAndSwap(c, hi) {
			a.dropRange(sc, c, hi)
			break
		}
	}
	// Every VU that claimed before the swap above is listed: a VU is listed before it runs.
	vus := e.listed.Load()
	if vus == nil {
		return
	}
	deadline := time.Now().Add(maxSettle)
	for _, v := range *vus {
		for {
			c := v.claim.Load()
			if c == 0 || c > hi { // c − 1 is the claimed iteration: due at t or later
				break
			}
			if c > 0 {
				if v.claim.CompareAndSwap(c, 0) {
					a.dropRange(sc, c-1, c)
					break
				}
				continue // the VU settled it meanwhile
			}
			if time.Now().After(deadline) {
				return
			}
			time.Sleep(20 * time.Microsecond) // a timer wakes the collector next; Gosched would queue it behind every VU
		}
	}
}

// dropRange counts this segment's iterations lo … hi−1 on sc as dropped, each in its due second.
func (a *arrival) dropRange(sc *schedule, lo, hi int64) {
	e := a.e
	for lo < hi {
		at, _ := sc.at(a.seg.Global(lo))
		sec := a.second(at)
		end := min(hi, a.seg.Count(dueBefore(sc, time.Duration(sec)*e.opts.Interval)))
		end = max(end, lo+1) // lo is due in sec, so end > lo; never loop on a rounding
		e.rec.DroppedDueN(sec, end-lo)
		e.rec.DroppedN(end - lo)
		lo = end
	}
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
	defer v.claim.Store(0)
	a.register(v)
	for {
		if e.stop.Load() || v.state.Load() == abandoned {
			return
		}
		v.claim.Store(claiming)
		k := a.next.Add(1) - 1
		v.claim.Store(k + 1)
		i := a.seg.Global(k) // the run's iteration number
		sc := a.cur()
		due := a.due(sc, i)
		now := e.now()
		if due >= e.endAt && now >= e.endAt {
			return
		}
		if wait := due - now; wait > 0 {
			a.waiting.Add(1)
			for wait > 0 && !e.stop.Load() {
				a.sleep(v, min(wait, parkStep))
				if s := a.cur(); s != sc { // SetRate: plan the claimed iteration again
					sc = s
					due = a.due(sc, i)
				}
				now = e.now()
				wait = due - now
			}
			end := e.stop.Load() || due >= e.endAt // not run: dropped if it was due before the cut
			run := a.settle(v, k, due, !end)
			if a.waiting.Add(-1) == 0 {
				a.grow()
			}
			if end {
				return
			}
			if !run {
				continue // it woke so late that the collector dropped it
			}
		} else if -wait > dropTolerance {
			a.settle(v, k, due, false)
			continue
		} else {
			if !a.settle(v, k, due, true) {
				continue
			}
			if a.waiting.Load() == 0 {
				a.grow()
			}
		}
		v.shard.Lag((now - due).Microseconds())
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

// nextWakeup is the wakeup plan for startWakeups: when this segment's next iterations are due,
// no sooner than wakeupGap from now; false after the last iteration.
func (a *arrival) nextWakeup(now time.Duration) (time.Duration, bool) {
	w, ok := a.nextDue(now)
	return a.wakeupCap(now, w, ok)
}

// nextDue is the wakeup for the segment's next iterations: t, the due time of the first one due
// after now, or, when more of its own are due within wakeupGap of t, the last of those — they all
// start on that one wakeup, each at most wakeupGap late — and never sooner than now + wakeupGap.
// Iterations due alone start on time. An agent looks only at its own iterations, which come in
// blocks (iterationBlock), so that its block starts on one wakeup as a single machine's
// iterations due within a gap do.
//
// The search looks at a bounded number of iterations: at rates where more than that fall within
// one nanosecond of rounding, it wakes after wakeupGap instead of walking them all (a stop must
// never wait for this loop).
func (a *arrival) nextDue(now time.Duration) (time.Duration, bool) {
	e := a.e
	if e.stop.Load() {
		return 0, false
	}
	sc := a.cur()
	k := a.seg.Count(sc.index(now)) // the first of the segment's iterations at or after index(now)
	first, last := time.Duration(-1), time.Duration(-1)
	for range 1024 {
		t, ok := sc.at(a.seg.Global(k))
		if !ok || t >= e.endAt {
			if first < 0 {
				return 0, false
			}
			break
		}
		if first >= 0 && t >= first+wakeupGap {
			break
		}
		if t > now {
			if first < 0 {
				first = t
			}
			last = t
		}
		k++
	}
	return max(last, now+wakeupGap), true // last < 0: none found in 1024, at an extreme rate
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
