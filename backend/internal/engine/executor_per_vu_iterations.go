package engine

import (
	"context"
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
)

// per-vu-iterations: each VU runs the requests a fixed number of times, then stops, bounded by
// max_duration (closed model).
func init() {
	register(plan.ExecutorSpec{
		ExecutorInfo: plan.ExecutorInfo{Name: plan.PerVUIterations, Model: plan.ClosedModel,
			Fields: []plan.LoadField{fieldVUs,
				{Name: "iterations", Kind: plan.IntField, Required: true, HelpKey: "editor.iterationsPerVu"},
				fieldMaxDuration},
			HelpKey: "editor.executorHelp." + plan.PerVUIterations},
		Order:       2,
		Length:      func(l *plan.Load) time.Duration { return l.MaxDuration.D() },
		PeakVUs:     func(l *plan.Load) int { return l.VUs },
		LengthField: maxDurationPath,
	}, func(e *Engine) executor { return &perVUIterationsRun{e: e, n: e.p.Load.Iterations} })
}

type perVUIterationsRun struct {
	e *Engine
	n int // iterations per VU
}

func (x *perVUIterationsRun) launch(ctx context.Context) {
	x.e.spawnEach(ctx, x.e.share(x.e.p.Load.VUs), func(v *vu) { v.closedLoop(x.more) })
}

func (x *perVUIterationsRun) more(it int) bool { return it < x.n }
