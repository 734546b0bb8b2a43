package cluster

import (
	"errors"

	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// TODO(issue 14, merge): the bodies below are placeholders of the agreed shapes; the exact merge
// replaces them before runs over agents land.

// SecondPart is one agent's second as it travels to the controller: its sample with the encoded
// histograms an exact merge needs.
type SecondPart struct {
	Sample metrics.Sample `json:"sample"`
	Hist   string         `json:"hist"` // Sample.Hist (not in Sample's JSON)
}

// NewSecondPart packs one of the agent engine's samples (from its OnSample).
func NewSecondPart(s metrics.Sample) *SecondPart { return &SecondPart{Sample: s, Hist: s.Hist} }

// FinalPart is one agent's whole share at its end: what Merger.Summary needs for an exact summary.
type FinalPart struct {
	Summary *metrics.Summary `json:"summary"`
}

// NewFinalPart packs an agent's finished engine and its summary (after e.Run returned sum).
func NewFinalPart(e *engine.Engine, sum *metrics.Summary) *FinalPart { return &FinalPart{Summary: sum} }

// Merger merges a run's agents' seconds and summaries exactly: counts summed, histograms merged
// bucket for bucket. Not safe for concurrent use.
type Merger struct {
	c       *plan.Compiled
	agents  []string
	weights []int
}

// NewMerger makes the merger of a run of c over agents (part order) with their weights.
func NewMerger(c *plan.Compiled, agents []string, weights []int) *Merger {
	return &Merger{c: c, agents: agents, weights: weights}
}

// Second merges second sec (1-based) from parts, one per agent in part order; a nil part is
// missing: its agent's weight share goes into MissingShare and its id into MissingAgents.
func (m *Merger) Second(sec int, parts []*SecondPart) metrics.Sample {
	return metrics.Sample{ElapsedS: sec}
}

// Summary merges the agents' final parts (part order; nil: the agent never finished) into the
// run's summary, as the engine would have computed it for the whole run.
func (m *Merger) Summary(parts []*FinalPart) (*metrics.Summary, error) {
	return nil, errors.New("cluster: merge not built yet")
}
