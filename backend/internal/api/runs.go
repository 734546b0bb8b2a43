package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/runs"
	"github.com/volley-load/volley/backend/internal/store"
)

// runJSON is a run as listed (runs.Run, also the live summary's run); runDetail adds its summary
// and plan.
type runJSON = runs.Run

type runDetail struct {
	runJSON
	Summary json.RawMessage `json:"summary"`
	Plan    json.RawMessage `json:"plan"`
}

func toRunJSON(r *store.Run) runJSON { return runs.RunOf(r) }

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
	b, err := readStartBody(c) // agentruns.go
	if err != nil {
		return 0, nil, err
	}
	var runID int64
	var sp *store.Plan
	if b.Agents == nil && b.AgentLabels == nil {
		runID, sp, err = s.runs.Start(c.Request.Context(), id, s.checkPlan)
	} else {
		runID, sp, err = s.startOnAgents(c, id, b)
	}
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

// checkPlan applies the server's limits on plans — its caps, then its target policy — to a plan
// that starts (runs.Service.Start): the checks it passed when it was saved (readPlan, then
// checkTargets), again, as either may have changed since.
func (s *Server) checkPlan(p *plan.Plan) error {
	if err := s.caps.Check(p); err != nil {
		return err
	}
	return s.checkTargets(p)
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
	was, err := s.runs.Stop(c.Request.Context(), id)
	if err != nil {
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
	was, err := s.runs.Delete(c.Request.Context(), id)
	var active *runs.ActiveError
	if errors.As(err, &active) {
		return 0, nil, errf(http.StatusConflict, "run_active", "%s", active.Error())
	}
	if err != nil {
		return 0, nil, err
	}
	s.audit(c, auth.ActRunDelete, fmt.Sprintf("run %d", id),
		map[string]any{"run_id": id, "plan_id": was.PlanID, "plan_name": was.PlanName, "status": was.Status})
	return http.StatusNoContent, nil, nil
}
