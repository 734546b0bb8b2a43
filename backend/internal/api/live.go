package api

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/store"
)

// live streams a run over a websocket: the seconds so far, the live ones, then the summary.
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
	stored := func() ([][]byte, error) { return s.storedStream(c.Request.Context(), id) }
	if err := s.hub.Serve(c.Writer, c.Request, id, stored); err != nil {
		s.log.Warn("live stream", "run", id, "err", err)
	}
}

// storedStream rebuilds the stream of a run that has no live topic from storage. A run that is
// ending (its topic just closed, its summary not yet stored) is waited for briefly.
func (s *Server) storedStream(ctx context.Context, id int64) ([][]byte, error) {
	select {
	case <-s.runner.Done(id):
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r, err := s.store.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	smps, err := s.store.Samples(ctx, id)
	if err != nil {
		return nil, err
	}
	msgs := make([][]byte, 0, len(smps)+1)
	for _, smp := range smps {
		if !json.Valid(smp.Data) { // a damaged row: left out rather than sent as a broken frame
			s.log.Warn("live stream: stored sample is not valid JSON; skipped", "run", id, "second", smp.Second)
			continue
		}
		m, err := sampleMessage(smp.Data, nil)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	if r.Status != store.StatusRunning {
		msgs = append(msgs, summaryMessage(r.Summary, toRunJSON(r)))
	}
	return msgs, nil
}
