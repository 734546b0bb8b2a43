// Package report exports one run as a file: JSON (run, summary and every second), CSV (one row
// per second) or a single self-contained HTML page (inline CSS and SVG charts drawn here, no
// script, no external request) for sharing a result with someone who has no Volley.
//
// It works from a Summary and the per-second Samples alone, so both the server (from the
// database) and `volley run --report` (from memory, no database) use it.
package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// Meta is what the HTML page says about the run besides its summary; every field is optional.
type Meta struct {
	RunID     int64
	PlanName  string
	Status    string
	StartedAt *time.Time
	EndedAt   *time.Time
	Notes     string
	Tags      []string
	Error     string
	// Agents is how many agents generated a run over agents (0: the server's engine); Degraded:
	// one was lost during the run (runs.Run.Agents, Degraded).
	Agents   int
	Degraded bool
}

// Report is one run to export.
type Report struct {
	// Run is the JSON export's "run" object (the API's Run); nil is written as null.
	Run     any
	Meta    Meta
	Summary *metrics.Summary // nil while the run has not ended
	Samples []metrics.Sample // in time order
	// Plan is the plan the run applied, its secret header values masked (plan.MaskSpec); the
	// HTML page lists its load settings. Nil leaves them out.
	Plan *plan.Plan
	// Lang is the HTML page's language, one of Langs (see Lang); "" is DefaultLang.
	Lang string
}

// Formats and their file extensions and media types.
var (
	Formats    = []string{"json", "csv", "html"}
	MediaTypes = map[string]string{
		"json": "application/json; charset=utf-8",
		"csv":  "text/csv; charset=utf-8",
		"html": "text/html; charset=utf-8",
	}
)

// Filename is the download name of run id's report in format ext: volley-run-<id>.<ext>.
func Filename(id int64, ext string) string { return fmt.Sprintf("volley-run-%d.%s", id, ext) }

// Write writes r in format ("json", "csv" or "html").
func Write(w io.Writer, format string, r Report) error {
	switch format {
	case "json":
		return WriteJSON(w, r)
	case "csv":
		return WriteCSV(w, r.Samples)
	case "html":
		return WriteHTML(w, r)
	}
	return fmt.Errorf("report: unknown format %q (json, csv or html)", format)
}

// WriteJSON writes {"run": …, "summary": …, "samples": […]}.
func WriteJSON(w io.Writer, r Report) error {
	samples := r.Samples
	if samples == nil {
		samples = []metrics.Sample{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Run     any              `json:"run"`
		Summary *metrics.Summary `json:"summary"`
		Samples []metrics.Sample `json:"samples"`
	}{r.Run, r.Summary, samples})
}

// CSVHeader is the CSV export's header. t is the end of the second in unix milliseconds; the
// latency columns are milliseconds, empty in a second without a successful response (unknown,
// not 0); cpu_percent is of one core; started_iterations and dropped_iterations are the
// second's (metrics.Sample: open models count them by the second they were due in; a closed
// model's started_iterations are 0).
var CSVHeader = []string{"elapsed_s", "t", "requests", "rps", "errors", "p50", "p90", "p95", "p99", "max",
	"active_vus", "cpu_percent", "rss_bytes", "generator_bound", "started_iterations", "dropped_iterations"}

// AgentsCSVHeader are the CSV columns of a run over agents: the share of the second's work
// missing (0-1) and the agents it was theirs, joined with ";".
var AgentsCSVHeader = []string{"missing_share", "missing_agents"}

// WriteCSV writes one row per second under CSVHeader, then WSCSVHeader for a run with WebSocket
// steps, then AgentsCSVHeader for a run over agents, then the monitors' columns (target.go).
func WriteCSV(w io.Writer, samples []metrics.Sample) error {
	cw := csv.NewWriter(w)
	ws := hasWS(samples)
	ag := slices.ContainsFunc(samples, func(s metrics.Sample) bool { return len(s.Agents) > 0 || s.MissingShare > 0 })
	ids := targetIDs(samples)
	header := slices.Clone(CSVHeader)
	if ws {
		header = append(header, WSCSVHeader...)
	}
	if ag {
		header = append(header, AgentsCSVHeader...)
	}
	for _, id := range ids {
		header = append(header, TargetColumnPrefix+id)
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, s := range samples {
		l := s.Latency
		lat := []string{f(l.P50), f(l.P90), f(l.P95), f(l.P99), f(l.Max)}
		if s.Errors >= s.Requests { // errors = requests − successes
			lat = []string{"", "", "", "", ""} // no successful response this second: unknown, not 0
		}
		row := []string{strconv.Itoa(s.ElapsedS), strconv.FormatInt(s.T, 10), strconv.FormatInt(s.Requests, 10),
			f(s.RPS), strconv.FormatInt(s.Errors, 10), lat[0], lat[1], lat[2], lat[3], lat[4],
			strconv.FormatInt(s.ActiveVUs, 10), f(s.Client.CPUPercent), strconv.FormatUint(s.Client.RSSBytes, 10),
			strconv.FormatBool(s.GeneratorBound), strconv.FormatInt(s.StartedIterations, 10), strconv.FormatInt(s.DroppedIterations, 10)}
		if ws {
			row = append(row, wsCSVRow(&s)...)
		}
		if ag {
			row = append(row, f(s.MissingShare), strings.Join(s.MissingAgents, ";"))
		}
		row = append(row, targetCells(s, ids)...)
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
