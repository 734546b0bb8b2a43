package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/store"
)

// Error is the one error shape of the API: {"error": {"code", "message", "fields"}}.
type Error struct {
	Status  int               `json:"-"`
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func errf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
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
		// The database cannot take the request now (disk full, locked, I/O error): say so.
		return errf(http.StatusServiceUnavailable, "storage_unavailable", "%s: %v", store.FaultReason(err), err)
	}
	return errf(http.StatusInternalServerError, "internal", "internal error: %v", err)
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

func (s *Server) fail(c *gin.Context, err error) {
	e := toError(err)
	if e.Status >= 500 {
		s.log.Error("api", "method", c.Request.Method, "path", c.Request.URL.Path, "err", err)
	}
	c.AbortWithStatusJSON(e.Status, gin.H{"error": e})
}

// recovery turns a handler panic into a JSON 500 instead of a dropped connection.
func (s *Server) recovery() gin.HandlerFunc {
	return gin.CustomRecoveryWithWriter(io.Discard, func(c *gin.Context, rec any) {
		s.log.Error("panic in handler", "path", c.Request.URL.Path, "panic", rec)
		s.fail(c, fmt.Errorf("panic: %v", rec))
	})
}
