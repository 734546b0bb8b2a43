package engine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
)

// shared-iterations: the VUs share a fixed total of iterations — faster VUs take more — until all
// are done, bounded by max_duration (closed model).
func init() {
	register(plan.ExecutorSpec{
		ExecutorInfo: plan.ExecutorInfo{Name: plan.SharedIterations, Model: plan.ClosedModel,
			Fields: []plan.LoadField{fieldVUs,
				{Name: "iterations", Kind: plan.IntField, Required: true, HelpKey: "editor.iterationsShared"},
				fieldMaxDuration},
			HelpKey: "editor.executorHelp." + plan.SharedIterations},
		Order:       3,
		Length:      func(l *plan.Load) time.Duration { return l.MaxDuration.D() },
		PeakVUs:     func(l *plan.Load) int { return l.VUs },
		LengthField: maxDurationPath,
	}, func(e *Engine) executor {
		return &sharedIterationsRun{e: e, total: int64(e.share(e.p.Load.Iterations))}
	})
}

type sharedIterationsRun struct {
	e       *Engine
	total   int64
	claimed atomic.Int64 // iterations claimed so far (one atomic add per iteration)
}

func (x *sharedIterationsRun) launch(ctx context.Context) {
	x.e.spawnEach(ctx, x.e.share(x.e.p.Load.VUs), func(v *vu) { v.closedLoop(x.more) })
}

func (x *sharedIterationsRun) more(int) bool { return x.claimed.Add(1) <= x.total }
