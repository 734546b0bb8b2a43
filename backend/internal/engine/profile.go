package engine

import (
	"math"
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
)

// profile is a piecewise-linear function of elapsed time: the number of active VUs of ramping-vus
// (stages) or concurrency-sweep (steps). VU i (0-based) is active while value(t) ≥ i+1, so VUs are
// added and removed one by one as the ramp passes each whole number.
type profile struct {
	segs []segment
}

type segment struct {
	start, end time.Duration
	from, to   float64
}

// value is the profile at elapsed time t (0 after the end).
func (p profile) value(t time.Duration) float64 {
	for _, s := range p.segs {
		if t >= s.start && t < s.end {
			return s.from + (s.to-s.from)*float64(t-s.start)/float64(s.end-s.start)
		}
	}
	return 0
}

// nextActive returns the earliest elapsed time ≥ t at which VU i is active, or false when it never
// is again.
func (p profile) nextActive(i int, t time.Duration) (time.Duration, bool) {
	need := float64(i + 1)
	for _, s := range p.segs {
		if s.end <= t {
			continue
		}
		lo := max(s.start, t)
		if p.valueIn(s, lo) >= need {
			return lo, true
		}
		if s.to > s.from && s.to >= need {
			// from + (to-from)·(x-start)/(end-start) = need
			x := s.start + time.Duration(math.Ceil((need-s.from)/(s.to-s.from)*float64(s.end-s.start)))
			if x < s.end && x >= lo {
				return x, true
			}
		}
	}
	return 0, false
}

func (p profile) valueIn(s segment, t time.Duration) float64 {
	return s.from + (s.to-s.from)*float64(t-s.start)/float64(s.end-s.start)
}

// peak is the largest value of the profile.
func (p profile) peak() int {
	m := 0.0
	for _, s := range p.segs {
		m = max(m, s.from, s.to)
	}
	return int(m)
}

// schedule gives the scheduled start of the i-th iteration (0-based) of an arrival-rate executor:
// the time t at which the cumulative arrivals N(t) = ∫rate reach i. Within a stage whose rate goes
// linearly from r0 to r1 over D, N(s+τ) = N(s) + r0·τ + (r1−r0)·τ²/(2D); solving for τ with the
// numerically stable root τ = 2Δ / (r0 + √(r0² + 2(r1−r0)Δ/D)), Δ = i − N(s).
type schedule struct {
	stages []rateStage
}

type rateStage struct {
	start, dur float64 // seconds
	r0, r1     float64 // iterations per second
	n0, n1     float64 // cumulative arrivals at start and end
}

func newSchedule(startRate float64, stages []plan.Stage, unit time.Duration) schedule {
	var sc schedule
	per := float64(time.Second) / float64(unit)
	t, n, r := 0.0, 0.0, startRate*per
	for _, s := range stages {
		d := s.Duration.D().Seconds()
		r1 := float64(s.Target) * per
		st := rateStage{start: t, dur: d, r0: r, r1: r1, n0: n, n1: n + (r+r1)*d/2}
		sc.stages = append(sc.stages, st)
		t, n, r = t+d, st.n1, r1
	}
	return sc
}

// at returns the scheduled offset of iteration i, or false when the schedule ends before it.
func (sc schedule) at(i int64) (time.Duration, bool) {
	x := float64(i)
	for _, s := range sc.stages {
		if x >= s.n1 {
			continue
		}
		delta := x - s.n0
		var tau float64
		if s.r0 == s.r1 {
			tau = delta / s.r0
		} else if delta > 0 { // the stage's first iteration is due at its start (from rate 0: not 0/0)
			tau = 2 * delta / (s.r0 + math.Sqrt(s.r0*s.r0+2*(s.r1-s.r0)*delta/s.dur))
		}
		return time.Duration((s.start + tau) * float64(time.Second)), true
	}
	return 0, false
}

// index returns the number of iterations due by offset t (N(t), rounded down): the index of the
// first iteration due at or after t, give or take one for rounding.
func (sc schedule) index(t time.Duration) int64 {
	x := t.Seconds()
	n := 0.0
	for _, s := range sc.stages {
		if x >= s.start+s.dur {
			n = s.n1
			continue
		}
		tau := max(x-s.start, 0)
		n = s.n0 + s.r0*tau + (s.r1-s.r0)*tau*tau/(2*s.dur)
		break
	}
	return max(int64(n)-1, 0)
}

// minRate is the schedule's lowest rate, in iterations per second, over the due times of its
// iterations lo … hi−1 (a stage's rate is linear, so the lowest is at an end of that span or of a
// stage within it); false when iteration lo is beyond the schedule.
func (sc schedule) minRate(lo, hi int64) (float64, bool) {
	t0, ok := sc.at(lo)
	if !ok {
		return 0, false
	}
	x0, x1 := t0.Seconds(), math.Inf(1)
	if t1, ok := sc.at(hi - 1); ok {
		x1 = t1.Seconds()
	}
	m := math.Inf(1)
	for _, s := range sc.stages {
		if s.start+s.dur < x0 || s.start > x1 {
			continue
		}
		m = min(m, s.rateAt(max(s.start, x0)), s.rateAt(min(s.start+s.dur, x1)))
	}
	return m, !math.IsInf(m, 1)
}

// rateAt is the stage's rate at x seconds into the run (within the stage).
func (s rateStage) rateAt(x float64) float64 {
	if s.dur <= 0 {
		return s.r1
	}
	return s.r0 + (s.r1-s.r0)*(x-s.start)/s.dur
}

// total is the number of iterations the schedule holds.
func (sc schedule) total() float64 {
	if len(sc.stages) == 0 {
		return 0
	}
	return sc.stages[len(sc.stages)-1].n1
}
