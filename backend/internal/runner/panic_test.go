package runner

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// errSink records the status and error a run ends with; panicOn makes Sample panic at that second
// (-1: Start panics).
type errSink struct {
	recSink
	panicOn int
	mu2     sync.Mutex
	err     error
}

func (s *errSink) Start(id int64, started time.Time) {
	if s.panicOn == -1 {
		panic("sink broke at start")
	}
	s.recSink.Start(id, started)
}

func (s *errSink) Sample(id int64, smp *Sample) {
	if smp.ElapsedS == s.panicOn {
		panic("sink broke")
	}
	s.recSink.Sample(id, smp)
}

func (s *errSink) Finish(id int64, status string, a, b time.Time, sum *metrics.Summary, err error) {
	s.mu2.Lock()
	s.err = err
	s.mu2.Unlock()
	s.recSink.Finish(id, status, a, b, sum, err)
}

func waitFinished(t *testing.T, s *errSink) (string, error) {
	t.Helper()
	select {
	case <-s.finished:
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu2.Lock()
	defer s.mu2.Unlock()
	return s.status, s.err
}

// A panic in a VU goroutine, or in a sink, ends the run as failed with the reason; the runner
// (and the process) goes on and starts the next run.
func TestAPanicEndsTheRunAsFailed(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	t.Run("VU", func(t *testing.T) {
		restore := engine.SetPanicHookForTest(func(point string, id int) {
			if point == "vu" && id == 1 {
				panic("VU broke")
			}
		})
		defer restore()
		s := &errSink{recSink: *newRecSink(0)}
		r := New(quiet(), s)
		if _, err := r.Start(testPlan(t, tg.URL, "1m"), func(time.Time) (int64, error) { return 1, nil }); err != nil {
			t.Fatal(err)
		}
		status, err := waitFinished(t, s)
		if status != StatusFailed || err == nil || !strings.Contains(err.Error(), "VU 1") || !strings.Contains(err.Error(), "VU broke") {
			t.Errorf("status %q, err %v", status, err)
		}
	})
	// A sink that panics in Sample (at its first second) or in Start.
	for _, c := range []struct {
		name    string
		panicOn int
		want    string
	}{{"sink", 1, "sink broke"}, {"sink start", -1, "sink broke at start"}} {
		t.Run(c.name, func(t *testing.T) {
			broken := &errSink{recSink: *newRecSink(0), panicOn: c.panicOn}
			good := &errSink{recSink: *newRecSink(0)}
			r := New(quiet(), broken, good)
			start := time.Now()
			if _, err := r.Start(testPlan(t, tg.URL, "1m"), func(time.Time) (int64, error) { return 2, nil }); err != nil {
				t.Fatal(err)
			}
			for _, s := range []*errSink{broken, good} {
				status, err := waitFinished(t, s)
				if status != StatusFailed || err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("status %q, err %v", status, err)
				}
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the failed run took %s to end", d)
			}
			if len(broken.seconds) != 0 {
				t.Errorf("the broken sink got seconds %v", broken.seconds)
			}
			// the runner is free for the next run
			s := &errSink{recSink: *newRecSink(0)}
			r2 := New(quiet(), s)
			if _, err := r2.Start(testPlan(t, tg.URL, "1s"), func(time.Time) (int64, error) { return 3, nil }); err != nil {
				t.Fatal(err)
			}
			if status, err := waitFinished(t, s); status != StatusFinished || err != nil {
				t.Errorf("next run: %q %v", status, err)
			}
			if _, ok := r.Active(); ok {
				t.Error("the failed run is still active")
			}
		})
	}
}
