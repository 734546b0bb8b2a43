package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

type recSink struct {
	mu       sync.Mutex
	startID  int64     // the id Start was given
	started  time.Time // Start's time, and Finish's (finishStarted)
	early    bool      // a second or the summary came before Start
	seconds  []int
	covered  float64  // the seconds' interval_s added up
	encoded  [][]byte // each second's shared JSON (when encode is set)
	encode   bool
	status   string
	sum      *metrics.Summary
	delay    time.Duration
	gate     chan struct{} // when set, Sample waits until it is closed (a sink stuck on its disk)
	finished chan struct{}
	once     sync.Once

	finishStarted time.Time
}

func (s *recSink) Start(id int64, started time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startID, s.started = id, started
}

func newRecSink(delay time.Duration) *recSink {
	return &recSink{delay: delay, finished: make(chan struct{})}
}

func (s *recSink) Sample(_ int64, smp *Sample) {
	time.Sleep(s.delay)
	if s.gate != nil {
		<-s.gate
	}
	var data []byte
	if s.encode {
		var err error
		if data, err = smp.JSON(); err != nil {
			panic(err)
		}
	}
	s.mu.Lock()
	s.early = s.early || s.startID == 0
	s.seconds = append(s.seconds, smp.ElapsedS)
	s.covered += smp.IntervalS
	s.encoded = append(s.encoded, data)
	s.mu.Unlock()
}

func (s *recSink) Finish(_ int64, status string, started, _ time.Time, sum *metrics.Summary, _ error) {
	s.mu.Lock()
	s.early = s.early || s.startID == 0
	s.status, s.sum, s.finishStarted = status, sum, started
	s.mu.Unlock()
	s.once.Do(func() { close(s.finished) })
}

func testPlan(t *testing.T, url, dur string) *plan.Compiled {
	t.Helper()
	p, err := plan.ParseCompiled([]byte(fmt.Sprintf(`{"name":"r","requests":[{"url":%q}],"load":{"vus":2,"duration":%q}}`, url, dur)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A slow sink gets every second and the summary, and never slows the run down: here the slow
// sink is stuck in its first second until the fast sink has the summary, which it could never get
// if the run waited for the slow one.
func TestSinksGetEverySecondInOrderAndASlowSinkDoesNotBlock(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	fast, slow := newRecSink(0), newRecSink(0)
	slow.gate = make(chan struct{})
	rn := New(quiet(), fast, slow)
	id, err := rn.Start(testPlan(t, tg.URL, "3s"), func(time.Time) (int64, error) { return 7, nil })
	if err != nil || id != 7 {
		t.Fatal(id, err)
	}
	select {
	case <-fast.finished:
	case <-time.After(30 * time.Second): // a 3 s run: only a run held up by the stuck sink lasts this long
		t.Fatal("the fast sink got no summary while the slow sink was stuck: the slow sink held the run up")
	}
	slow.mu.Lock()
	if len(slow.seconds) != 0 {
		t.Errorf("the stuck sink handled seconds %v", slow.seconds)
	}
	slow.mu.Unlock()
	close(slow.gate)
	<-rn.Done(7)
	<-slow.finished
	// Every sink sees the same seconds, 1, 2, … in order, covering the 3 s run (a collector tick
	// delayed past the next emits the seconds it passed, interval_s 0, then its reading).
	for _, s := range []*recSink{fast, slow} {
		inOrder := len(s.seconds) > 0 && slices.Equal(s.seconds, fast.seconds)
		for i, k := range s.seconds {
			inOrder = inOrder && k == i+1
		}
		if !inOrder || s.covered < 2.95 || s.status != StatusFinished || s.sum.Requests == 0 {
			t.Errorf("sink saw seconds %v covering %.3f s, status %q", s.seconds, s.covered, s.status)
		}
	}
	if _, ok := rn.Active(); ok {
		t.Error("run still active after Done")
	}
}

// Every sink is told the run started, with its id and start time, before Start returns the id
// (so the live topic exists once a client knows the run) and before any second.
func TestStartReachesEverySinkBeforeStartReturns(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	a, b := newRecSink(0), newRecSink(0)
	rn := New(quiet(), a, b)
	var created time.Time
	id, err := rn.Start(testPlan(t, tg.URL, "1s"), func(started time.Time) (int64, error) { created = started; return 5, nil })
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range []*recSink{a, b} {
		s.mu.Lock()
		if s.startID != id || !s.started.Equal(created) {
			t.Errorf("sink %d: Start(%d, %v) when Start returned; want (%d, %v)", i, s.startID, s.started, id, created)
		}
		s.mu.Unlock()
	}
	<-rn.Done(id)
	for i, s := range []*recSink{a, b} {
		if s.early || len(s.seconds) == 0 || !s.finishStarted.Equal(created) {
			t.Errorf("sink %d: early %v, %d seconds, Finish's start %v (want %v)", i, s.early, len(s.seconds), s.finishStarted, created)
		}
	}
}

func TestOneRunAtATimeAndStop(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	sink := newRecSink(0)
	rn := New(quiet(), sink)
	if _, err := rn.Start(testPlan(t, tg.URL, "1m"), func(time.Time) (int64, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	_, err := rn.Start(testPlan(t, tg.URL, "1s"), func(time.Time) (int64, error) { return 2, nil })
	var busy *BusyError
	if !errors.As(err, &busy) || busy.RunID != 1 {
		t.Fatalf("second start: %v", err)
	}
	if err := rn.Stop(2); !errors.Is(err, ErrNotRunning) {
		t.Errorf("stopping another id: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := rn.Stop(1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sink.finished:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not end the run")
	}
	if sink.status != StatusStopped {
		t.Errorf("status %q", sink.status)
	}
	<-rn.Done(1)
	// Free again.
	if _, err := rn.Start(testPlan(t, tg.URL, "1s"), func(time.Time) (int64, error) { return 3, nil }); err != nil {
		t.Fatal(err)
	}
	<-rn.Done(3)
}

func TestCreateFailureStartsNothing(t *testing.T) {
	rn := New(quiet(), newRecSink(0))
	_, err := rn.Start(testPlan(t, "http://127.0.0.1:9/", "1s"), func(time.Time) (int64, error) { return 0, errors.New("disk full") })
	if err == nil {
		t.Fatal("want the create error")
	}
	if _, ok := rn.Active(); ok {
		t.Error("a run is active although it could not be recorded")
	}
}

// Every sink gets the same sample, encoded to JSON once: the bytes two sinks read are one slice.
func TestSinksShareOneEncodingPerSample(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	a, b := newRecSink(0), newRecSink(0)
	a.encode, b.encode = true, true
	rn := New(quiet(), a, b)
	if _, err := rn.Start(testPlan(t, tg.URL, "2s"), func(time.Time) (int64, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	<-rn.Done(1)
	if len(a.encoded) != 2 || len(b.encoded) != 2 {
		t.Fatalf("seconds: %v / %v", a.seconds, b.seconds)
	}
	for i := range a.encoded {
		if &a.encoded[i][0] != &b.encoded[i][0] {
			t.Errorf("second %d was encoded once per sink", i+1)
		}
		var got metrics.Sample
		if err := json.Unmarshal(a.encoded[i], &got); err != nil || got.ElapsedS != i+1 || got.Requests == 0 {
			t.Errorf("second %d: %s (%v)", i+1, a.encoded[i], err)
		}
	}
}

func TestSampleJSONIsTheSamplesEncoding(t *testing.T) {
	m := metrics.Sample{T: 1700000000000, ElapsedS: 3, IntervalS: 1, Requests: 10, Successes: 9, Errors: 1,
		StatusCodes: map[string]int64{"200": 9, "500": 1}, ErrorKinds: map[string]int64{"status_5xx": 1}, Hist: "HISTFAA="}
	want, _ := json.Marshal(m)
	got, err := NewSample(m).JSON()
	if err != nil || string(got) != string(want) {
		t.Fatalf("JSON() = %s, %v; want %s", got, err, want)
	}
}

// orderSink notes when its Finish began and returned.
type orderSink struct {
	*recSink
	hold            time.Duration
	began, returned time.Time
}

func (s *orderSink) Finish(id int64, status string, started, ended time.Time, sum *metrics.Summary, err error) {
	s.began = time.Now()
	time.Sleep(s.hold)
	s.recSink.Finish(id, status, started, ended, sum, err)
	s.returned = time.Now()
}

// The store is given first and the live stream second: a viewer is told the run ended only once
// the run is stored, so it finds the run finished when it asks.
func TestFinishReachesTheSinksInOrder(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	store := &orderSink{recSink: newRecSink(0), hold: 200 * time.Millisecond}
	live := &orderSink{recSink: newRecSink(0)}
	rn := New(quiet(), store, live)
	if _, err := rn.Start(testPlan(t, tg.URL, "1s"), func(time.Time) (int64, error) { return 3, nil }); err != nil {
		t.Fatal(err)
	}
	<-rn.Done(3)
	if store.returned.IsZero() || live.began.Before(store.returned) {
		t.Errorf("second sink's Finish began %v, first sink's returned %v", live.began, store.returned)
	}
}

// failSink fails the run from its Sample (at second failAt) or from its Finish (finishFail), as a
// store that cannot save the run does; it records what it is told.
type failSink struct {
	rn         *Runner
	failAt     int
	finishFail bool
	mu         sync.Mutex
	events     []string
	status     string
	err        error
	finished   chan struct{}
}

func (s *failSink) Start(int64, time.Time) {}

func (s *failSink) Sample(id int64, smp *Sample) {
	s.mu.Lock()
	s.events = append(s.events, "sample")
	s.mu.Unlock()
	if smp.ElapsedS == s.failAt {
		if err := s.rn.Fail(id, errors.New("the disk is full")); err != nil {
			panic(err)
		}
	}
}

func (s *failSink) Failing(_ int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, "failing: "+err.Error())
}

func (s *failSink) Finish(id int64, status string, _, _ time.Time, _ *metrics.Summary, err error) {
	s.mu.Lock()
	s.events = append(s.events, "finish: "+status)
	s.status, s.err = status, err
	s.mu.Unlock()
	if s.finishFail {
		if err := s.rn.Fail(id, errors.New("seconds 3-4 could not be saved")); err != nil {
			panic(err)
		}
	}
	close(s.finished)
}

// Fail from a sink stops the run at once; it ends "failed" with the error, even after a Stop,
// and every FailNotifier is told before the summary.
func TestFailFromASinkFailsTheRun(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	failing := &failSink{failAt: 2, finished: make(chan struct{})}
	viewer := &failSink{finished: make(chan struct{})}
	rn := New(quiet(), failing, viewer)
	failing.rn, viewer.rn = rn, rn
	start := time.Now()
	if _, err := rn.Start(testPlan(t, tg.URL, "1m"), func(time.Time) (int64, error) { return 4, nil }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-viewer.finished:
	case <-time.After(15 * time.Second):
		t.Fatal("the failed run did not end")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the run ended %v after start: Fail at second 2 did not stop it", took)
	}
	for _, s := range []*failSink{failing, viewer} {
		s.mu.Lock()
		if s.status != StatusFailed || s.err == nil || s.err.Error() != "the disk is full" {
			t.Errorf("finish: status %q, err %v", s.status, s.err)
		}
		var failings int
		for i, e := range s.events {
			if e == "failing: the disk is full" {
				failings++
				if i == len(s.events)-1 || s.events[len(s.events)-1] != "finish: failed" {
					t.Errorf("events %v: the failure is not followed by the end", s.events)
				}
			}
		}
		if failings != 1 {
			t.Errorf("told of the failure %d times: %v", failings, s.events)
		}
		s.mu.Unlock()
	}
	<-rn.Done(4) // the run is over once every sink has its summary
	if err := rn.Fail(4, errors.New("late")); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Fail after the end: %v, want ErrNotRunning", err)
	}
}

// A sink's Finish may still fail the run (it could not save it): the sinks after it are told the
// run failed, with that error, even though it was stopped.
func TestFailFromFinishReachesLaterSinks(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	store := &failSink{finishFail: true, finished: make(chan struct{})}
	viewer := &failSink{finished: make(chan struct{})}
	rn := New(quiet(), store, viewer)
	store.rn, viewer.rn = rn, rn
	if _, err := rn.Start(testPlan(t, tg.URL, "1m"), func(time.Time) (int64, error) { return 5, nil }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := rn.Stop(5); err != nil {
		t.Fatal(err)
	}
	<-viewer.finished
	if store.status != StatusStopped {
		t.Errorf("first sink: status %q, want stopped", store.status)
	}
	if viewer.status != StatusFailed || viewer.err == nil || viewer.err.Error() != "seconds 3-4 could not be saved" {
		t.Errorf("later sink: status %q, err %v; want failed with the first sink's error", viewer.status, viewer.err)
	}
}
