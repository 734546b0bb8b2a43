package runs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/store"
)

// SampleWriter is the storage a StoreSink writes to (implemented by *store.Store).
type SampleWriter interface {
	AppendSample(ctx context.Context, runID int64, smp store.Sample, p store.Progress) error
	FinishRun(ctx context.Context, runID int64, status string, endedAt time.Time, p store.Progress, summary, hist []byte, errMsg string) error
}

// Storage fault bounds of StoreSink; a zero field of StoreSink takes these.
const (
	// DefaultBufferFor is how long a run goes on while its seconds cannot be stored: they are
	// kept in memory and retried every second; past this the run is failed.
	DefaultBufferFor = 30 * time.Second
	// DefaultBufferBytes bounds the memory those unstored seconds take (their JSON and
	// histograms); past it the run is failed at once.
	DefaultBufferBytes = 16 << 20
	// DefaultFinalRetryFor is how long the end of a run (its status, error and summary) is
	// retried before the sink gives up; the run then stays "running" in storage until the next
	// start marks it interrupted.
	DefaultFinalRetryFor = 30 * time.Second
)

// StorageError is the error a run is failed with when its seconds cannot be stored.
type StorageError struct {
	Reason      string // store.FaultReason of the last error, or "" when unknown
	First, Last int    // the seconds (elapsed_s) not stored
	For         time.Duration
	Err         error // the last write error
}

func (e *StorageError) Error() string {
	reason := e.Reason
	if reason == "" {
		reason = "the database refused the writes"
	}
	secs := fmt.Sprintf("second %d", e.First)
	if e.Last > e.First {
		secs = fmt.Sprintf("seconds %d-%d", e.First, e.Last)
	}
	return fmt.Sprintf("storage failed: %s; %s of this run could not be saved (retried for %s): %v",
		reason, secs, e.For.Round(time.Second), e.Err)
}

func (e *StorageError) Unwrap() error { return e.Err }

// StoreSink writes every second of a run as it happens (one transaction per second, so a crash
// loses at most the current second) and the summary at the end. The run's list columns are kept
// current while it runs: its totals so far, and its p95 so far as the collector hands it over
// (metrics.Sample.P95SoFarMs; no histogram is decoded here).
//
// A second that cannot be written (disk full, I/O error, database locked) is kept in memory and
// retried, in order, with every new second. When writes have failed for BufferFor, or the
// unstored seconds exceed BufferBytes, the sink calls Fail: the run is stopped and ends "failed"
// with a StorageError. The end of the run is retried for FinalRetryFor; a run that still has
// unstored seconds then is recorded as failed. Seconds already stored are never rewritten.
type StoreSink struct {
	W   SampleWriter
	Log *slog.Logger
	// Fail stops a run that cannot be stored (runner.Runner.Fail). Nil: the run goes on, and is
	// recorded as failed at its end.
	Fail func(runID int64, err error) error

	BufferFor     time.Duration // 0: DefaultBufferFor
	BufferBytes   int           // 0: DefaultBufferBytes
	FinalRetryFor time.Duration // 0: DefaultFinalRetryFor
	// Now and Sleep replace time.Now and time.Sleep (tests).
	Now   func() time.Time
	Sleep func(time.Duration)

	runID    int64
	requests int64
	errors   int64

	cmu    sync.Mutex
	carry  *carried  // Continue's totals for the next Start of their run
	agents runAgents // SetAgents: the agents count its run's end writes

	pending      []pendingSample // seconds not yet stored, oldest first
	pendingBytes int
	failingSince time.Time // first failed write of the current streak (zero: writes succeed)
	lastErr      error
	failErr      *StorageError // the error the run was failed with
}

// carried is a resumed run's totals so far (Continue).
type carried struct{ runID, requests, errors int64 }

// runAgents is how many agents a run over agents was started on (SetAgents).
type runAgents struct {
	runID int64
	n     int
}

// SetAgents makes the end of run runID record n agents whatever its summary says — none at all
// when the run failed before any agent delivered one (an agent refused its Prepare, no agent
// delivered anything): a run's agents count is the number it was started on, whatever its outcome.
// Safe to call while the run is active (or before it starts).
func (k *StoreSink) SetAgents(runID int64, n int) {
	k.cmu.Lock()
	defer k.cmu.Unlock()
	k.agents = runAgents{runID: runID, n: n}
}

type pendingSample struct {
	smp store.Sample
	p   store.Progress
}

func (k *StoreSink) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

func (k *StoreSink) sleep(d time.Duration) {
	if k.Sleep != nil {
		k.Sleep(d)
		return
	}
	time.Sleep(d)
}

func (k *StoreSink) bufferFor() time.Duration { return cmp.Or(k.BufferFor, DefaultBufferFor) }

// Start implements runner.Sink: the sink's state is the new run's (its totals Continue's when
// the run is one that goes on).
func (k *StoreSink) Start(runID int64, _ time.Time) {
	k.reset(runID)
	k.cmu.Lock()
	defer k.cmu.Unlock()
	if c := k.carry; c != nil && c.runID == runID {
		k.requests, k.errors = c.requests, c.errors
	}
	k.carry = nil
}

// Continue makes the next Start of run runID go on from the totals of its seconds already stored
// (requests and errors: the sums of their samples' fields) instead of zero, so that the run's
// list columns stay its whole run's: a run resumed after a restart (Service.Resume). Safe to call
// while another run is active.
func (k *StoreSink) Continue(runID int64, requests, errs int64) {
	k.cmu.Lock()
	defer k.cmu.Unlock()
	k.carry = &carried{runID: runID, requests: requests, errors: errs}
}

// Sample implements runner.Sink: one transaction for the second's row and the run's totals.
// The sample's JSON is the runner's shared encoding (the live stream sends the same bytes).
func (k *StoreSink) Sample(runID int64, s *runner.Sample) {
	if k.runID != runID {
		k.reset(runID)
	}
	k.requests += s.Requests
	k.errors += s.Errors
	data, err := s.JSON()
	if err != nil {
		k.Log.Error("encode sample", "run", runID, "err", err)
		return
	}
	// The run so far: up to this second (or a part of it). Not ElapsedS − 1 + IntervalS: after a
	// stalled collector the reading's interval spans the seconds before it too.
	elapsed := float64(s.ElapsedS-1) + min(s.IntervalS, 1)
	p := store.Progress{DurationS: elapsed, Requests: k.requests, P95Ms: s.P95SoFarMs}
	if elapsed > 0 {
		p.RPS = float64(k.requests) / elapsed
	}
	if k.requests > 0 {
		p.ErrorRate = float64(k.errors) / float64(k.requests)
	}
	smp := store.Sample{Second: s.ElapsedS, TMs: s.T, Data: data}
	if s.Hist != "" {
		smp.Hist = []byte(s.Hist)
	}
	k.pending = append(k.pending, pendingSample{smp: smp, p: p})
	k.pendingBytes += len(smp.Data) + len(smp.Hist)
	if k.flush(runID) == nil || k.failErr != nil {
		return
	}
	if k.now().Sub(k.failingSince) >= k.bufferFor() || k.pendingBytes > cmp.Or(k.BufferBytes, DefaultBufferBytes) {
		k.fail(runID)
	}
}

func (k *StoreSink) reset(runID int64) {
	k.runID, k.requests, k.errors = runID, 0, 0
	clear(k.pending)
	k.pending, k.pendingBytes, k.failingSince, k.lastErr, k.failErr = k.pending[:0], 0, time.Time{}, nil, nil
}

// flush writes the pending seconds in order, stopping at the first failure.
func (k *StoreSink) flush(runID int64) error {
	done := 0
	defer func() { // keep the unstored tail at the front, reusing the array
		n := copy(k.pending, k.pending[done:])
		clear(k.pending[n:])
		k.pending = k.pending[:n]
	}()
	for ; done < len(k.pending); done++ {
		ps := k.pending[done]
		if err := k.W.AppendSample(context.Background(), runID, ps.smp, ps.p); err != nil {
			if k.failingSince.IsZero() {
				k.failingSince = k.now()
				k.Log.Warn("cannot store the run's second; keeping it in memory and retrying",
					"run", runID, "second", ps.smp.Second, "retry_for", k.bufferFor(), "err", err)
			}
			k.lastErr = err
			return err
		}
		k.pendingBytes -= len(ps.smp.Data) + len(ps.smp.Hist)
	}
	if !k.failingSince.IsZero() {
		k.Log.Info("storage recovered; the buffered seconds are stored", "run", runID,
			"after", k.now().Sub(k.failingSince).Round(time.Millisecond))
		k.failingSince, k.lastErr = time.Time{}, nil
	}
	return nil
}

// fail records why the run cannot be stored and asks the runner to stop it.
func (k *StoreSink) fail(runID int64) {
	k.failErr = &StorageError{Reason: store.FaultReason(k.lastErr), First: k.pending[0].smp.Second,
		Last: k.pending[len(k.pending)-1].smp.Second, For: k.now().Sub(k.failingSince), Err: k.lastErr}
	k.Log.Error("run failed: its seconds cannot be stored", "run", runID, "err", k.failErr)
	if k.Fail != nil {
		_ = k.Fail(runID, k.failErr)
	}
}

// Finish implements runner.Sink. Seconds still unstored are retried until BufferFor has passed
// since the first failure (at once when the run was failed for them); then the end of the run is
// written, retried for FinalRetryFor.
func (k *StoreSink) Finish(runID int64, status string, _, ended time.Time, sum *metrics.Summary, runErr error) {
	if k.runID != runID {
		k.reset(runID)
	}
	defer func() {
		k.runID = 0 // a later Sample of this id (none is sent) would start afresh
		clear(k.pending)
		k.pending, k.pendingBytes = k.pending[:0], 0
	}()
	for k.failErr == nil && k.flush(runID) != nil {
		if k.now().Sub(k.failingSince) >= k.bufferFor() {
			k.fail(runID) // later sinks (the live stream) learn that the run failed
			break
		}
		k.sleep(time.Second)
	}

	var data, hist []byte
	var p store.Progress
	if sum != nil {
		data, _ = json.Marshal(sum)
		hist = []byte(sum.Hist)
		p = store.Progress{DurationS: sum.DurationS, Requests: sum.Requests, RPS: sum.RPS, P95Ms: sum.Latency.P95, ErrorRate: sum.ErrorRate,
			ThresholdsOK: thresholdsOK(sum), ServerCPUMax: ServerCPUMax(sum), Agents: sum.Agents, Degraded: sum.Degraded}
	}
	k.cmu.Lock()
	if a := k.agents; a.runID == runID && a.n > 0 {
		p.Agents = a.n
	}
	k.cmu.Unlock()
	msg := endMessage(status, sum, runErr)
	if k.failErr != nil {
		status = store.StatusFailed
		if runErr == nil || !errors.Is(runErr, k.failErr) {
			msg = strings.TrimPrefix(msg+"; "+k.failErr.Error(), "; ")
		}
	}
	deadline := k.now().Add(cmp.Or(k.FinalRetryFor, DefaultFinalRetryFor))
	for wait := 250 * time.Millisecond; ; wait = min(2*wait, 4*time.Second) {
		err := k.W.FinishRun(context.Background(), runID, status, ended, p, data, hist, msg)
		if err != nil && len(data) > 0 {
			// A smaller write (no summary) may still fit where the full one did not.
			if err2 := k.W.FinishRun(context.Background(), runID, status, ended, p, nil, nil, msg); err2 == nil {
				k.Log.Warn("run ended without its summary: the summary could not be stored", "run", runID, "err", err)
				err = nil
			}
		}
		if err == nil {
			if len(k.pending) > 0 {
				k.Log.Error("run ended with seconds that could not be stored", "run", runID,
					"first", k.pending[0].smp.Second, "last", k.pending[len(k.pending)-1].smp.Second)
			}
			return
		}
		if k.now().After(deadline) {
			k.Log.Error("cannot store the end of the run; it stays running in the database until the next start marks it interrupted",
				"run", runID, "status", status, "run_error", msg, "err", err)
			return
		}
		k.Log.Warn("cannot store the end of the run; retrying", "run", runID, "err", err)
		k.sleep(wait)
	}
}
