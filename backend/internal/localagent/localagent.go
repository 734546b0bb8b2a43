// Package localagent is a single-machine run as a run over one agent (issue 14, "one code path";
// docs/scale-out.md): the embedded NATS broker with no listener (in-process connections only: no
// port opens), one agent.Run in this process with the whole segment, and the controller's
// registry and coordinator on that broker. Local.Run runs a plan through the same Prepare →
// start → per-second snapshot → merge → summary path as a run over remote agents, and returns
// its seconds and summary in a single machine's shape.
package localagent

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/agent"
	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/plan"
)

// runAgent is agent.Run (tests: one that panics).
var runAgent = agent.Run

// testOptions are more options of the agent's connection (tests: its closed handler).
var testOptions []nats.Option

// ID is the local agent's id.
const ID = "local"

// JoinWait bounds how long Start waits for the local agent to join (say hello and beat once).
const JoinWait = 10 * time.Second

// Config is what Start needs.
type Config struct {
	Version string            // this build's version (the agent's hello, the registry's)
	Policy  *netpolicy.Policy // the server's target policy (the agent's engine enforces it); nil: netpolicy.Default
	Log     *slog.Logger
}

// Local is the broker, the controller and the one in-process agent. Safe for concurrent use; one
// run at a time (the agent refuses a second: "busy with run N").
type Local struct {
	b      *bus.Bus
	ctl    *cluster.Controller // its connection, registry and coordinator
	reg    *cluster.Registry
	co     *cluster.Coordinator
	agent  cluster.Agent    // as the registry lists it
	hand   *cluster.Handoff // the agent's snapshots to the coordinator, in memory
	stop   context.CancelFunc
	exited chan struct{} // closed when agent.Run has returned
	runErr error         // agent.Run's error (read after exited)
}

// Start starts the broker (no listener), the registry and coordinator on a controller connection,
// and the local agent on an in-process connection, and returns once the agent is listed (at
// most JoinWait). Errors: the broker's, the connections', or the agent's not joining.
func Start(cfg Config) (*Local, error) {
	l := &Local{exited: make(chan struct{}), hand: cluster.NewHandoff()}
	if err := l.start(cfg); err != nil {
		l.Close()
		return nil, fmt.Errorf("localagent: %w", err)
	}
	return l, nil
}

func (l *Local) start(cfg Config) (err error) {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	if l.b, err = bus.Start(bus.Config{}); err != nil {
		return err
	}
	if l.ctl, err = cluster.StartController(l.b, cfg.Version, nil, log); err != nil {
		return err
	}
	l.reg, l.co = l.ctl.Registry, l.ctl.Coordinator
	ctx, stop := context.WithCancel(context.Background())
	l.stop = stop
	b := l.b
	go func() {
		defer close(l.exited)
		defer func() { // a panic in the agent's own loop (its handlers and runs recover theirs) is not the server's end
			if p := recover(); p != nil {
				l.runErr = fmt.Errorf("internal error in the local agent: %v", p)
				log.Error("the local agent stopped: panic", "err", l.runErr, "stack", string(debug.Stack()))
			}
		}()
		l.runErr = runAgent(ctx, agent.Config{ID: ID, Version: cfg.Version, Weight: 1, Policy: cfg.Policy, Handoff: l.hand,
			Log:     log.With("agent", ID),
			Connect: func(o ...nats.Option) (*nats.Conn, error) { return b.LocalAgent(ID, append(o, testOptions...)...) }})
	}()
	deadline := time.NewTimer(JoinWait)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, a := range l.reg.List() {
			if a.ID == ID {
				l.agent = a
				return nil
			}
		}
		select {
		case <-l.exited:
			return fmt.Errorf("the local agent stopped: %v", l.runErr)
		case <-deadline.C:
			return fmt.Errorf("the local agent did not join within %s", JoinWait)
		case <-tick.C:
		}
	}
}

// Run runs c as run runID on the local agent (the whole segment) — runs.Drive's shape: each
// merged second to onSample, in order, and the summary — as cluster.Coordinator.Run does over
// remote agents (RunSpec.InProcess: no second closes with its share missing, the agent is never
// lost by its presence, and it never fences itself: NoFence; RunSpec.Handoff: its snapshots
// reach the merge in memory, not through the snapshot stream, and it probes no clock and
// watches no lease). The seconds and the summary have a single machine's shape: no per-agent
// generator figures (Sample.Agents), no agents count or start skew (Summary.Agents,
// StartSkewMs). Cancelling ctx stops the run (the plan's graceful stop). Errors: the agent's
// refusal (*cluster.RefusedError: the plan, its target policy), its run's failure, the
// coordinator's.
func (l *Local) Run(ctx context.Context, runID int64, c *plan.Compiled, onSample func(metrics.Sample)) (*metrics.Summary, error) {
	sum, err := l.co.Run(ctx, cluster.RunSpec{Run: runID, Plan: c, Agents: []cluster.Agent{l.agent}, InProcess: true, FenceAfter: NoFence, Handoff: l.hand},
		cluster.RunHooks{OnSecond: func(s metrics.Sample) {
			s.Agents = nil
			onSample(s)
		}})
	if sum != nil {
		sum.Agents, sum.StartSkewMs = 0, nil
	}
	return sum, err
}

// Control changes running run runID's load (cluster.Coordinator.Control).
func (l *Local) Control(ctx context.Context, runID int64, ch cluster.Change) (metrics.RunEvent, error) {
	return l.co.Control(ctx, runID, ch)
}

// NoFence is the local agent's fence_after (cluster.RunSpec.FenceAfter): never, in practice. It
// cannot be cut off from a broker in its own process, and a stall of the whole process (SIGSTOP,
// a paused VM) must not stop a single-machine run, as it does not stop the engine's run directly.
const NoFence = 100 * 365 * 24 * time.Hour

// closeWait bounds how long Close waits for the agent to end (it drains its spool ≤ 5 s).
const closeWait = 10 * time.Second

// Close stops the agent (a run in progress ends with it) and the broker.
func (l *Local) Close() {
	if l.stop != nil {
		l.stop()
		select {
		case <-l.exited:
		case <-time.After(closeWait):
		}
	}
	if l.ctl != nil {
		l.ctl.Close()
	}
	if l.b != nil {
		l.b.Close()
	}
}
