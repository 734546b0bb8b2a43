package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

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
	ThresholdsOK *bool `json:"thresholds_ok"`
}

type runDetail struct {
	runJSON
	Summary json.RawMessage `json:"summary"`
	Plan    json.RawMessage `json:"plan"`
}

func toRunJSON(r *store.Run) runJSON {
	return runJSON{ID: r.ID, PlanID: r.PlanID, PlanName: r.PlanName, Status: r.Status, StartedAt: r.StartedAt,
		EndedAt: r.EndedAt, DurationS: r.DurationS, Requests: r.Requests, RPS: r.RPS, P95Ms: r.P95Ms,
		ErrorRate: r.ErrorRate, Error: r.Error, ThresholdsOK: r.ThresholdsOK}
}

func toRunDetail(r *store.Run) runDetail {
	d := runDetail{runJSON: toRunJSON(r), Summary: json.RawMessage("null"), Plan: json.RawMessage("null")}
	if len(r.Summary) > 0 {
		d.Summary = r.Summary
	}
	if len(r.PlanSpec) > 0 {
		d.Plan = r.PlanSpec
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
	runID, err := s.runner.Start(p, func(started time.Time) (int64, error) {
		r, err := s.store.CreateRun(context.WithoutCancel(c.Request.Context()), sp.ID, sp.Name, sp.Spec, started)
		if err != nil {
			return 0, err
		}
		s.hub.Open(r.ID)
		return r.ID, nil
	})
	if err != nil {
		return 0, nil, err
	}
	r, err := s.store.GetRun(c.Request.Context(), runID)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, toRunDetail(r), nil
}

func (s *Server) listRuns(c *gin.Context) (int, any, error) {
	f := store.RunFilter{Status: c.Query("status")}
	for name, dst := range map[string]*int{"limit": &f.Limit, "offset": &f.Offset} {
		if v := c.Query(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return 0, nil, errf(http.StatusBadRequest, "bad_request", "%s must be a non-negative integer", name)
			}
			*dst = n
		}
	}
	if v := c.Query("plan_id"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return 0, nil, errf(http.StatusBadRequest, "bad_request", "plan_id must be a positive integer")
		}
		f.PlanID = n
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
	if _, err := s.store.GetRun(c.Request.Context(), id); err != nil {
		return 0, nil, err
	}
	if err := s.runner.Stop(id); err != nil {
		return 0, nil, err
	}
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
	if err := s.store.DeleteRun(c.Request.Context(), id); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

func (s *Server) samples(c *gin.Context) (int, any, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	if _, err := s.store.GetRun(c.Request.Context(), id); err != nil {
		return 0, nil, err
	}
	smps, err := s.store.Samples(c.Request.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	out := struct {
		Items []json.RawMessage `json:"items"`
	}{Items: make([]json.RawMessage, len(smps))}
	for i := range smps {
		out.Items[i] = smps[i].Data
	}
	return http.StatusOK, out, nil
}
