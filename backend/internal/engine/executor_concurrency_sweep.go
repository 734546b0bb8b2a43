package engine

import (
	"context"
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
)

// concurrency-sweep: runs each VU level for one step_duration; the summary gets a capacity table
// (collector.sweepRows): throughput and latency per level, and the knee where more concurrency
// stops adding throughput (closed model).
func init() {
	register(plan.ExecutorSpec{
		ExecutorInfo: plan.ExecutorInfo{Name: plan.ConcurrencySweep, Model: plan.ClosedModel,
			Fields: []plan.LoadField{
				{Name: "levels", Kind: plan.LevelsField, Default: plan.DefaultSweepLevels, HelpKey: "editor.levels"},
				{Name: "step_duration", Kind: plan.DurationField, Default: "10s", HelpKey: "editor.stepDuration"}},
			HelpKey: "editor.executorHelp." + plan.ConcurrencySweep},
		Order: 6,
		Validate: func(l *plan.Load, v *plan.ValidationError) {
			if len(l.Levels) <= plan.MaxLevels && l.StepDuration > 0 && l.StepDuration <= plan.Duration(plan.MaxLength) &&
				l.StepDuration.D()*time.Duration(len(l.Levels)) > plan.MaxLength {
				v.Add("load.step_duration", "levels × step_duration must be at most 24h")
			}
		},
		Length: func(l *plan.Load) time.Duration { return l.StepDuration.D() * time.Duration(len(l.Levels)) },
		PeakVUs: func(l *plan.Load) int {
			m := 0
			for _, n := range l.Levels {
				m = max(m, n)
			}
			return m
		},
		VUsField:    func(*plan.Load) string { return "load.levels" },
		LengthField: func(*plan.Load) string { return "load.step_duration" },
	}, func(e *Engine) executor {
		return &concurrencySweepRun{e: e, prof: stepProfile(e.p.Load.Levels, e.p.Load.StepDuration.D())}
	})
}

type concurrencySweepRun struct {
	e    *Engine
	prof profile
}

func (x *concurrencySweepRun) launch(ctx context.Context) { x.e.launchProfile(ctx, &x.prof) }

func (x *concurrencySweepRun) steps() ([]int, time.Duration) {
	return x.e.p.Load.Levels, x.e.p.Load.StepDuration.D()
}

// stepProfile builds the profile of a concurrency sweep: each level held for step.
func stepProfile(levels []int, step time.Duration) profile {
	var p profile
	for i, n := range levels {
		t := step * time.Duration(i)
		p.segs = append(p.segs, segment{start: t, end: t + step, from: float64(n), to: float64(n)})
	}
	return p
}
