package runner

import (
	"errors"
	"math"
	"sync/atomic"
	"time"

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

// DriveControl changes the load of driven run id (StartDriven) as Control does an engine's:
// cluster.Coordinator.Control asks the run's agents. Its errors are Control's (engine.ErrNotRunning,
// engine.ErrNotControllable, engine.ErrTooManyChanges wrapped or not, *plan.ValidationError) or
// its own.
type DriveControl func(id int64, ch Change) (metrics.RunEvent, error)

// SetDriveControl gives Control a way to change driven runs' load (nil: none, Control answers
// ErrNotDriven). Call it before the first StartDriven.
func (r *Runner) SetDriveControl(f DriveControl) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steer = f
}

// Control changes the load of active run id from now to its end (engine.SetVUs, SetRate; a
// driven run's DriveControl — asked again for up to DriveStartWait while the run is starting) and
// returns the change as recorded. check, when not nil, is given
// the plan as the change makes it —
// the run's plan with its load replaced by a constant-vus load of ch.VUs VUs, or a
// constant-arrival-rate load at ch.Rate with the same time_unit and VU pool, each as long as the
// run's load — and its *plan.ValidationError refuses the change (the server's caps). Errors:
// ErrNotRunning (not the active run, or it is ending), ErrNotDriven (a run started with
// StartDriven on a runner without SetDriveControl), ErrNotControllable, ErrTooManyChanges, a
// *plan.ValidationError (field "vus" or "rate" out of range — a rate is checked against the
// plan's plan.Load.RateBound before check is called — or check's), a driven run's
// DriveControl's own errors, or an error when ch does not hold exactly one value.
func (r *Runner) Control(id int64, ch Change, check func(*plan.Plan) error) (metrics.RunEvent, error) {
	if (ch.VUs == nil) == (ch.Rate == nil) {
		return metrics.RunEvent{}, errors.New("runner: a change sets exactly one of VUs and Rate")
	}
	r.mu.Lock()
	a := r.active
	if a == nil || a.id != id || a.ending || (a.eng == nil && !a.driven) {
		r.mu.Unlock()
		return metrics.RunEvent{}, ErrNotRunning
	}
	eng, steer, p, sampled := a.eng, r.steer, a.plan, a.sampled
	r.mu.Unlock()
	if eng != nil {
		p = eng.Plan()
	} else if steer == nil || p == nil {
		return metrics.RunEvent{}, ErrNotDriven
	}
	if ch.Rate != nil {
		// The plan's own bound first, naming it: the server's caps would see the rate clamped to
		// a whole number (1e308 as 2147483647 iterations/s).
		if perUnit, msg := p.Load.RateBound(); *ch.Rate < 0 || math.IsNaN(*ch.Rate) || *ch.Rate > float64(perUnit) {
			return metrics.RunEvent{}, &plan.ValidationError{Fields: map[string]string{"rate": "must be at least 0 and " + msg}}
		}
	}
	if check != nil {
		if err := check(changedPlan(p, ch)); err != nil {
			return metrics.RunEvent{}, err
		}
	}
	var ev metrics.RunEvent
	var err error
	switch {
	case eng == nil:
		ev, err = steerStarting(steer, id, ch, sampled)
	case ch.VUs != nil:
		ev, err = eng.SetVUs(*ch.VUs, ch.By)
	default:
		ev, err = eng.SetRate(*ch.Rate, ch.By)
	}
	if errors.Is(err, engine.ErrNotRunning) {
		return ev, ErrNotRunning
	}
	return ev, err
}

// DriveStartWait bounds how long Control waits for a driven run that is starting (its drive has
// handed no second yet) to take a change, as an engine's SetVUs waits for its run to launch
// (engine.SetVUs: up to 1 s): a run over agents is not running for them until the coordinator has
// prepared them, broadcast the start and their engines have launched, so a change asked in the
// run's first milliseconds is asked again, every driveRetry, while the answer is not running.
const DriveStartWait = time.Second

const driveRetry = 10 * time.Millisecond

// steerStarting is steer(id, ch), asked again while it answers engine.ErrNotRunning, the drive
// has handed no second (sampled; nil: none yet) and DriveStartWait has not passed; then its
// answer as it is. A change some agents applied is not "not running" (cluster.ControlError): it
// is never asked again.
func steerStarting(steer DriveControl, id int64, ch Change, sampled *atomic.Bool) (metrics.RunEvent, error) {
	deadline := time.Now().Add(DriveStartWait)
	for {
		ev, err := steer(id, ch)
		if !errors.Is(err, engine.ErrNotRunning) || (sampled != nil && sampled.Load()) || time.Now().Add(driveRetry).After(deadline) {
			return ev, err
		}
		time.Sleep(driveRetry)
	}
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
