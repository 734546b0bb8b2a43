package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/runs"
	"github.com/volley-load/volley/backend/internal/store"
)

// Cluster runs plans over remote agents: Registry.Pick chooses them, Coordinator.Run runs the
// plan on them, Coordinator.Resume takes over a run a previous controller process started
// (volley serve --agents-listen or --nats: *cluster.Registry with its *cluster.Coordinator).
type Cluster interface {
	Pick(n int, labels map[string]string) ([]cluster.Agent, error)
	Run(ctx context.Context, spec cluster.RunSpec, hooks cluster.RunHooks) (*metrics.Summary, error)
	Resume(ctx context.Context, spec cluster.RunSpec, st cluster.Started, from int, hooks cluster.RunHooks) (*metrics.Summary, error)
}

// WithCluster lets POST /api/plans/:id/runs run a plan over agents ({"agents": N} or
// {"agent_labels": {…}}). Without it such a body is a 409 agents_listener_off.
func WithCluster(c Cluster) Option { return func(s *Server) { s.cluster = c } }

// Bounds of a run's generators (startBody).
const (
	MaxRunAgents   = 1000              // agents one run may ask for
	MaxAgentLabels = cluster.MaxLabels // labels in agent_labels: an agent's own bounds (cluster.CheckLabels)
)

// startBody is POST /api/plans/:id/runs's optional body: which generators run the plan. Neither
// field (or no body): this server's engine. Agents: that many idle agents; AgentLabels: every idle
// agent carrying all those labels.
type startBody struct {
	Agents      *int              `json:"agents"`
	AgentLabels map[string]string `json:"agent_labels"`
}

// startWire is startBody as sent: each field is checked by readStartBody, so that every invalid
// value of a field — of another JSON type, out of range, not written as a whole number — gets the
// same answer.
type startWire struct {
	Agents      json.RawMessage `json:"agents"`
	AgentLabels json.RawMessage `json:"agent_labels"`
}

// What a valid agents and agent_labels are, as their field errors say it.
var (
	agentsBound = fmt.Sprintf("must be a whole number of agents from 1 to %d", MaxRunAgents)
	labelsShape = fmt.Sprintf("must be an object of 1 to %d labels, each value a string", MaxAgentLabels)
)

// readStartBody reads startBody; an empty body is the zero startBody, and null counts as absent.
// Every invalid agents or agent_labels value is a 400 invalid_value naming the field and its
// bound; a body that is not such an object (or has another field) is a 400 bad_request.
func readStartBody(c *gin.Context) (startBody, error) {
	var b startBody
	raw, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return b, unreadableBody()
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return b, nil
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(raw))
	var w startWire
	if err := decodeBody(c, &w, `"agents" (a number of agents) or "agent_labels" (an object of labels), or no body`); err != nil {
		return b, err
	}
	agents, labels := present(w.Agents), present(w.AgentLabels)
	if agents && labels {
		const both = "give agents or agent_labels, not both"
		return b, &Error{Status: http.StatusBadRequest, Code: "invalid_value", Message: both,
			Fields: map[string]string{"agents": both, "agent_labels": both}}
	}
	if agents {
		n, ok := wholeAgents(w.Agents)
		if !ok {
			return b, invalidField("agents", agentsBound)
		}
		b.Agents = &n
	}
	if labels {
		l, ok := labelObject(w.AgentLabels)
		if !ok {
			return b, invalidField("agent_labels", labelsShape)
		}
		// the bounds an agent's own labels keep (a selection past them could match none)
		if err := cluster.CheckLabels(l); err != nil {
			return b, &Error{Status: http.StatusBadRequest, Code: "invalid_value", Message: "agent_labels: " + err.Error(),
				Fields: map[string]string{"agent_labels": err.Error()}}
		}
		b.AgentLabels = l
	}
	return b, nil
}

// present reports whether a field was given a value: neither absent nor null.
func present(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

// wholeAgents is v as a number of agents, if it is one: a JSON number written as a whole number
// (not 2.0 nor 1e3, as a plan's whole-number fields) from 1 to MaxRunAgents.
func wholeAgents(v json.RawMessage) (int, bool) {
	if len(v) == 0 || bytes.ContainsAny(v, `".eE`) {
		return 0, false
	}
	n, err := strconv.Atoi(string(v)) // a string, true, [] or {} is no integer either
	return n, err == nil && n >= 1 && n <= MaxRunAgents
}

// labelObject is v as labels, if it is a non-empty JSON object of strings.
func labelObject(v json.RawMessage) (map[string]string, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(v, &obj) != nil || len(obj) == 0 {
		return nil, false
	}
	l := make(map[string]string, len(obj))
	for k, raw := range obj {
		var s string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		l[k] = s
	}
	return l, true
}

// startOnAgents starts plan planID over the agents b asks for: 409 agents_listener_off without a
// cluster, 409 agents_unavailable (the PickError's words) when too few idle agents match.
func (s *Server) startOnAgents(c *gin.Context, planID int64, b startBody) (int64, *store.Plan, error) {
	if s.cluster == nil {
		return 0, nil, errf(http.StatusConflict, "agents_listener_off",
			"this server has no agents listener, so it cannot run plans on agents: start volley serve with --agents-listen HOST:PORT")
	}
	n := 0
	if b.Agents != nil {
		n = *b.Agents
	}
	picked, err := s.cluster.Pick(n, b.AgentLabels)
	var pe *cluster.PickError
	if errors.As(err, &pe) {
		return 0, nil, errf(http.StatusConflict, "agents_unavailable", "%s", pe.Error())
	}
	if err != nil {
		return 0, nil, err
	}
	// Its agents from its creation (the answer, the list, the live page) to its end, whatever its
	// outcome (runs.Service.StartOnAgents).
	return s.runs.StartOnAgents(c.Request.Context(), planID, s.checkPlan, s.agentsDrive(picked), len(picked))
}

// agentsDrive runs a plan on the picked agents (cluster.Coordinator.Run): the merged seconds go
// to the run's sinks, each agent's own seconds to the run_agent_seconds table, and what a
// restarted controller needs to take the run over (cluster.Started) to the run's cluster column
// before the start is broadcast (ResumeRuns).
func (s *Server) agentsDrive(picked []cluster.Agent) runs.Drive {
	return func(ctx context.Context, runID int64, c *plan.Compiled, onSample func(metrics.Sample)) (*metrics.Summary, error) {
		return s.cluster.Run(ctx, cluster.RunSpec{Run: runID, Plan: c, Agents: picked}, cluster.RunHooks{
			OnSecond:      onSample,
			OnAgentSecond: runs.AgentSecondHook(s.store, runID, s.log),
			OnStart: func(st cluster.Started) error {
				b, err := json.Marshal(st)
				if err != nil {
					return err
				}
				// Stored even when the run is being stopped while its agents prepare: it starts.
				return s.store.SetRunCluster(context.WithoutCancel(ctx), runID, b)
			},
		})
	}
}

// ResumeRuns takes over, at start-up before the server serves, the runs over agents a previous
// controller process left running (store.ResumableRuns, kept "running" by MarkInterrupted):
// each is begun again in the runner (runs.Service.Resume: same id, its live topic holding its
// stored seconds) with the cluster's Resume merging from the first second not stored
// (LastSecond + 1), each agent's own seconds stored as before. A run that cannot be begun again
// (no cluster, its cluster JSON unreadable, its plan, another run already going: one run at a
// time) is marked interrupted and logged, and its agents are told to stop (Abandon, when the
// cluster has it). It returns the ids of the runs taken over.
func (s *Server) ResumeRuns(ctx context.Context, rs []store.ResumableRun) []int64 {
	var resumed []int64
	for _, r := range rs {
		err := s.resumeRun(ctx, r)
		if err == nil {
			s.log.Info("run over agents taken over from the previous controller process; it goes on from its first second not stored",
				"run", r.ID, "from", r.LastSecond+1)
			resumed = append(resumed, r.ID)
			continue
		}
		s.log.Warn("a run over agents left running cannot be taken over; it is marked interrupted (its stored seconds are kept)",
			"run", r.ID, "err", err)
		s.abandon(r, err)
		if err := s.store.MarkRunInterrupted(context.WithoutCancel(ctx), r.ID, time.Now()); err != nil {
			s.log.Error("cannot mark the run interrupted; the next start will", "run", r.ID, "err", err)
		}
	}
	return resumed
}

// abandoner is a Cluster that can tell the agents of a run it cannot take over to stop
// (*cluster.Coordinator.Abandon).
type abandoner interface {
	Abandon(runID int64, controller, reason string)
}

// abandon tells the agents of run r, which cannot be taken over (why), to stop: they reconnect to
// a restarted broker, so they would not fence and would load their target to the plan's end with
// nobody storing it or able to stop it. The controller id is read from the stored start even when
// the rest of it is not readable; without one nothing can be sent.
func (s *Server) abandon(r store.ResumableRun, why error) {
	a, ok := s.cluster.(abandoner)
	if !ok {
		return
	}
	var who struct {
		Controller string `json:"controller"`
	}
	_ = json.Unmarshal(r.Cluster, &who) // a start unreadable elsewhere may still name its controller
	a.Abandon(r.ID, who.Controller, "the restarted controller cannot take the run over: "+why.Error())
}

// resumeRun begins run r again over the cluster (ResumeRuns).
func (s *Server) resumeRun(ctx context.Context, r store.ResumableRun) error {
	if s.cluster == nil {
		return errors.New("this server has no agents cluster (--agents-listen with --agents-state, or --nats)")
	}
	var st cluster.Started
	if err := json.Unmarshal(r.Cluster, &st); err != nil {
		return fmt.Errorf("its stored start (runs.cluster) is not readable: %w", err)
	}
	from := r.LastSecond + 1
	return s.runs.Resume(ctx, r.ID, func(ctx context.Context, runID int64, c *plan.Compiled, onSample func(metrics.Sample)) (*metrics.Summary, error) {
		return s.cluster.Resume(ctx, cluster.RunSpec{Run: runID, Plan: c}, st, from, cluster.RunHooks{
			OnSecond:      onSample,
			OnAgentSecond: runs.AgentSecondHook(s.store, runID, s.log),
		})
	})
}

// agentSecondJSON is one agent's second in GET /api/runs/:id/agents.
type agentSecondJSON struct {
	Agent  string          `json:"agent"`
	Second int             `json:"second"`
	Sample json.RawMessage `json:"sample"`
}

// agentSeconds is GET /api/runs/:id/agents?from=S&limit=N: the run's agents' own seconds from
// second S (default 1), ordered by second then agent, at most N rows (1000-10000, default 2000),
// whole seconds only; next_from is where the next page starts (null: no more).
func (s *Server) agentSeconds(c *gin.Context) (int, any, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	from, limit := 1, store.DefaultAgentRows
	if v := c.Query("from"); v != "" {
		if from, err = strconv.Atoi(v); err != nil || from < 0 {
			return 0, nil, badRequest("from must be a second (an integer, 0 or more)")
		}
	}
	if v := c.Query("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < store.MinAgentRows || limit > store.MaxAgentRows {
			return 0, nil, badRequest("limit must be an integer from %d to %d", store.MinAgentRows, store.MaxAgentRows)
		}
	}
	rows, next, err := s.store.AgentSeconds(c.Request.Context(), id, from, limit)
	if err != nil {
		return 0, nil, err
	}
	out := struct {
		Seconds  []agentSecondJSON `json:"seconds"`
		NextFrom *int              `json:"next_from"`
	}{Seconds: make([]agentSecondJSON, 0, len(rows))}
	for _, r := range rows {
		if !json.Valid(r.Sample) { // a damaged row: left out rather than breaking the answer
			continue
		}
		out.Seconds = append(out.Seconds, agentSecondJSON{Agent: r.Agent, Second: r.Second, Sample: r.Sample})
	}
	if next > 0 {
		out.NextFrom = &next
	}
	return http.StatusOK, out, nil
}
