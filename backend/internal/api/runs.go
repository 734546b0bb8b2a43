package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/store"
)

// runJSON is a run as listed; runDetail adds its summary and plan.
type runJSON struct {
	ID        int64      `json:"id"`
	PlanID    int64      `json:"plan_id"`
	PlanName  string     `json:"plan_name"`
	Status    string     `json:"status"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at"`
	DurationS float64    `json:"duration_s"`
	Requests  int64      `json:"requests"`
	RPS       float64    `json:"rps"`
	P95Ms     float64    `json:"p95_ms"`
	ErrorRate float64    `json:"error_rate"`
	Error     string     `json:"error"`
	// ThresholdsOK: whether every threshold passed; null when the plan has none or the run has
	// not ended.
	ThresholdsOK *bool   `json:"thresholds_ok"`
	Notes        string  `json:"notes"`
	Tags         tagList `json:"tags"`
}

type runDetail struct {
	runJSON
	Summary json.RawMessage `json:"summary"`
	Plan    json.RawMessage `json:"plan"`
}

func toRunJSON(r *store.Run) runJSON {
	return runJSON{ID: r.ID, PlanID: r.PlanID, PlanName: r.PlanName, Status: r.Status, StartedAt: r.StartedAt,
		EndedAt: r.EndedAt, DurationS: r.DurationS, Requests: r.Requests, RPS: r.RPS, P95Ms: r.P95Ms,
		ErrorRate: r.ErrorRate, Error: r.Error, ThresholdsOK: r.ThresholdsOK, Notes: r.Notes, Tags: r.Tags}
}

func toRunDetail(r *store.Run) runDetail {
	d := runDetail{runJSON: toRunJSON(r), Summary: json.RawMessage("null"), Plan: json.RawMessage("null")}
	if len(r.Summary) > 0 {
		d.Summary = r.Summary
	}
	if len(r.PlanSpec) > 0 {
		d.Plan = plan.MaskSpec(r.PlanSpec)
	}
	return d
}

func (s *Server) startRun(c *gin.Context) (int, any, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	sp, err := s.store.GetPlan(c.Request.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	p, err := plan.Parse(sp.Spec)
	if err != nil {
		return 0, nil, err
	}
	if err := s.caps.Check(p); err != nil { // the caps may have been lowered since it was saved
		return 0, nil, err
	}
	if err := s.checkTargets(p); err != nil { // the policy may have changed since the plan was saved
		return 0, nil, err
	}
	if names := p.SecretNames(); len(names) > 0 {
		if p.Secrets, err = s.store.SecretValues(c.Request.Context(), names); err != nil {
			return 0, nil, err
		}
		if err := p.CheckSecrets("the secret store (PUT /api/secrets/NAME)"); err != nil {
			return 0, nil, err
		}
	}
	// The run keeps a snapshot of its plan to show later: masked, so the runs table never holds
	// a secret header value.
	snapshot := plan.MaskSpec(sp.Spec)
	runID, err := s.runner.Start(p, func(started time.Time) (int64, error) {
		r, err := s.store.CreateRun(context.WithoutCancel(c.Request.Context()), sp.ID, sp.Name, snapshot, started)
		if err != nil {
			return 0, err
		}
		s.hub.Open(r.ID)
		return r.ID, nil
	})
	if err != nil {
		return 0, nil, err
	}
	s.auditRun(c, auth.ActRunStart, runID, sp.ID, sp.Name, sp.Spec)
	r, err := s.store.GetRun(c.Request.Context(), runID)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, toRunDetail(r), nil
}

func (s *Server) listRuns(c *gin.Context) (int, any, error) {
	f, err := runFilter(c)
	if err != nil {
		return 0, nil, err
	}
	runs, total, err := s.store.ListRuns(c.Request.Context(), f)
	if err != nil {
		return 0, nil, err
	}
	out := list[runJSON]{Items: make([]runJSON, len(runs)), Total: total}
	for i := range runs {
		out.Items[i] = toRunJSON(&runs[i])
	}
	return http.StatusOK, out, nil
}

func (s *Server) getRun(c *gin.Context) (int, any, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	r, err := s.store.GetRun(c.Request.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, toRunDetail(r), nil
}

func (s *Server) stopRun(c *gin.Context) (int, any, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	was, err := s.store.GetRun(c.Request.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	if err := s.runner.Stop(id); err != nil {
		return 0, nil, err
	}
	s.auditRun(c, auth.ActRunStop, id, was.PlanID, was.PlanName, was.PlanSpec)
	r, err := s.store.GetRun(c.Request.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, toRunDetail(r), nil
}

func (s *Server) deleteRun(c *gin.Context) (int, any, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	if active, ok := s.runner.Active(); ok && active == id {
		return 0, nil, errf(http.StatusConflict, "run_active", "run %d is running; stop it first", id)
	}
	was, err := s.store.GetRun(c.Request.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	if err := s.store.DeleteRun(c.Request.Context(), id); err != nil {
		return 0, nil, err
	}
	s.audit(c, auth.ActRunDelete, fmt.Sprintf("run %d", id),
		map[string]any{"run_id": id, "plan_id": was.PlanID, "plan_name": was.PlanName, "status": was.Status})
	return http.StatusNoContent, nil, nil
}
