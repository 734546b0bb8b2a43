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
	if len(planSpec) > 0 {
		// Decoded leniently (not plan.Parse): a plan stored by an older version still describes
		// its load even if today's validation would word it differently.
		var p plan.Plan
		if err := json.Unmarshal(planSpec, &p); err == nil {
			m.Plan = &p
		}
	}
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
