package api

import (
	"github.com/gin-gonic/gin"
)

// live streams a run over a websocket: the seconds so far, the live ones, then the summary. A run
// without a live topic (it has ended) is streamed from storage (runs.Service.Stream).
func (s *Server) live(c *gin.Context) {
	id, err := idParam(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if _, err := s.store.GetRun(c.Request.Context(), id); err != nil {
		s.fail(c, err)
		return
	}
	stored := func() ([][]byte, error) { return s.runs.Stream(c.Request.Context(), id) }
	if err := s.hub.Serve(c.Writer, c.Request, id, stored); err != nil {
		s.log.Warn("live stream", "run", id, "err", err)
	}
}
