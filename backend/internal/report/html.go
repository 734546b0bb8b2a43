package report

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
)

type kv struct {
	Key   string
	Count int64
	Share string
}

type latRow struct {
	Name string
	L    metrics.Latency
}

type nameRow struct {
	Name      string
	Requests  int64
	Errors    int64
	ErrorRate string
	L         metrics.Latency
	None      bool // no successful response: its latencies are unknown ("—")
}

type thresholdRow struct {
	Expr  string
	Value string
	OK    bool
}

type page struct {
	Title       string
	Meta        Meta
	Started     string
	Ended       string
	S           *metrics.Summary
	Seconds     int
	Latency     []latRow
	Thresholds  []thresholdRow
	ErrorKinds  []kv
	StatusCodes []kv
	ByName      []nameRow
	Warnings    []string
	Charts      []chart
	// Outcome is the run's outcome (metrics.OutcomeOf) and OutcomeText it in words; "" when
	// unknown (no summary, and a status that does not say).
	Outcome     string
	OutcomeText string
	// NoLatency: no successful response, so the run's latencies are unknown ("—", never 0).
	NoLatency bool
}

// outcomeText is each outcome in the report's words.
var outcomeText = map[string]string{
	metrics.OutcomePassed:             "passed",
	metrics.OutcomeFinishedWithErrors: "finished with errors",
	metrics.OutcomeFailed:             "failed",
}

var funcs = template.FuncMap{
	"ms":  func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) },
	"f1":  func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"pct": func(v float64) string { return strconv.FormatFloat(v*100, 'f', 2, 64) + " %" },
	"mib": func(v any) string {
		var b float64
		switch x := v.(type) {
		case int64:
			b = float64(x)
		case uint64:
			b = float64(x)
		}
		return strconv.FormatFloat(b/(1<<20), 'f', 1, 64) + " MiB"
	},
}

var tmpl = template.Must(template.New("report").Funcs(funcs).Parse(pageHTML))

// WriteHTML writes the run as one self-contained HTML5 page.
func WriteHTML(w io.Writer, r Report) error {
	return tmpl.Execute(w, buildPage(r))
}

func buildPage(r Report) page {
	p := page{Meta: r.Meta, S: r.Summary, Seconds: len(r.Samples)}
	p.Title = "Volley run"
	if r.Meta.RunID > 0 {
		p.Title += fmt.Sprintf(" #%d", r.Meta.RunID)
	}
	if r.Meta.PlanName != "" {
		p.Title += " — " + r.Meta.PlanName
	}
	if t := r.Meta.StartedAt; t != nil {
		p.Started = t.UTC().Format(time.RFC3339)
	}
	if t := r.Meta.EndedAt; t != nil {
		p.Ended = t.UTC().Format(time.RFC3339)
	}
	if s := r.Summary; s != nil {
		p.Outcome, p.NoLatency = s.Outcome(r.Meta.Status), s.Successes == 0
	} else if r.Meta.Status != "" {
		// without a summary only a failed or interrupted run has a known outcome
		if o := metrics.OutcomeOf(r.Meta.Status, 1, 0, nil); o == metrics.OutcomeFailed {
			p.Outcome = o
		}
	}
	p.OutcomeText = outcomeText[p.Outcome]
	if s := r.Summary; s != nil {
		p.Latency = []latRow{{"all responses", s.Latency}, {"successes", s.LatencySuccess}, {"service time", s.ServiceTime}}
		for _, t := range s.Thresholds {
			row := thresholdRow{Expr: t.Expr, OK: t.OK, Value: "no data"}
			if t.Value != nil {
				row.Value = strconv.FormatFloat(*t.Value, 'g', 6, 64)
			}
			p.Thresholds = append(p.Thresholds, row)
		}
		p.ErrorKinds = counts(s.ErrorKinds, s.Errors)
		p.StatusCodes = counts(s.StatusCodes, 0)
		for _, name := range slices.Sorted(maps.Keys(s.ByName)) {
			n := s.ByName[name]
			row := nameRow{Name: name, Requests: n.Requests, Errors: n.Errors, L: n.Latency, ErrorRate: "–", None: n.Errors >= n.Requests}
			if n.Requests > 0 {
				row.ErrorRate = strconv.FormatFloat(float64(n.Errors)/float64(n.Requests)*100, 'f', 2, 64) + " %"
			}
			p.ByName = append(p.ByName, row)
		}
		if s.GeneratorBoundSeconds > 0 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%d of %d seconds were generator-bound: the load generator's CPU was saturated, so those seconds may describe the generator rather than the target.", s.GeneratorBoundSeconds, s.Seconds))
		}
		if s.Aborted != "" {
			p.Warnings = append(p.Warnings, "The run was aborted: "+s.Aborted)
		}
	} else {
		p.Warnings = append(p.Warnings, "This run has no summary (it has not ended, or failed before measuring): only its seconds are shown.")
	}
	p.Charts = []chart{
		lineChart("tps", "Throughput", "requests per second (req/s)", r.Samples, []seriesDef{
			{"requests/s", func(s metrics.Sample) float64 { return s.RPS }},
			{"errors/s", func(s metrics.Sample) float64 {
				if s.IntervalS > 0 {
					return float64(s.Errors) / s.IntervalS
				}
				return float64(s.Errors)
			}},
		}),
		lineChart("latency", "Latency per second", "latency (ms)", r.Samples, []seriesDef{
			{"p50", func(s metrics.Sample) float64 { return s.Latency.P50 }},
			{"p95", func(s metrics.Sample) float64 { return s.Latency.P95 }},
			{"p99", func(s metrics.Sample) float64 { return s.Latency.P99 }},
		}),
	}
	return p
}

// counts lists a count map by count (then key), with each count's share of total (or of the
// map's sum when total is 0).
func counts(m map[string]int64, total int64) []kv {
	if total == 0 {
		for _, v := range m {
			total += v
		}
	}
	out := make([]kv, 0, len(m))
	for k, v := range m {
		row := kv{Key: k, Count: v}
		if total > 0 {
			row.Share = strconv.FormatFloat(float64(v)/float64(total)*100, 'f', 2, 64) + " %"
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b kv) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return out
}

// pageHTML is the page: HTML5, inline CSS, inline SVG; nothing is fetched and nothing runs.
const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="Volley">
<title>{{.Title}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2937; margin: 0; background: #f8fafc; }
main { max-width: 960px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 8px; border-bottom: 1px solid #e5e7eb; padding-bottom: 4px; }
.meta { color: #4b5563; margin: 0 0 12px; }
.tag { display: inline-block; background: #e0e7ff; color: #3730a3; border-radius: 10px; padding: 0 8px; margin-right: 4px; font-size: 12px; }
.notes { white-space: pre-wrap; background: #fff; border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px 12px; }
.warn { background: #fef3c7; border: 1px solid #f59e0b; border-radius: 6px; padding: 8px 12px; margin: 8px 0; }
.err { color: #b91c1c; }
.outcome b { padding: 1px 8px; border-radius: 999px; }
.outcome.passed b { background: #dcfce7; color: #15803d; } .outcome.finished_with_errors b { background: #fef3c7; color: #b45309; } .outcome.failed b { background: #fee2e2; color: #b91c1c; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 8px; }
.figure { background: #fff; border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px 12px; }
.figure b { display: block; font-size: 18px; }
.figure span { color: #6b7280; font-size: 12px; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { border: 1px solid #e5e7eb; padding: 4px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f1f5f9; font-weight: 600; }
.ok { color: #15803d; font-weight: 600; }
.failed { color: #b91c1c; font-weight: 600; }
figure { margin: 12px 0; background: #fff; border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px; }
figcaption { font-weight: 600; margin-bottom: 4px; }
svg { width: 100%; height: auto; display: block; }
svg text { font-size: 12px; fill: #4b5563; }
svg .axis { stroke: #6b7280; stroke-width: 1; }
svg .grid { stroke: #e5e7eb; stroke-width: 1; }
svg polyline { fill: none; stroke-width: 1.5; stroke-linejoin: round; }
.s0 { stroke: #2563eb; } .s1 { stroke: #dc2626; } .s2 { stroke: #7c3aed; }
.key { display: inline-block; width: 14px; height: 3px; vertical-align: middle; margin: 0 4px 0 12px; }
.k0 { background: #2563eb; } .k1 { background: #dc2626; } .k2 { background: #7c3aed; }
footer { color: #6b7280; font-size: 12px; margin-top: 32px; }
</style>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
<p class="meta">{{with .Meta.Status}}Status: <b>{{.}}</b>. {{end}}{{with .Started}}Started {{.}}{{end}}{{with .Ended}}, ended {{.}}{{end}}{{with .S}}{{with .Executor}} · executor {{.}}{{end}}{{end}}</p>
{{with .Meta.Tags}}<p>{{range .}}<span class="tag">{{.}}</span>{{end}}</p>{{end}}
{{with .Meta.Notes}}<div class="notes">{{.}}</div>{{end}}
{{with .Outcome}}<p class="outcome {{.}}">Outcome: <b>{{$.OutcomeText}}</b></p>{{end}}
{{with .Meta.Error}}<p class="err">Error: {{.}}</p>{{end}}
{{range .Warnings}}<div class="warn">{{.}}</div>
{{end}}
{{with .S}}
<h2>Summary</h2>
<div class="figures">
<div class="figure"><b>{{.Requests}}</b><span>requests ({{.Successes}} ok, {{.Errors}} errors, {{.Interrupted}} interrupted)</span></div>
<div class="figure"><b>{{f1 .RPS}} req/s</b><span>throughput (send rate {{f1 .SendRate}}/s)</span></div>
<div class="figure"><b>{{pct .ErrorRate}}</b><span>error rate</span></div>
<div class="figure"><b>{{if $.NoLatency}}—{{else}}{{ms .Latency.P95}} ms{{end}}</b><span>p95 latency</span></div>
<div class="figure"><b>{{f1 .DurationS}} s</b><span>duration ({{.Seconds}} seconds sampled)</span></div>
<div class="figure"><b>{{.DroppedIterations}}</b><span>dropped iterations</span></div>
<div class="figure"><b>{{mib .BytesIn}} / {{mib .BytesOut}}</b><span>data in / out</span></div>
<div class="figure"><b>{{f1 .Client.CPUPercentAvg}} % / {{mib .Client.RSSBytesMax}}</b><span>generator CPU avg (of one core) / RSS max</span></div>
</div>
{{end}}
<h2>Charts</h2>
{{range .Charts}}
<figure>
<figcaption>{{.Title}}{{range $i, $l := .Lines}}<span class="key k{{$i}}"></span>{{$l.Name}}{{end}}</figcaption>
{{template "chart" .}}
</figure>
{{end}}
{{with .S}}
<h2>Latency (ms)</h2>
{{if $.NoLatency}}<p class="err">— no successful response: latencies are unknown</p>{{else}}
<table>
<thead><tr><th></th><th>min</th><th>mean</th><th>p50</th><th>p75</th><th>p90</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th></tr></thead>
<tbody>
{{range $.Latency}}<tr><td>{{.Name}}</td><td>{{ms .L.Min}}</td><td>{{ms .L.Mean}}</td><td>{{ms .L.P50}}</td><td>{{ms .L.P75}}</td><td>{{ms .L.P90}}</td><td>{{ms .L.P95}}</td><td>{{ms .L.P99}}</td><td>{{ms .L.P99_9}}</td><td>{{ms .L.Max}}</td></tr>
{{end}}</tbody>
</table>{{end}}
{{end}}
{{with .Thresholds}}
<h2>Thresholds</h2>
<table>
<thead><tr><th>threshold</th><th>value</th><th>result</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.Expr}}</td><td>{{.Value}}</td><td>{{if .OK}}<span class="ok">passed</span>{{else}}<span class="failed">FAILED</span>{{end}}</td></tr>
{{end}}</tbody>
</table>
{{end}}
{{with .ByName}}
<h2>Requests</h2>
<table>
<thead><tr><th>request</th><th>requests</th><th>errors</th><th>error rate</th><th>p50 ms</th><th>p90 ms</th><th>p95 ms</th><th>p99 ms</th><th>max ms</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.Name}}</td><td>{{.Requests}}</td><td>{{.Errors}}</td><td>{{.ErrorRate}}</td>{{if .None}}<td>—</td><td>—</td><td>—</td><td>—</td><td>—</td>{{else}}<td>{{ms .L.P50}}</td><td>{{ms .L.P90}}</td><td>{{ms .L.P95}}</td><td>{{ms .L.P99}}</td><td>{{ms .L.Max}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{end}}
{{if .S}}
<h2>Errors by kind</h2>
{{with .ErrorKinds}}<table>
<thead><tr><th>kind</th><th>count</th><th>share of errors</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.Key}}</td><td>{{.Count}}</td><td>{{.Share}}</td></tr>
{{end}}</tbody>
</table>{{else}}<p>No errors.</p>{{end}}
<h2>Status codes</h2>
{{with .StatusCodes}}<table>
<thead><tr><th>status</th><th>count</th><th>share</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.Key}}</td><td>{{.Count}}</td><td>{{.Share}}</td></tr>
{{end}}</tbody>
</table>{{else}}<p>No responses.</p>{{end}}
{{end}}
{{with .S}}{{with .Checks}}
<h2>Checks</h2>
<table>
<thead><tr><th>request</th><th>check</th><th>passes</th><th>fails</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.Request}}</td><td>{{.Check}}</td><td>{{.Passes}}</td><td>{{.Fails}}</td></tr>
{{end}}</tbody>
</table>
{{end}}{{with .Sweep}}
<h2>Concurrency sweep</h2>
<table>
<thead><tr><th>VUs</th><th>req/s</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>error rate</th><th>CPU %</th><th>RSS</th><th>knee</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.VUs}}</td><td>{{f1 .RPS}}</td><td>{{ms .P50}}</td><td>{{ms .P90}}</td><td>{{ms .P99}}</td><td>{{pct .ErrorRate}}</td><td>{{f1 .CPUPercent}}</td><td>{{mib .RSSBytes}}</td><td>{{if .Knee}}knee{{end}}</td></tr>
{{end}}</tbody>
</table>
{{end}}{{end}}
<footer>Generated by Volley. Latency percentiles come from merged HDR histograms; per-second lines are downsampled with LTTB when a run is long. CPU is per core (200 % = two cores busy).</footer>
</main>
</body>
</html>
{{define "chart"}}{{if .Empty}}<p>No seconds were recorded.</p>{{else}}
<svg viewBox="0 0 {{.W}} {{.H}}" role="img" aria-labelledby="{{.ID}}-title">
<title id="{{.ID}}-title">{{.Title}}: {{.YLabel}} against {{.XLabel}}</title>
{{range .YTicks}}<line class="grid" x1="{{$.Left}}" y1="{{.Pos}}" x2="{{$.Right}}" y2="{{.Pos}}"/>
<text x="{{$.Left}}" y="{{.Pos}}" dx="-8" dy="4" text-anchor="end">{{.Label}}</text>
{{end}}{{range .XTicks}}<line class="axis" x1="{{.Pos}}" y1="{{$.Bottom}}" x2="{{.Pos}}" y2="{{$.TickEnd}}"/>
<text x="{{.Pos}}" y="{{$.Bottom}}" dy="20" text-anchor="middle">{{.Label}}</text>
{{end}}<line class="axis" x1="{{.Left}}" y1="{{.Top}}" x2="{{.Left}}" y2="{{.Bottom}}"/>
<line class="axis" x1="{{.Left}}" y1="{{.Bottom}}" x2="{{.Right}}" y2="{{.Bottom}}"/>
{{range .Lines}}<polyline class="{{.Class}}" points="{{.Points}}"><title>{{.Name}}</title></polyline>
{{end}}<text x="{{.XLabelX}}" y="{{.XLabelY}}" text-anchor="middle">{{.XLabel}}</text>
<text x="{{.YLabelX}}" y="{{.YLabelY}}" text-anchor="middle" transform="rotate(-90 {{.YLabelX}} {{.YLabelY}})">{{.YLabel}}</text>
</svg>{{end}}{{end}}`
