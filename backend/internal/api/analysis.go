package api

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/compare"
	"github.com/volley-load/volley/backend/internal/runs"
)

// Downsampling bounds of GET /api/runs/:id/samples and of the compare series.
const (
	DefaultSamplePoints  = 2000
	DefaultComparePoints = 500
	maxPointsParam       = 100_000
)

// pointsParam reads ?points=N (2 ≤ N ≤ 100 000); def when absent.
func pointsParam(c *gin.Context, def int) (int, error) {
	v := c.Query("points")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 2 || n > maxPointsParam {
		return 0, badRequest("points must be an integer from 2 to %d", maxPointsParam)
	}
	return n, nil
}

func (s *Server) samples(c *gin.Context) (int, any, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	n, err := pointsParam(c, DefaultSamplePoints)
	if err != nil {
		return 0, nil, err
	}
	out, err := s.runs.Seconds(c.Request.Context(), id, n)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
}

func (s *Server) distribution(c *gin.Context) (int, any, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	out, err := s.runs.Distribution(c.Request.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
}

// compareIDs reads ?ids=1,2,3&baseline=1: 2–5 distinct run ids and the baseline's index.
func compareIDs(c *gin.Context) ([]int64, int, error) {
	raw := c.Query("ids")
	if raw == "" {
		return nil, 0, badRequest("ids is required: ids=1,2 (%d to %d run ids)", compare.MinRuns, compare.MaxRuns)
	}
	var ids []int64
	for _, part := range strings.Split(raw, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
		if err != nil || id < 1 {
			return nil, 0, badRequest("ids: %q is not a positive integer", part)
		}
		if slices.Contains(ids, id) {
			return nil, 0, badRequest("ids: run %d is listed twice", id)
		}
		ids = append(ids, id)
	}
	if len(ids) < compare.MinRuns || len(ids) > compare.MaxRuns {
		return nil, 0, badRequest("compare %d to %d runs, not %d", compare.MinRuns, compare.MaxRuns, len(ids))
	}
	base := 0
	if v := c.Query("baseline"); v != "" {
		b, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, 0, badRequest("baseline must be a run id")
		}
		if base = slices.Index(ids, b); base < 0 {
			return nil, 0, badRequest("baseline %d is not one of ids", b)
		}
	}
	return ids, base, nil
}

// compareOptions reads ?threshold=5 (the practical threshold of TPS and latency, in % of the
// baseline, 0.1 ≤ t ≤ 100; default compare.DefaultThreshold) and ?error_threshold=0.1 (that of
// the error rate, in percentage points, 0.01 ≤ t ≤ 100; default compare.DefaultErrorThreshold).
// A parameter given twice is refused: no rule would say which one the caller meant.
func compareOptions(c *gin.Context) (compare.Options, error) {
	var opt compare.Options
	for _, p := range []struct {
		name string
		min  float64
		dst  *float64
	}{{"threshold", 0.1, &opt.Threshold}, {"error_threshold", 0.01, &opt.ErrorThreshold}} {
		all := c.QueryArray(p.name)
		if len(all) > 1 {
			return opt, badRequest("%s is given %d times: give it once", p.name, len(all))
		}
		if len(all) == 0 || all[0] == "" {
			continue
		}
		v, err := strconv.ParseFloat(all[0], 64)
		if err != nil || !(v >= p.min && v <= 100) {
			return opt, badRequest("%s must be a percentage from %g to 100, not %q", p.name, p.min, all[0])
		}
		*p.dst = v / 100
	}
	return opt, nil
}

func (s *Server) compareRuns(c *gin.Context) (int, any, error) {
	ids, base, err := compareIDs(c)
	if err != nil {
		return 0, nil, err
	}
	n, err := pointsParam(c, DefaultComparePoints)
	if err != nil {
		return 0, nil, err
	}
	opt, err := compareOptions(c)
	if err != nil {
		return 0, nil, err
	}
	out, err := s.runs.Compare(c.Request.Context(), ids, base, n, opt)
	var nf *runs.NotFoundError
	if errors.As(err, &nf) {
		return 0, nil, errf(http.StatusNotFound, "not_found", "%s", nf.Error())
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
}
