package cluster

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// TODO(issue 14, coordinator): placeholders of the agreed shapes; the coordinator replaces them.

// RunSpec is a run over agents.
type RunSpec struct {
	Run    int64
	Plan   *plan.Compiled
	Agents []Agent // from Registry.Pick, in part order; the split follows their Weight
	// FenceAfter: an agent that loses the broker this long stops its load (0: DefaultFenceAfter).
	FenceAfter time.Duration
}

// DefaultFenceAfter is fence_after when a run does not set it.
const DefaultFenceAfter = 10 * time.Second

// RunHooks receive a run's results as they come.
type RunHooks struct {
	// OnSecond gets each merged second once, in order (MissingShare set when a share is missing).
	OnSecond func(s metrics.Sample)
	// OnAgentSecond gets each agent's own second (to store); a second that arrives late (an
	// agent's spool after a reconnect) comes then; never the same (agent, second) twice.
	OnAgentSecond func(agent string, s metrics.Sample)
}

// Coordinator runs plans over the registry's agents. Safe for concurrent use.
type Coordinator struct {
	conn *nats.Conn
	reg  *Registry
	log  *slog.Logger
}

// NewCoordinator makes the coordinator on the controller's connection conn.
func NewCoordinator(conn *nats.Conn, reg *Registry, log *slog.Logger) (*Coordinator, error) {
	if log == nil {
		log = slog.Default()
	}
	return &Coordinator{conn: conn, reg: reg, log: log}, nil
}

// Run prepares the agents, starts them at one instant, merges their seconds as they come and
// returns the run's merged summary (Agents, Degraded, LostAgents, StartSkewMs set). Cancelling
// ctx stops the run (the agents get the plan's graceful stop). An agent refusing Prepare fails the
// run with its reason (*RefusedError naming the agent).
func (c *Coordinator) Run(ctx context.Context, spec RunSpec, hooks RunHooks) (*metrics.Summary, error) {
	return nil, errors.New("cluster: runs over agents are not built yet")
}

// PickError says why Pick could not choose the agents asked for.
type PickError struct {
	Want      int               // agents asked for (0 with labels: at least one)
	Labels    map[string]string // labels asked for, nil: any
	Available int               // idle agents that match
}

func (e *PickError) Error() string { return "cluster: not enough idle agents" }

// Pick chooses idle agents: n of them (n ≥ 1), or every idle agent matching labels when labels is
// non-empty (and n is 0), in a stable order (by id). *PickError when too few are available.
func (r *Registry) Pick(n int, labels map[string]string) ([]Agent, error) {
	return nil, &PickError{Want: n, Labels: labels}
}
