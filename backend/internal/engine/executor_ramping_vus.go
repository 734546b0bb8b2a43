package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
)

// ramping-vus: the number of VUs moves linearly from start_vus to each stage's target in turn
// (closed model; VUs ramped down finish their iteration first, as k6's graceful ramp-down).
func init() {
	register(plan.ExecutorSpec{
		ExecutorInfo: plan.ExecutorInfo{Name: plan.RampingVUs, Model: plan.ClosedModel,
			Fields: []plan.LoadField{
				{Name: "start_vus", Kind: plan.IntField, HelpKey: "editor.startVus"},
				fieldStages},
			HelpKey: "editor.executorHelp." + plan.RampingVUs},
		Order: 1,
		Validate: func(l *plan.Load, v *plan.ValidationError) {
			l.EachStage(func(i, target int) {
				if target > plan.MaxVUs {
					v.Add(plan.StageField(i, "target"), fmt.Sprintf("must be at most %d VUs", plan.MaxVUs))
				}
			})
		},
		Length: (*plan.Load).StagesLength,
		PeakVUs: func(l *plan.Load) int {
			m := l.StartVUs
			for _, s := range l.Stages {
				m = max(m, s.Target)
			}
			return m
		},
		VUsField:    stagesPath,
		LengthField: stagesPath,
	}, func(e *Engine) executor {
		return &rampingVUsRun{e: e, prof: rampProfile(e.p.Load.StartVUs, e.p.Load.Stages)}
	})
}

type rampingVUsRun struct {
	e    *Engine
	prof profile
}

func (x *rampingVUsRun) launch(ctx context.Context) { x.e.launchProfile(ctx, &x.prof) }
func (x *rampingVUsRun) profile() *profile          { return &x.prof }

// rampProfile builds the profile of ramping-vus stages starting from startVUs.
func rampProfile(startVUs int, stages []plan.Stage) profile {
	var p profile
	var t time.Duration
	from := float64(startVUs)
	for _, s := range stages {
		d := s.Duration.D()
		p.segs = append(p.segs, segment{start: t, end: t + d, from: from, to: float64(s.Target)})
		t += d
		from = float64(s.Target)
	}
	return p
}
