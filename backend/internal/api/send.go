package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/plan"
)

// maxSends is how many test requests (POST /api/plans/send) a server sends at the same time;
// another is answered 429 too_many_sends.
const maxSends = 2

// sendBody is the body of POST /api/plans/send: a plan as the editor holds it, the index of the
// request to send, and optionally the stored plan whose masked secret header values it keeps.
type sendBody struct {
	Plan    json.RawMessage `json:"plan"`
	Request *int            `json:"request"` // required: 0 is the first request
	PlanID  int64           `json:"plan_id,omitempty"`
}

// sendJSON is the answer of POST /api/plans/send (engine.SendResult on the wire).
type sendJSON struct {
	Request          string      `json:"request"` // the request's name
	Kind             string      `json:"kind"`    // "" on success, else the error kind a run would count
	Message          string      `json:"message,omitempty"`
	Status           int         `json:"status"` // 0: no answer
	Redirected       bool        `json:"redirected"`
	Headers          [][2]string `json:"headers"`
	HeadersTruncated bool        `json:"headers_truncated"`
	Body             string      `json:"body"`
	BodyEncoding     string      `json:"body_encoding"` // "text" (UTF-8) or "base64"
	BodyBytes        int64       `json:"body_bytes"`
	BodyTruncated    bool        `json:"body_truncated"`
	Timing           SendTiming  `json:"timing"`
	Checks           []SendCheck `json:"checks"`
}

// SendTiming is engine.SendTiming in milliseconds (the frontend contract's name).
type SendTiming struct {
	ConnectMS float64 `json:"connect_ms"`
	TLSMS     float64 `json:"tls_ms"`
	WaitMS    float64 `json:"wait_ms"`
	ReceiveMS float64 `json:"receive_ms"`
	TotalMS   float64 `json:"total_ms"`
}

// SendCheck is one check judged on a test request's answer.
type SendCheck struct {
	Desc string `json:"desc"`
	Pass bool   `json:"pass"`
}

// sendRequest sends one request of a plan once, as a run's first VU would (engine.SendOne), and
// shows the answer: the plan is parsed, checked against the server's caps and target policy, and
// given its secret values as a run start does.
func (s *Server) sendRequest(c *gin.Context) (int, any, error) {
	var in sendBody
	if err := decodeBody(c, &in, `"plan", "request" and optionally "plan_id"`); err != nil {
		return 0, nil, err
	}
	if len(in.Plan) == 0 || string(in.Plan) == "null" {
		return 0, nil, &Error{Status: http.StatusBadRequest, Code: "bad_request", Message: "plan is required",
			Fields: map[string]string{"plan": "required"}}
	}
	if in.Request == nil {
		return 0, nil, &Error{Status: http.StatusBadRequest, Code: "bad_request", Message: "request (the index of the request to send, 0 for the first) is required",
			Fields: map[string]string{"request": "required"}}
	}
	idx := *in.Request
	var stored *plan.Plan
	if in.PlanID != 0 {
		sp, err := s.store.GetPlan(c.Request.Context(), in.PlanID)
		if err != nil {
			return 0, nil, err
		}
		stored = &plan.Plan{}
		if json.Unmarshal(sp.Spec, stored) != nil {
			stored = nil
		}
	}
	kept, err := plan.KeepMasked(in.Plan, stored)
	if err != nil {
		return 0, nil, err
	}
	cp, err := plan.ParseCompiled(kept)
	if err != nil {
		return 0, nil, err
	}
	p := cp.Plan
	if idx < 0 || idx >= len(p.Requests) {
		return 0, nil, &Error{Status: http.StatusBadRequest, Code: "bad_request",
			Message: fmt.Sprintf("request %d: the plan has %d request(s)", idx, len(p.Requests)),
			Fields:  map[string]string{"request": "out of range"}}
	}
	r := p.Requests[idx]
	if r.IsWebSocket() {
		return 0, nil, &Error{Status: http.StatusBadRequest, Code: "bad_request",
			Message: fmt.Sprintf("request %d is a WebSocket step: a test send is for HTTP requests (run the plan to test it)", idx),
			Fields:  map[string]string{"request": "a WebSocket step"}}
	}
	target := "plan (unsaved)"
	if in.PlanID != 0 {
		target = fmt.Sprintf("plan %d", in.PlanID)
	}
	detail := map[string]any{"plan_id": in.PlanID, "plan_name": p.Name, "request": r.Name, "host": plan.URLOrigin(r.URL)}
	// refused audits a send that was not made (the target policy or the server's caps refused the
	// plan, or too many sends at once), with the same detail as one that was.
	refused := func(err error) (int, any, error) {
		detail["outcome"] = "refused"
		detail["error"] = err.Error()
		s.audit(c, auth.ActPlanSend, target, detail)
		return 0, nil, err
	}
	if err := s.checkPlan(p); err != nil {
		return refused(err)
	}
	if names := p.SecretNames(); len(names) > 0 {
		if p.Secrets, err = s.store.SecretValues(c.Request.Context(), names); err != nil {
			return 0, nil, err
		}
		if err := p.CheckSecrets("the secret store (PUT /api/secrets/NAME)"); err != nil {
			return 0, nil, err
		}
	}
	select {
	case s.sendSlots <- struct{}{}:
		defer func() { <-s.sendSlots }()
	default:
		return refused(errf(http.StatusTooManyRequests, "too_many_sends", "%d test requests are being sent; try again when one ends", maxSends))
	}
	// The request may take its whole timeout: the answer's write must not be cut off before.
	_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Now().Add(engine.SendMaxTimeout + 10*time.Second))
	res, err := engine.SendOne(c.Request.Context(), cp, idx, engine.Options{Policy: s.policy})
	if err != nil {
		return 0, nil, err
	}
	detail["outcome"], detail["status"], detail["kind"] = "sent", res.Status, res.Kind.String()
	s.audit(c, auth.ActPlanSend, target, detail)
	return http.StatusOK, toSendJSON(r.Name, res), nil
}

func toSendJSON(name string, r *engine.SendResult) sendJSON {
	out := sendJSON{Request: name, Kind: r.Kind.String(), Message: r.Err, Status: r.Status, Redirected: r.Redirected,
		Headers: r.Headers, HeadersTruncated: r.HeadersTruncated, BodyBytes: r.BodyBytes,
		BodyTruncated: r.BodyBytes > int64(len(r.Body)), Checks: []SendCheck{}}
	if out.Headers == nil {
		out.Headers = [][2]string{}
	}
	out.Body, out.BodyEncoding = previewText(r.Body, out.BodyTruncated)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	t := r.Timing
	out.Timing = SendTiming{ConnectMS: ms(t.Connect), TLSMS: ms(t.TLS), WaitMS: ms(t.Wait), ReceiveMS: ms(t.Receive), TotalMS: ms(t.Total)}
	for _, k := range r.Checks {
		out.Checks = append(out.Checks, SendCheck(k))
	}
	return out
}

// previewText shows a body preview as text when it is UTF-8 — a preview cut inside a character
// loses that character's first bytes — and as base64 otherwise.
func previewText(b []byte, cut bool) (string, string) {
	if cut {
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.Valid(b); i++ {
			if r, _ := utf8.DecodeLastRune(b); r != utf8.RuneError {
				break
			}
			b = b[:len(b)-1]
		}
	}
	if utf8.Valid(b) {
		return string(b), "text"
	}
	return base64.StdEncoding.EncodeToString(b), "base64"
}
