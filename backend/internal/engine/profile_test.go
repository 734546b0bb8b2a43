package engine

import (
	"math"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
	seg "github.com/volley-load/volley/backend/internal/segment"
)

func st(d time.Duration, target int) plan.Stage {
	return plan.Stage{Duration: plan.Duration(d), Target: target}
}

func TestRampProfile(t *testing.T) {
	p := rampProfile(0, []plan.Stage{st(10*time.Second, 10), st(10*time.Second, 10), st(5*time.Second, 0)})
	if v := p.value(5 * time.Second); v != 5 {
		t.Fatalf("value(5s) = %v", v)
	}
	if v := p.value(15 * time.Second); v != 10 {
		t.Fatalf("value(15s) = %v", v)
	}
	// VU 4 (the 5th) starts when the ramp reaches 5, at 5 s.
	if at, ok := p.nextActive(4, 0); !ok || at != 5*time.Second {
		t.Fatalf("nextActive(4) = %v %v", at, ok)
	}
	// During the ramp-down VU 9 leaves at once and never comes back.
	if _, ok := p.nextActive(9, 21*time.Second); ok {
		t.Fatal("VU 9 active again in the ramp-down")
	}
	if at, ok := p.nextActive(0, 12*time.Second); !ok || at != 12*time.Second {
		t.Fatalf("VU 0 mid-plateau: %v %v", at, ok)
	}
	if p.peak() != 10 {
		t.Fatal("peak")
	}
}

func TestStepProfile(t *testing.T) {
	p := stepProfile([]int{10, 50}, 2*time.Second)
	if p.value(time.Second) != 10 || p.value(3*time.Second) != 50 || p.value(5*time.Second) != 0 {
		t.Fatal("step values")
	}
	if at, ok := p.nextActive(20, 0); !ok || at != 2*time.Second {
		t.Fatalf("VU 20 starts with level 2: %v %v", at, ok)
	}
}

func TestConstantSchedule(t *testing.T) {
	sc := newSchedule(100, []plan.Stage{st(6*time.Second, 100)}, time.Second)
	if sc.total() != 600 {
		t.Fatalf("total %v", sc.total())
	}
	for _, i := range []int64{0, 1, 99, 599} {
		at, ok := sc.at(i)
		want := time.Duration(i) * 10 * time.Millisecond
		if !ok || absDur(at-want) > time.Microsecond {
			t.Errorf("at(%d) = %v, want %v", i, at, want)
		}
	}
	if _, ok := sc.at(600); ok {
		t.Error("iteration 600 of a 600-iteration schedule")
	}
}

func TestRampingScheduleMatchesIntegral(t *testing.T) {
	// 0 → 100/s over 10 s: N(t) = 5t², 500 arrivals; then 100/s for 5 s: 500 more.
	sc := newSchedule(0, []plan.Stage{st(10*time.Second, 100), st(5*time.Second, 100)}, time.Second)
	if sc.total() != 1000 {
		t.Fatalf("total %v", sc.total())
	}
	for _, i := range []int64{1, 20, 125, 499} {
		at, _ := sc.at(i)
		want := math.Sqrt(float64(i) / 5)
		if math.Abs(at.Seconds()-want) > 1e-6 {
			t.Errorf("at(%d) = %.6f s, want %.6f", i, at.Seconds(), want)
		}
	}
	at, _ := sc.at(750)
	if math.Abs(at.Seconds()-12.5) > 1e-6 {
		t.Errorf("at(750) = %v", at)
	}
	// Per-minute rates: 60/min is 1/s.
	sc = newSchedule(0, []plan.Stage{st(10*time.Second, 60)}, time.Minute)
	if math.Abs(sc.total()-5) > 1e-9 {
		t.Errorf("per-minute total %v", sc.total())
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// index(t) is where nextWakeup starts looking: never past the first iteration due at or after t,
// and at most two short of it, on constant and ramping stages.
func TestScheduleIndexInvertsAt(t *testing.T) {
	sc := newSchedule(0, []plan.Stage{st(10*time.Second, 100), st(5*time.Second, 100), st(5*time.Second, 20)}, time.Second)
	for ms := 0; ms < 20000; ms += 7 {
		at := time.Duration(ms) * time.Millisecond
		first := int64(0)
		for {
			d, ok := sc.at(first)
			if !ok || d >= at {
				break
			}
			first++
		}
		if i := sc.index(at); i > first || i < first-2 {
			t.Fatalf("index(%v) = %d, first iteration due at or after it is %d", at, i, first)
		}
	}
}

// nextWakeup asks for a wakeup at each due time when iterations are sparse; when several are due
// within wakeupGap of the next, at the last of them (they start together); and at most every
// wakeupGap when they are dense.
func TestNextWakeup(t *testing.T) {
	sparse := &arrival{sched: newSchedule(100, []plan.Stage{st(time.Second, 100)}, time.Second), e: &Engine{endAt: time.Second}}
	if w, ok := sparse.nextWakeup(25 * time.Millisecond); !ok || absDur(w-30*time.Millisecond) > time.Microsecond {
		t.Errorf("sparse: %v %v, want 30ms", w, ok)
	}
	if _, ok := sparse.nextWakeup(995 * time.Millisecond); ok {
		t.Error("a wakeup after the last iteration")
	}
	// 2 500/s: due at 0, 400 µs, 800 µs, …; from 10 µs the next two (400, 800) share a wakeup at 800.
	pairs := &arrival{sched: newSchedule(2500, []plan.Stage{st(time.Second, 2500)}, time.Second), e: &Engine{endAt: time.Second}}
	if w, ok := pairs.nextWakeup(10 * time.Microsecond); !ok || absDur(w-800*time.Microsecond) > time.Microsecond {
		t.Errorf("pairs: %v %v, want 800µs", w, ok)
	}
	dense := &arrival{sched: newSchedule(100000, []plan.Stage{st(time.Second, 100000)}, time.Second), e: &Engine{endAt: time.Second}}
	if w, ok := dense.nextWakeup(100 * time.Millisecond); !ok || w < 100*time.Millisecond+wakeupGap || w > 100*time.Millisecond+wakeupGap+10*time.Microsecond {
		t.Errorf("dense: %v %v, want now + %v (+ at most one 10 µs interval)", w, ok, wakeupGap)
	}
}

// blocked is an arrival over sc for part j of sq (nil: the whole), its iterations in blocks.
func blocked(sc schedule, sq *seg.Sequence, j int) *arrival {
	a := &arrival{sched: sc, e: &Engine{endAt: time.Second}}
	if sq != nil {
		a.e.opts.Segment = sq.Segment(j)
	}
	a.seg = a.e.opts.Segment.InBlocks(a.blockOf)
	return a
}

// Over agents, each agent's wakeups are for its own iterations only, which come in blocks of as
// many as a wakeupGap holds at the schedule's rate: at 5 000/s over three equal agents, blocks of
// 3 (600 µs of the schedule), each started on one wakeup at the block's last due time.
func TestNextWakeupOwnBlocks(t *testing.T) {
	sc := newSchedule(5000, []plan.Stage{st(time.Second, 5000)}, time.Second)
	eq, err := seg.Equal(3)
	if err != nil {
		t.Fatal(err)
	}
	if b := blocked(sc, eq, 0).blockOf(0, 576); b != 3 {
		t.Fatalf("block %d at 5 000/s, want 3", b)
	}
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	for _, c := range []struct {
		part     int
		now, max time.Duration
	}{
		{0, us(10), us(510)},    // its block 0 (0, 200, 400 µs): 200 and 400 on one wakeup, no sooner than now + gap
		{1, us(10), us(1000)},   // block 1: iterations 3–5 at 600, 800, 1000 µs
		{2, us(10), us(1600)},   // block 2: 1200, 1400, 1600 µs
		{0, us(510), us(2200)},  // block 3: 1800, 2000, 2200 µs — blocks 1 and 2 are not its own
		{1, us(1010), us(2800)}, // block 4
	} {
		w, ok := blocked(sc, eq, c.part).nextWakeup(c.now)
		if !ok || absDur(w-c.max) > time.Microsecond {
			t.Errorf("part %d at %v: wakeup %v %v, want %v", c.part, c.now, w, ok, c.max)
		}
	}
}

// A page's block follows the schedule's lowest rate over its iterations: none at 200/s, so the
// quiet part of a spike plan is split one by one (a block of 20 there would be 100 ms of the whole
// rate on one agent's share of the VUs); 16 (the allowed size below 20) inside a 40 000/s stage;
// 1 for the page where the spike starts; the largest for an absurd rate, 1 past the schedule.
func TestBlockFollowsTheRate(t *testing.T) {
	sc := newSchedule(200, []plan.Stage{st(2*time.Second, 200), st(time.Millisecond, 40000), st(time.Second, 40000)}, time.Second)
	eq, err := seg.Equal(2)
	if err != nil {
		t.Fatal(err)
	}
	a := blocked(sc, eq, 0)
	page := int64(seg.PageBlocks * 2)
	for _, c := range []struct {
		lo   int64
		want int64
	}{{0, 1}, {page, 1}, {400 - page/2, 1}, {1000, 16}, {20000, 16}, {10_000_000, 1}} {
		if got := a.blockOf(c.lo, c.lo+page); got != c.want {
			t.Errorf("page from iteration %d: block %d, want %d", c.lo, got, c.want)
		}
	}
	huge := blocked(newSchedule(1e9, []plan.Stage{st(time.Second, 1e9)}, time.Second), eq, 0)
	if b := huge.blockOf(0, page); b != maxIterationBlock {
		t.Errorf("block %d at 10⁹/s, want %d", b, maxIterationBlock)
	}
	if b := blocked(schedule{}, eq, 0).blockOf(0, page); b != 1 {
		t.Errorf("block %d for an empty schedule", b)
	}
}
