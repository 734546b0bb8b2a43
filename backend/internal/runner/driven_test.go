package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// fakeDrive hands seconds 1..n to onSample (the 2nd with its share of agent "b" missing), then
// waits for ctx when hold is set, and returns a summary of two agents. ctxDone is closed when
// its ctx was cancelled.
type fakeDrive struct {
	n       int
	hold    bool
	handed  chan struct{} // closed once the n seconds are handed over
	ctxDone chan struct{}
	gotID   int64
}

func newFakeDrive(n int, hold bool) *fakeDrive {
	return &fakeDrive{n: n, hold: hold, handed: make(chan struct{}), ctxDone: make(chan struct{})}
}

func (d *fakeDrive) drive(ctx context.Context, id int64, onSample func(metrics.Sample)) (*metrics.Summary, error) {
	d.gotID = id
	for s := 1; s <= d.n; s++ {
		smp := metrics.Sample{ElapsedS: s, IntervalS: 1, Requests: 10}
		if s == 2 {
			smp.MissingShare, smp.MissingAgents = 0.5, []string{"b"}
		}
		onSample(smp)
	}
	close(d.handed)
	if d.hold {
		<-ctx.Done()
		close(d.ctxDone)
	}
	return &metrics.Summary{Requests: int64(10 * d.n), Agents: 2, Degraded: true, LostAgents: []string{"b"}}, nil
}

// A driven run's sinks get Start before StartDriven returns, then drive's seconds in order and its
// summary; the runner is busy meanwhile, and Control answers ErrNotDriven.
func TestStartDrivenSinksGetDrivesSecondsAndSummary(t *testing.T) {
	a, b := newRecSink(0), newRecSink(0)
	rn := New(quiet(), a, b)
	d := newFakeDrive(3, true)
	id, err := rn.StartDriven(testPlan(t, "http://127.0.0.1:9/", "1s"), func(time.Time) (int64, error) { return 11, nil }, d.drive)
	if err != nil || id != 11 {
		t.Fatal(id, err)
	}
	a.mu.Lock()
	if a.startID != 11 {
		t.Errorf("sink Start(%d) when StartDriven returned", a.startID)
	}
	a.mu.Unlock()
	if _, err := rn.Start(testPlan(t, "http://127.0.0.1:9/", "1s"), func(time.Time) (int64, error) { return 12, nil }); !isBusy(err, 11) {
		t.Errorf("Start during a driven run: %v", err)
	}
	vus := 3
	if _, err := rn.Control(11, Change{VUs: &vus}, nil); !errors.Is(err, ErrNotDriven) {
		t.Errorf("Control of a driven run: %v, want ErrNotDriven", err)
	}
	<-d.handed
	if err := rn.Stop(11); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.ctxDone:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not cancel the drive's ctx")
	}
	<-rn.Done(11)
	for i, s := range []*recSink{a, b} {
		<-s.finished
		s.mu.Lock()
		if s.early || !slices.Equal(s.seconds, []int{1, 2, 3}) || s.status != StatusStopped || s.sum == nil || s.sum.Agents != 2 || !s.sum.Degraded {
			t.Errorf("sink %d: early %v, seconds %v, status %q, summary %+v", i, s.early, s.seconds, s.status, s.sum)
		}
		s.mu.Unlock()
	}
	if d.gotID != 11 {
		t.Errorf("drive got run id %d", d.gotID)
	}
	if _, ok := rn.Active(); ok {
		t.Error("run still active after Done")
	}
	// Free again, and a run that drive ends by itself is finished.
	d2 := newFakeDrive(1, false)
	if _, err := rn.StartDriven(testPlan(t, "http://127.0.0.1:9/", "1s"), func(time.Time) (int64, error) { return 13, nil }, d2.drive); err != nil {
		t.Fatal(err)
	}
	<-rn.Done(13)
	if a.status != StatusFinished {
		t.Errorf("status %q, want finished", a.status)
	}
}

// Fail ends a driven run as failed with its error (the drive's ctx cancelled), a drive's error
// fails it too, and a panic in the drive fails it instead of killing the process.
func TestStartDrivenFailErrorAndPanic(t *testing.T) {
	sink := &failSink{finished: make(chan struct{})}
	rn := New(quiet(), sink)
	d := newFakeDrive(2, true)
	if _, err := rn.StartDriven(testPlan(t, "http://127.0.0.1:9/", "1s"), func(time.Time) (int64, error) { return 21, nil }, d.drive); err != nil {
		t.Fatal(err)
	}
	<-d.handed
	boom := errors.New("cannot store")
	if err := rn.Fail(21, boom); err != nil {
		t.Fatal(err)
	}
	<-d.ctxDone
	<-rn.Done(21)
	<-sink.finished
	sink.mu.Lock()
	want := []string{"sample", "sample", "failing: cannot store", "finish: failed"}
	if sink.status != StatusFailed || !errors.Is(sink.err, boom) || !slices.Equal(sink.events, want) {
		t.Errorf("after Fail: status %q, err %v, events %q; want %q", sink.status, sink.err, sink.events, want)
	}
	sink.mu.Unlock()

	for i, drive := range []Drive{
		func(context.Context, int64, func(metrics.Sample)) (*metrics.Summary, error) {
			return nil, errors.New("agent gen-a refused: target not allowed")
		},
		func(context.Context, int64, func(metrics.Sample)) (*metrics.Summary, error) { panic("drive bug") },
	} {
		rec := newRecSink(0)
		rn := New(quiet(), rec)
		id := int64(30 + i)
		if _, err := rn.StartDriven(testPlan(t, "http://127.0.0.1:9/", "1s"), func(time.Time) (int64, error) { return id, nil }, drive); err != nil {
			t.Fatal(err)
		}
		<-rn.Done(id)
		if rec.status != StatusFailed || rec.sum != nil {
			t.Errorf("drive %d: status %q, summary %v; want failed with none", i, rec.status, rec.sum)
		}
	}
	if _, err := rn.StartDriven(nil, func(time.Time) (int64, error) { return 1, nil }, d.drive); err == nil {
		t.Error("StartDriven without a plan started")
	}
}

// Shutdown stops a driven run (its drive's ctx) and waits for its summary to be recorded.
func TestShutdownStopsADrivenRun(t *testing.T) {
	rec := newRecSink(0)
	rn := New(quiet(), rec)
	d := newFakeDrive(1, true)
	if _, err := rn.StartDriven(testPlan(t, "http://127.0.0.1:9/", "1s"), func(time.Time) (int64, error) { return 41, nil }, d.drive); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rn.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rec.finished:
	default:
		t.Fatal("Shutdown returned before the sink had the summary")
	}
	if rec.status != StatusStopped || rec.sum == nil || rec.sum.Agents != 2 {
		t.Errorf("status %q, summary %+v", rec.status, rec.sum)
	}
}

func isBusy(err error, id int64) bool {
	var b *BusyError
	return errors.As(err, &b) && b.RunID == id
}

// gateSink's Finish of run id waits until gates[id] is closed (a summary slow to store); it sends
// id on finishing when it begins.
type gateSink struct {
	finishing chan int64
	gates     map[int64]chan struct{} // set before the runs start
}

func (s *gateSink) Start(int64, time.Time) {}
func (s *gateSink) Sample(int64, *Sample)  {}
func (s *gateSink) Finish(id int64, _ string, _, _ time.Time, _ *metrics.Summary, _ error) {
	s.finishing <- id
	if g := s.gates[id]; g != nil {
		<-g
	}
}

// A start while the previous run's load has ended but its sinks still finish (the live page's
// "Run again" the moment it says "finished") waits for that end, EndingWait at most, instead of
// answering busy; past EndingWait it is busy.
func TestStartWaitsForARunThatIsEnding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &gateSink{finishing: make(chan int64, 3), gates: map[int64]chan struct{}{31: make(chan struct{}), 32: make(chan struct{})}}
		rn := New(quiet(), sink)
		start := func(id int64) (int64, error) {
			return rn.StartDriven(testPlan(t, "http://127.0.0.1:9/", "1s"), func(time.Time) (int64, error) { return id, nil }, newFakeDrive(1, false).drive)
		}
		if _, err := start(31); err != nil {
			t.Fatal(err)
		}
		<-sink.finishing // run 31's load is over; its sink holds its end
		type result struct {
			id  int64
			err error
			at  time.Time
		}
		got := make(chan result, 1)
		t0 := time.Now()
		go func() {
			id, err := start(32)
			got <- result{id, err, time.Now()}
		}()
		synctest.Wait()
		select {
		case r := <-got:
			t.Fatalf("the start answered while run 31 was ending: %d %v", r.id, r.err)
		default:
		}
		time.Sleep(EndingWait / 2)
		close(sink.gates[31]) // run 31 ends: run 32 begins
		r := <-got
		if r.err != nil || r.id != 32 || r.at.Sub(t0) != EndingWait/2 {
			t.Fatalf("start after the wait: id %d, err %v, after %s (want 32 after %s)", r.id, r.err, r.at.Sub(t0), EndingWait/2)
		}
		// Run 32 ends; its sink holds its end past EndingWait: a start is busy then.
		<-sink.finishing
		t1 := time.Now()
		if _, err := start(33); !isBusy(err, 32) || time.Since(t1) != EndingWait {
			t.Fatalf("start while run 32 is ending for good: %v after %s, want busy after %s", err, time.Since(t1), EndingWait)
		}
		close(sink.gates[32])
		<-rn.Done(32)
	})
}

// With SetDriveControl, Control of a driven run checks the change against the run's plan as the
// change makes it (the server's caps) and hands it to the drive's control with the run's id; a
// refusal of the check never reaches it, and its engine.ErrNotRunning is ErrNotRunning. Another
// run's id is not running.
func TestControlOfADrivenRun(t *testing.T) {
	rn := New(quiet(), newRecSink(0))
	type call struct {
		id int64
		ch Change
	}
	calls := make(chan call, 4)
	steerErr := error(nil)
	rn.SetDriveControl(func(id int64, ch Change) (metrics.RunEvent, error) {
		calls <- call{id, ch}
		if steerErr != nil {
			return metrics.RunEvent{}, steerErr
		}
		return metrics.RunEvent{Kind: "vus", From: 2, To: float64(*ch.VUs), By: ch.By}, nil
	})
	d := newFakeDrive(1, true)
	if _, err := rn.StartDriven(testPlan(t, "http://127.0.0.1:9/", "7s"), func(time.Time) (int64, error) { return 31, nil }, d.drive); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rn.Stop(31); <-rn.Done(31) }()

	var checked *plan.Plan
	vus := 5
	ev, err := rn.Control(31, Change{VUs: &vus, By: "ann"}, func(p *plan.Plan) error { checked = p; return nil })
	if err != nil || ev.To != 5 || ev.From != 2 || ev.By != "ann" {
		t.Fatalf("Control: %+v %v", ev, err)
	}
	if c := <-calls; c.id != 31 || *c.ch.VUs != 5 || c.ch.By != "ann" {
		t.Errorf("the drive's control got %+v", c)
	}
	if checked == nil || checked.Load.Executor != plan.ConstantVUs || checked.Load.VUs != 5 || checked.Load.Length() != 7*time.Second {
		t.Errorf("checked plan %+v, want 5 constant VUs for the run's 7 s", checked)
	}

	capped := &plan.ValidationError{Fields: map[string]string{"load.vus": "at most 4"}}
	if _, err := rn.Control(31, Change{VUs: &vus}, func(*plan.Plan) error { return capped }); err != capped {
		t.Errorf("a change the check refuses: %v", err)
	}
	// A rate past the plan's bound is refused naming the bound before the check sees it clamped
	// (1e308 as 2147483647 iterations/s); so are a negative rate and NaN.
	for _, r := range []float64{1e308, -1, math.NaN()} {
		checked = nil
		_, err := rn.Control(31, Change{Rate: &r}, func(p *plan.Plan) error { checked = p; return nil })
		var ve *plan.ValidationError
		if !errors.As(err, &ve) || !strings.Contains(ve.Fields["rate"], "must be at most") || checked != nil {
			t.Errorf("rate %v: %v (checked %v), want a rate error naming the bound, unchecked", r, err, checked != nil)
		}
	}
	if len(calls) != 0 { // the refused check's change never reached the drive
		t.Errorf("%d more calls reached the drive, want none", len(calls))
	}
	steerErr = fmt.Errorf("agents: %w", engine.ErrNotRunning)
	got := make(chan error, 1)
	go func() { _, err := rn.Control(31, Change{VUs: &vus}, nil); got <- err }()
	for answered := false; !answered; {
		select {
		case <-calls: // asked (again, while the run may still be starting: DriveStartWait), or the
			// fake drive's run already ended and the runner answers by itself
		case err := <-got:
			answered = true
			if !errors.Is(err, ErrNotRunning) {
				t.Errorf("the drive's not running: %v, want ErrNotRunning", err)
			}
		}
	}
	if _, err := rn.Control(32, Change{VUs: &vus}, nil); !errors.Is(err, ErrNotRunning) {
		t.Errorf("another run: %v, want ErrNotRunning", err)
	}
}
