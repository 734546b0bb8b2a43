package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/auth"
)

// WithMetrics serves h (the Prometheus exposition, promexp.Exporter.Handler) at GET /metrics,
// to the callers the API itself lets read (viewer role): anyone on a loopback server without
// users, else an API token (Authorization: Bearer, as Prometheus's `authorization` scrape
// setting sends it) or a session. Without it /metrics is not served.
func WithMetrics(h http.Handler) Option { return func(s *Server) { s.metrics = h } }

// metricsAccess authenticates a /metrics scrape as an /api GET is authenticated (authenticate).
func (s *Server) metricsAccess(c *gin.Context) {
	p, err := s.identify(c)
	if err != nil {
		c.Header("WWW-Authenticate", `Bearer realm="volley"`)
		s.fail(c, err)
		return
	}
	if !p.Role.Allows(auth.Viewer) {
		s.fail(c, forbidden(auth.Viewer))
		return
	}
	c.Next()
}
