package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/store"
)

// Error is the one error shape of the API: {"error": {"code", "message", "fields", "request_id"}}.
// Code and Message are for the client: a 5xx never carries the internal error's text (paths, SQL,
// Go error strings), which goes to the server log under the same request id (Server.fail).
type Error struct {
	Status    int               `json:"-"`
	Code      string            `json:"code"`
	Message   string            `json:"message"`
	Fields    map[string]string `json:"fields,omitempty"`
	RequestID string            `json:"request_id,omitempty"` // the answer's X-Request-Id (requestid.go)
	// Event and Applied: a live change that some agents of a run over agents applied and others
	// did not (409 agents_refused) — the change as recorded (the run's load did change) and the
	// agents that applied it. Absent otherwise.
	Event   *metrics.RunEvent `json:"event,omitempty"`
	Applied []string          `json:"applied,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func errf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// unreadableBody is the error for a request body that could not be read: over maxBody (the usual
// case) or cut off. Its message names no Go error.
func unreadableBody() *Error {
	return errf(http.StatusRequestEntityTooLarge, "bad_request", "could not read the body (at most 1 MiB)")
}

// mustBe says in words what a JSON value decoded into a Go value of type t must be ("must be a
// number"), never Go's type names (float64, int).
func mustBe(t reflect.Type) string {
	switch {
	case isInteger(t):
		return "must be a whole number"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "must be a number"
	case t.Kind() == reflect.String:
		return "must be a string"
	case t.Kind() == reflect.Bool:
		return "must be true or false"
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return "must be an array"
	}
	return "must be an object"
}

// isInteger reports whether t is one of Go's integer types.
func isInteger(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// toError is the single mapping from Go errors to API errors and HTTP statuses.
func toError(err error) *Error {
	var ae *Error
	var ve *plan.ValidationError
	var busy *runner.BusyError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &ve):
		msg := fmt.Sprintf("the plan has %d problem(s); see fields", len(ve.Fields))
		if len(ve.Fields) == 1 {
			for f, m := range ve.Fields {
				if f == "" {
					msg = m
				} else {
					msg = f + " " + m
				}
			}
		}
		return &Error{Status: http.StatusBadRequest, Code: "invalid_plan", Message: msg, Fields: ve.Fields}
	case errors.Is(err, store.ErrNotFound):
		return errf(http.StatusNotFound, "not_found", "not found")
	case errors.As(err, &busy):
		return &Error{Status: http.StatusConflict, Code: "run_in_progress", Message: busy.Error(),
			Fields: map[string]string{"run_id": fmt.Sprint(busy.RunID)}}
	case errors.Is(err, runner.ErrNotRunning):
		return errf(http.StatusConflict, "not_running", "the run is not running")
	case store.FaultReason(err) != "":
		// The database cannot take the request now (disk full, locked, I/O error): say why, in
		// store's fixed words; the SQLite error itself goes to the log only.
		return errf(http.StatusServiceUnavailable, "storage_unavailable", "%s", store.FaultReason(err))
	}
	return errf(http.StatusInternalServerError, "internal", "internal error; the server log has the details under this request_id")
}

// handler returns a status and body, or an error that wrap turns into the error envelope.
type handler func(c *gin.Context) (int, any, error)

func (s *Server) wrap(h handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		status, body, err := h(c)
		if err != nil {
			s.fail(c, err)
			return
		}
		if body == nil {
			c.Status(status)
			return
		}
		c.PureJSON(status, body)
	}
}

// fail answers with err's API error (toError) and its request id; a 5xx is logged with the
// internal error and the same request id.
func (s *Server) fail(c *gin.Context, err error) {
	abortWith(c, toError(err))
	if c.Writer.Status() >= 500 {
		s.log.Error("api", "request_id", requestID(c.Writer, c.Request), "method", c.Request.Method,
			"path", c.Request.URL.Path, "status", c.Writer.Status(), "err", err)
	}
}

// abortWith writes e with the request id (a copy: e may be shared) and stops the handler chain.
func abortWith(c *gin.Context, e *Error) {
	out := *e
	out.RequestID = requestID(c.Writer, c.Request)
	c.AbortWithStatusJSON(out.Status, gin.H{"error": &out})
}

// recovery turns a handler panic into a JSON 500 instead of a dropped connection.
func (s *Server) recovery() gin.HandlerFunc {
	return gin.CustomRecoveryWithWriter(io.Discard, func(c *gin.Context, rec any) {
		s.fail(c, fmt.Errorf("panic in handler: %v", rec)) // logged there with the request id
	})
}
