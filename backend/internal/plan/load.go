package plan

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Executor names, as k6 calls them (users know these words), plus Volley's concurrency-sweep.
const (
	ConstantVUs         = "constant-vus"
	RampingVUs          = "ramping-vus"
	PerVUIterations     = "per-vu-iterations"
	SharedIterations    = "shared-iterations"
	ConstantArrivalRate = "constant-arrival-rate"
	RampingArrivalRate  = "ramping-arrival-rate"
	ConcurrencySweep    = "concurrency-sweep"
)

// Executors lists the supported executors in the order the UI offers them.
var Executors = []string{ConstantVUs, RampingVUs, PerVUIterations, SharedIterations,
	ConstantArrivalRate, RampingArrivalRate, ConcurrencySweep}

// DefaultSweepLevels are the VU levels of a concurrency sweep when none are given: the levels of
// the published tool comparisons.
var DefaultSweepLevels = []int{10, 50, 100, 500, 1000}

// Stage is one segment of a ramp: the value (VUs, or iterations per time_unit) moves linearly to
// Target over Duration.
type Stage struct {
	Duration Duration `json:"duration"`
	Target   int      `json:"target"`
}

// Load is the load model. Which fields apply depends on Executor:
//
//	constant-vus           vus, duration
//	ramping-vus            stages, start_vus
//	per-vu-iterations      vus, iterations, max_duration (default 10m)
//	shared-iterations      vus, iterations, max_duration (default 10m)
//	constant-arrival-rate  rate, time_unit (default 1s), duration, pre_allocated_vus, max_vus
//	ramping-arrival-rate   start_rate, time_unit, stages, pre_allocated_vus, max_vus
//	concurrency-sweep      levels (default 10,50,100,500,1000), step_duration (default 10s)
//
// Arrival-rate executors are open models: iterations start on an absolute schedule whatever the
// target does; an iteration that finds no free VU (all max_vus busy) is a dropped iteration.
// GracefulStop bounds how long requests in flight at the end may take before they are cut off and
// reported as interrupted.
type Load struct {
	Executor        string   `json:"executor"`
	VUs             int      `json:"vus,omitempty"`
	Duration        Duration `json:"duration,omitempty"`
	Iterations      int      `json:"iterations,omitempty"`
	MaxDuration     Duration `json:"max_duration,omitempty"`
	Stages          []Stage  `json:"stages,omitempty"`
	StartVUs        int      `json:"start_vus,omitempty"`
	Rate            int      `json:"rate,omitempty"`
	StartRate       int      `json:"start_rate,omitempty"`
	TimeUnit        Duration `json:"time_unit,omitempty"`
	PreAllocatedVUs int      `json:"pre_allocated_vus,omitempty"`
	MaxVUs          int      `json:"max_vus,omitempty"`
	Levels          []int    `json:"levels,omitempty"`
	StepDuration    Duration `json:"step_duration,omitempty"`
	GracefulStop    Duration `json:"graceful_stop"`
}

// fields each executor requires and accepts (besides executor and graceful_stop).
var executorFields = map[string]struct{ required, optional []string }{
	ConstantVUs:         {[]string{"vus", "duration"}, nil},
	RampingVUs:          {[]string{"stages"}, []string{"start_vus"}},
	PerVUIterations:     {[]string{"vus", "iterations"}, []string{"max_duration"}},
	SharedIterations:    {[]string{"vus", "iterations"}, []string{"max_duration"}},
	ConstantArrivalRate: {[]string{"rate", "duration", "pre_allocated_vus"}, []string{"time_unit", "max_vus"}},
	RampingArrivalRate:  {[]string{"stages", "pre_allocated_vus"}, []string{"start_rate", "time_unit", "max_vus"}},
	ConcurrencySweep:    {nil, []string{"levels", "step_duration"}},
}

func (l *Load) set() map[string]bool {
	return map[string]bool{
		"vus": l.VUs != 0, "duration": l.Duration != 0, "iterations": l.Iterations != 0,
		"max_duration": l.MaxDuration != 0, "stages": len(l.Stages) > 0, "start_vus": l.StartVUs != 0,
		"rate": l.Rate != 0, "start_rate": l.StartRate != 0, "time_unit": l.TimeUnit != 0,
		"pre_allocated_vus": l.PreAllocatedVUs != 0, "max_vus": l.MaxVUs != 0,
		"levels": len(l.Levels) > 0, "step_duration": l.StepDuration != 0,
	}
}

func (l *Load) defaults() {
	if l.Executor == "" {
		l.Executor = ConstantVUs
	}
	if l.GracefulStop == 0 {
		l.GracefulStop = Duration(DefaultGrace)
	}
	switch l.Executor {
	case PerVUIterations, SharedIterations:
		if l.MaxDuration == 0 {
			l.MaxDuration = Duration(10 * time.Minute)
		}
	case ConstantArrivalRate, RampingArrivalRate:
		if l.TimeUnit == 0 {
			l.TimeUnit = Duration(time.Second)
		}
		if l.MaxVUs == 0 {
			l.MaxVUs = l.PreAllocatedVUs
		}
	case ConcurrencySweep:
		if len(l.Levels) == 0 {
			l.Levels = append([]int(nil), DefaultSweepLevels...)
		}
		if l.StepDuration == 0 {
			l.StepDuration = Duration(10 * time.Second)
		}
	}
}

func (l *Load) validate(v *ValidationError) {
	spec, ok := executorFields[l.Executor]
	if !ok {
		v.add("load.executor", fmt.Sprintf("%q is not a supported executor (%s)", l.Executor, strings.Join(Executors, ", ")))
		return
	}
	set := l.set()
	allowed := map[string]bool{}
	for _, f := range spec.required {
		allowed[f] = true
		if !set[f] {
			v.add("load."+f, requiredMsg(f, l.Executor))
		}
	}
	for _, f := range spec.optional {
		allowed[f] = true
	}
	var extra []string
	for f, isSet := range set {
		if isSet && !allowed[f] {
			extra = append(extra, f)
		}
	}
	sort.Strings(extra)
	for _, f := range extra {
		v.add("load."+f, "does not apply to "+l.Executor)
	}
	positive := func(name string, n int) {
		if n < 0 || (n == 0 && set[name]) {
			v.add("load."+name, "must be at least 1")
		} else if n > MaxVUs {
			v.add("load."+name, fmt.Sprintf("must be at most %d", MaxVUs))
		}
	}
	positive("vus", l.VUs)
	positive("pre_allocated_vus", l.PreAllocatedVUs)
	positive("max_vus", l.MaxVUs)
	if l.StartVUs < 0 || l.StartVUs > MaxVUs {
		v.add("load.start_vus", fmt.Sprintf("must be 0–%d", MaxVUs))
	}
	if l.Iterations < 0 || l.Iterations > MaxIterations {
		v.add("load.iterations", fmt.Sprintf("must be 1–%d", MaxIterations))
	}
	if l.TimeUnit != 0 && l.TimeUnit < Duration(MinTimeUnit) {
		v.add("load.time_unit", "must be at least 1ms")
	}
	// rate × (1s / time_unit) ≤ MaxRatePerSecond, without overflow: compare rate with the most
	// iterations per time unit that this bound allows.
	maxPerUnit := int64(MaxRatePerSecond)
	if tu := l.TimeUnit.D(); tu >= MinTimeUnit && tu <= MaxLength {
		maxPerUnit = int64(float64(MaxRatePerSecond) * tu.Seconds())
	}
	rateMsg := fmt.Sprintf("must be at most %d per time_unit (%d iterations/s)", maxPerUnit, MaxRatePerSecond)
	if l.Rate < 0 {
		v.add("load.rate", "must be at least 1")
	} else if int64(l.Rate) > maxPerUnit {
		v.add("load.rate", rateMsg)
	}
	if l.StartRate < 0 {
		v.add("load.start_rate", "must not be negative")
	} else if int64(l.StartRate) > maxPerUnit {
		v.add("load.start_rate", rateMsg)
	}
	if l.GracefulStop > Duration(MaxGracefulStop) {
		v.add("load.graceful_stop", "must be at most 10m")
	}
	if len(l.Stages) > MaxStages {
		v.add("load.stages", fmt.Sprintf("has %d stages; at most %d", len(l.Stages), MaxStages))
	}
	if len(l.Levels) > MaxLevels {
		v.add("load.levels", fmt.Sprintf("has %d levels; at most %d", len(l.Levels), MaxLevels))
	}
	if l.MaxVUs != 0 && l.MaxVUs < l.PreAllocatedVUs {
		v.add("load.max_vus", "must be at least pre_allocated_vus")
	}
	for name, d := range map[string]Duration{"duration": l.Duration, "max_duration": l.MaxDuration,
		"time_unit": l.TimeUnit, "step_duration": l.StepDuration} {
		if d < 0 {
			v.add("load."+name, "must be positive")
		} else if d > Duration(MaxLength) {
			v.add("load."+name, "must be at most 24h")
		}
	}
	if l.GracefulStop < 0 {
		v.add("load.graceful_stop", "must not be negative")
	}
	var total time.Duration
	for i, s := range l.Stages {
		if i >= MaxStages {
			break
		}
		f := "load.stages[" + strconv.Itoa(i) + "]"
		if s.Duration <= 0 {
			v.add(f+".duration", "must be positive")
		} else if s.Duration > Duration(MaxLength) {
			v.add(f+".duration", "must be at most 24h")
		} else {
			total += s.Duration.D() // ≤ MaxStages × 24h: no overflow
		}
		if s.Target < 0 {
			v.add(f+".target", "must not be negative")
		} else if l.Executor == RampingVUs && s.Target > MaxVUs {
			v.add(f+".target", fmt.Sprintf("must be at most %d VUs", MaxVUs))
		} else if l.Executor == RampingArrivalRate && int64(s.Target) > maxPerUnit {
			v.add(f+".target", rateMsg)
		}
	}
	if total > MaxLength {
		v.add("load.stages", "must add up to at most 24h")
	}
	for i, n := range l.Levels {
		if i >= MaxLevels {
			break
		}
		if n < 1 || n > MaxVUs {
			v.add("load.levels["+strconv.Itoa(i)+"]", fmt.Sprintf("must be 1–%d VUs", MaxVUs))
		}
	}
	if l.Executor == ConcurrencySweep && len(l.Levels) <= MaxLevels && l.StepDuration > 0 &&
		l.StepDuration <= Duration(MaxLength) && l.StepDuration.D()*time.Duration(len(l.Levels)) > MaxLength {
		v.add("load.step_duration", "levels × step_duration must be at most 24h")
	}
}

func requiredMsg(field, executor string) string {
	switch field {
	case "duration":
		return "is required by " + executor + ` (a duration such as "30s")`
	case "stages":
		return "at least one stage {duration, target} is required by " + executor
	}
	return "must be at least 1 (required by " + executor + ")"
}

// Length is how long the load model runs when nothing stops it early: the scheduled length for
// duration- and stage-based executors, the max_duration bound for iteration-based ones.
func (l *Load) Length() time.Duration {
	switch l.Executor {
	case RampingVUs, RampingArrivalRate:
		var t time.Duration
		for _, s := range l.Stages {
			t += s.Duration.D()
		}
		return t
	case PerVUIterations, SharedIterations:
		return l.MaxDuration.D()
	case ConcurrencySweep:
		return l.StepDuration.D() * time.Duration(len(l.Levels))
	}
	return l.Duration.D()
}

// PeakVUs is the most VUs the load model may run at once.
func (l *Load) PeakVUs() int {
	switch l.Executor {
	case RampingVUs:
		m := l.StartVUs
		for _, s := range l.Stages {
			m = max(m, s.Target)
		}
		return m
	case ConstantArrivalRate, RampingArrivalRate:
		return max(l.MaxVUs, l.PreAllocatedVUs)
	case ConcurrencySweep:
		m := 0
		for _, n := range l.Levels {
			m = max(m, n)
		}
		return m
	}
	return l.VUs
}
