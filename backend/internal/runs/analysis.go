package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volley-load/volley/backend/internal/compare"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/report"
	"github.com/volley-load/volley/backend/internal/store"
)

// The reads of a stored run that compute something from it: its seconds downsampled, its
// latency distribution, a comparison of runs, a report. The API answers them as they are
// (docs/api.md: samples, distribution, compare, report).

// Seconds is a run's stored seconds as GET /api/runs/:id/samples answers them: the samples' JSON
// as stored, all of them or at most the points asked for.
type Seconds struct {
	Items       []json.RawMessage `json:"items"`
	Downsampled bool              `json:"downsampled"`
	Total       int               `json:"total"` // seconds stored
}

// Seconds returns run id's stored seconds, downsampled to at most points (≥ 2) when there are
// more: LTTB per series on rps and p95 (compare.Downsample). Errors: store.ErrNotFound, a stored
// second that is not valid JSON.
func (s *Service) Seconds(ctx context.Context, id int64, points int) (Seconds, error) {
	if _, err := s.store.GetRun(ctx, id); err != nil {
		return Seconds{}, err
	}
	smps, err := s.store.Samples(ctx, id)
	if err != nil {
		return Seconds{}, err
	}
	return downsampled(smps, points)
}

// pick returns the indices of the stored seconds to send: all of them when there are at most n,
// else LTTB per series on rps and p95 (compare.Downsample), at most n, plus every second that
// holds a load change (live control's events, at most engine.MaxRunEvents), in time order.
func pick(smps []store.Sample, n int) ([]int, bool, error) {
	if len(smps) <= n {
		idx := make([]int, len(smps))
		for i := range idx {
			idx[i] = i
		}
		return idx, false, nil
	}
	x := make([]float64, len(smps))
	var events []int // seconds holding load changes: always sent
	rps := make([]float64, len(smps))
	p95 := make([]float64, len(smps))
	for i, s := range smps {
		var v struct {
			RPS     float64 `json:"rps"`
			Latency struct {
				P95 float64 `json:"p95"`
			} `json:"latency_ms"`
			Events []json.RawMessage `json:"events"`
			// a monitor error is shown once, in its second: keep that second too
			TargetErrors []json.RawMessage `json:"target_errors"`
		}
		if err := json.Unmarshal(s.Data, &v); err != nil {
			return nil, false, fmt.Errorf("second %d: %w", s.Second, err)
		}
		x[i], rps[i], p95[i] = float64(s.Second), v.RPS, v.Latency.P95
		if len(v.Events) > 0 || len(v.TargetErrors) > 0 {
			events = append(events, i)
		}
	}
	idx := compare.Downsample(x, [][]float64{rps, p95}, n)
	if len(events) > 0 {
		idx = append(idx, events...)
		slices.Sort(idx)
		idx = slices.Compact(idx)
	}
	return idx, true, nil
}

func downsampled(smps []store.Sample, n int) (Seconds, error) {
	idx, down, err := pick(smps, n)
	if err != nil {
		return Seconds{}, err
	}
	out := Seconds{Items: make([]json.RawMessage, len(idx)), Downsampled: down, Total: len(smps)}
	for k, i := range idx {
		out.Items[k] = smps[i].Data
	}
	return out, nil
}

// CurvePoint is one point of a percentile curve.
type CurvePoint struct {
	Percentile float64 `json:"percentile"`
	ValueMs    float64 `json:"value_ms"`
}

// Distribution is a run's latency by percentile (GET /api/runs/:id/distribution).
type Distribution struct {
	Items  []CurvePoint `json:"items"`
	Count  int64        `json:"count"`
	Source string       `json:"source"` // "summary": the run's histogram; "seconds": its stored seconds merged
}

// Distribution returns run id's latency distribution: from the histogram stored with its summary,
// or, without one (running, or not stored), from its stored seconds' histograms merged. Errors:
// store.ErrNotFound, a stored histogram that does not decode.
func (s *Service) Distribution(ctx context.Context, id int64) (Distribution, error) {
	if _, err := s.store.GetRun(ctx, id); err != nil {
		return Distribution{}, err
	}
	enc, err := s.store.RunHistogram(ctx, id)
	if err != nil {
		return Distribution{}, err
	}
	source := "summary"
	var h *hdr.Histogram
	if enc != nil {
		if h, err = metrics.DecodeHist(string(enc)); err != nil {
			return Distribution{}, fmt.Errorf("run %d: stored histogram: %w", id, err)
		}
	} else {
		// No summary yet (running) or none stored: merge the stored seconds.
		source = "seconds"
		h = metrics.NewHist()
		smps, err := s.store.Samples(ctx, id)
		if err != nil {
			return Distribution{}, err
		}
		for _, smp := range smps {
			if len(smp.Hist) == 0 {
				continue
			}
			sh, err := metrics.DecodeHist(string(smp.Hist))
			if err != nil {
				return Distribution{}, fmt.Errorf("run %d second %d: histogram: %w", id, smp.Second, err)
			}
			h.Merge(sh)
		}
	}
	return Distribution{percentileCurve(h), h.TotalCount(), source}, nil
}

// percentileCurve is h's percentile distribution at log-spaced percentiles — 50, 75, 90, 95, 99,
// then 99.9, 99.99, … as long as at least one value lies above the percentile — and 100 (the
// maximum): the points of a latency-by-percentile chart with a log scale of 1/(1−p).
func percentileCurve(h *hdr.Histogram) []CurvePoint {
	n := h.TotalCount()
	if n == 0 {
		return []CurvePoint{}
	}
	var out []CurvePoint
	for _, p := range []float64{50, 75, 90, 95, 99} {
		out = append(out, CurvePoint{p, metrics.Percentile(h, p)})
	}
	for k := 1; k <= 15; k++ {
		tail := math.Pow(10, -float64(k)) // 0.1, 0.01, …: % above the percentile
		if tail/100*float64(n) < 1 {
			break
		}
		p := math.Round((100-tail)*math.Pow(10, float64(k))) / math.Pow(10, float64(k))
		out = append(out, CurvePoint{p, metrics.Percentile(h, p)})
	}
	return append(out, CurvePoint{100, metrics.LatencyOf(h, 0).Max})
}

// NotFoundError is returned by Compare for a run that does not exist; it wraps store.ErrNotFound.
type NotFoundError struct{ RunID int64 }

func (e *NotFoundError) Error() string { return fmt.Sprintf("run %d not found", e.RunID) }

func (e *NotFoundError) Unwrap() error { return store.ErrNotFound }

// Comparison is GET /api/compare's answer: the runs, compare.Compare's result and each run's
// seconds downsampled.
type Comparison struct {
	Runs     []Run `json:"runs"`
	Baseline int64 `json:"baseline"`
	// Threshold and ErrorThreshold are the practical thresholds used (fractions), Confidence the
	// intervals' level (compare.Result).
	Threshold      float64                     `json:"threshold"`
	ErrorThreshold float64                     `json:"error_threshold"`
	Confidence     float64                     `json:"confidence"`
	Metrics        []compare.Metric            `json:"metrics"`
	Warnings       []compare.Warning           `json:"warnings"`
	Seconds        []compare.SecondsInfo       `json:"seconds"`
	Series         map[int64][]json.RawMessage `json:"series"`
}

// Compare compares runs ids (compare.MinRuns to compare.MaxRuns distinct ids) against ids[base],
// each run's series downsampled to at most points seconds, judged with opt (compare.Options). Errors: *NotFoundError, those of
// compare.FromStored and compare.Compare.
func (s *Service) Compare(ctx context.Context, ids []int64, base, points int, opt compare.Options) (Comparison, error) {
	out := Comparison{Series: map[int64][]json.RawMessage{}}
	runs := make([]*compare.Run, len(ids))
	for i, id := range ids {
		r, err := s.store.GetRun(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return Comparison{}, &NotFoundError{RunID: id}
		}
		if err != nil {
			return Comparison{}, err
		}
		smps, err := s.store.Samples(ctx, id)
		if err != nil {
			return Comparison{}, err
		}
		secs := make([]compare.StoredSecond, len(smps))
		for k, smp := range smps {
			secs[k] = compare.StoredSecond{Data: smp.Data, Hist: smp.Hist}
		}
		if runs[i], err = compare.FromStored(id, r.Summary, r.PlanSpec, secs); err != nil {
			return Comparison{}, err
		}
		series, err := downsampled(smps, points)
		if err != nil {
			return Comparison{}, err
		}
		out.Series[id] = series.Items
		out.Runs = append(out.Runs, RunOf(r))
	}
	res, err := compare.Compare(runs, base, opt)
	if err != nil {
		return Comparison{}, err
	}
	out.Baseline, out.Metrics, out.Warnings, out.Seconds = res.Baseline, res.Metrics, res.Warnings, res.Seconds
	out.Threshold, out.ErrorThreshold, out.Confidence = res.Threshold, res.ErrorThreshold, res.Confidence
	return out, nil
}

// Report gathers run id for an export (report.Write): the run with its masked plan (also decoded,
// for the HTML page's load settings), its summary and every stored second. Errors: store.ErrNotFound, a stored summary or second that does not
// decode.
func (s *Service) Report(ctx context.Context, id int64) (report.Report, error) {
	r, err := s.store.GetRun(ctx, id)
	if err != nil {
		return report.Report{}, err
	}
	smps, err := s.store.Samples(ctx, id)
	if err != nil {
		return report.Report{}, err
	}
	rep := report.Report{
		Run: struct {
			Run
			Plan json.RawMessage `json:"plan"`
		}{RunOf(r), orNull(plan.MaskSpec(r.PlanSpec))},
		Meta: report.Meta{RunID: r.ID, PlanName: r.PlanName, Status: r.Status, StartedAt: &r.StartedAt,
			EndedAt: r.EndedAt, Notes: r.Notes, Tags: r.Tags, Error: r.Error, Agents: r.Agents, Degraded: r.Degraded},
		Samples: make([]metrics.Sample, len(smps)),
	}
	var p plan.Plan
	if masked := plan.MaskSpec(r.PlanSpec); len(masked) > 0 && json.Unmarshal(masked, &p) == nil {
		rep.Plan = &p // the load settings of the HTML page (a plan that does not decode is left out)
	}
	if len(r.Summary) > 0 {
		rep.Summary = &metrics.Summary{}
		if err := json.Unmarshal(r.Summary, rep.Summary); err != nil {
			return report.Report{}, fmt.Errorf("run %d: summary: %w", id, err)
		}
	}
	for i, smp := range smps {
		if err := json.Unmarshal(smp.Data, &rep.Samples[i]); err != nil {
			return report.Report{}, fmt.Errorf("run %d: second %d: %w", id, smp.Second, err)
		}
	}
	return rep, nil
}

func orNull(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}
