package engine

import (
	"github.com/volley-load/volley/backend/internal/plan"
)

// ramping-arrival-rate: the rate moves linearly from start_rate to each stage's target; iterations
// start on schedule whatever the target does, and an arrival that finds no free VU is a dropped
// iteration (open model).
func init() {
	register(plan.ExecutorSpec{
		ExecutorInfo: plan.ExecutorInfo{Name: plan.RampingArrivalRate, Model: plan.OpenModel,
			Fields: []plan.LoadField{
				{Name: "start_rate", Kind: plan.IntField, HelpKey: "editor.startRate"},
				fieldTimeUnit, fieldStages, fieldPreAllocatedVUs, fieldMaxVUs},
			HelpKey: "editor.executorHelp." + plan.RampingArrivalRate},
		Order:    5,
		Defaults: arrivalDefaults,
		Validate: func(l *plan.Load, v *plan.ValidationError) {
			perUnit, msg := l.RateBound()
			l.EachStage(func(i, target int) {
				if int64(target) > perUnit {
					v.Add(plan.StageField(i, "target"), msg)
				}
			})
		},
		Length:  (*plan.Load).StagesLength,
		PeakVUs: arrivalPeakVUs,
		PeakRate: func(l *plan.Load) (float64, string) {
			peak, field := l.StartRate, "load.start_rate"
			for _, s := range l.Stages {
				if s.Target > peak {
					peak, field = s.Target, "load.stages"
				}
			}
			return perSecond(peak, l), field
		},
		VUsField:    arrivalVUsField,
		LengthField: stagesPath,
	}, func(e *Engine) executor {
		l := &e.p.Load
		return newArrival(e, newSchedule(float64(l.StartRate), l.Stages, l.TimeUnit.D()))
	})
}
