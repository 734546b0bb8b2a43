package agent

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

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/segment"
)

// Timing of a run on an agent (docs/scale-out.md, "The agent's side of a run").
const (
	// ClockProbes is how many clock probes Prepare makes; the one with the smallest round trip
	// gives the offset (as NTP's clock filter keeps the sample of least delay, RFC 5905 §10).
	ClockProbes = 5
	// maxStartWait bounds how far in the future (on the agent's clock) a start may be: a start
	// further out says the clocks disagree beyond what a probe measured.
	maxStartWait = time.Minute
	// pingEvery: while a run is watched, the agent pings the broker (a flush) this often, so that
	// an acknowledgement comes at least once a second even between snapshots; fenceTick is how
	// often the lease is checked.
	pingEvery = 500 * time.Millisecond
	fenceTick = 100 * time.Millisecond
)

// PrepareTTL: a prepared run that gets no start within it is dropped (the agent is idle again).
// A variable for tests only.
var PrepareTTL = 30 * time.Second

// testPoint is called at named points of a run ("prepare": a valid Prepare, before the run's
// engine and control subject; "run": just before the engine starts); tests set it (before the
// agent starts) to panic or wait there.
var testPoint = func(where string, run int64) {}

// worker is an agent's run side: it answers Prepare, follows its run's control subject, runs the
// engine and publishes the snapshots.
type worker struct {
	id    string
	nc    *nats.Conn
	js    jetstream.JetStream
	log   *slog.Logger
	allow *Targets // nil: no --allow-target list
	sp    *spool
	ctx   context.Context // the agent's life
	beat  chan struct{}   // capacity 1: publish presence now (the state changed)
	base  time.Time       // monotonic origin of lastAck
	runs  sync.WaitGroup
	ackNs atomic.Int64             // last broker acknowledgement, ns since base
	watch atomic.Pointer[runState] // the run whose lease is watched, nil: none
	mu    sync.Mutex               // guards cur and runState.started
	cur   *runState                // the prepared or running run, nil: idle
	skew  time.Duration            // Config.ClockOffset: added to every wall-clock reading
	// policy is Config.Policy: the target policy in place of netpolicy.Default (nil: that).
	policy *netpolicy.Policy
	// handoff is Config.Handoff: an in-process agent's snapshots in memory (nil: the stream).
	handoff *cluster.Handoff
}

// now is the agent's wall clock (moved by Config.ClockOffset in tests).
func (w *worker) now() time.Time { return time.Now().Add(w.skew) }

// runState is the one run an agent has prepared or runs.
type runState struct {
	id         int64
	controller string
	msgKey     string // begins its snapshots' message ids (cluster.Prepare.MsgKey)
	eng        *engine.Engine
	offset     time.Duration // the agent's clock minus the controller's
	fenceAfter time.Duration
	ctx        context.Context // cancelled by stop or fencing
	cancel     context.CancelFunc
	sub        *nats.Subscription // its control subject
	drop       *time.Timer        // drops it unstarted after PrepareTTL
	started    bool               // a start was taken (guarded by worker.mu)
	stopping   bool               // a stop was taken after the start (guarded by worker.mu)

	fenced     atomic.Bool
	startedCtl atomic.Int64 // the engine's start on the controller's clock (unix ns), 0 before
	last       atomic.Int64 // the last second sampled
	first      atomic.Bool  // the first second went out (it carries StartedUnixNano)
}

func newWorker(ctx context.Context, nc *nats.Conn, id string, allow *Targets, log *slog.Logger) (*worker, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	w := &worker{id: id, nc: nc, js: js, log: log, allow: allow, sp: newSpool(), ctx: ctx,
		beat: make(chan struct{}, 1), base: time.Now()}
	return w, nil
}

// start subscribes the agent's prepare and change subjects and starts the publisher (until
// pubCtx ends). Unsubscribing the returned subscription (prepare) also ends the changes.
func (w *worker) start(pubCtx context.Context) (*nats.Subscription, error) {
	csub, err := w.nc.Subscribe(cluster.ChangeSubject(w.id), w.onChange)
	if err != nil {
		return nil, err
	}
	sub, err := w.nc.Subscribe(cluster.PrepareSubject(w.id), w.onPrepare)
	if err != nil {
		_ = csub.Unsubscribe()
		return nil, err
	}
	go func() {
		<-pubCtx.Done()
		_ = csub.Unsubscribe()
	}()
	go func() {
		for pubCtx.Err() == nil { // a panic restarts the publisher
			w.publish(pubCtx)
		}
	}()
	return sub, nil
}

// state is what presence shows: "running" and the run from an accepted Prepare until its
// engine's run has ended (its final snapshot is spooled right after; or the prepared run is
// dropped), else "idle".
func (w *worker) state() (string, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur != nil {
		return "running", w.cur.id
	}
	return "idle", 0
}

func (w *worker) changed() {
	select {
	case w.beat <- struct{}{}:
	default:
	}
}

// recoverIn is deferred at the top of the agent's goroutines and callbacks: a panic is logged
// with its stack and handed to then (nil: nothing else), never crashing the agent.
func (w *worker) recoverIn(where string, then func(error)) {
	if r := recover(); r != nil {
		err := fmt.Errorf("internal error in agent %s (%s): %v", w.id, where, r)
		w.log.Error("recovered", "err", err, "stack", string(debug.Stack()))
		if then != nil {
			then(err)
		}
	}
}

// acked records a broker acknowledgement now. A gap since the previous one longer than the
// watched run's fence_after fences that run even if the watcher did not see it lapse (a process
// stopped with SIGSTOP and resumed: its first acknowledgement after the resume must not renew the
// lease).
func (w *worker) acked() {
	now := int64(time.Since(w.base))
	for {
		prev := w.ackNs.Load()
		if now <= prev {
			return
		}
		if w.ackNs.CompareAndSwap(prev, now) {
			if rs := w.watch.Load(); rs != nil && time.Duration(now-prev) > rs.fenceAfter {
				w.fence(rs, time.Duration(now-prev))
			}
			return
		}
	}
}

// sinceAck is how long ago the last broker acknowledgement came.
func (w *worker) sinceAck() time.Duration { return time.Since(w.base) - time.Duration(w.ackNs.Load()) }

// fence stops rs's load: its engine's context is cancelled (no iteration starts after that; the
// plan's graceful stop applies to those in flight) and its final says Fenced.
func (w *worker) fence(rs *runState, silent time.Duration) {
	if rs.fenced.CompareAndSwap(false, true) {
		w.log.Warn("no acknowledgement from the broker: stopping the load (fenced)", "run", rs.id,
			"silent", silent.Round(time.Millisecond), "fence_after", rs.fenceAfter)
		rs.cancel()
	}
}

// refusal is a Ready refusing a Prepare, naming this agent.
func (w *worker) refusal(err error) cluster.Ready {
	r := cluster.Ready{Error: fmt.Sprintf("agent %s: %v", w.id, err)}
	var ve *plan.ValidationError
	if errors.As(err, &ve) {
		r.Fields = ve.Fields
	}
	return r
}

// respond answers request m with v (JSON); what names the request in the log if it cannot.
func (w *worker) respond(m *nats.Msg, v any, what string) {
	b, _ := json.Marshal(v)
	if err := m.Respond(b); err != nil {
		w.log.Warn("cannot answer "+what, "err", err)
	}
}

func (w *worker) onPrepare(m *nats.Msg) {
	defer w.recoverIn("prepare", func(err error) { w.respond(m, cluster.Ready{Error: err.Error()}, "prepare") })
	r := w.prepare(m.Data)
	if !r.OK {
		w.log.Warn("run refused", "reason", r.Error)
	}
	w.respond(m, r, "prepare")
}

// prepare validates a Prepare and makes its run ready (Ready.OK), or says why not.
func (w *worker) prepare(data []byte) cluster.Ready {
	if len(data) > bus.MaxPayload {
		return w.refusal(fmt.Errorf("the prepare message is %d bytes; at most %d", len(data), bus.MaxPayload))
	}
	var p cluster.Prepare
	if err := json.Unmarshal(data, &p); err != nil {
		return w.refusal(fmt.Errorf("unreadable prepare message: %w", err))
	}
	if busy := w.busyWith(p); busy != nil {
		return w.refusal(fmt.Errorf("busy with run %d", busy.id))
	}
	if !cluster.ValidMsgKey(p.MsgKey) {
		return w.refusal(fmt.Errorf("the prepare message's msg_key %.80q is not 1–64 hex digits", p.MsgKey))
	}
	c, err := plan.ParseCompiled(p.Plan)
	if err != nil {
		return w.refusal(fmt.Errorf("the plan is not valid: %w", err))
	}
	c.Plan.Secrets = p.Secrets
	seg, err := segment.FromWire(p.Segment)
	if err != nil {
		return w.refusal(err)
	}
	policy := w.policy
	if policy == nil {
		policy = netpolicy.Default()
	}
	if w.allow != nil {
		if err := plan.CheckTargets(c.Plan, w.allow); err != nil {
			return w.refusal(fmt.Errorf("the plan aims outside this agent's --allow-target list: %w", err))
		}
		policy = w.allow.Policy()
	}
	if err := plan.CheckTargets(c.Plan, policy); err != nil {
		return w.refusal(fmt.Errorf("the plan aims at a denied target: %w", err))
	}
	testPoint("prepare", p.Run)
	rs := &runState{id: p.Run, controller: p.Controller, msgKey: p.MsgKey, fenceAfter: time.Duration(p.FenceAfterMs) * time.Millisecond}
	if rs.fenceAfter <= 0 {
		rs.fenceAfter = cluster.DefaultFenceAfter
	}
	rs.ctx, rs.cancel = context.WithCancel(w.ctx)
	if rs.eng, err = engine.New(c, engine.Options{Segment: seg, Policy: policy, OnSample: w.onSample(rs)}); err != nil {
		rs.cancel()
		return w.refusal(err)
	}
	var offset, rtt time.Duration
	if w.handoff == nil { // in the controller's process: its clock
		if offset, rtt, err = w.probeClock(); err != nil {
			rs.cancel()
			return w.refusal(err)
		}
	}
	rs.offset = offset
	if rs.sub, err = w.nc.Subscribe(cluster.RunControlSubject(p.Run), w.onControl(rs)); err == nil {
		err = w.nc.FlushTimeout(5 * time.Second) // the start must not be missed: the server has the subscription
	}
	if err != nil {
		w.release(rs)
		return w.refusal(fmt.Errorf("cannot follow the run's control subject: %w", err))
	}
	w.mu.Lock()
	if old := w.cur; old != nil && old != w.replaceable(p) {
		w.mu.Unlock()
		w.release(rs)
		return w.refusal(fmt.Errorf("busy with run %d", old.id))
	} else if old != nil {
		w.dropLocked(old)
	}
	w.cur = rs
	rs.drop = time.AfterFunc(PrepareTTL, func() {
		defer w.recoverIn("drop", nil)
		w.dropUnstarted(rs, "no start within "+PrepareTTL.String())
	})
	w.mu.Unlock()
	w.changed()
	peak := c.Plan.Load.PeakVUs()
	return cluster.Ready{OK: true, VUs: int(seg.Count(int64(peak))),
		ClockOffsetMs: float64(offset) / float64(time.Millisecond), RTTMs: float64(rtt) / float64(time.Millisecond)}
}

// busyWith returns the run that makes the agent refuse p (nil: none). A Prepare from the
// controller of the run the agent has prepared but not started replaces it (replaceable).
func (w *worker) busyWith(p cluster.Prepare) *runState {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur != nil && w.cur != w.replaceable(p) {
		return w.cur
	}
	return nil
}

// replaceable is the current run if p may replace it: not started and prepared by p's
// controller, for p's run (the controller asking again) or another one. A controller prepares
// an agent for one run at a time (cluster.Coordinator claims it), so its Prepare for another run
// says it gave the prepared one up: a stop it sent while the agent was still preparing, before
// the agent followed the run's control subject, was missed, and the agent must not refuse the
// controller's next run as busy until PrepareTTL drops it.
func (w *worker) replaceable(p cluster.Prepare) *runState {
	if c := w.cur; c != nil && c.controller == p.Controller && !c.started {
		return c
	}
	return nil
}

// probeClock asks the controller's clock ClockProbes times (bus.SubjectTime → cluster.TimeReply)
// and keeps the probe of the smallest round trip: offset = agent − controller, from the midpoint
// of the agent's send and receive times (NTP's offset with the controller's receive and send
// taken as one instant, RFC 5905 §8). Each answered probe is a broker acknowledgement.
func (w *worker) probeClock() (offset, rtt time.Duration, err error) {
	rtt = -1
	for range ClockProbes {
		t0 := w.now()
		m, err := w.nc.Request(bus.SubjectTime, nil, 2*time.Second)
		t1 := w.now()
		if err != nil {
			return 0, 0, fmt.Errorf("the controller did not answer the clock probe (%s): %w", bus.SubjectTime, err)
		}
		w.acked()
		var tr cluster.TimeReply
		if err := json.Unmarshal(m.Data, &tr); err != nil || tr.UnixNano == 0 {
			return 0, 0, fmt.Errorf("unreadable clock probe answer %q", m.Data)
		}
		if d := t1.Sub(t0); rtt < 0 || d < rtt {
			rtt = d
			mid := t0.UnixNano() + int64(d/2)
			offset = time.Duration(mid - tr.UnixNano)
		}
	}
	return offset, rtt, nil
}

// onControl handles rs's control messages; others (another controller, another run) are ignored.
func (w *worker) onControl(rs *runState) nats.MsgHandler {
	return func(m *nats.Msg) {
		defer w.recoverIn("control", nil)
		var c cluster.Control
		if err := json.Unmarshal(m.Data, &c); err != nil || c.Run != rs.id || c.Controller != rs.controller {
			return
		}
		switch c.Kind {
		case cluster.ControlStart:
			w.mu.Lock()
			if w.cur != rs || rs.started {
				w.mu.Unlock()
				return
			}
			rs.started = true
			rs.drop.Stop()
			w.mu.Unlock()
			w.acked() // the broker just delivered the start
			w.runs.Add(1)
			go w.run(rs, c.StartAtUnixNano)
		case cluster.ControlStop:
			// The controller says stop again every StopRepeat until it has this agent's final
			// (for an agent that missed it): during the plan's graceful stop that is several
			// times for one stop, which is logged once.
			w.mu.Lock()
			started, again := rs.started, rs.stopping
			rs.stopping = rs.started
			w.mu.Unlock()
			if !started {
				w.dropUnstarted(rs, "stopped before its start: "+c.Reason)
				return
			}
			if !again {
				w.log.Info("stop", "run", rs.id, "reason", c.Reason)
			}
			rs.cancel()
		}
	}
}

// onChange answers a live change of the running run (cluster.Control set_vus or set_rate, the
// whole run's value): its engine applies its segment's share (engine.SetVUs, SetRate). A change
// for another run or controller, or before the run's start message, is refused as not running.
func (w *worker) onChange(m *nats.Msg) {
	defer w.recoverIn("change", func(err error) { w.respond(m, cluster.ControlReply{Error: err.Error()}, "a change") })
	w.respond(m, w.change(m.Data), "a change")
}

// change applies a change message (onChange) and says how it went.
func (w *worker) change(data []byte) cluster.ControlReply {
	var c cluster.Control
	if err := json.Unmarshal(data, &c); err != nil {
		return cluster.ControlReply{Error: fmt.Sprintf("agent %s: unreadable change message: %v", w.id, err)}
	}
	w.mu.Lock()
	rs := w.cur
	ok := rs != nil && rs.id == c.Run && rs.controller == c.Controller && rs.started
	w.mu.Unlock()
	if !ok {
		return cluster.ChangeReply(w.id, 0, fmt.Errorf("run %d: %w", c.Run, engine.ErrNotRunning))
	}
	var ev metrics.RunEvent
	var err error
	switch {
	case c.Kind == cluster.ControlSetVUs && c.VUs != nil:
		ev, err = rs.eng.SetVUs(*c.VUs, c.By)
	case c.Kind == cluster.ControlSetRate && c.Rate != nil:
		ev, err = rs.eng.SetRate(*c.Rate, c.By)
	default:
		err = fmt.Errorf("unknown change %q", c.Kind)
	}
	if err == nil {
		w.log.Info("load changed", "run", rs.id, "kind", ev.Kind, "from", ev.From, "to", ev.To, "by", ev.By)
	}
	return cluster.ChangeReply(w.id, ev.From, err)
}

// dropUnstarted drops rs if it is still prepared and unstarted.
func (w *worker) dropUnstarted(rs *runState, why string) {
	w.mu.Lock()
	if w.cur != rs || rs.started {
		w.mu.Unlock()
		return
	}
	w.dropLocked(rs)
	w.mu.Unlock()
	w.log.Info("prepared run dropped", "run", rs.id, "why", why)
	w.changed()
}

// dropLocked forgets rs (w.mu held).
func (w *worker) dropLocked(rs *runState) {
	w.cur = nil
	if rs.drop != nil {
		rs.drop.Stop()
	}
	w.release(rs)
}

// release frees rs's subscription and context.
func (w *worker) release(rs *runState) {
	rs.cancel()
	if rs.sub != nil {
		_ = rs.sub.Unsubscribe()
	}
}

// run waits for the start instant, runs the engine, and spools the final snapshot. The agent is
// idle again (w.cur cleared, the run's subscription released) before the final is spooled: a
// controller that has the final may prepare its next run at once — an in-process one
// (Config.Handoff) microseconds later — and must not find the agent busy with this one.
func (w *worker) run(rs *runState, startAt int64) {
	defer w.runs.Done()
	defer w.recoverIn("run end", nil)
	ended := sync.OnceFunc(func() {
		w.mu.Lock()
		if w.cur == rs {
			w.cur = nil
		}
		w.mu.Unlock()
		w.release(rs)
		w.changed()
	})
	defer ended()
	sum, err := w.runEngine(rs, startAt)
	ended()
	w.spoolFinal(rs, sum, err)
}

// runEngine runs rs's engine at startAt (the controller's clock, unix ns), watching the broker
// lease meanwhile (not in the controller's process: Config.Handoff). A panic here (the engine
// recovers its own) fails the run, not the agent. A run stopped or fenced before its start
// instant returns an empty summary (nothing was sent).
func (w *worker) runEngine(rs *runState, startAt int64) (sum *metrics.Summary, err error) {
	defer w.recoverIn("run", func(e error) { err = e })
	if w.handoff == nil {
		stop := w.watchLease(rs)
		defer stop()
	}
	// The start on this agent's clock, waited for on the monotonic clock (a wall-clock step
	// during the wait does not move it).
	wait := time.Duration(startAt + int64(rs.offset) - w.now().UnixNano())
	if wait > maxStartWait {
		return &metrics.Summary{}, fmt.Errorf("agent %s: the start is %s away on its clock (at most %s): the clocks disagree", w.id, wait.Round(time.Millisecond), maxStartWait)
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-rs.ctx.Done():
			t.Stop()
		}
	}
	if rs.ctx.Err() != nil { // stopped or fenced before the start instant: nothing ran
		return &metrics.Summary{}, nil
	}
	rs.startedCtl.Store(w.now().UnixNano() - int64(rs.offset))
	testPoint("run", rs.id)
	w.log.Info("run started", "run", rs.id, "offset", rs.offset)
	return rs.eng.Run(rs.ctx)
}

// watchLease fences rs when no broker acknowledgement has come for its fence_after, checking
// every fenceTick and pinging the broker every pingEvery (a successful flush is an
// acknowledgement); stop ends both.
func (w *worker) watchLease(rs *runState) (stop func()) {
	done := make(chan struct{})
	w.watch.Store(rs)
	go func() {
		defer w.recoverIn("lease watch", func(error) { w.fence(rs, w.sinceAck()) })
		t := time.NewTicker(fenceTick)
		defer t.Stop()
		for {
			if d := w.sinceAck(); d > rs.fenceAfter {
				w.fence(rs, d)
				return
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	go func() {
		defer w.recoverIn("ping", nil)
		t := time.NewTicker(pingEvery)
		defer t.Stop()
		for {
			if err := w.nc.FlushTimeout(time.Second); err == nil {
				w.acked()
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		w.watch.CompareAndSwap(rs, nil)
		close(done)
	}
}

// onSample is rs's engine's OnSample: it spools the second (never blocking the collector).
func (w *worker) onSample(rs *runState) func(metrics.Sample) {
	return func(s metrics.Sample) {
		rs.last.Store(int64(s.ElapsedS))
		snap := cluster.Snapshot{Run: rs.id, Agent: w.id, Second: s.ElapsedS, Part: cluster.NewSecondPart(s)}
		if rs.first.CompareAndSwap(false, true) {
			snap.StartedUnixNano = rs.startedCtl.Load()
		}
		w.spoolSnap(rs.msgKey, snap, false)
	}
}

// spoolFinal spools rs's final snapshot: its share's summary, the error, whether it fenced.
func (w *worker) spoolFinal(rs *runState, sum *metrics.Summary, runErr error) {
	snap := cluster.Snapshot{Run: rs.id, Agent: w.id, Second: int(rs.last.Load()) + 1,
		StartedUnixNano: rs.startedCtl.Load(), Fenced: rs.fenced.Load()}
	if runErr != nil {
		snap.Error = runErr.Error()
	}
	func() {
		defer w.recoverIn("final", func(err error) {
			snap.Final = &cluster.FinalPart{}
			if snap.Error == "" {
				snap.Error = err.Error()
			}
		})
		snap.Final = cluster.NewFinalPart(rs.eng, sum)
	}()
	w.spoolSnap(rs.msgKey, snap, true)
	w.log.Info("run ended", "run", rs.id, "fenced", snap.Fenced, "err", snap.Error)
}

// spoolSnap spools snap. A final has a stand-in: the same final failed, naming why, sent when
// it cannot be encoded or the broker refuses it as too large (spooled.tooBig). An in-process
// agent (Config.Handoff) spools snap itself: it is never encoded.
func (w *worker) spoolSnap(key string, snap cluster.Snapshot, final bool) {
	if w.handoff != nil {
		w.push(spooled{msgID: cluster.SnapshotMsgID(key, snap.Run, w.id, snap.Second, final), snap: &snap})
		return
	}
	b, err := json.Marshal(snap)
	var standIn []byte
	if final {
		size := fmt.Sprintf("%d bytes", len(b))
		if err != nil {
			size = err.Error()
		}
		fail := cluster.Snapshot{Run: snap.Run, Agent: snap.Agent, Second: snap.Second, StartedUnixNano: snap.StartedUnixNano,
			Fenced: snap.Fenced, Final: &cluster.FinalPart{},
			Error: fmt.Sprintf("agent %s: its final message could not be sent (%s; the broker takes at most %d)", w.id, size, bus.MaxPayload)}
		standIn, _ = json.Marshal(fail)
		if err != nil {
			w.log.Error("cannot encode the final snapshot; sending its failure instead", "run", snap.Run, "err", err)
			b, err = standIn, nil
		}
	}
	if err != nil {
		w.log.Error("cannot encode a snapshot", "run", snap.Run, "second", snap.Second, "err", err)
		return
	}
	w.push(spooled{subject: cluster.SnapshotSubject(snap.Run, w.id), msgID: cluster.SnapshotMsgID(key, snap.Run, w.id, snap.Second, final), data: b, tooBig: standIn})
}

// push spools m, logging a dropped oldest second.
func (w *worker) push(m spooled) {
	if w.sp.push(m) {
		w.log.Warn("snapshot spool full: the oldest second was dropped", "spool", SpoolSeconds)
	}
}
