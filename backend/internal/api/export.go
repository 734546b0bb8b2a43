package api

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/report"
)

// runReport is GET /api/runs/:id/report?format=json|csv|html (default html)&lang=en|zh-CN: the
// run as a downloadable file named volley-run-<id>.<ext>. The HTML page is in lang, by default
// the first of the request's Accept-Language that the report speaks, else English.
func (s *Server) runReport(c *gin.Context) {
	status, body, name, media, err := s.buildReport(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Content-Disposition", fmt.Sprintf(`attachment; filename="%s"`, name))
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Vary", "Accept-Language")
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
	lang, ok := report.Lang(c.Query("lang"), c.GetHeader("Accept-Language"))
	if !ok {
		e := badRequest("lang must be one of %s", strings.Join(report.Langs, ", "))
		e.Fields = map[string]string{"lang": fmt.Sprintf("%q is not one of %s", echo(c.Query("lang")), strings.Join(report.Langs, ", "))}
		return 0, nil, "", "", e
	}
	rep, err := s.runs.Report(c.Request.Context(), id)
	if err != nil {
		return 0, nil, "", "", err
	}
	rep.Lang = lang
	var buf bytes.Buffer
	if err := report.Write(&buf, format, rep); err != nil {
		return 0, nil, "", "", err
	}
	return http.StatusOK, buf.Bytes(), report.Filename(id, format), report.MediaTypes[format], nil
}
