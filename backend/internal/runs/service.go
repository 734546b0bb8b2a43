// Package runs owns a run's lifecycle between the HTTP layer (api) and the runner, storage and
// live hub: starting a stored plan (parse, limits, secrets, the run's row, the runner), taking
// over a run over agents a previous process left running (Resume), stopping and deleting runs,
// rebuilding a finished run's live stream from storage, and the runner's two sinks — StoreSink
// (every second stored as it happens, a run failed when storage is lost) and HubSink (the live
// topic, opened at the run's start and closed with its summary).
//
// Each dependency is a small interface declared here (Store, Runner, SampleWriter, Topics); the
// api declares the few methods of Service it calls.
package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/store"
)

// Store is the storage the service needs (implemented by *store.Store).
type Store interface {
	GetPlan(ctx context.Context, id int64) (*store.Plan, error)
	SecretValues(ctx context.Context, names []string) (map[string]string, error)
	CreateRun(ctx context.Context, planID int64, planName string, planSpec []byte, startedAt time.Time) (*store.Run, error)
	GetRun(ctx context.Context, id int64) (*store.Run, error)
	Samples(ctx context.Context, runID int64) ([]store.Sample, error)
	RunHistogram(ctx context.Context, runID int64) ([]byte, error)
	DeleteRun(ctx context.Context, id int64) error
}

// Runner is the run engine the service drives (implemented by *runner.Runner).
type Runner interface {
	Start(c *plan.Compiled, create func(started time.Time) (int64, error)) (int64, error)
	Stop(id int64) error
	Active() (int64, bool)
	Done(id int64) <-chan struct{}
}

// Service starts, stops and deletes runs and serves their stored stream. Its methods are safe
// for concurrent use (the runner lets one run go at a time).
type Service struct {
	store  Store
	runner Runner
	log    *slog.Logger
	// resumed prepares the sinks for a run that goes on after a restart (Resume): the live
	// topic seeded with its stored seconds' messages, the store's totals continued. Set by
	// Wire; nil (New): the run goes on without them.
	resumed func(runID int64, history [][]byte, requests, errs int64)
	topics  Topics // the live hub (Wire); nil: none
	// local runs the plans Start starts (SetLocal): a single-machine run through the in-process
	// agent; nil: the runner's own engine.
	local Drive
}

// SetLocal makes Start run plans through local — a single-machine run as a run over the
// in-process agent (localagent.Local.Run), with StartDriven's lifecycle — instead of the
// runner's engine; nil: the engine. Call it before the first Start.
func (s *Service) SetLocal(local Drive) { s.local = local }

// New makes the service over a store and a runner (whose sinks are the caller's: see Wire).
func New(st Store, rn Runner, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{store: st, runner: rn, log: log}
}

// Config is what Wire needs.
type Config struct {
	Store interface {
		Store
		SampleWriter
	}
	Hub    Topics // the live hub (*hub.Hub)
	Log    *slog.Logger
	Policy *netpolicy.Policy // the target policy the engine enforces at connect time; nil: netpolicy.Default
	// BufferFor is how long a run goes on while its seconds cannot be stored (StoreSink);
	// 0: DefaultBufferFor.
	BufferFor time.Duration
	// Sinks are more sinks, after the store and the live hub (the /metrics exporter, promexp).
	Sinks []runner.Sink
}

// Wire makes the runner as `volley serve` runs it — its sinks the store (StoreSink, which fails a
// run whose seconds cannot be stored) and then the live hub (HubSink), in that order, so a viewer
// is told a run ended only once it is stored — and the Service over it. The runner is returned
// for the process's own use (Active, Shutdown).
func Wire(c Config) (*Service, *runner.Runner) {
	if c.Log == nil {
		c.Log = slog.Default()
	}
	ss := &StoreSink{W: c.Store, Log: c.Log, BufferFor: c.BufferFor}
	rn := runner.New(c.Log, append([]runner.Sink{ss, &HubSink{Hub: c.Hub, Log: c.Log, Runs: c.Store}}, c.Sinks...)...)
	ss.Fail = rn.Fail // a run whose seconds cannot be stored is stopped and fails with the reason
	rn.SetTargetPolicy(c.Policy)
	svc := New(c.Store, rn, c.Log)
	svc.topics = c.Hub
	seeder, _ := c.Hub.(interface {
		Seed(runID int64, history [][]byte)
	})
	svc.resumed = func(runID int64, history [][]byte, requests, errs int64) {
		ss.Continue(runID, requests, errs)
		if seeder != nil {
			seeder.Seed(runID, history)
		}
	}
	return svc, rn
}

// ActiveError is returned by Delete for the run in progress.
type ActiveError struct{ RunID int64 }

func (e *ActiveError) Error() string {
	return fmt.Sprintf("run %d is running; stop it first", e.RunID)
}

// Start runs stored plan planID: the stored spec is parsed again and check (the server's limits
// on plans: caps, target policy) applied again, as either may have changed since the plan was
// saved; the secrets it names are read from the secret store; then the runner starts it, the
// run's row (holding the masked spec, never a secret value) being created while no other run can
// start. It returns the run's id and the plan it ran. Errors: store.ErrNotFound (no such plan),
// *plan.ValidationError (the plan, its limits or its secrets), *runner.BusyError (another run is
// active), or a storage error.
func (s *Service) Start(ctx context.Context, planID int64, check func(*plan.Plan) error) (int64, *store.Plan, error) {
	if s.local != nil {
		return s.StartDriven(ctx, planID, check, s.local)
	}
	return s.start(ctx, planID, check, func(c *plan.Compiled, create func(time.Time) (int64, error)) (int64, error) {
		return s.runner.Start(c, create)
	})
}

// Drive generates a run somewhere else than the server's engine (the agents: cluster.Coordinator.Run):
// runner.Drive given the run's compiled plan, its secrets resolved.
type Drive func(ctx context.Context, runID int64, c *plan.Compiled, onSample func(metrics.Sample)) (*metrics.Summary, error)

// DrivenRunner is a Runner that can run plans whose seconds come from a Drive (implemented by
// *runner.Runner).
type DrivenRunner interface {
	StartDriven(c *plan.Compiled, create func(time.Time) (int64, error), drive runner.Drive) (int64, error)
}

// ErrNoDriven is returned by StartDriven when the service's runner cannot run a Drive.
var ErrNoDriven = errors.New("runs: this runner cannot run plans elsewhere")

// StartDriven is Start for a run whose load drive generates (runner.Runner.StartDriven): the
// same checks, secrets, run row and errors (ErrNoDriven when the runner has no StartDriven).
func (s *Service) StartDriven(ctx context.Context, planID int64, check func(*plan.Plan) error, drive Drive) (int64, *store.Plan, error) {
	dr, ok := s.runner.(DrivenRunner)
	if !ok {
		return 0, nil, ErrNoDriven
	}
	return s.start(ctx, planID, check, func(c *plan.Compiled, create func(time.Time) (int64, error)) (int64, error) {
		return dr.StartDriven(c, create, func(ctx context.Context, id int64, onSample func(metrics.Sample)) (*metrics.Summary, error) {
			return drive(ctx, id, c, onSample)
		})
	})
}

// start is Start and StartDriven: the plan read, checked and given its secrets, then begun by
// begin with the function that records the run.
func (s *Service) start(ctx context.Context, planID int64, check func(*plan.Plan) error,
	begin func(c *plan.Compiled, create func(time.Time) (int64, error)) (int64, error)) (int64, *store.Plan, error) {
	sp, err := s.store.GetPlan(ctx, planID)
	if err != nil {
		return 0, nil, err
	}
	c, err := plan.ParseCompiled(sp.Spec) // validated once, here; the engine takes it as it is
	if err != nil {
		return 0, nil, err
	}
	p := c.Plan
	if check != nil {
		if err := check(p); err != nil {
			return 0, nil, err
		}
	}
	if names := p.SecretNames(); len(names) > 0 {
		if p.Secrets, err = s.store.SecretValues(ctx, names); err != nil {
			return 0, nil, err
		}
		if err := p.CheckSecrets("the secret store (PUT /api/secrets/NAME)"); err != nil {
			return 0, nil, err
		}
	}
	// The run keeps a snapshot of its plan to show later: masked, so the runs table never holds
	// a secret header value.
	snapshot := plan.MaskSpec(sp.Spec)
	id, err := begin(c, func(started time.Time) (int64, error) {
		r, err := s.store.CreateRun(context.WithoutCancel(ctx), sp.ID, sp.Name, snapshot, started)
		if err != nil {
			return 0, err
		}
		return r.ID, nil
	})
	if err != nil {
		return 0, nil, err
	}
	return id, sp, nil
}

// Stop asks run id to end (its status becomes "stopped" once it has ended) and returns the run as
// it was. Errors: store.ErrNotFound, runner.ErrNotRunning (not the active run).
func (s *Service) Stop(ctx context.Context, id int64) (*store.Run, error) {
	was, err := s.store.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.runner.Stop(id); err != nil {
		return nil, err
	}
	return was, nil
}

// Delete removes run id and its seconds and returns the run as it was. Errors: *ActiveError (the
// run is in progress), store.ErrNotFound.
func (s *Service) Delete(ctx context.Context, id int64) (*store.Run, error) {
	if active, ok := s.runner.Active(); ok && active == id {
		return nil, &ActiveError{RunID: id}
	}
	was, err := s.store.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.store.DeleteRun(ctx, id); err != nil {
		return nil, err
	}
	return was, nil
}

// Active returns the id of the run in progress.
func (s *Service) Active() (int64, bool) { return s.runner.Active() }

// Stream rebuilds the live stream of a run that has no live topic from storage: a message per
// stored second, then the summary message unless the run is still running. A run that is ending
// (its topic just closed, its summary not yet stored) is waited for, 5 s at most.
func (s *Service) Stream(ctx context.Context, id int64) ([][]byte, error) {
	select {
	case <-s.runner.Done(id):
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r, err := s.store.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	smps, err := s.store.Samples(ctx, id)
	if err != nil {
		return nil, err
	}
	msgs := make([][]byte, 0, len(smps)+1)
	for _, smp := range smps {
		if !json.Valid(smp.Data) { // a damaged row: left out rather than sent as a broken frame
			s.log.Warn("live stream: stored sample is not valid JSON; skipped", "run", id, "second", smp.Second)
			continue
		}
		m, err := sampleMessage(smp.Data, nil)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	if r.Status != store.StatusRunning {
		msgs = append(msgs, summaryMessage(r.Summary, RunOf(r)))
	}
	return msgs, nil
}

// Controller is a Runner whose running tests' load can be changed (implemented by *runner.Runner).
type Controller interface {
	Control(id int64, ch runner.Change, check func(*plan.Plan) error) (metrics.RunEvent, error)
}

// Control changes run id's VUs or rate while it runs (runner.Runner.Control, check being the
// server's limits on the plan as the change makes it) and returns the change as recorded. Errors:
// store.ErrNotFound (no such run), runner.ErrNotRunning (the run is not running, or the runner
// cannot control runs), runner.ErrNotControllable, runner.ErrTooManyChanges, *plan.ValidationError.
func (s *Service) Control(ctx context.Context, id int64, ch runner.Change, check func(*plan.Plan) error) (metrics.RunEvent, error) {
	if _, err := s.store.GetRun(ctx, id); err != nil {
		return metrics.RunEvent{}, err
	}
	c, ok := s.runner.(Controller)
	if !ok {
		return metrics.RunEvent{}, runner.ErrNotRunning
	}
	return c.Control(id, ch, check)
}
