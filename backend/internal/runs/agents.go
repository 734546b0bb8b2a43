package runs

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// AgentSecondWriter stores one agent's own second of a run over agents (implemented by
// *store.Store): stored once, a replay ignored (false).
type AgentSecondWriter interface {
	AppendAgentSecond(ctx context.Context, runID int64, agent string, second int, sample []byte) (bool, error)
}

// AgentSecondHook is cluster.RunHooks.OnAgentSecond for run runID: each agent's second is stored
// (its sample JSON without its histogram: the merged second in run_samples has the run's) as it
// comes, a second already stored being left as it is. A write that fails is logged (the first,
// then every 100th) and the run goes on: the merged seconds are the run's record, an agent's own
// are its detail. Safe for concurrent use.
func AgentSecondHook(w AgentSecondWriter, runID int64, log *slog.Logger) func(agent string, s metrics.Sample) {
	if log == nil {
		log = slog.Default()
	}
	var mu sync.Mutex
	failed := 0
	return func(agent string, s metrics.Sample) {
		s.Hist = ""
		data, err := json.Marshal(&s)
		if err == nil {
			_, err = w.AppendAgentSecond(context.Background(), runID, agent, s.ElapsedS, data)
		}
		if err == nil {
			return
		}
		mu.Lock()
		failed++
		n := failed
		mu.Unlock()
		if n%100 == 1 {
			log.Warn("cannot store an agent's second; the merged second is kept", "run", runID, "agent", agent,
				"second", s.ElapsedS, "failures", n, "err", err)
		}
	}
}
