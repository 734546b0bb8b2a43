package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/store"
)

// planJSON is a stored plan as the API shows it.
type planJSON struct {
	ID        int64           `json:"id"`
	Name      string          `json:"name"`
	Plan      json.RawMessage `json:"plan"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// toPlanJSON shows a stored plan with its secret header values masked (plan.MaskSpec).
func toPlanJSON(p *store.Plan) planJSON {
	return planJSON{ID: p.ID, Name: p.Name, Plan: json.RawMessage(plan.MaskSpec(p.Spec)), CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

type list[T any] struct {
	Items []T   `json:"items"`
	Total int64 `json:"total"`
}

func idParam(c *gin.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id < 1 {
		return 0, errf(http.StatusBadRequest, "bad_request", "id %q is not a positive integer", c.Param("id"))
	}
	return id, nil
}

// readPlan parses and validates the body against the plan's ranges and the server's caps; the
// stored spec is the plan with its defaults filled. With stored (an update), secret header values
// sent as the plan.Masked placeholder get the stored plan's values back (plan.KeepMasked);
// elsewhere the placeholder is an invalid value.
func (s *Server) readPlan(c *gin.Context, stored *plan.Plan) (*plan.Plan, []byte, error) {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return nil, nil, unreadableBody()
	}
	kept, err := plan.KeepMasked(body, stored)
	if err != nil {
		return nil, nil, err
	}
	p, err := plan.Parse(kept)
	if err != nil {
		return nil, nil, err
	}
	if err := s.caps.Check(p); err != nil {
		return nil, nil, err
	}
	spec, err := plan.Marshal(p)
	if err != nil {
		return nil, nil, err
	}
	return p, spec, nil
}

func (s *Server) listPlans(c *gin.Context) (int, any, error) {
	ps, err := s.store.ListPlans(c)
	if err != nil {
		return 0, nil, err
	}
	out := list[planJSON]{Items: make([]planJSON, len(ps)), Total: int64(len(ps))}
	for i := range ps {
		out.Items[i] = toPlanJSON(&ps[i])
	}
	return http.StatusOK, out, nil
}

func (s *Server) createPlan(c *gin.Context) (int, any, error) {
	p, spec, err := s.readPlan(c, nil)
	if err != nil {
		return 0, nil, err
	}
	if err := s.checkTargets(p); err != nil {
		return 0, nil, err
	}
	sp, err := s.store.CreatePlan(c.Request.Context(), p.Name, spec)
	if err != nil {
		return 0, nil, err
	}
	s.auditPlan(c, auth.ActPlanCreate, sp.ID, sp.Name, map[string]any{"hosts": planHosts(sp.Spec)})
	return http.StatusCreated, toPlanJSON(sp), nil
}

func (s *Server) getPlan(c *gin.Context) (int, any, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	sp, err := s.store.GetPlan(c.Request.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, toPlanJSON(sp), nil
}

func (s *Server) updatePlan(c *gin.Context) (int, any, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	// The stored plan, whose secret header values a masked update keeps. A missing plan is
	// reported by UpdatePlan (after the body's own problems, as before).
	var stored *plan.Plan
	var oldSpec []byte
	oldName := ""
	if old, err := s.store.GetPlan(c.Request.Context(), id); err == nil {
		oldSpec, oldName = old.Spec, old.Name
		stored = &plan.Plan{}
		if json.Unmarshal(old.Spec, stored) != nil {
			stored = nil
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return 0, nil, err
	}
	p, spec, err := s.readPlan(c, stored)
	if err != nil {
		return 0, nil, err
	}
	if err := s.checkTargets(p); err != nil {
		return 0, nil, err
	}
	sp, err := s.store.UpdatePlan(c.Request.Context(), id, p.Name, spec)
	if err != nil {
		return 0, nil, err
	}
	// Hosts as parsed leave out templated ones ("{{base}}/x"): origins as written catch those.
	hosts, was := planHosts(sp.Spec), planHosts(oldSpec)
	changed := !slices.Equal(hosts, was) || !slices.Equal(planOrigins(sp.Spec), planOrigins(oldSpec))
	detail := map[string]any{"hosts": hosts, "hosts_changed": changed}
	if changed {
		detail["previous_hosts"] = was
	}
	if oldName != "" && oldName != sp.Name {
		detail["previous_name"] = oldName
	}
	s.auditPlan(c, auth.ActPlanUpdate, sp.ID, sp.Name, detail)
	return http.StatusOK, toPlanJSON(sp), nil
}

func (s *Server) deletePlan(c *gin.Context) (int, any, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	if active, ok := s.runs.Active(); ok {
		if r, err := s.store.GetRun(c.Request.Context(), active); err == nil && r.PlanID == id {
			return 0, nil, errf(http.StatusConflict, "run_active", "run %d of this plan is running; stop it first", active)
		}
	}
	was, err := s.store.GetPlan(c.Request.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	if err := s.store.DeletePlan(c.Request.Context(), id); err != nil {
		return 0, nil, err
	}
	s.auditPlan(c, auth.ActPlanDelete, id, was.Name, map[string]any{"hosts": planHosts(was.Spec)})
	return http.StatusNoContent, nil, nil
}

// planOrigins returns the distinct URL origins of a plan's requests as written (plan.URLOrigin),
// sorted.
func planOrigins(spec []byte) []string {
	var p struct {
		Requests []struct {
			URL string `json:"url"`
		} `json:"requests"`
	}
	_ = json.Unmarshal(spec, &p)
	out := []string{}
	for _, r := range p.Requests {
		out = append(out, plan.URLOrigin(r.URL))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// auditPlan records a plan created, updated or deleted: its id and name, and detail.
func (s *Server) auditPlan(c *gin.Context, action string, id int64, name string, detail map[string]any) {
	detail["plan_id"], detail["plan_name"] = id, name
	s.audit(c, action, fmt.Sprintf("plan %d", id), detail)
}
