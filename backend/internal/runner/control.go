package runner

import (
	"errors"
	"math"

	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// Change is a live-control request for a running test: exactly one of VUs (closed models) and
// Rate (open models, iterations per the plan's time_unit). By names who asks (RunEvent.By).
type Change struct {
	VUs  *int
	Rate *float64
	By   string
}

// Live-control errors besides ErrNotRunning (the same values as the engine's: test with errors.Is).
var (
	// ErrNotControllable: the run's executor has no VU count or rate of the kind asked for.
	ErrNotControllable = engine.ErrNotControllable
	// ErrTooManyChanges: the run has had engine.MaxRunEvents changes.
	ErrTooManyChanges = engine.ErrTooManyChanges
)

// Control changes the load of active run id from now to its end (engine.SetVUs, SetRate) and
// returns the change as recorded. check, when not nil, is given the plan as the change makes it —
// the run's plan with its load replaced by a constant-vus load of ch.VUs VUs, or a
// constant-arrival-rate load at ch.Rate with the same time_unit and VU pool, each as long as the
// run's load — and its *plan.ValidationError refuses the change (the server's caps). Errors:
// ErrNotRunning (not the active run, or it is ending), ErrNotDriven (a run started with
// StartDriven), ErrNotControllable, ErrTooManyChanges, a
// *plan.ValidationError (field "vus" or "rate" out of range, or check's), or an error when ch does
// not hold exactly one value.
func (r *Runner) Control(id int64, ch Change, check func(*plan.Plan) error) (metrics.RunEvent, error) {
	if (ch.VUs == nil) == (ch.Rate == nil) {
		return metrics.RunEvent{}, errors.New("runner: a change sets exactly one of VUs and Rate")
	}
	r.mu.Lock()
	a := r.active
	if a != nil && a.id == id && a.driven && !a.ending {
		r.mu.Unlock()
		return metrics.RunEvent{}, ErrNotDriven
	}
	if a == nil || a.id != id || a.ending || a.eng == nil {
		r.mu.Unlock()
		return metrics.RunEvent{}, ErrNotRunning
	}
	eng := a.eng
	r.mu.Unlock()
	if check != nil {
		if err := check(changedPlan(eng.Plan(), ch)); err != nil {
			return metrics.RunEvent{}, err
		}
	}
	var ev metrics.RunEvent
	var err error
	if ch.VUs != nil {
		ev, err = eng.SetVUs(*ch.VUs, ch.By)
	} else {
		ev, err = eng.SetRate(*ch.Rate, ch.By)
	}
	if errors.Is(err, engine.ErrNotRunning) {
		return ev, ErrNotRunning
	}
	return ev, err
}

// changedPlan is p with its load as ch makes it (Control).
func changedPlan(p *plan.Plan, ch Change) *plan.Plan {
	q := *p
	l := p.Load
	n := plan.Load{Duration: plan.Duration(l.Length()), TimeUnit: l.TimeUnit}
	if ch.VUs != nil {
		n.Executor, n.VUs = plan.ConstantVUs, *ch.VUs
	} else {
		n.Executor, n.Rate = plan.ConstantArrivalRate, int(min(math.Ceil(*ch.Rate), math.MaxInt32))
		n.PreAllocatedVUs, n.MaxVUs = l.PreAllocatedVUs, l.MaxVUs
	}
	q.Load = n
	return &q
}
