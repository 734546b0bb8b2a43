package engine

import (
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
)

// constant-arrival-rate: iterations start at a fixed rate per time_unit whatever the target does;
// an arrival that finds no free VU (all max_vus busy) is a dropped iteration (open model).
func init() {
	register(plan.ExecutorSpec{
		ExecutorInfo: plan.ExecutorInfo{Name: plan.ConstantArrivalRate, Model: plan.OpenModel,
			Fields: []plan.LoadField{
				{Name: "rate", Kind: plan.IntField, Required: true, HelpKey: "editor.rate"},
				fieldTimeUnit, fieldDuration, fieldPreAllocatedVUs, fieldMaxVUs},
			HelpKey: "editor.executorHelp." + plan.ConstantArrivalRate},
		Order:    4,
		Defaults: arrivalDefaults,
		Length:   func(l *plan.Load) time.Duration { return l.Duration.D() },
		PeakVUs:  arrivalPeakVUs,
		PeakRate: func(l *plan.Load) (float64, string) { return perSecond(l.Rate, l), "load.rate" },
		VUsField: arrivalVUsField,
	}, func(e *Engine) executor {
		l := &e.p.Load
		return newArrival(e, newSchedule(float64(l.Rate), []plan.Stage{{Duration: l.Duration, Target: l.Rate}}, l.TimeUnit.D()))
	})
}
