package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/store"
)

// ErrNotResumable is returned by Resume for a run that is not "running" in storage.
var ErrNotResumable = errors.New("runs: the run is not running: nothing to resume")

// Resume begins run runID again in this process after the process that ran it died (volley
// serve's start-up: a run over agents whose controller restarted, docs/scale-out.md "Controller
// restart"). The run, still "running" in storage, keeps its id, row and stored seconds: the
// runner begins it under that id (StartDriven's lifecycle: one run at a time, Stop, Done), its
// live topic opens holding its stored seconds (a viewer who reconnects gets every second again,
// then the live ones), the store's totals go on from those seconds' (StoreSink.Continue), and
// drive hands the seconds from the first one not stored; the summary is Degraded when a stored
// second has an agent's share missing (it stays stored so, whatever the replay merges again).
// drive gets the plan the run started with: the run's snapshot compiled (SnapshotPlan: secret
// header values are not in it; a resumed drive merges, it sends no plan). When the run cannot be begun again its topic is
// closed and the error returned; the caller marks it interrupted (store.MarkRunInterrupted).
// Errors: store.ErrNotFound, ErrNotResumable, the snapshot's *plan.ValidationError,
// *runner.BusyError, ErrNoDriven, a storage error.
func (s *Service) Resume(ctx context.Context, runID int64, drive Drive) error {
	dr, ok := s.runner.(DrivenRunner)
	if !ok {
		return ErrNoDriven
	}
	r, err := s.store.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	if r.Status != store.StatusRunning {
		return fmt.Errorf("run %d is %s: %w", runID, r.Status, ErrNotResumable)
	}
	c, err := SnapshotPlan(r.PlanSpec)
	if err != nil {
		return fmt.Errorf("run %d: the plan stored with it: %w", runID, err)
	}
	smps, err := s.store.Samples(ctx, runID)
	if err != nil {
		return err
	}
	history := make([][]byte, 0, len(smps))
	var requests, errs int64
	degraded := false // a stored second lacks an agent's share (the drive may not see it again)
	for _, smp := range smps {
		var counts struct {
			Requests     int64   `json:"requests"`
			Errors       int64   `json:"errors"`
			MissingShare float64 `json:"missing_share"`
		}
		if err := json.Unmarshal(smp.Data, &counts); err != nil { // a damaged row, as Stream leaves it out
			s.log.Warn("resume: stored sample is not valid JSON; left out of the live stream and the totals", "run", runID, "second", smp.Second)
			continue
		}
		requests, errs = requests+counts.Requests, errs+counts.Errors
		degraded = degraded || counts.MissingShare > 0
		m, _ := sampleMessage(smp.Data, nil)
		history = append(history, m)
	}
	if s.resumed != nil {
		s.resumed(runID, history, requests, errs)
	}
	if s.agents != nil && r.Agents > 0 {
		s.agents(runID, r.Agents) // its end keeps them, whatever its outcome
	}
	_, err = dr.StartDriven(c, func(time.Time) (int64, error) { return runID, nil },
		func(ctx context.Context, id int64, onSample func(metrics.Sample)) (*metrics.Summary, error) {
			sum, err := drive(ctx, id, c, onSample)
			if sum != nil && degraded {
				sum.Degraded = true // stored as it was merged: the run is degraded whatever the replay merged
			}
			return sum, err
		})
	if err != nil {
		if s.resumed != nil && s.topics != nil { // the seeded topic: its viewers are told the run is over
			ended := RunOf(r)
			ended.Status, ended.Error = store.StatusInterrupted, err.Error()
			s.topics.Close(runID, summaryMessage(nil, ended))
		}
		return err
	}
	return nil
}

// SnapshotPlan compiles the plan snapshot stored with a run (store.Run.PlanSpec: the plan as it
// was when the run started, masked by plan.MaskSpec) for a run that is taken up again. A masked
// secret header value (plan.Masked, which a plan to run may not hold) is replaced by a
// placeholder first: a resumed run merges what its agents measure with the plan they were given
// at its start, so header values play no part. Errors are plan.ParseCompiled's.
func SnapshotPlan(spec []byte) (*plan.Compiled, error) {
	if !bytes.Contains(spec, []byte(plan.Masked)) {
		return plan.ParseCompiled(spec)
	}
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.UseNumber() // numbers as written
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return plan.ParseCompiled(spec) // its error says what is wrong
	}
	reqs, _ := raw["requests"].([]any)
	for _, e := range reqs {
		req, _ := e.(map[string]any)
		h, _ := req["headers"].(map[string]any)
		for k, v := range h {
			if v == plan.Masked {
				h[k] = maskedPlaceholder
			}
		}
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	return plan.ParseCompiled(b)
}

// maskedPlaceholder stands for a secret header value in a resumed run's plan (SnapshotPlan).
const maskedPlaceholder = "masked"
