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
	}, func(e *Engine) executor { return constantVUsRun{e} })
}

type constantVUsRun struct{ e *Engine }

func (x constantVUsRun) launch(ctx context.Context) {
	x.e.spawnEach(ctx, x.e.p.Load.VUs, func(v *vu) { v.closedLoop(nil) })
}
