package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/report"
)

// runReport is GET /api/runs/:id/report?format=json|csv|html (default html): the run as a
// downloadable file named volley-run-<id>.<ext>.
func (s *Server) runReport(c *gin.Context) {
	status, body, name, media, err := s.buildReport(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Content-Disposition", fmt.Sprintf(`attachment; filename="%s"`, name))
	c.Header("X-Content-Type-Options", "nosniff")
	c.Data(status, media, body)
}

func (s *Server) buildReport(c *gin.Context) (int, []byte, string, string, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, "", "", err
	}
	format := c.DefaultQuery("format", "html")
	if !slices.Contains(report.Formats, format) {
		return 0, nil, "", "", badRequest("format must be one of %s", strings.Join(report.Formats, ", "))
	}
	ctx := c.Request.Context()
	r, err := s.store.GetRun(ctx, id)
	if err != nil {
		return 0, nil, "", "", err
	}
	smps, err := s.store.Samples(ctx, id)
	if err != nil {
		return 0, nil, "", "", err
	}
	rep := report.Report{
		Run: struct {
			runJSON
			Plan json.RawMessage `json:"plan"`
		}{toRunJSON(r), orNull(plan.MaskSpec(r.PlanSpec))},
		Meta: report.Meta{RunID: r.ID, PlanName: r.PlanName, Status: r.Status, StartedAt: &r.StartedAt,
			EndedAt: r.EndedAt, Notes: r.Notes, Tags: r.Tags, Error: r.Error},
		Samples: make([]metrics.Sample, len(smps)),
	}
	if len(r.Summary) > 0 {
		rep.Summary = &metrics.Summary{}
		if err := json.Unmarshal(r.Summary, rep.Summary); err != nil {
			return 0, nil, "", "", fmt.Errorf("run %d: summary: %w", id, err)
		}
	}
	for i, smp := range smps {
		if err := json.Unmarshal(smp.Data, &rep.Samples[i]); err != nil {
			return 0, nil, "", "", fmt.Errorf("run %d: second %d: %w", id, smp.Second, err)
		}
	}
	var buf bytes.Buffer
	if err := report.Write(&buf, format, rep); err != nil {
		return 0, nil, "", "", err
	}
	return http.StatusOK, buf.Bytes(), report.Filename(id, format), report.MediaTypes[format], nil
}

func orNull(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}
