// Package runner owns the lifecycle of runs: it starts the engine for a plan, lets one run go at a
// time, stops it on request, and fans every per-second sample and the final summary out to sinks
// (storage, live hub) without ever making the engine wait.
//
// It imports plan, engine, metrics and netpolicy only; sinks are small interfaces implemented
// elsewhere.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/plan"
)

// Run statuses.
const (
	StatusRunning     = "running"
	StatusFinished    = "finished"
	StatusStopped     = "stopped"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
)

// Sink receives a run's events in order: Start, the seconds (Sample), then Finish. Start is called
// by Runner.Start (or StartDriven) itself, before it returns the run's id and before load is sent, so
// whatever a sink opens there (the live topic) exists once a client knows the run; it must be
// quick and must not call the Runner. The other events come from the sink's own goroutine. A sink
// may be slow there: the runner buffers up to SinkBuffer events per sink and drops (and logs)
// beyond that rather than wait. Every sink receives the same *Sample: it must not modify it.
// Finish reaches the sinks in the order given to New, each after the previous sink's Finish has
// returned; every sink whose Start was called gets it.
type Sink interface {
	Start(runID int64, started time.Time)
	Sample(runID int64, s *Sample)
	Finish(runID int64, status string, started, ended time.Time, sum *metrics.Summary, runErr error)
}

// A FailNotifier is a Sink that wants to know at once when a run is being failed by Fail (the
// live stream tells its viewers). Failing is called from the sink's own goroutine, in order with
// its samples; the run's Finish follows, with status failed and the same error.
type FailNotifier interface {
	Failing(runID int64, err error)
}

// Sample is one second of a run as the sinks receive it: the engine's sample and its JSON
// encoding, made once (by the first sink that asks for it, never by the engine's collector) and
// shared by every sink, so storing a second and streaming it to any number of viewers costs one
// encoding.
type Sample struct {
	metrics.Sample
	once sync.Once
	data []byte
	err  error
}

// NewSample wraps s for the sinks (tests and callers outside the runner).
func NewSample(s metrics.Sample) *Sample { return &Sample{Sample: s} }

// JSON returns the sample's JSON encoding (json.Marshal of the metrics.Sample). The bytes are
// shared by every sink: read them, never modify them.
func (s *Sample) JSON() ([]byte, error) {
	s.once.Do(func() { s.data, s.err = json.Marshal(&s.Sample) })
	return s.data, s.err
}

// SinkBuffer is how many events a sink may fall behind before events are dropped (an hour of
// seconds: a sink stalled longer than that is broken, and the engine must not wait for it).
const SinkBuffer = 4096

// BusyError is returned by Start while another run is active.
type BusyError struct{ RunID int64 }

func (e *BusyError) Error() string {
	return fmt.Sprintf("run %d is still running; stop it or wait for it to finish before starting another", e.RunID)
}

// ErrNotRunning is returned by Stop for a run that is not active.
var ErrNotRunning = errors.New("run is not running")

// Runner runs at most one plan at a time.
type Runner struct {
	sinks  []Sink
	mu     sync.Mutex
	active *active
	wg     sync.WaitGroup
	log    *slog.Logger
	policy *netpolicy.Policy // the server's target policy, given to every run's engine
	steer  DriveControl      // live control of driven runs (SetDriveControl); nil: none
}

// SetTargetPolicy sets the target policy every later run's engine enforces at connect time
// (nil: netpolicy.Default). Call it before the first Start.
func (r *Runner) SetTargetPolicy(p *netpolicy.Policy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.policy = p
}

type active struct {
	id      int64
	cancel  context.CancelFunc
	stopped bool
	failErr error // set by Fail
	ending  bool  // the engine has returned: the sinks' channels are closing
	outs    []chan event
	done    chan struct{}
	eng     *engine.Engine // for Control (control.go); nil for a driven run
	driven  bool           // StartDriven: live control through r.steer
	plan    *plan.Plan     // a driven run's plan (Control's check)
	sampled *atomic.Bool   // a driven run's drive has handed a second (Control's start wait)
}

// fail ends the run as failed with err (a sink's panic; the first failure wins), as Fail does.
func (r *Runner) fail(a *active, err error) { _ = r.Fail(a.id, err) }

// New makes a runner that reports to sinks.
func New(log *slog.Logger, sinks ...Sink) *Runner {
	if log == nil {
		log = slog.Default()
	}
	return &Runner{sinks: sinks, log: log}
}

// Start begins a run of the compiled plan c (plan.Compile or plan.ParseCompiled: nothing is
// validated again; a *plan.ValidationError only when a secret value the plan names is missing from
// c.Plan.Secrets). create is called while no other run can start; it records the run (in storage)
// and returns its id. Start returns *BusyError while another run is active.
func (r *Runner) Start(c *plan.Compiled, create func(started time.Time) (int64, error)) (int64, error) {
	if err := r.lockIdle(); err != nil {
		return 0, err
	}
	defer r.mu.Unlock()
	outs := newOuts(len(r.sinks))
	var id int64
	eng, err := engine.New(c, engine.Options{Policy: r.policy, OnSample: func(s metrics.Sample) {
		r.fanOut(outs, event{sample: NewSample(s)}, id)
	}})
	if err != nil {
		return 0, err
	}
	return r.begin(outs, &id, create, eng, func(ctx context.Context) (*metrics.Summary, error) { return r.runEngine(ctx, eng) })
}

// Drive runs a plan somewhere else than this process's engine (cluster.Coordinator.Run over
// agents) for StartDriven: it hands each second to onSample, in order, each once, only while it
// has not returned, and returns the run's summary. Cancelling ctx is the run's stop (Stop, Fail,
// Shutdown): the drive ends the load (the plan's graceful stop) and returns what it measured.
type Drive func(ctx context.Context, runID int64, onSample func(metrics.Sample)) (*metrics.Summary, error)

// ErrNotDriven is returned by Control for a run started with StartDriven when the runner has no
// DriveControl (SetDriveControl): its load is not in this process, so it has no live control.
var ErrNotDriven = errors.New("the run is not generated by this server's engine (a run over agents): its load cannot be changed while it runs")

// StartDriven begins a run whose seconds and summary come from drive instead of the local
// engine, with Start's lifecycle: one run at a time (*BusyError), create called while no other
// run can start, the same sinks in the same order, Stop, Fail, Done and Shutdown. drive is called
// on its own goroutine once the sinks have started; a panic in it fails the run. Control changes
// such a run's load through the runner's DriveControl (SetDriveControl; ErrNotDriven without one),
// its caps checked on c.Plan. c is only checked for nil (the caller compiled it for drive).
func (r *Runner) StartDriven(c *plan.Compiled, create func(started time.Time) (int64, error), drive Drive) (int64, error) {
	if c == nil || drive == nil {
		return 0, errors.New("runner: StartDriven needs a plan and a drive")
	}
	if err := r.lockIdle(); err != nil {
		return 0, err
	}
	defer r.mu.Unlock()
	outs := newOuts(len(r.sinks))
	var id int64
	// onSample may not reach the sinks once drive has returned (their channels close then): a
	// late call is dropped and logged.
	var smu sync.Mutex
	returned := false
	sampled := new(atomic.Bool)
	onSample := func(s metrics.Sample) {
		sampled.Store(true)
		smu.Lock()
		defer smu.Unlock()
		if returned {
			r.log.Warn("run's drive handed a second after it returned; dropped", "run", id, "second", s.ElapsedS)
			return
		}
		r.fanOut(outs, event{sample: NewSample(s)}, id)
	}
	runID, err := r.begin(outs, &id, create, nil, func(ctx context.Context) (*metrics.Summary, error) {
		defer func() {
			smu.Lock()
			returned = true
			smu.Unlock()
		}()
		return r.runDrive(ctx, drive, id, onSample)
	})
	if err == nil && r.active != nil && r.active.id == runID { // r.mu is held: the run is still this one
		r.active.plan, r.active.sampled = c.Plan, sampled
	}
	return runID, err
}

// EndingWait is how long Start and StartDriven wait for a run whose load has ended while its sinks
// finish (its summary being stored, its viewers told): a start right after a run's end (the run
// page's "Run again" once the live stream said "finished") begins then instead of answering
// *BusyError. A run whose sinks take longer is still busy.
const EndingWait = 10 * time.Second

// lockIdle locks r.mu with no run active, or returns *BusyError with r.mu unlocked. A run that is
// ending is waited for, EndingWait at most; a run whose load goes on is busy at once.
func (r *Runner) lockIdle() error {
	deadline := time.Now().Add(EndingWait)
	for {
		r.mu.Lock()
		a := r.active
		if a == nil {
			return nil
		}
		ending, wait := a.ending, time.Until(deadline)
		r.mu.Unlock()
		if !ending || wait <= 0 {
			return &BusyError{RunID: a.id}
		}
		t := time.NewTimer(wait)
		select {
		case <-a.done:
		case <-t.C:
		}
		t.Stop()
	}
}

// newOuts makes the sinks' event channels.
func newOuts(n int) []chan event {
	outs := make([]chan event, n)
	for i := range outs {
		outs[i] = make(chan event, SinkBuffer)
	}
	return outs
}

// begin is the lifecycle Start and StartDriven share, with r.mu held and no run active: the run's
// record (create), its sinks started and drained, run called on the run's goroutine and its
// summary handed to every sink in order. eng is the local engine (nil for a driven run). The
// run's id is written to *idp before anything else can read it (the callers' closures do).
func (r *Runner) begin(outs []chan event, idp *int64, create func(time.Time) (int64, error), eng *engine.Engine,
	run func(context.Context) (*metrics.Summary, error)) (int64, error) {
	started := time.Now()
	id, err := create(started)
	if err != nil {
		return 0, err
	}
	*idp = id
	ctx, cancel := context.WithCancel(context.Background())
	a := &active{id: id, cancel: cancel, outs: outs, done: make(chan struct{}), eng: eng, driven: eng == nil}
	r.active = a
	drained := make([]chan struct{}, len(r.sinks))
	for i, s := range r.sinks {
		// A sink whose Start panics gets no seconds, only the summary, and fails the run, as a
		// panic in Sample does (drain); r.mu is held, so the failure is recorded directly.
		broken := false
		if err := startSink(id, s, started); err != nil {
			r.log.Error("run failed: panic in a sink", "run", id, "sink", i, "err", err)
			if a.failErr == nil {
				a.failErr = err
				cancel()
				r.fanOut(outs, event{failing: err}, id)
			}
			broken = true
		}
		drained[i] = make(chan struct{})
		go func() {
			defer close(drained[i])
			r.drain(id, i, s, outs[i], broken, func(err error) { r.fail(a, err) })
		}()
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(a.done)
		sum, runErr := run(ctx)
		ended := time.Now()
		r.mu.Lock()
		a.ending = true
		r.mu.Unlock()
		// The summary is never dropped, and the sinks get it one after the other, in the order
		// given to New: the store has saved the run before a viewer is told it ended, so a
		// viewer that then asks for the run finds it finished. The run is "over" once every
		// sink has its summary. A sink's Finish may still call Fail (the store could not save
		// the run): the sinks after it are then told the run failed.
		for i, o := range outs {
			r.mu.Lock()
			status, err := StatusFinished, runErr
			switch {
			case runErr != nil:
				status = StatusFailed
			case a.failErr != nil:
				status, err = StatusFailed, a.failErr
			case a.stopped:
				status = StatusStopped
			}
			r.mu.Unlock()
			o <- event{finish: &finish{status: status, started: started, ended: ended, sum: sum, err: err}}
			close(o)
			<-drained[i]
		}
		r.mu.Lock()
		r.active = nil
		r.mu.Unlock()
		cancel()
	}()
	return id, nil
}

// runDrive calls a driven run's drive, turning a panic in it into a failed run.
func (r *Runner) runDrive(ctx context.Context, drive Drive, id int64, onSample func(metrics.Sample)) (sum *metrics.Summary, err error) {
	defer func() {
		if p := recover(); p != nil {
			sum, err = nil, fmt.Errorf("internal error in the run's drive: %v", p)
			r.log.Error("run failed: panic", "run", id, "err", err, "stack", string(debug.Stack()))
		}
	}()
	return drive(ctx, id, onSample)
}

// runEngine turns a panic inside the engine into a failed run instead of a dead server: the
// engine recovers its own goroutines' panics and returns them as *engine.PanicError; this catches
// one in Run's own goroutine.
func (r *Runner) runEngine(ctx context.Context, eng *engine.Engine) (sum *metrics.Summary, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error in the engine: %v", p)
			r.log.Error("run failed: panic", "err", err, "stack", string(debug.Stack()))
		}
	}()
	sum, err = eng.Run(ctx)
	var pe *engine.PanicError
	if errors.As(err, &pe) {
		r.log.Error("run failed: panic", "where", pe.Where, "err", pe.Value, "stack", string(pe.Stack))
	}
	return sum, err
}

// Stop asks the active run to end (requests in flight get the plan's graceful stop). It returns
// at once; the run's status becomes "stopped" when it has ended.
func (r *Runner) Stop(id int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active == nil || r.active.id != id {
		return ErrNotRunning
	}
	r.active.stopped = true
	r.active.cancel()
	return nil
}

// Fail stops run id because something outside the engine cannot go on (a sink that cannot store
// the run, …): the run ends with status "failed" and err as its error, whatever else ends it,
// unless the engine itself failed. Sinks that implement FailNotifier are told at once. Fail may be
// called until the run's Finish has reached every sink, from any goroutine (a sink's Sample or
// Finish included); only the first error is kept. It returns ErrNotRunning when id is not active.
func (r *Runner) Fail(id int64, err error) error {
	if err == nil {
		return errors.New("runner: Fail needs an error")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.active
	if a == nil || a.id != id {
		return ErrNotRunning
	}
	if a.failErr != nil {
		return nil
	}
	a.failErr = err
	a.cancel()
	if !a.ending {
		// Under r.mu, before ending is set: the channels are still open.
		r.fanOut(a.outs, event{failing: err}, id)
	}
	return nil
}

// Active returns the id of the run in progress.
func (r *Runner) Active() (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active == nil {
		return 0, false
	}
	return r.active.id, true
}

// Done returns a channel closed when run id has ended and its sinks have its summary (an already
// closed channel when it is not active).
func (r *Runner) Done(id int64) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active != nil && r.active.id == id {
		return r.active.done
	}
	c := make(chan struct{})
	close(c)
	return c
}

// Shutdown stops any active run and waits for it to end and be recorded, or for ctx.
func (r *Runner) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	if r.active != nil {
		r.active.stopped = true
		r.active.cancel()
	}
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type finish struct {
	status         string
	started, ended time.Time
	sum            *metrics.Summary
	err            error
}

type event struct {
	sample  *Sample // shared by every sink
	finish  *finish
	failing error
}

func (r *Runner) fanOut(outs []chan event, ev event, id int64) {
	for i, o := range outs {
		select {
		case o <- ev:
		default:
			r.log.Warn("sink is behind; event dropped", "run", id, "sink", i)
		}
	}
}

// drain hands a sink its events until the run's channel closes. A panic in the sink fails the run
// (fail) and is recovered once per panic, not per event: the sink then gets no more seconds, but
// still the summary, so the store records the run as failed with the reason. A sink that is
// broken from the start (its Start panicked) gets only the summary.
func (r *Runner) drain(id int64, i int, s Sink, in <-chan event, broken bool, fail func(error)) {
	for {
		err := r.drainSome(id, s, in, broken)
		if err == nil {
			return
		}
		r.log.Error("run failed: panic in a sink", "run", id, "sink", i, "err", err)
		fail(err)
		broken = true
	}
}

// startSink calls s.Start, returning a panic as an error.
func startSink(id int64, s Sink, started time.Time) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error in %T: %v", s, p)
		}
	}()
	s.Start(id, started)
	return nil
}

// drainSome delivers events until the channel closes (nil) or the sink panics (the panic as an
// error). A broken sink is given only the summary.
func (r *Runner) drainSome(id int64, s Sink, in <-chan event, broken bool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error in %T: %v", s, p)
		}
	}()
	for ev := range in {
		if ev.sample != nil && !broken {
			s.Sample(id, ev.sample)
		} else if f := ev.finish; f != nil {
			s.Finish(id, f.status, f.started, f.ended, f.sum, f.err)
		} else if n, ok := s.(FailNotifier); ok && ev.failing != nil {
			n.Failing(id, ev.failing)
		}
	}
	return nil
}
