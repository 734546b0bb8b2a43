package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/store"
)

var runStatuses = []string{store.StatusRunning, store.StatusFinished, store.StatusStopped, store.StatusFailed, store.StatusInterrupted}

func badRequest(format string, args ...any) *Error {
	return errf(http.StatusBadRequest, "bad_request", format, args...)
}

// runQueryParams are the query parameters GET /api/runs understands; any other is refused, so a
// misspelt filter is an error instead of an unfiltered list.
// maxEcho is how much of a refused query value an error repeats (in runes), so that a huge value
// does not make a huge answer.
const maxEcho = 64

// echo is v cut to maxEcho runes, "…" marking the cut.
func echo(v string) string {
	if utf8.RuneCountInString(v) <= maxEcho {
		return v
	}
	return string([]rune(v)[:maxEcho]) + "…"
}

var runQueryParams = []string{"plan_id", "status", "tag", "from", "to", "thresholds", "outcome", "sort", "order", "limit", "offset"}

// runFilter reads GET /api/runs' query: plan_id, status, tag, from, to, thresholds, outcome
// (repeated or a comma list), sort, order, limit, offset.
func runFilter(c *gin.Context) (store.RunFilter, error) {
	f := store.RunFilter{Status: c.Query("status"), Tag: c.Query("tag"), Thresholds: c.Query("thresholds"),
		Sort: c.Query("sort"), Order: c.Query("order")}
	for name := range c.Request.URL.Query() {
		if !slices.Contains(runQueryParams, name) {
			return f, badRequest("unknown parameter %q (use %s)", name, strings.Join(runQueryParams, ", "))
		}
	}
	if v := c.Query("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return f, badRequest("offset must be a non-negative integer")
		}
		f.Offset = n
	}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxRunLimit {
			return f, badRequest("limit must be an integer from 1 to %d", store.MaxRunLimit)
		}
		f.Limit = n
	}
	if v := c.Query("plan_id"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return f, badRequest("plan_id must be a positive integer")
		}
		f.PlanID = n
	}
	if f.Status != "" && !slices.Contains(runStatuses, f.Status) {
		return f, badRequest("status must be one of %s", strings.Join(runStatuses, ", "))
	}
	if f.Tag != "" && !store.ValidTag(f.Tag) {
		return f, badRequest("tag %q is not a valid tag (1-%d characters of a-z, 0-9, '.', '_', '-')", echo(f.Tag), store.MaxTagLen)
	}
	for name, dst := range map[string]*time.Time{"from": &f.From, "to": &f.To} {
		if v := c.Query(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return f, badRequest("%s must be an RFC 3339 time such as 2026-03-01T12:00:00Z", name)
			}
			*dst = t
		}
	}
	switch f.Thresholds {
	case "", store.ThresholdsPassed, store.ThresholdsFailed:
	default:
		return f, badRequest("thresholds must be passed or failed")
	}
	for _, v := range c.QueryArray("outcome") {
		for o := range strings.SplitSeq(v, ",") {
			if o == "" { // outcome= (empty) is no filter, as status= and tag=
				continue
			}
			if !slices.Contains(store.RunOutcomes, o) {
				e := badRequest("outcome must be one of %s (repeated or a comma list)", strings.Join(store.RunOutcomes, ", "))
				e.Fields = map[string]string{"outcome": fmt.Sprintf("%q is not one of %s", echo(o), strings.Join(store.RunOutcomes, ", "))}
				return f, e
			}
			if !slices.Contains(f.Outcomes, o) {
				f.Outcomes = append(f.Outcomes, o)
			}
		}
	}
	if f.Sort != "" && !slices.Contains(store.SortColumns, f.Sort) {
		return f, badRequest("sort must be one of %s", strings.Join(store.SortColumns, ", "))
	}
	switch f.Order {
	case "", "asc", "desc":
	default:
		return f, badRequest("order must be asc or desc")
	}
	return f, nil
}

// runPatch is PATCH /api/runs/:id's body; an absent (or null) field is left as it is, and tags
// replace the run's set ([] clears it).
type runPatch struct {
	Notes *string   `json:"notes"`
	Tags  *[]string `json:"tags"`
}

func (s *Server) patchRun(c *gin.Context) (int, any, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	var p runPatch
	if err := decodeBody(c, &p, "notes (a string) and/or tags (a list of strings)"); err != nil {
		return 0, nil, err
	}
	fields := map[string]string{}
	if p.Notes != nil && len(*p.Notes) > store.MaxNotesLen {
		fields["notes"] = fmt.Sprintf("at most %d bytes", store.MaxNotesLen)
	}
	if p.Tags != nil {
		for i, t := range *p.Tags {
			if !store.ValidTag(t) {
				fields[fmt.Sprintf("tags[%d]", i)] = fmt.Sprintf("must be 1-%d characters of a-z, 0-9, '.', '_' or '-'", store.MaxTagLen)
			}
		}
		uniq := slices.Compact(slices.Sorted(slices.Values(*p.Tags)))
		if len(uniq) > store.MaxTags {
			fields["tags"] = fmt.Sprintf("at most %d tags (got %d)", store.MaxTags, len(uniq))
		}
	}
	if len(fields) > 0 {
		e := badRequest("invalid notes or tags; see fields")
		e.Fields = fields
		return 0, nil, e
	}
	r, err := s.store.UpdateRunMeta(c.Request.Context(), id, p.Notes, p.Tags)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, toRunDetail(r), nil
}

func (s *Server) previousRun(c *gin.Context) (int, any, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	if _, err := s.store.GetRun(c.Request.Context(), id); err != nil {
		return 0, nil, err
	}
	r, err := s.store.PreviousRun(c.Request.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil, errf(http.StatusNotFound, "not_found", "run %d has no earlier run of its plan with a summary", id)
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, toRunDetail(r), nil
}

// trendPoint is one run of a plan's trend chart.
type trendPoint struct {
	RunID        int64     `json:"run_id"`
	StartedAt    time.Time `json:"started_at"`
	DurationS    float64   `json:"duration_s"`
	RPS          float64   `json:"rps"`
	P95Ms        float64   `json:"p95_ms"`
	ErrorRate    float64   `json:"error_rate"`
	Status       string    `json:"status"`
	ThresholdsOK *bool     `json:"thresholds_ok"`
}

func (s *Server) planTrend(c *gin.Context) (int, any, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	limit := store.DefaultRunLimit
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxRunLimit {
			return 0, nil, badRequest("limit must be an integer from 1 to %d", store.MaxRunLimit)
		}
		limit = n
	}
	runs, err := s.store.PlanTrend(c.Request.Context(), id, limit)
	if err != nil {
		return 0, nil, err
	}
	out := struct {
		Items []trendPoint `json:"items"`
	}{Items: make([]trendPoint, len(runs))}
	for i, r := range runs {
		out.Items[i] = trendPoint{RunID: r.ID, StartedAt: r.StartedAt, DurationS: r.DurationS, RPS: r.RPS, P95Ms: r.P95Ms,
			ErrorRate: r.ErrorRate, Status: r.Status, ThresholdsOK: r.ThresholdsOK}
	}
	return http.StatusOK, out, nil
}
