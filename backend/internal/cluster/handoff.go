package cluster

import (
	"context"
	"errors"
	"sync"
)

// Handoff carries the snapshots of agents in this process (a single-machine run's local agent,
// localagent) to the coordinator in memory: the agent's publisher calls Deliver with each
// Snapshot in order, where a remote agent JSON-encodes it and publishes it on the snapshot
// stream, and Coordinator.Run (RunSpec.Handoff) takes them in as it takes the stream's. The run's
// merge sees the values a JSON round trip would give it (Deliver clears the fields the wire
// leaves out), so the seconds and the summary are those of the JetStream path; nothing is
// encoded, published, stored in the stream or fetched. Safe for concurrent use.
//
// It is bounded: each run's queue holds HandoffQueue snapshots; Deliver waits while it is full
// (the agent's publisher waits, never its engine: the agent's spool, agent.SpoolSeconds, takes
// the seconds meanwhile, as it does while a broker is unreachable).
type Handoff struct {
	mu   sync.Mutex
	runs map[int64]*handoffRun
}

// HandoffQueue is how many snapshots of a run a Handoff holds before Deliver waits.
const HandoffQueue = 256

// ErrNoRun is Deliver's error for a snapshot of a run no coordinator takes in (not started yet
// on this Handoff, or ended): it is dropped, as the stream's copy of an in-process run is purged
// at its end.
var ErrNoRun = errors.New("cluster: no run takes this snapshot in")

// handoffRun is one run's queue: in is the run loop's input, done is closed when the run ends.
type handoffRun struct {
	in   chan incoming
	done chan struct{}
}

// NewHandoff makes an empty Handoff.
func NewHandoff() *Handoff { return &Handoff{runs: map[int64]*handoffRun{}} }

// open makes run's queue (a run open already is an error: one coordinator takes a run in).
func (h *Handoff) open(run int64) (*handoffRun, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.runs[run]; ok {
		return nil, errors.New("cluster: the run is taken in already")
	}
	q := &handoffRun{in: make(chan incoming, HandoffQueue), done: make(chan struct{})}
	h.runs[run] = q
	return q, nil
}

// close ends q (run's): a Deliver waiting on it returns ErrNoRun, later ones too.
func (h *Handoff) close(run int64, q *handoffRun) {
	h.mu.Lock()
	if h.runs[run] == q {
		delete(h.runs, run)
	}
	h.mu.Unlock()
	close(q.done)
}

// Deliver hands snap to the coordinator taking run snap.Run in, as Coordinator.Run takes a
// snapshot from the stream: in order, a second it has already (by agent and Second) ignored.
// It waits while the run's queue is full. Errors: ErrNoRun (the run is not taken in, or ended
// while waiting: snap is dropped), or ctx's error. snap's Part and Final are not changed; the
// coordinator gets copies of them without the fields their JSON leaves out (the sample's Hist,
// P95SoFarMs, LatencySumUs and NameHists, which the part carries on its own, and the agent
// summary's Hist, which the final carries).
func (h *Handoff) Deliver(ctx context.Context, snap Snapshot) error {
	h.mu.Lock()
	q := h.runs[snap.Run]
	h.mu.Unlock()
	if q == nil {
		return ErrNoRun
	}
	select {
	case <-q.done:
		return ErrNoRun
	default:
	}
	if snap.Part != nil {
		p := *snap.Part
		p.Sample.Hist, p.Sample.P95SoFarMs, p.Sample.LatencySumUs, p.Sample.NameHists = "", 0, 0, nil
		snap.Part = &p
	}
	if snap.Final != nil && snap.Final.Summary != nil {
		f, sum := *snap.Final, *snap.Final.Summary
		sum.Hist = ""
		f.Summary = &sum
		snap.Final = &f
	}
	select {
	case q.in <- incoming{agent: snap.Agent, snap: snap}:
		return nil
	case <-q.done:
		return ErrNoRun
	case <-ctx.Done():
		return ctx.Err()
	}
}
