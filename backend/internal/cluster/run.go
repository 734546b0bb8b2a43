package cluster

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/segment"
)

// RunSpec is a run over agents.
type RunSpec struct {
	Run    int64
	Plan   *plan.Compiled
	Agents []Agent // from Registry.Pick, in part order; the split follows their Weight
	// FenceAfter: an agent that loses the broker this long stops its load (0: DefaultFenceAfter).
	FenceAfter time.Duration
	// Controller is the controller id the run's agents are prepared with, "" for this coordinator's
	// own id. Resume sets it from Started.Controller.
	Controller string
	// InProcess says the agents run in this process (a single-machine run's local agent,
	// localagent): they cannot be cut off or die on their own, so no second is closed with a share
	// missing before the run's end (SecondGrace does not apply: a generator-bound process may
	// deliver late) and no agent is lost by its presence's age. The run's end still bounds it.
	// The start is InProcessStartDelay after the agents are ready, not MinStartDelay; a stop
	// while preparing waits for the agents' answers (PrepareTimeout at most) before it is sent;
	// and the run's snapshots are purged from the stream when it ends (nothing can resume it).
	InProcess bool
	// Handoff, for an InProcess run only (else Run fails), takes the agents' snapshots in memory
	// instead of from the snapshot stream: the agents deliver to it (agent.Config.Handoff), and
	// nothing of the run goes through the stream. nil: the stream. Resume ignores it.
	Handoff *Handoff
}

// Started is what a run over agents keeps so that a restarted controller can Resume it (the
// server stores it as JSON with the run, RunHooks.OnStart).
type Started struct {
	Controller      string         `json:"controller"`         // the id the agents were prepared with
	Agents          []StartedAgent `json:"agents"`             // in part order
	StartAtUnixNano int64          `json:"start_at_unix_nano"` // start_at, the controller's clock
	FenceAfterMs    int64          `json:"fence_after_ms"`
}

// StartedAgent is one agent of a Started run.
type StartedAgent struct {
	ID     string `json:"id"`
	Weight int    `json:"weight"` // the split weight used (segment.New's)
}

// ResumeGrace: after Resume, an agent not seen yet has this long to re-greet before it is lost,
// and no second is closed with a missing share before resume + ResumeGrace (unless every agent
// still expected delivered it). An agent reconnects every 500 ms and says hello again at once;
// on an external NATS the registry asks it to within a presence beat (bus.PresenceTTL is 5 s).
const ResumeGrace = 10 * time.Second

// DefaultFenceAfter is fence_after when a run does not set it.
const DefaultFenceAfter = 10 * time.Second

// Timing of a run over agents (SHAPES14.md, docs/scale-out.md "The controller's side of a run").
const (
	// PrepareTimeout bounds each agent's answer to Prepare.
	PrepareTimeout = 10 * time.Second
	// MinStartDelay is the least time between the start broadcast and start_at; a worse network
	// gets 3 × the worst clock-probe round trip the agents measured.
	MinStartDelay = time.Second
	// InProcessStartDelay is MinStartDelay for a run whose agents are in this process
	// (RunSpec.InProcess): enough for the start broadcast to reach them.
	InProcessStartDelay = 20 * time.Millisecond
	// SecondGrace is how long after its end (start_at + s) second s waits for a late agent before
	// it is merged with that agent's share missing.
	SecondGrace = 2 * time.Second
	// EndMargin is how long past the planned end (start_at + load length + graceful stop), or past
	// a stop plus the graceful stop, the controller waits for the agents' final messages; an agent
	// whose final has not come by then is lost.
	EndMargin = 5 * time.Second
	// FutureSeconds bounds how far ahead of the next second to merge an agent's snapshot may be;
	// one further ahead is ignored (and logged once): it bounds what the controller buffers.
	FutureSeconds = 30
	// StopRepeat is how often a stopped run broadcasts its stop again while an agent's final has
	// not come: a stop is a plain publish, and an agent reconnecting (a resumed run's agents, or
	// one cut off a moment) would miss it and load its target to the plan's end.
	StopRepeat = time.Second
)

// Snapshot stream limits: a run's snapshots are merged as they come; the stream only has to keep
// them across a controller restart and long enough for the duplicate window.
const (
	streamDuplicates = 15 * time.Minute
	streamMaxAge     = 24 * time.Hour
	streamFileBytes  = 1 << 30
	streamMemBytes   = 128 << 20
)

// RunHooks receive a run's results as they come.
type RunHooks struct {
	// OnSecond gets each merged second once, in order (MissingShare set when a share is missing).
	OnSecond func(s metrics.Sample)
	// OnAgentSecond gets each agent's own second (to store); a second that arrives late (an
	// agent's spool after a reconnect) comes then; never the same (agent, second) twice.
	OnAgentSecond func(agent string, s metrics.Sample)
	// OnStart gets the run's Started once every agent is ready, before the start is broadcast;
	// an error fails the run (the agents are told to stop). The server stores it (runs.cluster).
	OnStart func(st Started) error
}

// Coordinator runs plans over the registry's agents and answers the agents' clock probes. Safe
// for concurrent use. Its clock is the registry's (Start's now), so that presence ages and a
// run's deadlines are on one clock.
type Coordinator struct {
	conn *nats.Conn
	js   nats.JetStreamContext
	reg  *Registry
	log  *slog.Logger
	id   string // this controller process (Prepare.Controller, Control.Controller)
	now  func() time.Time
	tsub *nats.Subscription
	psub *nats.Subscription // presence beats (onPresence)

	// tick is how often a run looks at its clock (deadlines, presence); tickHook runs after each
	// look (tests).
	tick     time.Duration
	tickHook func()
	takeHook func(agent string, s *Snapshot) // each snapshot a run takes in (tests)
	// halt, when closed, ends every run's loop at once without a word to the agents: a
	// controller process killed (tests). Nil: never.
	halt chan struct{}

	ctlTimeout time.Duration // ControlTimeout (tests shorten it)

	mu   sync.Mutex
	busy map[string]int64 // agent id → the run of this coordinator it works on
	runs map[int64]*run   // the runs being driven (merged), for Control

	endedRuns endedRuns // runs that ended here, for a late agent (ended.go)
}

// CoordinatorOption configures NewCoordinator.
type CoordinatorOption func(*coordOpts)

type coordOpts struct {
	file     bool
	replicas int
}

// FileStore keeps the snapshot stream on disk: pass it when the broker has a store dir
// (bus.Config.StoreDir), so that snapshots survive a controller restart. Without it the stream
// is in memory. An existing stream keeps its storage (JetStream cannot change it).
func FileStore(on bool) CoordinatorOption { return func(o *coordOpts) { o.file = on } }

// StreamReplicas sets the snapshot stream's replicas: n ≥ 1 (a stream the cluster cannot place
// fails NewCoordinator); 0 (the default): 3 when the connection is to a NATS cluster
// (nc.ConnectedClusterName() != ""), falling back to 1 with a warning when the cluster cannot
// place 3, else 1 (the embedded broker is one server).
func StreamReplicas(n int) CoordinatorOption { return func(o *coordOpts) { o.replicas = n } }

// NewCoordinator makes the coordinator on the controller's connection conn (every permission):
// it answers clock probes on bus.SubjectTime with TimeReply and creates (or updates) the
// JetStream stream SnapshotStream on volley.run.*.snap.* (duplicate window 15 min, at most 24 h
// and 1 GiB on disk or 128 MiB in memory, oldest dropped first).
func NewCoordinator(conn *nats.Conn, reg *Registry, log *slog.Logger, opts ...CoordinatorOption) (*Coordinator, error) {
	if conn == nil || reg == nil {
		return nil, errors.New("cluster: a coordinator needs a connection and a registry")
	}
	if log == nil {
		log = slog.Default()
	}
	var o coordOpts
	for _, f := range opts {
		f(&o)
	}
	js, err := conn.JetStream()
	if err != nil {
		return nil, fmt.Errorf("cluster: jetstream: %w", err)
	}
	c := &Coordinator{conn: conn, js: js, reg: reg, log: log, id: randomID(), now: reg.now,
		tick: 50 * time.Millisecond, busy: map[string]int64{}, runs: map[int64]*run{}, ctlTimeout: ControlTimeout}
	if err := c.ensureStream(o.file, o.replicas); err != nil {
		return nil, err
	}
	// A queue group: one controller answers even while a restarted one overlaps the old.
	c.tsub, err = conn.QueueSubscribe(bus.SubjectTime, "volley-time", func(m *nats.Msg) {
		b, _ := json.Marshal(TimeReply{UnixNano: c.now().UnixNano()})
		_ = m.Respond(b)
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if c.psub, err = conn.Subscribe(bus.SubjectPresenceAll, c.onPresence); err != nil {
		_ = c.tsub.Unsubscribe()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := conn.Flush(); err != nil {
		c.Close()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return c, nil
}

// Close stops answering clock probes and following presence (runs in progress go on).
func (c *Coordinator) Close() {
	_ = c.tsub.Unsubscribe()
	_ = c.psub.Unsubscribe()
}

// ensureStream creates or updates the snapshot stream with replicas (0: auto, StreamReplicas).
func (c *Coordinator) ensureStream(file bool, replicas int) error {
	cfg := &nats.StreamConfig{Name: SnapshotStream, Subjects: []string{"volley.run.*.snap.*"},
		Retention: nats.LimitsPolicy, Discard: nats.DiscardOld, Duplicates: streamDuplicates,
		MaxAge: streamMaxAge, Storage: nats.MemoryStorage, MaxBytes: streamMemBytes, Replicas: max(replicas, 1)}
	if file {
		cfg.Storage, cfg.MaxBytes = nats.FileStorage, streamFileBytes
	}
	auto := replicas == 0 && c.conn.ConnectedClusterName() != ""
	if auto {
		cfg.Replicas = 3
	}
	err := c.putStream(cfg)
	if err != nil && auto {
		c.log.Warn("the NATS cluster cannot place 3 replicas of the snapshot stream; keeping 1 (a lost server loses the snapshots a controller restart would replay)",
			"stream", SnapshotStream, "cluster", c.conn.ConnectedClusterName(), "err", err)
		cfg.Replicas = 1
		err = c.putStream(cfg)
	}
	if err != nil {
		return fmt.Errorf("cluster: snapshot stream %s (%d replicas): %w", SnapshotStream, cfg.Replicas, err)
	}
	return nil
}

// putStream adds the stream cfg or updates it (an existing stream keeps its storage).
func (c *Coordinator) putStream(cfg *nats.StreamConfig) error {
	info, err := c.js.StreamInfo(SnapshotStream)
	switch {
	case errors.Is(err, nats.ErrStreamNotFound):
		_, err = c.js.AddStream(cfg)
	case err == nil:
		if info.Config.Storage != cfg.Storage {
			c.log.Warn("the snapshot stream keeps its storage", "stream", SnapshotStream, "storage", info.Config.Storage.String())
			cfg.Storage = info.Config.Storage
			cfg.MaxBytes = map[bool]int64{true: streamFileBytes, false: streamMemBytes}[cfg.Storage == nats.FileStorage]
		}
		_, err = c.js.UpdateStream(cfg)
	}
	return err
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// RefusedError is an agent's refusal of a run at Prepare (or its failure to answer).
type RefusedError struct {
	Agent  string
	Reason string
	Fields map[string]string // the plan's problems by field, when that is why
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("agent %q refused the run: %s", e.Agent, e.Reason)
}

// Run prepares the agents, starts them at one instant, merges their seconds as they come and
// returns the run's merged summary (Agents, Degraded, LostAgents, StartSkewMs set). Cancelling
// ctx stops the run (the agents get the plan's graceful stop); stopped before any agent sent a
// request (while preparing, or before the start instant), the summary is an empty run's, no error. An agent refusing Prepare fails the
// run with its reason (*RefusedError naming the agent); every prepared agent is told to stop.
//
// Steps (SHAPES14.md): Prepare to every agent at once (PrepareTimeout each); start_at = now +
// max(MinStartDelay, 3 × the worst probe RTT) broadcast on RunControlSubject; the run's
// snapshots from a JetStream consumer (acknowledged one by one); second s is merged when every
// live agent has delivered it or at start_at + s + SecondGrace; an agent whose presence expires
// (bus.PresenceTTL) is lost and its share missing from then on; the run ends when every agent's
// final message is in or it is lost, or EndMargin past the planned end. Between the agents'
// Ready and the start broadcast, hooks.OnStart gets the run's Started (what Resume needs): its
// error fails the run and the agents are told to stop. Prepare and control messages carry
// spec.Controller, or this coordinator's id.
func (c *Coordinator) Run(ctx context.Context, spec RunSpec, hooks RunHooks) (sum *metrics.Summary, err error) {
	if len(spec.Agents) == 0 {
		return nil, errors.New("cluster: a run needs at least one agent")
	}
	if spec.Handoff != nil && !spec.InProcess {
		return nil, errors.New("cluster: a run whose snapshots are handed over in memory needs its agents in this process (RunSpec.InProcess)")
	}
	ids := make([]string, len(spec.Agents))
	weights := make([]int, len(spec.Agents))
	for i, a := range spec.Agents {
		ids[i], weights[i] = a.ID, cmp.Or(a.Weight, a.Cores, 1)
	}
	spec.Controller = cmp.Or(spec.Controller, c.id)
	spec.FenceAfter = cmp.Or(spec.FenceAfter, DefaultFenceAfter)
	r, seq, err := c.newRun(spec, hooks, ids, weights)
	if err != nil {
		return nil, err
	}
	planJSON, err := json.Marshal(spec.Plan.Plan)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := c.claim(spec.Run, ids); err != nil {
		return nil, err
	}
	defer c.release(ids)

	var sub *nats.Subscription
	if spec.Handoff != nil {
		// The agents' snapshots in memory, from before anything starts: nothing is missed.
		if r.hq, err = spec.Handoff.open(spec.Run); err != nil {
			return nil, err
		}
		defer spec.Handoff.close(spec.Run, r.hq)
	} else {
		// A run id is new to a run: whatever the stream holds under it is stale (a store dir that
		// outlived its database). Then the consumer, before anything starts: nothing is missed.
		if err := c.js.PurgeStream(SnapshotStream, &nats.StreamPurgeRequest{Subject: runFilter(spec.Run)}); err != nil {
			return nil, fmt.Errorf("cluster: clearing the run's old snapshots: %w", err)
		}
		if spec.InProcess {
			// Its agents died with this process if it did: nothing can resume the run, so its
			// snapshots are of no use once it has ended (they would sit in the stream for a day).
			defer func() {
				if err := c.js.PurgeStream(SnapshotStream, &nats.StreamPurgeRequest{Subject: runFilter(spec.Run)}); err != nil {
					c.log.Warn("cannot clear the snapshots of an ended run", "run", spec.Run, "err", err)
				}
			}()
		}
		if sub, err = c.subscribe(spec.Run); err != nil {
			return nil, err
		}
		defer func() { _ = sub.Unsubscribe() }()
	}

	pctx := ctx
	if spec.InProcess {
		// An in-process agent answers within milliseconds: a stop meanwhile waits for its
		// answer, so that the stop below finds it prepared (one that answered a request given up
		// on would stay prepared, refusing the next run as busy, for agent.PrepareTTL).
		pctx = context.WithoutCancel(ctx)
	}
	rtt, err := c.prepare(pctx, spec, ids, seq, planJSON)
	if err != nil || ctx.Err() != nil {
		why := "stopped before its start"
		if err != nil {
			why = err.Error()
		}
		// An agent still preparing (its answer given up on: the run stopped, another agent
		// refused, a timeout) follows the run's control subject only at the end of its Prepare:
		// the stop is said again for PrepareTimeout, so that it does not stay prepared, shown
		// running, until agent.PrepareTTL.
		r.repeatStop(Control{Kind: ControlStop, Reason: why}, PrepareTimeout)
		if ctx.Err() != nil { // stopped while preparing: nothing was sent
			return r.notStarted()
		}
		r.log.Warn("the run could not start over its agents", "err", err)
		return nil, err
	}
	delay := max(MinStartDelay, 3*rtt)
	if spec.InProcess {
		delay = max(InProcessStartDelay, 3*rtt) // no network, one clock: no need to wait a second
	}
	r.startAt = c.now().Add(delay)
	if err := r.onStart(weights); err != nil {
		r.control(Control{Kind: ControlStop, Reason: err.Error()})
		return nil, err
	}
	r.control(Control{Kind: ControlStart, StartAtUnixNano: r.startAt.UnixNano()})
	r.log.Info("run started over agents", "agents", ids, "start_at", r.startAt)
	return r.drive(ctx, sub, 0)
}

// onStart hands the run's Started to hooks.OnStart (an error or a panic fails the run).
func (r *run) onStart(weights []int) (err error) {
	if r.hooks.OnStart == nil {
		return nil
	}
	st := Started{Controller: r.spec.Controller, StartAtUnixNano: r.startAt.UnixNano(),
		FenceAfterMs: r.spec.FenceAfter.Milliseconds(), Agents: make([]StartedAgent, len(r.ids))}
	for i, id := range r.ids {
		st.Agents[i] = StartedAgent{ID: id, Weight: weights[i]}
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
		if err != nil {
			err = fmt.Errorf("cluster: run %d: keeping its start: %w", r.spec.Run, err)
		}
	}()
	return r.hooks.OnStart(st)
}

// Resume takes over run spec.Run (spec.Plan as stored with the run; spec.Agents ignored) that a
// controller process started as st, after that process died: no Prepare and no start broadcast;
// the run's snapshots are replayed from the stream (no purge), seconds before from (the first
// second the caller has not stored, ≥ 1) are merged again only to rebuild the merger's
// run-so-far state and are not handed to OnSecond; OnAgentSecond gets every agent second again
// (the store ignores duplicates). Returns the summary as Run does.
//
// The agents are st's, with st's weights; control messages (stop) carry st.Controller, the id
// the agents were prepared with. An agent not seen yet has ResumeGrace from now to say hello
// again (it reconnects, or the registry asks it) before it is lost; no second is closed with a
// missing share before now + ResumeGrace unless every agent still expected has delivered it; the
// run's end is at least now + ResumeGrace + EndMargin. Seconds before from close as soon as the
// stream's snapshots of the run at the resume are all taken in (or at now + ResumeGrace).
func (c *Coordinator) Resume(ctx context.Context, spec RunSpec, st Started, from int, hooks RunHooks) (sum *metrics.Summary, err error) {
	begun := false
	defer func() {
		if err != nil && !begun { // the run's agents must not go on loading their target unattended
			c.Abandon(spec.Run, st.Controller, err.Error())
		}
	}()
	if len(st.Agents) == 0 || st.Controller == "" || st.StartAtUnixNano <= 0 {
		return nil, fmt.Errorf("cluster: run %d cannot be resumed: its agents, controller or start are not known", spec.Run)
	}
	if from < 1 {
		return nil, fmt.Errorf("cluster: run %d cannot be resumed from second %d", spec.Run, from)
	}
	ids := make([]string, len(st.Agents))
	weights := make([]int, len(st.Agents))
	for i, a := range st.Agents {
		ids[i], weights[i] = a.ID, a.Weight
	}
	spec.Agents = nil
	spec.Controller = st.Controller
	spec.FenceAfter = time.Duration(st.FenceAfterMs) * time.Millisecond
	r, _, err := c.newRun(spec, hooks, ids, weights)
	if err != nil {
		return nil, err
	}
	if err := c.claim(spec.Run, ids); err != nil {
		return nil, err
	}
	defer c.release(ids)

	sub, err := c.subscribe(spec.Run)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	info, err := sub.ConsumerInfo()
	if err != nil {
		return nil, fmt.Errorf("cluster: the run's snapshot consumer: %w", err)
	}
	now := c.now()
	r.startAt = time.Unix(0, st.StartAtUnixNano)
	r.from = min(from, r.bound+1)
	r.graceUntil = now.Add(ResumeGrace)
	r.log.Info("resuming a run over agents", "agents", ids, "controller", st.Controller, "start_at", r.startAt,
		"from_second", r.from, "snapshots_to_replay", info.NumPending, "grace_until", r.graceUntil)
	if info.NumPending == 0 && from > 1 {
		// Seconds were merged, yet the stream has none of the run's snapshots: it is not the one
		// the run started on (another --agents-state, a purged or memory stream). What the agents
		// had delivered but the database had not stored is gone; what they still spool comes.
		r.log.Warn("the snapshot stream holds nothing of this run although it has stored seconds: the seconds after the last stored one may be missing (was the server restarted with another --agents-state, or without one?)",
			"stored_seconds", from-1)
	}
	begun = true
	return r.drive(ctx, sub, info.NumPending)
}

// Abandon tells the agents of run runID, prepared by controller id controller, to stop (reason: why,
// for their log): a run a restarted controller cannot take over must not go on loading its target
// with nobody merging, storing or able to stop it (its agents reconnect to the restarted broker,
// so they would not fence). Resume calls it when it cannot begin; a server that cannot begin a
// resume (an unreadable plan or start) calls it itself. controller "" (not known) sends nothing.
// The agents are reconnecting to a restarted broker when it is called, so the stop is broadcast
// again every StopRepeat for ResumeGrace (the time they have to come back), in the background
// (until the connection closes).
func (c *Coordinator) Abandon(runID int64, controller, reason string) {
	if controller == "" {
		return
	}
	r := &run{c: c, spec: RunSpec{Run: runID, Controller: controller}, log: c.log.With("run", runID)}
	c.log.Warn("the agents of a run that cannot be taken over are told to stop", "run", runID, "controller", controller, "why", reason)
	c.ended(runID, controller)
	r.repeatStop(Control{Kind: ControlStop, Reason: reason}, ResumeGrace)
}

// repeatStop broadcasts stop now and again every StopRepeat for d, in the background (until the
// connection closes): an agent not following the run's control subject yet (reconnecting,
// still preparing) gets it when it does.
func (r *run) repeatStop(stop Control, d time.Duration) {
	r.control(stop)
	go func() {
		t := time.NewTicker(StopRepeat)
		defer t.Stop()
		for range int(d / StopRepeat) {
			<-t.C
			if r.c.conn.IsClosed() {
				return
			}
			r.control(stop)
		}
	}()
}

// newRun checks a run's agents and plan and makes its state; seq is the split of weights.
func (c *Coordinator) newRun(spec RunSpec, hooks RunHooks, ids []string, weights []int) (*run, *segment.Sequence, error) {
	if spec.Plan == nil || spec.Plan.Plan == nil {
		return nil, nil, errors.New("cluster: a run needs a compiled plan")
	}
	for i, id := range ids {
		if slices.Contains(ids[:i], id) {
			return nil, nil, fmt.Errorf("cluster: agent %q is in the run twice", id)
		}
	}
	seq, err := segment.New(weights...)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: splitting the run over %d agents: %w", len(ids), err)
	}
	r := &run{c: c, spec: spec, hooks: hooks, ids: ids, log: c.log.With("run", spec.Run),
		merger: NewMerger(spec.Plan, ids, weights)}
	if len(spec.Agents) == len(ids) { // (a resumed run knows its agents' ids and weights only)
		cores := make([]int, len(ids))
		for i, a := range spec.Agents {
			cores[i] = a.Cores
		}
		r.merger.SetCores(cores)
	}
	r.init()
	return r, seq, nil
}

// runFilter is the subject of run's snapshots (every agent's).
func runFilter(run int64) string { return fmt.Sprintf("volley.run.%d.snap.*", run) }

// subscribe makes the run's snapshot consumer: ephemeral, pull, every message of the run the
// stream holds (DeliverAll), each acknowledged.
func (c *Coordinator) subscribe(run int64) (*nats.Subscription, error) {
	sub, err := c.js.PullSubscribe(runFilter(run), "",
		nats.BindStream(SnapshotStream), nats.AckExplicit(), nats.DeliverAll(), nats.InactiveThreshold(time.Minute))
	if err != nil {
		return nil, fmt.Errorf("cluster: the run's snapshot consumer: %w", err)
	}
	return sub, nil
}

// drive fetches the run's snapshots from sub (backlog: how many the stream held at the start,
// after which the fetcher says it has caught up), or takes them from the run's Handoff queue,
// and merges them until the run's end.
func (r *run) drive(ctx context.Context, sub *nats.Subscription, backlog uint64) (*metrics.Summary, error) {
	r.caughtUp = backlog == 0
	r.c.mu.Lock()
	r.c.runs[r.spec.Run] = r // live control reaches it from here on (Control)
	r.c.mu.Unlock()
	defer func() {
		r.c.mu.Lock()
		if r.c.runs[r.spec.Run] == r {
			delete(r.c.runs, r.spec.Run)
		}
		r.c.mu.Unlock()
		r.c.ended(r.spec.Run, r.spec.Controller) // an agent still running it is told to stop
		close(r.live.done)
	}()
	if r.hq != nil {
		return r.loop(ctx, r.hq.in)
	}
	fctx, stopFetch := context.WithCancel(context.Background())
	in := make(chan incoming, 256)
	fetched := make(chan struct{})
	go func() {
		defer close(fetched)
		r.fetch(fctx, sub, in, backlog)
	}()
	defer func() { stopFetch(); <-fetched }()
	return r.loop(ctx, in)
}

// claim marks ids busy with run (an agent runs one run at a time).
func (c *Coordinator) claim(run int64, ids []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if other, ok := c.busy[id]; ok {
			return fmt.Errorf("cluster: agent %q is running run %d", id, other)
		}
	}
	for _, id := range ids {
		c.busy[id] = run
	}
	return nil
}

func (c *Coordinator) release(ids []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		delete(c.busy, id)
	}
}

// stopAll broadcasts the run's stop (why: its reason) at now; the loop repeats it every
// StopRepeat while an agent's final is missing.
func (r *run) stopAll(now time.Time, why string) {
	r.stopped, r.stop, r.stopSent = true, Control{Kind: ControlStop, Reason: why}, now
	r.live.mu.Lock()
	r.live.ending = true // no change from here on
	r.live.mu.Unlock()
	r.control(r.stop)
}

// control broadcasts m on the run's control subject, from the run's controller id.
func (r *run) control(m Control) {
	m.Run, m.Controller = r.spec.Run, r.spec.Controller
	b, _ := json.Marshal(m)
	if err := r.c.conn.Publish(RunControlSubject(m.Run), b); err != nil {
		r.log.Error("control broadcast failed", "kind", m.Kind, "err", err)
	}
	_ = r.c.conn.Flush()
}

// prepare sends Prepare to every agent at once and returns the worst RTT they measured, or the
// first refusal in part order.
func (c *Coordinator) prepare(ctx context.Context, spec RunSpec, ids []string, seq *segment.Sequence, planJSON []byte) (time.Duration, error) {
	errs := make([]error, len(ids))
	rtts := make([]float64, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					errs[i] = &RefusedError{Agent: id, Reason: fmt.Sprintf("prepare failed: %v", p)}
				}
			}()
			body, err := json.Marshal(Prepare{Run: spec.Run, Controller: spec.Controller, Plan: planJSON,
				Segment: seq.Segment(i).Wire(), Agents: ids, FenceAfterMs: spec.FenceAfter.Milliseconds(),
				Secrets: spec.Plan.Plan.Secrets, MsgKey: NewMsgKey()})
			if err != nil {
				errs[i] = err
				return
			}
			pctx, cancel := context.WithTimeout(ctx, PrepareTimeout)
			defer cancel()
			m, err := c.conn.RequestWithContext(pctx, PrepareSubject(id), body)
			if err != nil {
				reason := "it did not answer within " + PrepareTimeout.String() + ": " + err.Error()
				if errors.Is(err, nats.ErrNoResponders) {
					reason = "it is not connected"
				} else if ctx.Err() != nil {
					reason = "the run was stopped while preparing"
				}
				errs[i] = &RefusedError{Agent: id, Reason: reason}
				return
			}
			var rd Ready
			if err := json.Unmarshal(m.Data, &rd); err != nil {
				errs[i] = &RefusedError{Agent: id, Reason: "its answer is not valid JSON: " + err.Error()}
				return
			}
			if !rd.OK {
				// (an agent names itself first: said once, by Error)
				errs[i] = &RefusedError{Agent: id, Reason: cmp.Or(strings.TrimPrefix(rd.Error, "agent "+id+": "), "no reason given"), Fields: rd.Fields}
				return
			}
			c.log.Info("agent ready", "run", spec.Run, "agent", id, "vus", rd.VUs, "clock_offset_ms", rd.ClockOffsetMs, "rtt_ms", rd.RTTMs)
			rtts[i] = rd.RTTMs
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	worst := min(slices.Max(rtts), 10_000) // a bogus RTT must not postpone the start by hours
	return time.Duration(max(0, worst) * float64(time.Millisecond)), nil
}

// incoming is a snapshot from the consumer (agent is the subject's: only agent id may publish it),
// or (caughtUp) the fetcher's word that every snapshot the stream held at the start is taken.
type incoming struct {
	agent    string
	snap     Snapshot
	caughtUp bool
	badFinal error // the agent's final message, which cannot be read (snap is empty)
}

// run is one Run's state; only its loop goroutine touches it after init.
type run struct {
	c       *Coordinator
	spec    RunSpec
	hooks   RunHooks
	ids     []string
	index   map[string]int
	log     *slog.Logger
	merger  *Merger
	startAt time.Time

	planned  int                   // the last second the plan can have (length + graceful stop, rounded up, + 1)
	bound    int                   // planned as the plan has it (never lowered by a stop): no agent names a second past it
	next     int                   // the next second to merge
	pending  map[int][]*SecondPart // unmerged seconds' parts, by second, in part order
	seen     []map[int]struct{}    // each agent's seconds handed to OnAgentSecond
	finals   []*FinalPart          // each agent's final part
	finalSec []int                 // the Second of each agent's final (0: none yet)
	started  []int64               // each agent's StartedUnixNano (0: not said)
	lost     []bool                // lost: presence expired, no final by the end, or its final refused
	refused  []bool                // its final was refused (failed, no state, not after its seconds)
	lastSec  []int                 // each agent's highest second delivered
	parts    [][]*SecondPart       // each agent's delivered seconds (for the summary of one without a usable final)
	warned   map[string]struct{}   // what was logged once
	degraded bool
	stopped  bool      // stop was broadcast
	stop     Control   // the stop broadcast (again every StopRepeat while a final is missing)
	stopSent time.Time // when it was last broadcast
	failures []string  // agents' run errors

	// A resumed run (Resume): seconds before from are merged only to rebuild the merger's run
	// so far; until graceUntil no unseen agent is lost and no second closes with a share missing.
	hq         *handoffRun // the run's snapshots in memory (RunSpec.Handoff), nil: the stream
	from       int         // the first second handed to OnSecond (1 for Run)
	graceUntil time.Time   // zero for Run
	caughtUp   bool        // every snapshot the stream held at the start is taken in

	// Live control (control.go): the changes recorded, in order, and the first one not yet put
	// into a merged second.
	live   live
	events []metrics.RunEvent
	evNext int
}

func (r *run) init() {
	n := len(r.ids)
	r.index = make(map[string]int, n)
	for i, id := range r.ids {
		r.index[id] = i
	}
	r.next, r.from = 1, 1
	load := r.spec.Plan.Plan.Load
	r.planned = int((load.Length()+load.GracefulStop.D()+time.Second-1)/time.Second) + 1
	r.bound = r.planned
	r.pending = map[int][]*SecondPart{}
	r.seen = make([]map[int]struct{}, n)
	for i := range r.seen {
		r.seen[i] = map[int]struct{}{}
	}
	r.finals, r.finalSec, r.started = make([]*FinalPart, n), make([]int, n), make([]int64, n)
	r.lost, r.refused, r.lastSec = make([]bool, n), make([]bool, n), make([]int, n)
	r.parts = make([][]*SecondPart, n)
	r.warned = map[string]struct{}{}
	r.live.out = make([]bool, n)
	r.live.events, r.live.done = make(chan metrics.RunEvent), make(chan struct{}) // unbuffered: a change handed over is in the loop
}

// once logs msg the first time key is seen.
func (r *run) once(key, msg string, args ...any) {
	if _, ok := r.warned[key]; ok || len(r.warned) >= 1000 {
		return
	}
	r.warned[key] = struct{}{}
	r.log.Warn(msg, args...)
}

// fetch pulls the run's snapshots, acknowledges each and hands the well-formed ones to in; once
// backlog messages are fetched (> 0: what the stream held at the start), a caughtUp.
func (r *run) fetch(ctx context.Context, sub *nats.Subscription, in chan<- incoming, backlog uint64) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("snapshot fetcher panicked", "panic", p)
		}
	}()
	prefix := fmt.Sprintf("volley.run.%d.snap.", r.spec.Run)
	bad := map[string]bool{}
	var got uint64
	send := func(m incoming) bool {
		select {
		case in <- m:
			return true
		case <-ctx.Done():
			return false
		}
	}
	// take acknowledges and hands over one message; false once ctx has ended.
	take := func(m *nats.Msg) bool {
		_ = m.Ack()
		got++
		agent := strings.TrimPrefix(m.Subject, prefix)
		var s Snapshot
		err := json.Unmarshal(m.Data, &s)
		if err == nil && (s.Run != r.spec.Run || s.Agent != agent) {
			err = fmt.Errorf("it names run %d and agent %.64q, its subject run %d and agent %.64q", s.Run, s.Agent, r.spec.Run, agent)
		}
		if err != nil && isFinal(m.Data, r.spec.Run, agent) {
			// A final that cannot be read cannot stand for the agent's share: lost at once,
			// not at the run's end.
			if !send(incoming{agent: agent, badFinal: err}) {
				return false
			}
		} else if err != nil {
			if !bad[agent] && len(bad) < 1000 {
				bad[agent] = true
				r.log.Warn("ignoring a malformed snapshot", "run", r.spec.Run, "agent", agent, "err", err)
			}
		} else if !send(incoming{agent: agent, snap: s}) {
			return false
		}
		return got != backlog || send(incoming{caughtUp: true})
	}
	timeout := func(err error) bool {
		return err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, nats.ErrTimeout)
	}
	for ctx.Err() == nil {
		// A batch request of up to 64 for 500 ms whose messages are taken as they arrive (Fetch
		// would hold them until the batch is full or the request expires: a second, and the run's
		// end, up to half a second late).
		fctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		batch, err := sub.FetchBatch(64, nats.Context(fctx))
		if err == nil {
			for m := range batch.Messages() {
				if !take(m) {
					cancel()
					return
				}
			}
			err = batch.Error()
		}
		cancel()
		if !timeout(err) {
			r.log.Warn("fetching snapshots", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// loop merges the run's seconds until its end and returns the summary.
func (r *run) loop(ctx context.Context, in <-chan incoming) (sum *metrics.Summary, err error) {
	defer func() {
		if p := recover(); p != nil {
			sum, err = nil, fmt.Errorf("cluster: run %d: %v", r.spec.Run, p)
			r.control(Control{Kind: ControlStop, Reason: err.Error()})
		}
	}()
	load := r.spec.Plan.Plan.Load
	grace := load.GracefulStop.D()
	end := r.startAt.Add(load.Length() + grace + EndMargin)
	if !r.graceUntil.IsZero() {
		end = later(end, r.graceUntil.Add(EndMargin)) // resumed: the agents may still be coming back
	}
	t := time.NewTicker(r.c.tick)
	defer t.Stop()
	done := ctx.Done()
	for {
		select {
		case m := <-in:
			if m.caughtUp {
				r.caughtUp = true
			} else {
				r.take(m)
			}
		case ev := <-r.live.events:
			r.events = append(r.events, ev)
		case <-r.c.halt:
			return nil, errHalted
		case <-done:
			done = nil
			if !r.stopped {
				now := r.c.now()
				r.stopAll(now, "stopped")
				if e := now.Add(grace + EndMargin); e.Before(end) {
					end = e
				}
				// No agent has a second past the stop + graceful stop.
				r.planned = min(r.planned, int((max(0, now.Sub(r.startAt))+grace+time.Second-1)/time.Second)+1)
				r.log.Info("run stopped; waiting for the agents' final messages", "until", end)
			}
		case <-t.C:
		}
		now := r.c.now()
		r.watch(now)
		over := !now.Before(end)
		if over && !r.stopped {
			r.stopAll(now, "the run's end has passed") // whoever still runs past the end is told to stop
		} else if r.stopped && now.Sub(r.stopSent) >= StopRepeat && slices.Contains(r.finals, nil) {
			r.control(r.stop) // again, for an agent that missed it
			r.stopSent = now
		}
		if over {
			for i := range r.ids {
				if r.finals[i] == nil && !r.lost[i] {
					r.lose(i, "its final message did not come by the run's end")
				}
			}
		}
		r.closeSeconds(now, over)
		if h := r.c.tickHook; h != nil {
			h()
		}
		if r.finished() {
			return r.summary()
		}
	}
}

// isFinal says whether data, a snapshot that does not decode, is agent's final message of run:
// its run, agent and final fields read, whatever the final holds (a histogram that does not
// decode, a count of the wrong type...).
func isFinal(data []byte, run int64, agent string) bool {
	var env struct {
		Run   int64           `json:"run"`
		Agent string          `json:"agent"`
		Final json.RawMessage `json:"final"`
	}
	return json.Unmarshal(data, &env) == nil && env.Run == run && env.Agent == agent &&
		len(env.Final) > 0 && string(env.Final) != "null"
}

// take files one snapshot.
func (r *run) take(m incoming) {
	if h := r.c.takeHook; h != nil {
		h(m.agent, &m.snap)
	}
	i, ok := r.index[m.agent]
	if !ok {
		r.once("agent "+m.agent, "ignoring snapshots of an agent not in the run", "agent", m.agent)
		return
	}
	if m.badFinal != nil {
		if r.finals[i] == nil && !r.refused[i] {
			r.refused[i] = true
			if !r.lost[i] {
				r.lose(i, "its final message cannot be read: "+clip(m.badFinal.Error()))
			}
		}
		return
	}
	s := m.snap
	if s.Second > r.bound {
		// A hostile or broken agent's second (or final) past the plan's end: merging up to it
		// would merge millions of empty seconds.
		r.once("past "+m.agent, "ignoring a snapshot past the plan's last second", "agent", m.agent, "second", s.Second, "last", r.bound)
		return
	}
	if s.StartedUnixNano != 0 && r.started[i] == 0 {
		if r.startPlausible(s.StartedUnixNano) {
			r.started[i] = s.StartedUnixNano
		} else {
			r.once("start "+m.agent, "ignoring an agent's start time far from the run's start instant (its start skew is not known)",
				"agent", m.agent, "started_unix_nano", s.StartedUnixNano, "start_at", r.startAt)
		}
	}
	if s.Final != nil {
		if r.finals[i] == nil && !r.refused[i] {
			r.final(i, s)
		}
		return
	}
	if r.refused[i] || (r.finalSec[i] > 0 && s.Second >= r.finalSec[i]) {
		r.once("after "+m.agent, "ignoring a second after the agent's final", "agent", m.agent, "second", s.Second)
		return
	}
	if s.Part == nil || s.Second < 1 {
		r.once("empty "+m.agent, "ignoring a snapshot without a second", "agent", m.agent, "second", s.Second)
		return
	}
	if h := r.horizon(); s.Second >= h+FutureSeconds {
		r.once("future "+m.agent, "ignoring a snapshot for a second far ahead", "agent", m.agent, "second", s.Second, "merging", r.next, "horizon", h)
		return
	}
	if _, dup := r.seen[i][s.Second]; dup {
		return
	}
	if err := r.merger.CheckPart(i, s.Part); err != nil {
		// impossible figures (a broken or hostile agent): its share of the second is missing
		r.once("malformed part "+m.agent, "ignoring a second with impossible figures", "agent", m.agent, "second", s.Second, "err", err)
		return
	}
	r.seen[i][s.Second] = struct{}{}
	r.lastSec[i] = max(r.lastSec[i], s.Second)
	part := s.Part
	part.Sample.ElapsedS = s.Second
	r.parts[i] = append(r.parts[i], part)
	if r.hooks.OnAgentSecond != nil {
		r.hooks.OnAgentSecond(m.agent, part.Full())
	}
	if s.Second < r.next {
		return // merged already without it
	}
	p := r.pending[s.Second]
	if p == nil {
		p = make([]*SecondPart, len(r.ids))
		r.pending[s.Second] = p
	}
	p[i] = part
}

// horizon is the second from which FutureSeconds counts: the next to merge, or — a resumed run
// catching up, whose next second may lag far behind — the first to hand to OnSecond or the
// second the run's clock is in, if later. Bounded by r.bound: what waits is at most
// (horizon − next + FutureSeconds) × agents parts.
func (r *run) horizon() int {
	h := max(r.next, r.from)
	if d := r.c.now().Sub(r.startAt); d > 0 {
		h = max(h, int(d/time.Second)+1)
	}
	return min(h, r.bound)
}

// final files agent i's final message s. A final that failed (Error), has no engine state (but
// for an agent stopped before its start, which delivered nothing) or does not come after the agent's last delivered second is refused: the agent is lost from here
// on (its share missing in every later second, the run degraded); the summary has what it
// delivered (summary).
func (r *run) final(i int, s Snapshot) {
	id := r.ids[i]
	if s.Fenced {
		r.degraded = true
		r.log.Warn("agent fenced itself (cut off from the broker)", "agent", id)
	}
	var why string
	impossible := r.merger.CheckFinal(i, s.Final)
	switch {
	case s.Error != "":
		r.failures = append(r.failures, fmt.Sprintf("agent %q: %s", id, s.Error))
		why = "its run failed: " + s.Error
	case s.Final.State == nil && !(r.stopped && r.lastSec[i] == 0):
		// (stopped before its start instant, an agent has no state and nothing to deliver)
		why = "its final message has no engine state"
	case max(s.Second, 1) <= r.lastSec[i]:
		why = fmt.Sprintf("its final message (second %d) is not after its last second (%d)", s.Second, r.lastSec[i])
	case impossible != nil:
		why = "its final message has impossible figures: " + impossible.Error()
	default:
		r.finals[i], r.finalSec[i] = s.Final, max(s.Second, 1)
		r.markOut(i)
		return
	}
	r.refused[i] = true
	if !r.lost[i] {
		r.lose(i, why)
	}
}

// watch marks agents whose presence expired as lost; in a resumed run, an agent the registry
// does not know yet is not lost before graceUntil (it is coming back).
func (r *run) watch(now time.Time) {
	if r.spec.InProcess {
		return // its agents live and die with this process
	}
	for i, id := range r.ids {
		if r.lost[i] || r.finals[i] != nil {
			continue
		}
		seen, ok := r.c.reg.Seen(id)
		if !ok && now.Before(r.graceUntil) {
			continue
		}
		if !ok || now.Sub(seen) > bus.PresenceTTL {
			r.lose(i, "its presence expired")
		}
	}
}

func (r *run) lose(i int, why string) {
	r.lost[i], r.degraded = true, true
	r.markOut(i)
	r.log.Warn("agent lost; its share is missing from here on", "agent", r.ids[i], "why", why, "last_second", r.lastSec[i])
}

// expects says whether second s still waits for agent i.
func (r *run) expects(i, s int) bool {
	return !r.lost[i] && (r.finalSec[i] == 0 || s < r.finalSec[i])
}

// lastSecond is the run's last second once every agent has finished or is lost (known false
// while an agent may still deliver more).
func (r *run) lastSecond() (last int, known bool) {
	for i := range r.ids {
		switch {
		case r.finalSec[i] > 0:
			last = max(last, r.finalSec[i]-1)
		case r.lost[i]:
			last = max(last, r.lastSec[i])
		default:
			return 0, false
		}
	}
	return last, true
}

// closeSeconds merges, in order, every second that every agent still expected has delivered or
// whose grace is past (up to the plan's last possible second); over (the run's end passed): every second up to the last any agent
// delivered. Never past r.bound (take drops anything beyond it), and at most closeBudget seconds
// per call, so the loop keeps answering snapshots and its context in between.
func (r *run) closeSeconds(now time.Time, over bool) {
	for n := 0; n < closeBudget; n++ {
		s := r.next
		last, known := r.lastSecond()
		if over {
			last, known = max(last, slices.Max(r.lastSec)), true
		}
		if s > r.bound || (known && s > last) {
			return
		}
		parts := r.pending[s]
		waiting := false
		for i := range r.ids {
			if r.expects(i, s) && (parts == nil || parts[i] == nil) {
				waiting = true
			}
		}
		var due bool
		if s < r.from {
			// Merged again for the run so far: what the stream held at the resume is all there is.
			due = r.caughtUp || !now.Before(r.graceUntil)
		} else {
			due = s <= r.planned && !r.spec.InProcess && !now.Before(later(r.startAt.Add(time.Duration(s)*time.Second+SecondGrace), r.graceUntil))
		}
		if waiting && !due && !over {
			return
		}
		if parts == nil {
			parts = make([]*SecondPart, len(r.ids))
		}
		for i := range r.ids {
			// An agent that finished before s has nothing in it: an empty part, not a missing one.
			if parts[i] == nil && r.finalSec[i] > 0 && s >= r.finalSec[i] {
				parts[i] = &SecondPart{Sample: metrics.Sample{ElapsedS: s}}
			}
		}
		if slices.Contains(parts, nil) {
			r.degraded = true
		}
		m := r.merger.Second(s, parts)
		delete(r.pending, s)
		r.next++
		if s >= r.from {
			// The run's load changes are the coordinator's record, once each (not the agents'
			// copies the merger added up).
			m.Events = r.secondEvents(s)
		}
		if r.hooks.OnSecond != nil && s >= r.from {
			r.hooks.OnSecond(m)
		}
	}
}

// closeBudget is the most seconds one closeSeconds call merges.
const closeBudget = 256

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// errHalted ends a run whose coordinator was halted (tests: the controller process killed).
var errHalted = errors.New("cluster: the coordinator was halted")

// finished: every agent delivered its final or is lost, and every second is merged (up to r.bound).
func (r *run) finished() bool {
	last, known := r.lastSecond()
	return known && r.next > min(last, r.bound)
}

// summary merges the finals and adds what only the controller knows.
func (r *run) summary() (*metrics.Summary, error) {
	var lost []string
	for i, id := range r.ids {
		if r.lost[i] {
			lost = append(lost, id)
		}
	}
	if len(r.failures) == len(r.ids) {
		return nil, fmt.Errorf("cluster: run %d failed on every agent: %s", r.spec.Run, strings.Join(r.failures, "; "))
	}
	delivered := slices.ContainsFunc(r.parts, func(p []*SecondPart) bool { return len(p) > 0 })
	if !slices.ContainsFunc(r.finals, func(f *FinalPart) bool { return f != nil }) && !delivered {
		return nil, fmt.Errorf("cluster: run %d: no agent finished or delivered a second (lost: %s)", r.spec.Run, strings.Join(lost, ", "))
	}
	if !slices.ContainsFunc(r.finals, func(f *FinalPart) bool { return f == nil || f.State != nil }) {
		// Every agent was stopped before its start instant (final takes a final without engine
		// state only then): nothing was sent.
		return r.notStarted()
	}
	finals := slices.Clone(r.finals)
	like := slices.IndexFunc(finals, func(f *FinalPart) bool { return f != nil && f.State != nil })
	shape := r.planShape() // every agent lost: the seconds they delivered are the run's
	if like >= 0 {
		shape = finals[like].State
	}
	for i, f := range finals {
		if f == nil && len(r.parts[i]) > 0 {
			// What it delivered counts in the summary too (partly: FinalOfSeconds).
			finals[i] = &FinalPart{State: FinalOfSeconds(r.parts[i], shape)}
			r.log.Info("the summary has the seconds an agent delivered without a usable final (partial: no checks, phases or success latency of it)",
				"agent", r.ids[i], "seconds", len(r.parts[i]))
		}
	}
	sum, err := r.merger.Summary(finals)
	if err != nil {
		return nil, fmt.Errorf("cluster: run %d: %w", r.spec.Run, err)
	}
	// The load changes once each: the coordinator's record; a resumed run's coordinator did not
	// see those made before its restart, so its summary has the first agent's own record.
	if like < 0 {
		r.log.Warn("every agent of the run was lost: its summary is the seconds they delivered (partial)", "lost", lost)
	}
	sum.Events = append([]metrics.RunEvent{}, r.events...)
	if !r.graceUntil.IsZero() && like >= 0 {
		sum.Events = append([]metrics.RunEvent{}, finals[like].State.Events...)
	}
	sum.Agents = len(r.ids)
	sum.Degraded = r.degraded
	sum.LostAgents = lost
	sum.StartSkewMs = r.startSkewMs()
	r.log.Info("run over agents finished", "degraded", sum.Degraded, "lost", lost, "start_skew_ms", skewMs(sum.StartSkewMs))
	return sum, nil
}

// planShape is an engine state with the plan's request names (engine.RequestNames) and no
// figure: the shape FinalOfSeconds rebuilds a lost agent's state in when no agent left a final
// to copy it from (no check results then: the seconds do not carry them one by one).
func (r *run) planShape() *engine.Final {
	names, _ := engine.RequestNames(r.spec.Plan.Plan)
	f := &engine.Final{Names: make([]engine.FinalName, len(names))}
	for i, n := range names {
		f.Names[i].Name = n
	}
	return f
}

// notStarted is the summary of a run stopped before any of its agents sent a request: that of
// an empty engine state (engine.Summarize: no request, no second), as an engine stopped at once
// reports, with the agents count. The run is not a failure: it was stopped.
func (r *run) notStarted() (*metrics.Summary, error) {
	sum, err := engine.Summarize(r.spec.Plan, &engine.Final{StatusCodes: map[string]int64{}, ErrorKinds: map[string]int64{}})
	if err != nil {
		return nil, fmt.Errorf("cluster: run %d: %w", r.spec.Run, err)
	}
	sum.Events = append([]metrics.RunEvent{}, r.events...)
	sum.Agents, sum.Degraded = len(r.ids), r.degraded
	r.log.Info("run over agents stopped before its start: nothing was sent")
	return sum, nil
}

// StartSlack bounds how far from the run's start instant an agent's reported start may be and
// count in the start skew: before it by at most StartSlack, after it by at most the plan's
// seconds and StartSlack. An honest agent starts within milliseconds of it (its clock's offset
// measured and taken off); a start outside is a broken clock or a lie, left out of the skew.
const StartSlack = time.Minute

// startPlausible says whether an agent's reported start (unix ns, the controller's clock) is
// within StartSlack of the run's start instant (or of its planned seconds after it).
func (r *run) startPlausible(ns int64) bool {
	at := r.startAt.UnixNano()
	return ns >= at-int64(StartSlack) && ns <= at+int64(StartSlack)+int64(r.bound)*int64(time.Second)
}

// startSkewMs is the spread of the agents' reported starts in ms (nil: none reported). The
// starts are within startPlausible's window of the start instant, so their difference fits.
func (r *run) startSkewMs() *float64 {
	var lo, hi int64
	n := 0
	for _, s := range r.started {
		if s == 0 {
			continue
		}
		if n == 0 {
			lo, hi = s, s
		}
		lo, hi, n = min(lo, s), max(hi, s), n+1
	}
	if n == 0 {
		return nil
	}
	skew := float64(hi-lo) / 1e6
	return &skew
}

// skewMs is *p for the log (-1: not known).
func skewMs(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}

// PickError says why Pick could not choose the agents asked for.
type PickError struct {
	Want      int               // agents asked for (0 with labels: at least one)
	Labels    map[string]string // labels asked for, nil: any
	Available int               // idle agents that match
}

func (e *PickError) Error() string {
	var b strings.Builder
	b.WriteString("not enough idle agents: ")
	if e.Want > 0 {
		fmt.Fprintf(&b, "%d asked for", e.Want)
	} else {
		b.WriteString("at least one asked for")
	}
	if len(e.Labels) > 0 {
		keys := slices.Sorted(maps.Keys(e.Labels))
		for i, k := range keys {
			keys[i] = k + "=" + e.Labels[k]
		}
		fmt.Fprintf(&b, " with labels %s", strings.Join(keys, ","))
	}
	fmt.Fprintf(&b, ", %d idle", e.Available)
	return b.String()
}

// Pick chooses idle agents: n of them (n ≥ 1), or every idle agent matching labels when labels is
// non-empty (and n is 0), in a stable order (by id). *PickError when too few are available.
// With both, n of the idle agents matching labels.
func (r *Registry) Pick(n int, labels map[string]string) ([]Agent, error) {
	var match []Agent
	for _, a := range r.List() {
		if a.State != "idle" {
			continue
		}
		ok := true
		for k, v := range labels {
			if a.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			match = append(match, a)
		}
	}
	if n < 0 || (n == 0 && len(labels) == 0) || len(match) == 0 || len(match) < n {
		return nil, &PickError{Want: n, Labels: labels, Available: len(match)}
	}
	if n > 0 {
		match = match[:n]
	}
	return match, nil
}
