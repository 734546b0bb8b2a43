package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/volley-load/volley/backend/internal/cluster"
)

// SpoolSeconds bounds the snapshots an agent holds while the broker does not acknowledge them:
// an hour of one run's seconds. Past it the oldest is dropped (and logged): the controller then
// shows that second as missing, and the agent's memory stays bounded.
const SpoolSeconds = 3600

// Publishing: each snapshot waits publishTimeout for its JetStream acknowledgement; a failed
// publish is tried again after retryWait, in order, until acknowledged (the stream's duplicate
// window drops a second stored by an attempt whose ack was lost).
const (
	publishTimeout = 2 * time.Second
	retryWait      = 250 * time.Millisecond
)

// spooled is one snapshot waiting for its acknowledgement.
type spooled struct {
	subject, msgID string
	data           []byte
	// tooBig is published in data's place when the broker refuses data as larger than it takes
	// (a final's failed stand-in: the controller then loses the agent at once, naming why,
	// instead of waiting for its final until the run's end); nil: data is dropped.
	tooBig []byte
	// snap is the snapshot itself, delivered in memory by an in-process agent (worker.handoff);
	// subject, data and tooBig are then empty.
	snap *cluster.Snapshot
}

// spool is the agent's bounded FIFO of snapshots not yet acknowledged. push never blocks (the
// engine's collector calls it), and takes a lock once per second of a run.
type spool struct {
	mu      sync.Mutex
	q       []spooled
	dropped int
	wake    chan struct{} // capacity 1: "something was pushed"
}

func newSpool() *spool { return &spool{wake: make(chan struct{}, 1)} }

// push appends m, dropping the oldest when SpoolSeconds are held; it reports whether one was
// dropped.
func (s *spool) push(m spooled) (dropped bool) {
	s.mu.Lock()
	if len(s.q) >= SpoolSeconds {
		s.q = append(s.q[:0], s.q[1:]...)
		s.dropped++
		dropped = true
	}
	s.q = append(s.q, m)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return dropped
}

func (s *spool) head() (spooled, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.q) == 0 {
		return spooled{}, false
	}
	return s.q[0], true
}

// pop removes the head if it is still m's (a push past the bound may have dropped it).
func (s *spool) pop(m spooled) {
	s.mu.Lock()
	if len(s.q) > 0 && s.q[0].msgID == m.msgID {
		s.q[0] = spooled{}
		s.q = s.q[1:]
	}
	s.mu.Unlock()
}

// standIn puts m's tooBig in place of its data if m is still the head.
func (s *spool) standIn(m spooled) {
	s.mu.Lock()
	if len(s.q) > 0 && s.q[0].msgID == m.msgID {
		s.q[0].data, s.q[0].tooBig = m.tooBig, nil
	}
	s.mu.Unlock()
}

func (s *spool) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.q)
}

// publish runs until ctx ends: it publishes the spool's head with JetStream and its message id,
// pops it when acknowledged (recording the acknowledgement for fencing) and tries again after
// retryWait when not (cut off, reconnecting, no stream yet). Order is kept: a second is never
// published before an earlier one is acknowledged. An in-process agent's head is delivered to
// its Handoff instead (waiting while the run's queue is full; a snapshot of a run no coordinator
// takes in is dropped).
func (w *worker) publish(ctx context.Context) {
	defer w.recoverIn("publisher", nil)
	for {
		m, ok := w.sp.head()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-w.sp.wake:
			}
			continue
		}
		if m.snap != nil {
			if err := w.handoff.Deliver(ctx, *m.snap); err != nil && ctx.Err() != nil {
				return
			} else if err != nil {
				w.log.Debug("snapshot of a run no coordinator takes in; dropped", "msg_id", m.msgID)
			}
			w.sp.pop(m)
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, publishTimeout)
		_, err := w.js.Publish(pctx, m.subject, m.data, jetstream.WithMsgID(m.msgID))
		cancel()
		switch {
		case err == nil:
			w.acked()
			w.sp.pop(m)
			continue
		case errors.Is(err, nats.ErrMaxPayload) && m.tooBig != nil:
			w.log.Error("final snapshot larger than the broker takes; sending its failure instead", "msg_id", m.msgID, "bytes", len(m.data))
			w.sp.standIn(m)
			continue
		case errors.Is(err, nats.ErrMaxPayload):
			w.log.Error("snapshot larger than the broker takes; dropped", "msg_id", m.msgID, "bytes", len(m.data))
			w.sp.pop(m)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retryWait):
		}
	}
}
