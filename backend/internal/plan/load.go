package plan

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The built-in executors' names, as k6 calls them (users know these words), plus Volley's
// concurrency-sweep. Package engine registers them (RegisterExecutor).
const (
	ConstantVUs         = "constant-vus"
	RampingVUs          = "ramping-vus"
	PerVUIterations     = "per-vu-iterations"
	SharedIterations    = "shared-iterations"
	ConstantArrivalRate = "constant-arrival-rate"
	RampingArrivalRate  = "ramping-arrival-rate"
	ConcurrencySweep    = "concurrency-sweep"
)

// DefaultSweepLevels are the VU levels of a concurrency sweep when none are given: the levels of
// the published tool comparisons.
var DefaultSweepLevels = []int{10, 50, 100, 500, 1000}

// Stage is one segment of a ramp: the value (VUs, or iterations per time_unit) moves linearly to
// Target over Duration.
type Stage struct {
	Duration Duration `json:"duration"`
	Target   int      `json:"target"`
}

// Load is the load model. Which fields apply depends on Executor; each executor's registration
// (ExecutorSpec, in package engine's executor_*.go, listed by ExecutorInfos) names its fields,
// their defaults and its own rules:
//
//	constant-vus           vus, duration
//	ramping-vus            start_vus, stages
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
	spec, ok := LookupExecutor(l.Executor)
	if !ok {
		return
	}
	for _, f := range spec.Fields {
		l.fillDefault(f)
	}
	if spec.Defaults != nil {
		spec.Defaults(l)
	}
}

func (l *Load) validate(v *ValidationError) {
	spec, ok := LookupExecutor(l.Executor)
	if !ok {
		v.add("load.executor", fmt.Sprintf("%q is not a supported executor (%s)", l.Executor, strings.Join(ExecutorNames(), ", ")))
		return
	}
	set := l.set()
	allowed := map[string]bool{}
	for _, f := range spec.Fields {
		allowed[f.Name] = true
		if f.Required && !set[f.Name] {
			v.add("load."+f.Name, requiredMsg(f.Name, l.Executor))
		}
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
	maxPerUnit, rateMsg := l.RateBound()
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
	if spec.Validate != nil {
		spec.Validate(l, v)
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

// RateBound is the highest rate, start_rate or stage target an arrival-rate executor may ask for,
// in iterations per time_unit, and the message that names it: rate × (1s / time_unit) ≤
// MaxRatePerSecond, computed without overflow (for a time_unit out of its range, the bound per
// second).
func (l *Load) RateBound() (perUnit int64, msg string) {
	perUnit = int64(MaxRatePerSecond)
	if tu := l.TimeUnit.D(); tu >= MinTimeUnit && tu <= MaxLength {
		perUnit = int64(float64(MaxRatePerSecond) * tu.Seconds())
	}
	return perUnit, fmt.Sprintf("must be at most %d per time_unit (%d iterations/s)", perUnit, MaxRatePerSecond)
}

// StagesLength is the sum of the stages' durations.
func (l *Load) StagesLength() time.Duration {
	var t time.Duration
	for _, s := range l.Stages {
		t += s.Duration.D()
	}
	return t
}

// EachStage calls f with the index and target of each stage that the common checks let through
// (the first MaxStages, with a target that is not negative), for an executor's own bound on
// targets.
func (l *Load) EachStage(f func(i int, target int)) {
	for i, s := range l.Stages {
		if i >= MaxStages {
			break
		}
		if s.Target >= 0 {
			f(i, s.Target)
		}
	}
}

// StageField is the field path of stage i's field name ("load.stages[2].target").
func StageField(i int, name string) string {
	return "load.stages[" + strconv.Itoa(i) + "]." + name
}

// Length is how long the load model runs when nothing stops it early (the executor's
// ExecutorSpec.Length; the duration field for an executor that is not registered).
func (l *Load) Length() time.Duration {
	if spec, ok := LookupExecutor(l.Executor); ok {
		return spec.Length(l)
	}
	return l.Duration.D()
}

// PeakVUs is the most VUs the load model may run at once (the executor's ExecutorSpec.PeakVUs;
// the vus field for an executor that is not registered).
func (l *Load) PeakVUs() int {
	if spec, ok := LookupExecutor(l.Executor); ok {
		return spec.PeakVUs(l)
	}
	return l.VUs
}
