package engine

import (
	"context"
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
)

// constant-vus: a fixed number of VUs loop over the requests for the whole duration (closed model).
func init() {
	register(plan.ExecutorSpec{
		ExecutorInfo: plan.ExecutorInfo{Name: plan.ConstantVUs, Model: plan.ClosedModel,
			Fields:  []plan.LoadField{fieldVUs, fieldDuration},
			HelpKey: "editor.executorHelp." + plan.ConstantVUs},
		Order:   0,
		Length:  func(l *plan.Load) time.Duration { return l.Duration.D() },
		PeakVUs: func(l *plan.Load) int { return l.VUs },
	}, func(e *Engine) executor {
		l := &e.p.Load
		return &constantVUsRun{e: e, prof: rampProfile(l.VUs, []plan.Stage{{Duration: l.Duration, Target: l.VUs}})}
	})
}

// constantVUsRun holds its VUs as a flat profile, which SetVUs can replace (control.go).
type constantVUsRun struct {
	e    *Engine
	prof profile
}

func (x *constantVUsRun) launch(ctx context.Context) { x.e.launchProfile(ctx, &x.prof) }
func (x *constantVUsRun) profile() *profile          { return &x.prof }
