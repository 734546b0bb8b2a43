package runs_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/runs"
	"github.com/volley-load/volley/backend/internal/store"
)

var errFull = sqlite3.Error{Code: sqlite3.ErrFull}

// flakyWriter is a SampleWriter whose writes fail while fail says so.
type flakyWriter struct {
	mu          sync.Mutex
	failSecond  func(second int) bool // AppendSample of this second fails (while the writer is broken)
	healed      bool
	finishFails int // the first finishFails FinishRun calls fail
	stored      []int
	finishes    []finishCall
}

type finishCall struct {
	status, msg string
	summary     bool
	err         error
}

func (w *flakyWriter) AppendSample(_ context.Context, _ int64, smp store.Sample, _ store.Progress) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.healed && w.failSecond != nil && w.failSecond(smp.Second) {
		return errFull
	}
	w.stored = append(w.stored, smp.Second)
	return nil
}

func (w *flakyWriter) FinishRun(_ context.Context, _ int64, status string, _ time.Time, _ store.Progress, summary, _ []byte, msg string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := finishCall{status: status, msg: msg, summary: len(summary) > 0}
	if w.finishFails > 0 {
		w.finishFails--
		c.err = errFull
	}
	w.finishes = append(w.finishes, c)
	return c.err
}

// sinkRig drives a StoreSink with a fake clock: each second of the run advances it by 1 s, and
// the sink's Sleep advances it by what it asks.
type sinkRig struct {
	sink  *runs.StoreSink
	w     *flakyWriter
	now   time.Time
	fails []error
	logs  *bytes.Buffer
	sum   *metrics.Summary // the summary finish gives; nil: 100 requests, all successful
}

func newSinkRig(w *flakyWriter) *sinkRig {
	r := &sinkRig{w: w, now: time.Unix(1_800_000_000, 0), logs: &bytes.Buffer{}}
	r.sink = &runs.StoreSink{W: w, Log: slog.New(slog.NewTextHandler(r.logs, nil)),
		BufferFor: 5 * time.Second, FinalRetryFor: 10 * time.Second,
		Now:   func() time.Time { return r.now },
		Sleep: func(d time.Duration) { r.now = r.now.Add(d) },
		Fail: func(_ int64, err error) error {
			r.fails = append(r.fails, err)
			return nil
		}}
	return r
}

func (r *sinkRig) second(i int) {
	r.now = r.now.Add(time.Second)
	r.sink.Sample(1, runner.NewSample(metrics.Sample{T: r.now.UnixMilli(), ElapsedS: i, IntervalS: 1, Requests: 10}))
}

func (r *sinkRig) finish(status string, runErr error) {
	sum := cmp.Or(r.sum, &metrics.Summary{Requests: 100, Successes: 100, DurationS: 10})
	r.sink.Finish(1, status, r.now, r.now, sum, runErr)
}

func seq(from, to int) []int {
	var s []int
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// A run that ended without a successful response is stored with why: its most frequent error
// kind; its status stays finished (its outcome, from the stored figures, is failed).
func TestStoreSinkStoresWhyNoRequestSucceeded(t *testing.T) {
	w := &flakyWriter{failSecond: func(int) bool { return false }}
	r := newSinkRig(w)
	r.sum = &metrics.Summary{Requests: 100, Errors: 100, ErrorRate: 1, DurationS: 10,
		ErrorKinds: map[string]int64{"connect_refused": 90, "reset": 10}}
	r.second(1)
	r.finish(runner.StatusFinished, nil)
	want := "no successful response: 90 connect_refused (of 100 requests)"
	if len(w.finishes) != 1 || w.finishes[0].status != "finished" || w.finishes[0].msg != want {
		t.Errorf("finish calls %+v, want status finished, msg %q", w.finishes, want)
	}
}

// Writes failing for less than BufferFor: the seconds wait in memory and are all stored, in
// order, once the database accepts writes again; the run is not failed.
func TestStoreSinkBuffersAndRecovers(t *testing.T) {
	w := &flakyWriter{failSecond: func(s int) bool { return s >= 3 }}
	r := newSinkRig(w)
	for i := 1; i <= 6; i++ {
		r.second(i)
	}
	w.mu.Lock()
	w.healed = true
	w.mu.Unlock()
	r.second(7)
	r.finish(runner.StatusFinished, nil)
	if !slices.Equal(w.stored, seq(1, 7)) {
		t.Errorf("stored seconds %v, want 1-7 in order", w.stored)
	}
	if len(r.fails) != 0 {
		t.Errorf("run failed: %v", r.fails)
	}
	if len(w.finishes) != 1 || w.finishes[0].status != "finished" || w.finishes[0].msg != "" {
		t.Errorf("finish calls %+v", w.finishes)
	}
	if !strings.Contains(r.logs.String(), "storage recovered") {
		t.Errorf("no recovery logged:\n%s", r.logs)
	}
}

// Writes failing for BufferFor: the run is failed once, with a StorageError that says the disk
// is full and which seconds were lost; its end is stored as failed with that reason.
func TestStoreSinkFailsTheRunPastTheBound(t *testing.T) {
	w := &flakyWriter{failSecond: func(s int) bool { return s >= 3 }}
	r := newSinkRig(w)
	for i := 1; i <= 7; i++ {
		r.second(i)
	}
	if len(r.fails) != 0 {
		t.Fatalf("failed after %d s of failed writes, before the 5 s bound: %v", 4, r.fails)
	}
	r.second(8) // 5 s after the first failure
	if len(r.fails) != 1 {
		t.Fatalf("Fail called %d times after 5 s of failed writes, want 1", len(r.fails))
	}
	var se *runs.StorageError
	if !errors.As(r.fails[0], &se) || se.First != 3 || se.Last != 8 || se.Reason != "the disk is full" || !errors.Is(se, errFull) {
		t.Fatalf("fail error %#v", r.fails[0])
	}
	r.second(9) // during the graceful stop
	if len(r.fails) != 1 {
		t.Errorf("Fail called again: %v", r.fails)
	}
	r.finish(runner.StatusFailed, r.fails[0]) // as the runner passes it
	if !slices.Equal(w.stored, seq(1, 2)) {
		t.Errorf("stored seconds %v, want 1-2", w.stored)
	}
	if len(w.finishes) != 1 {
		t.Fatalf("finish calls %+v", w.finishes)
	}
	f := w.finishes[0]
	if f.status != "failed" || !f.summary || f.msg != r.fails[0].Error() {
		t.Errorf("finish %+v", f)
	}
	for _, want := range []string{"storage failed", "the disk is full", "seconds 3-8", "database or disk is full"} {
		if !strings.Contains(f.msg, want) {
			t.Errorf("run error %q lacks %q", f.msg, want)
		}
	}
}

// The memory bound fails the run before the time bound.
func TestStoreSinkFailsTheRunPastTheMemoryBound(t *testing.T) {
	w := &flakyWriter{failSecond: func(s int) bool { return s >= 2 }}
	r := newSinkRig(w)
	r.sink.BufferBytes = 1 // any unstored second exceeds it
	r.second(1)
	r.second(2)
	if len(r.fails) != 1 {
		t.Fatalf("Fail called %d times with the memory bound exceeded, want 1", len(r.fails))
	}
}

// Seconds still unstored when the run ends are retried until the bound; then the run is
// recorded as failed (and later sinks are told, through Fail) even though it had finished. The
// end itself is retried while its write fails.
func TestStoreSinkFinishRetriesThenRecordsTheLoss(t *testing.T) {
	w := &flakyWriter{failSecond: func(s int) bool { return s >= 9 }, finishFails: 4}
	r := newSinkRig(w)
	for i := 1; i <= 10; i++ {
		r.second(i)
	}
	start := r.now
	r.finish(runner.StatusFinished, nil)
	if len(r.fails) != 1 {
		t.Fatalf("Fail called %d times, want 1 (from Finish)", len(r.fails))
	}
	if waited := r.now.Sub(start); waited < 3*time.Second {
		t.Errorf("the unstored seconds were retried for %v only (first failure 4 s before the bound)", waited)
	}
	// 4 failed calls: two attempts, each with the summary and then without; the third succeeds.
	if len(w.finishes) != 5 {
		t.Fatalf("%d finish calls, want 5: %+v", len(w.finishes), w.finishes)
	}
	last := w.finishes[len(w.finishes)-1]
	if last.err != nil || last.status != "failed" || !last.summary || !strings.Contains(last.msg, "seconds 9-10") {
		t.Errorf("last finish %+v", last)
	}
}

// An end that cannot be stored within FinalRetryFor is given up, and the log says what becomes
// of the run.
func TestStoreSinkGivesUpTheEndAfterFinalRetry(t *testing.T) {
	w := &flakyWriter{finishFails: 1 << 30}
	r := newSinkRig(w)
	r.second(1)
	start := r.now
	r.finish(runner.StatusFinished, nil)
	if waited := r.now.Sub(start); waited < 10*time.Second || waited > 15*time.Second {
		t.Errorf("gave up after %v, want just past FinalRetryFor (10 s)", waited)
	}
	if !strings.Contains(r.logs.String(), "interrupted") {
		t.Errorf("the log does not say the run will be marked interrupted:\n%s", r.logs)
	}
}
