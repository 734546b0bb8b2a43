package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/compare"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/store"
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

// pick returns the indices of the stored seconds to send: all of them when there are at most n,
// else LTTB per series on rps and p95 (compare.Downsample), at most n.
func pick(smps []store.Sample, n int) ([]int, bool, error) {
	if len(smps) <= n {
		idx := make([]int, len(smps))
		for i := range idx {
			idx[i] = i
		}
		return idx, false, nil
	}
	x := make([]float64, len(smps))
	rps := make([]float64, len(smps))
	p95 := make([]float64, len(smps))
	for i, s := range smps {
		var v struct {
			RPS     float64 `json:"rps"`
			Latency struct {
				P95 float64 `json:"p95"`
			} `json:"latency_ms"`
		}
		if err := json.Unmarshal(s.Data, &v); err != nil {
			return nil, false, fmt.Errorf("second %d: %w", s.Second, err)
		}
		x[i], rps[i], p95[i] = float64(s.Second), v.RPS, v.Latency.P95
	}
	return compare.Downsample(x, [][]float64{rps, p95}, n), true, nil
}

type samplesJSON struct {
	Items       []json.RawMessage `json:"items"`
	Downsampled bool              `json:"downsampled"`
	Total       int               `json:"total"` // seconds stored
}

func downsampled(smps []store.Sample, n int) (samplesJSON, error) {
	idx, down, err := pick(smps, n)
	if err != nil {
		return samplesJSON{}, err
	}
	out := samplesJSON{Items: make([]json.RawMessage, len(idx)), Downsampled: down, Total: len(smps)}
	for k, i := range idx {
		out.Items[k] = smps[i].Data
	}
	return out, nil
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
	if _, err := s.store.GetRun(c.Request.Context(), id); err != nil {
		return 0, nil, err
	}
	smps, err := s.store.Samples(c.Request.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	out, err := downsampled(smps, n)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
}

// curvePoint is one point of a percentile curve.
type curvePoint struct {
	Percentile float64 `json:"percentile"`
	ValueMs    float64 `json:"value_ms"`
}

// percentileCurve is h's percentile distribution at log-spaced percentiles — 50, 75, 90, 95, 99,
// then 99.9, 99.99, … as long as at least one value lies above the percentile — and 100 (the
// maximum): the points of a latency-by-percentile chart with a log scale of 1/(1−p).
func percentileCurve(h *hdr.Histogram) []curvePoint {
	n := h.TotalCount()
	if n == 0 {
		return []curvePoint{}
	}
	var out []curvePoint
	for _, p := range []float64{50, 75, 90, 95, 99} {
		out = append(out, curvePoint{p, metrics.Percentile(h, p)})
	}
	for k := 1; k <= 15; k++ {
		tail := math.Pow(10, -float64(k)) // 0.1, 0.01, …: % above the percentile
		if tail/100*float64(n) < 1 {
			break
		}
		p := math.Round((100-tail)*math.Pow(10, float64(k))) / math.Pow(10, float64(k))
		out = append(out, curvePoint{p, metrics.Percentile(h, p)})
	}
	return append(out, curvePoint{100, metrics.LatencyOf(h, 0).Max})
}

func (s *Server) distribution(c *gin.Context) (int, any, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	ctx := c.Request.Context()
	if _, err := s.store.GetRun(ctx, id); err != nil {
		return 0, nil, err
	}
	enc, err := s.store.RunHistogram(ctx, id)
	if err != nil {
		return 0, nil, err
	}
	source := "summary"
	var h *hdr.Histogram
	if enc != nil {
		if h, err = metrics.DecodeHist(string(enc)); err != nil {
			return 0, nil, fmt.Errorf("run %d: stored histogram: %w", id, err)
		}
	} else {
		// No summary yet (running) or none stored: merge the stored seconds.
		source = "seconds"
		h = metrics.NewHist()
		smps, err := s.store.Samples(ctx, id)
		if err != nil {
			return 0, nil, err
		}
		for _, smp := range smps {
			if len(smp.Hist) == 0 {
				continue
			}
			sh, err := metrics.DecodeHist(string(smp.Hist))
			if err != nil {
				return 0, nil, fmt.Errorf("run %d second %d: histogram: %w", id, smp.Second, err)
			}
			h.Merge(sh)
		}
	}
	return http.StatusOK, struct {
		Items  []curvePoint `json:"items"`
		Count  int64        `json:"count"`
		Source string       `json:"source"`
	}{percentileCurve(h), h.TotalCount(), source}, nil
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
// baseline, 0 < t ≤ 100; default compare.DefaultThreshold) and ?error_threshold=0.1 (that of the
// error rate, in percentage points, 0 < t ≤ 100; default compare.DefaultErrorThreshold).
func compareOptions(c *gin.Context) (compare.Options, error) {
	var opt compare.Options
	for _, p := range []struct {
		name string
		dst  *float64
	}{{"threshold", &opt.Threshold}, {"error_threshold", &opt.ErrorThreshold}} {
		raw := c.Query(p.name)
		if raw == "" {
			continue
		}
		v, err := strconv.ParseFloat(raw, 64)
		if err != nil || !(v > 0 && v <= 100) {
			return opt, badRequest("%s must be a percentage above 0 and at most 100, not %q", p.name, raw)
		}
		*p.dst = v / 100
	}
	return opt, nil
}

type compareJSON struct {
	Runs           []runJSON                   `json:"runs"`
	Baseline       int64                       `json:"baseline"`
	Threshold      float64                     `json:"threshold"`
	ErrorThreshold float64                     `json:"error_threshold"`
	Confidence     float64                     `json:"confidence"`
	Metrics        []compare.Metric            `json:"metrics"`
	Warnings       []compare.Warning           `json:"warnings"`
	Seconds        []compare.SecondsInfo       `json:"seconds"`
	Series         map[int64][]json.RawMessage `json:"series"`
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
	ctx := c.Request.Context()
	out := compareJSON{Series: map[int64][]json.RawMessage{}}
	runs := make([]*compare.Run, len(ids))
	for i, id := range ids {
		r, err := s.store.GetRun(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return 0, nil, errf(http.StatusNotFound, "not_found", "run %d not found", id)
		}
		if err != nil {
			return 0, nil, err
		}
		smps, err := s.store.Samples(ctx, id)
		if err != nil {
			return 0, nil, err
		}
		secs := make([]compare.StoredSecond, len(smps))
		for k, smp := range smps {
			secs[k] = compare.StoredSecond{Data: smp.Data, Hist: smp.Hist}
		}
		if runs[i], err = compare.FromStored(id, r.Summary, r.PlanSpec, secs); err != nil {
			return 0, nil, err
		}
		series, err := downsampled(smps, n)
		if err != nil {
			return 0, nil, err
		}
		out.Series[id] = series.Items
		out.Runs = append(out.Runs, toRunJSON(r))
	}
	res, err := compare.Compare(runs, base, opt)
	if err != nil {
		return 0, nil, err
	}
	out.Baseline, out.Metrics, out.Warnings, out.Seconds = res.Baseline, res.Metrics, res.Warnings, res.Seconds
	out.Threshold, out.ErrorThreshold, out.Confidence = res.Threshold, res.ErrorThreshold, res.Confidence
	return http.StatusOK, out, nil
}
