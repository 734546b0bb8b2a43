package api

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/runner"
)

// controlBody is POST /api/runs/:id/control's body: exactly one of vus and rate.
type controlBody struct {
	VUs  *float64 `json:"vus"`
	Rate *float64 `json:"rate"`
}

// controlRun changes a running test's VUs or rate (live control): 200 with the RunEvent recorded;
// 400 (field errors on vus or rate), 404 (no such run), 409 (not running, its executor has no
// such control, control_unsupported: a run over agents on a server that cannot steer them, or
// agents_refused: an agent of a run over agents did not apply the change; when others did, the
// body's error carries the event recorded and those agents). Audited as run.control
// when the run's load changed: applied, or applied by some agents of a run over agents.
func (s *Server) controlRun(c *gin.Context) (int, any, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	var b controlBody
	if err := decodeBody(c, &b, `exactly one of "vus" (a number of VUs) and "rate" (a number)`); err != nil {
		return 0, nil, err
	}
	ch := runner.Change{By: s.changedBy(c)}
	field := "rate"
	switch {
	case (b.VUs == nil) == (b.Rate == nil):
		return 0, nil, &Error{Status: http.StatusBadRequest, Code: "bad_request", Message: "give exactly one of vus and rate",
			Fields: map[string]string{"vus": "give vus or rate", "rate": "give vus or rate"}}
	case b.VUs != nil:
		field = "vus"
		if *b.VUs != math.Trunc(*b.VUs) || *b.VUs < 0 || *b.VUs > plan.MaxVUs {
			return 0, nil, invalidField(field, fmt.Sprintf("must be a whole number of VUs between 0 and %d", plan.MaxVUs))
		}
		n := int(*b.VUs)
		ch.VUs = &n
	default:
		rate := *b.Rate
		if rate == 0 {
			rate = 0 // JSON's -0 is 0: the change is recorded (and answered) as 0, not "-0"
		}
		ch.Rate = &rate
	}
	ev, err := s.runs.Control(c.Request.Context(), id, ch, func(p *plan.Plan) error { return s.caps.Check(p) })
	var ve *plan.ValidationError
	var ce *cluster.ControlError
	switch {
	case errors.As(err, &ve):
		// the caps name the field of the load they checked (load.vus, load.rate, …): the body has one
		msgs := make([]string, 0, len(ve.Fields))
		for _, m := range ve.Fields {
			msgs = append(msgs, m)
		}
		return 0, nil, invalidField(field, strings.Join(msgs, "; "))
	case errors.Is(err, runner.ErrNotDriven):
		return 0, nil, errf(http.StatusConflict, "control_unsupported", "%s", err.Error())
	case errors.Is(err, runner.ErrNotControllable), errors.Is(err, runner.ErrTooManyChanges):
		return 0, nil, errf(http.StatusConflict, "not_controllable", "%s", err.Error())
	case errors.As(err, &ce):
		e := errf(http.StatusConflict, "agents_refused", "%s", err.Error())
		if len(ce.Applied) > 0 { // the run's load changed on those agents: the change is recorded
			s.auditControl(c, id, ev)
			e.Event, e.Applied = &ev, ce.Applied
		}
		return 0, nil, e
	case err != nil:
		return 0, nil, err
	}
	s.auditControl(c, id, ev)
	return http.StatusOK, ev, nil
}

// auditControl records a change of run id's load (run.control).
func (s *Server) auditControl(c *gin.Context, id int64, ev metrics.RunEvent) {
	s.audit(c, auth.ActRunControl, fmt.Sprintf("run %d", id),
		map[string]any{"run_id": id, "kind": ev.Kind, "from": ev.From, "to": ev.To})
}

// invalidField is a 400 invalid_value for one field of a request's body: msg says what the field
// must be (its bound), under the field's name and in the message after it.
func invalidField(field, msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: "invalid_value", Message: field + " " + msg,
		Fields: map[string]string{field: msg}}
}

// changedBy names the caller of a live-control request (metrics.RunEvent.By): the user's name, or
// "api token LABEL" for a request made with an API token.
func (s *Server) changedBy(c *gin.Context) string {
	p := principal(c)
	if p.Via == auth.ViaToken && s.auth != nil {
		if t, err := s.auth.Service.GetToken(c.Request.Context(), p.TokenID); err == nil && t.Label != "" {
			return "api token " + t.Label
		}
		return fmt.Sprintf("api token %d", p.TokenID)
	}
	return p.User
}
