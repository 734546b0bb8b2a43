package compare

import (
	"encoding/json"
	"fmt"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// StoredSecond is one second as the store keeps it: the sample JSON and the encoded histogram
// (HdrHistogram V2 compressed, base64; empty when none).
type StoredSecond struct {
	Data []byte
	Hist []byte
}

// FromStored prepares a run from its stored form: the summary JSON (empty or "null" when the run
// has none), the plan JSON (may be empty) and its seconds in time order. Each second is decoded
// and reduced as it is read, so a long run never holds all its histograms at once.
func FromStored(id int64, summary, planSpec []byte, seconds []StoredSecond) (*Run, error) {
	m := Meta{ID: id}
	if len(summary) > 0 && string(summary) != "null" {
		var s metrics.Summary
		if err := json.Unmarshal(summary, &s); err != nil {
			return nil, fmt.Errorf("run %d: summary: %w", id, err)
		}
		m.Summary = &s
	}
	m.Plan = lenientPlan(planSpec)
	r := NewRun(m)
	for i, sec := range seconds {
		var s metrics.Sample
		if err := json.Unmarshal(sec.Data, &s); err != nil {
			return nil, fmt.Errorf("run %d: second %d: %w", id, i+1, err)
		}
		var h *hdr.Histogram
		if len(sec.Hist) > 0 {
			var err error
			if h, err = metrics.DecodeHist(string(sec.Hist)); err != nil {
				return nil, fmt.Errorf("run %d: second %d: histogram: %w", id, i+1, err)
			}
		}
		r.AddSecond(s, h)
	}
	return r, nil
}

// FromSummary prepares a run known only by its summary (a `volley run --out` file): its values
// appear in the table, its verdicts are inconclusive.
func FromSummary(id int64, label string, s *metrics.Summary) *Run {
	return NewRun(Meta{ID: id, Label: label, Summary: s})
}

// FromSamples prepares a run from a file: a run file's or a JSON export's summary (nil when
// there is none), plan JSON (may be empty) and seconds in time order. A second's Hist is its
// encoded histogram as metrics.RunFile carries it, decoded with metrics.DecodeHistCounts (the
// limits of a file from outside); a second without one (a JSON export) has no latency data, so
// the latency verdicts are inconclusive while the per-second ones (TPS, error rate, CPU, RSS)
// are tested.
func FromSamples(id int64, label string, sum *metrics.Summary, planSpec []byte, seconds []metrics.Sample) (*Run, error) {
	m := Meta{ID: id, Label: label, Summary: sum, Plan: lenientPlan(planSpec)}
	r := NewRun(m)
	for i, s := range seconds {
		var h *hdr.Histogram
		if s.Hist != "" {
			counts, err := metrics.DecodeHistCounts(s.Hist)
			if err != nil {
				return nil, fmt.Errorf("%s: second %d: %w", m.Name(), i+1, err)
			}
			h = metrics.HistFromCounts(counts)
		}
		s.Hist = ""
		r.AddSecond(s, h)
	}
	return r, nil
}

// lenientPlan decodes a plan JSON leniently (not plan.Parse): a plan stored by an older version
// still describes its load even if today's validation would word it differently. Nil when
// spec is empty or not a plan.
func lenientPlan(spec []byte) *plan.Plan {
	var p plan.Plan
	if len(spec) == 0 || json.Unmarshal(spec, &p) != nil {
		return nil
	}
	return &p
}
