package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/plan"
)

// SetTargetPolicy sets the server's target policy (nil keeps netpolicy.Default): plans whose
// literal targets it denies are refused at create, update and run start with 400 invalid_plan
// naming the field. Enforcement at connect time is the runner's engine (runner.SetTargetPolicy).
// Call it before Handler.
func (s *Server) SetTargetPolicy(p *netpolicy.Policy) {
	if p != nil {
		s.policy = p
	}
}

// checkTargets applies the target policy to a parsed plan (*plan.ValidationError or nil).
func (s *Server) checkTargets(p *plan.Plan) error { return plan.CheckTargets(p, s.policy) }

// targetPolicy shows the effective target policy (read-only; for administrators once
// authentication exists).
func (s *Server) targetPolicy(*gin.Context) (int, any, error) {
	return http.StatusOK, s.policy.Summary(), nil
}
