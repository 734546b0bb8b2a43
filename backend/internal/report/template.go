package report

// pageHTML is the page: HTML5, inline CSS, inline SVG; nothing is fetched and nothing runs (the
// Content-Security-Policy says so to the browser too). Every text goes through tr (dictionary.go).
const pageHTML = `<!DOCTYPE html>
<html lang="{{.Lang}}">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="Volley">
<title>{{.HeadTitle}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "PingFang SC", "Microsoft YaHei", "Noto Sans CJK SC", sans-serif; color: #1f2937; margin: 0; background: #f8fafc; }
main { max-width: 960px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 16px; margin: 28px 0 8px; border-bottom: 1px solid #e5e7eb; padding-bottom: 4px; }
h3 { font-size: 14px; margin: 14px 0 6px; }
.meta { color: #4b5563; margin: 0 0 12px; }
.tag { display: inline-block; background: #e0e7ff; color: #3730a3; border-radius: 10px; padding: 0 8px; margin-right: 4px; font-size: 12px; }
.notes { white-space: pre-wrap; background: #fff; border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px 12px; }
.warn { background: #fef3c7; border: 1px solid #f59e0b; border-radius: 6px; padding: 8px 12px; margin: 8px 0; }
.err { color: #b91c1c; }
.outcome b { padding: 1px 8px; border-radius: 999px; }
.outcome.passed b { background: #dcfce7; color: #15803d; } .outcome.finished_with_errors b { background: #fef3c7; color: #b45309; } .outcome.failed b { background: #fee2e2; color: #b91c1c; } .outcome.stopped b { background: #e5e7eb; color: #374151; }
.why { color: #4b5563; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 8px; }
.figure { background: #fff; border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px 12px; }
.figure b { display: block; font-size: 18px; }
.figure span { color: #6b7280; font-size: 12px; }
table { border-collapse: collapse; width: 100%; background: #fff; margin-bottom: 8px; }
th, td { border: 1px solid #e5e7eb; padding: 4px 8px; text-align: right; vertical-align: top; }
th:first-child, td:first-child, td.l, th.l { text-align: left; }
td.url { text-align: left; overflow-wrap: anywhere; font-family: ui-monospace, monospace; font-size: 12px; }
th { background: #f1f5f9; font-weight: 600; }
dl.settings { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; background: #fff; border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px 12px; margin: 0 0 8px; }
dl.settings dt { color: #6b7280; } dl.settings dd { margin: 0; overflow-wrap: anywhere; }
.ok { color: #15803d; font-weight: 600; }
.failed { color: #b91c1c; font-weight: 600; }
.muted { color: #6b7280; }
details summary { cursor: pointer; color: #1d4ed8; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f8fafc; border: 1px solid #e5e7eb; padding: 6px 8px; margin: 4px 0; font-size: 12px; text-align: left; }
figure { margin: 12px 0; background: #fff; border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px; }
figcaption { font-weight: 600; margin-bottom: 4px; }
svg { width: 100%; height: auto; display: block; }
svg text { font-size: 12px; fill: #4b5563; }
svg .axis { stroke: #6b7280; stroke-width: 1; }
svg .grid { stroke: #e5e7eb; stroke-width: 1; }
svg .band { fill: #fde68a; fill-opacity: 0.5; }
svg line.event { stroke: #db2777; stroke-width: 1.2; stroke-dasharray: 4 3; }
svg text.event { fill: #db2777; font-size: 11px; }
svg polyline { fill: none; stroke-width: 1.5; stroke-linejoin: round; }
.s0 { stroke: #2563eb; } .s1 { stroke: #dc2626; } .s2 { stroke: #7c3aed; } .s3 { stroke: #ea580c; } .s4 { stroke: #0d9488; } .s5 { stroke: #92400e; } .s6 { stroke: #16a34a; } .s7 { stroke: #f59e0b; }
.key { display: inline-block; width: 14px; height: 3px; vertical-align: middle; margin: 0 4px 0 12px; }
.k0 { background: #2563eb; } .k1 { background: #dc2626; } .k2 { background: #7c3aed; } .k3 { background: #ea580c; } .k4 { background: #0d9488; } .k5 { background: #92400e; } .k6 { background: #16a34a; } .k7 { background: #f59e0b; }
.kband { background: #fde68a; height: 10px; } .kevent { background: #db2777; }
footer { color: #6b7280; font-size: 12px; margin-top: 32px; }
@media print {
  body { background: #fff; font-size: 11px; }
  main { max-width: none; padding: 0; }
  section { break-before: page; }
  section.first { break-before: auto; }
  figure, tr, .figure, dl.settings, pre { break-inside: avoid; }
  h2, h3 { break-after: avoid; }
  details > *:not(summary) { display: block; }
  details summary { color: inherit; }
}
</style>
</head>
<body>
<main>
<section class="first">
<h1>{{.Title}}</h1>
<p class="meta">{{with .StatusText}}{{tr "status"}}: <b>{{.}}</b>{{tr "sep"}}{{end}}{{with .Started}}{{tr "started" "t" .}}{{end}}{{with .Ended}}{{tr "ended" "t" .}}{{end}}{{with .Generators}} · {{.}}{{end}}{{with .S}}{{with .Executor}} · {{tr "executorIs" "e" .}}{{end}}{{end}}</p>
{{with .Meta.Tags}}<p>{{range .}}<span class="tag">{{.}}</span>{{end}}</p>{{end}}
{{with .Meta.Notes}}<div class="notes">{{.}}</div>{{end}}
{{with .Outcome}}<p class="outcome {{.}}">{{tr "outcome"}}: <b>{{$.OutcomeText}}</b>{{with $.OutcomeWhy}} <span class="why">— {{.}}</span>{{end}}</p>{{end}}
{{with .Meta.Error}}<p class="err">{{tr "error"}}: {{.}}</p>{{end}}
{{range .Warnings}}<div class="warn">{{.}}</div>
{{end}}
{{with .S}}
<h2>{{tr "h.summary"}}</h2>
<div class="figures">
<div class="figure"><b>{{.Requests}}</b><span>{{tr "fig.requests" "ok" .Successes "errors" .Errors "interrupted" .Interrupted}}</span></div>
<div class="figure"><b>{{f1 .RPS}} req/s</b><span>{{tr "fig.throughput" "rate" (f1 .SendRate)}}</span></div>
<div class="figure"><b>{{pct .ErrorRate}}</b><span>{{tr "fig.errorRate"}}</span></div>
<div class="figure"><b>{{if $.NoLatency}}—{{else}}{{ms .Latency.P95}} ms{{end}}</b><span>{{tr "fig.p95"}}</span></div>
<div class="figure"><b>{{f1 .DurationS}} s</b><span>{{tr "fig.duration" "n" .Seconds}}</span></div>
<div class="figure"><b>{{.DroppedIterations}}</b><span>{{tr "fig.dropped"}}</span></div>
<div class="figure"><b>{{mib .BytesIn}} / {{mib .BytesOut}}</b><span>{{tr "fig.data"}}</span></div>
{{if .BodyBytesDecoded}}<div class="figure"><b>{{mib .BodyBytesDecoded}}</b><span>{{tr "fig.decoded"}}</span></div>{{end}}
<div class="figure"><b>{{f1 .Client.CPUPercentAvg}} % / {{mib .Client.RSSBytesMax}}</b><span>{{tr "fig.generator"}}</span></div>
</div>
{{end}}
</section>
{{with .Settings}}
<section id="settings">
<h2>{{tr "h.settings"}}</h2>
<dl class="settings">
<dt>{{tr "set.executor"}}</dt><dd>{{.Executor}}</dd>
{{range .Load}}<dt>{{tr .Key}}</dt><dd>{{.Value}}</dd>
{{end}}{{range .Scenario}}<dt>{{tr .Key}}</dt><dd>{{.Value}}</dd>
{{end}}{{range .HTTP}}<dt>{{tr .Key}}</dt><dd>{{.Value}}</dd>
{{end}}</dl>
{{with .Stages}}<h3>{{tr "h.stages"}}</h3>
<table>
<thead><tr><th>#</th><th>{{tr "col.duration"}}</th><th>{{tr $.Settings.StageUnit}}</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.N}}</td><td>{{.Duration}}</td><td>{{.Target}}</td></tr>
{{end}}</tbody>
</table>{{end}}
<h3>{{tr "h.requestList"}}</h3>
<table>
<thead><tr><th>{{tr "col.name"}}</th><th class="l">{{tr "col.method"}}</th><th class="l">URL</th><th>{{tr "col.weight"}}</th><th>{{tr "col.thinkTime"}}</th><th>{{tr "col.checks"}}</th></tr></thead>
<tbody>
{{range .Requests}}<tr><td>{{.Name}}</td><td class="l">{{.Method}}</td><td class="url">{{.URL}}{{range .Headers}}<br><span class="muted">{{.Name}}: {{.Value}}</span>{{end}}</td><td>{{.Weight}}</td><td>{{.ThinkTime}}</td><td>{{.Checks}}</td></tr>
{{end}}</tbody>
</table>
<p class="muted">{{tr "set.secretsNote"}}</p>
</section>
{{end}}
{{with .Thresholds}}
<section id="thresholds">
<h2>{{tr "h.thresholds"}}</h2>
<table>
<thead><tr><th>{{tr "col.threshold"}}</th><th>{{tr "col.value"}}</th><th>{{tr "col.result"}}</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.Expr}}</td><td>{{.Value}}</td><td>{{if not .Evaluated}}<span class="muted">{{tr "th.notEvaluated"}}</span>{{else if .OK}}<span class="ok">{{tr "th.passed"}}</span>{{else}}<span class="failed">{{tr "th.failed"}}</span>{{end}}</td></tr>
{{end}}</tbody>
</table>
</section>
{{end}}
{{with .Verdict}}
<section id="generator">
<h2>{{tr "h.generator"}}</h2>
{{if .Bound}}<p class="warn">{{tr "gen.bound" "n" .Bound "of" .Seconds}}</p>{{else if .Passed}}<p class="ok">{{tr "gen.keptUp" "of" .Seconds}}</p>{{end}}
<dl class="settings">
<dt>{{tr "gen.boundSeconds"}}</dt><dd>{{.Bound}} / {{.Seconds}}</dd>
<dt>{{tr "gen.cpu"}}</dt><dd>{{f1 .CPUAvg}} % / {{f1 .CPUMax}} %</dd>
<dt>{{tr "gen.rss"}}</dt><dd>{{mib .RSSMax}}</dd>
{{if .AllocsPerReq}}<dt>{{tr "gen.allocs"}}</dt><dd>{{f1 .AllocsPerReq}}</dd>{{end}}
{{if .LagP99}}<dt>{{tr "gen.lag"}}</dt><dd>{{ms .LagP99}} ms</dd>{{end}}
{{with $.Outcome}}<dt>{{tr "outcome"}}</dt><dd class="outcome {{.}}"><b>{{$.OutcomeText}}</b>{{with $.OutcomeWhy}} — {{.}}{{end}}</dd>{{end}}
</dl>
<p class="muted">{{tr "gen.cpuNote"}}</p>
</section>
{{end}}
<section id="charts">
<h2>{{tr "h.charts"}}</h2>
{{range .Charts}}
<figure>
<figcaption>{{.Title}}{{range .Lines}}<span class="key {{.Key}}"></span>{{.Name}}{{end}}{{if .Bands}}<span class="key kband"></span>{{.BandLabel}}{{end}}{{if .Marks}}<span class="key kevent"></span>{{tr "chart.events"}}{{end}}</figcaption>
{{template "chart" .}}
</figure>
{{end}}
{{with .Events}}
<h3>{{tr "h.events"}}</h3>
<table>
<thead><tr><th>{{tr "col.elapsed"}}</th><th class="l">{{tr "col.time"}}</th><th class="l">{{tr "col.change"}}</th><th class="l">{{tr "col.by"}}</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.At}}</td><td class="l">{{.Time}}</td><td class="l">{{.Text}}</td><td class="l">{{.By}}</td></tr>
{{end}}</tbody>
</table>
{{end}}
</section>
{{with .Target}}
<section id="target">
<h2>{{tr "h.target"}}</h2>
{{range .Errors}}<p class="err">{{tr "target.error" "monitor" .Monitor "message" .Message "seconds" .Seconds}}</p>
{{end}}{{range .Charts}}
<figure>
<figcaption>{{.Title}}{{range .Lines}}<span class="key {{.Key}}"></span>{{.Name}}{{end}}</figcaption>
{{template "chart" .}}
</figure>
{{end}}{{with .Stats}}
<table>
<thead><tr><th class="l">{{tr "target.monitor"}}</th><th class="l">{{tr "target.series"}}</th><th>{{tr "target.avg"}}</th><th>{{tr "target.max"}}</th><th>{{tr "target.gaps"}}</th></tr></thead>
<tbody>
{{range .}}<tr><td class="l">{{.Monitor}}</td><td class="l">{{.Series}}</td><td>{{.Avg}}</td><td>{{.Max}}</td><td>{{.Gaps}} / {{.Seconds}}</td></tr>
{{end}}</tbody>
</table>
{{end}}
</section>
{{end}}
{{with .S}}
<section id="latency">
<h2>{{tr "h.latency"}}</h2>
{{if $.NoLatency}}<p class="err">— {{tr "lat.none"}}</p>{{else}}
<table>
<thead><tr><th></th><th>min</th><th>{{tr "col.mean"}}</th><th>p50</th><th>p75</th><th>p90</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th></tr></thead>
<tbody>
{{range $.Latency}}<tr><td>{{.Name}}</td>{{if eq .L.Max 0.0}}<td>—</td><td>—</td><td>—</td><td>—</td><td>—</td><td>—</td><td>—</td><td>—</td><td>—</td></tr>{{else}}<td>{{ms .L.Min}}</td><td>{{ms .L.Mean}}</td><td>{{ms .L.P50}}</td><td>{{ms .L.P75}}</td><td>{{ms .L.P90}}</td><td>{{ms .L.P95}}</td><td>{{ms .L.P99}}</td><td>{{ms .L.P99_9}}</td><td>{{ms .L.Max}}</td></tr>{{end}}
{{end}}</tbody>
</table>{{end}}
{{with $.ByName}}
<h3>{{tr "h.requests"}}</h3>
<table>
<thead><tr><th>{{tr "col.request"}}</th><th>{{tr "col.requests"}}</th>{{if $.NameRPS}}<th>req/s</th>{{end}}<th>{{tr "col.errors"}}</th><th>{{tr "col.errorRate"}}</th><th>p50 ms</th><th>p90 ms</th><th>p95 ms</th><th>p99 ms</th><th>max ms</th>{{if $.NameChecks}}<th>{{tr "col.checksPassed"}}</th>{{end}}</tr></thead>
<tbody>
{{range .}}<tr><td>{{.Name}}</td><td>{{.Requests}}</td>{{if $.NameRPS}}<td>{{f1 .RPS}}</td>{{end}}<td>{{.Errors}}</td><td>{{.ErrorRate}}</td>{{if .None}}<td>—</td><td>—</td><td>—</td><td>—</td><td>—</td>{{else}}<td>{{ms .L.P50}}</td><td>{{ms .L.P90}}</td><td>{{ms .L.P95}}</td><td>{{ms .L.P99}}</td><td>{{ms .L.Max}}</td>{{end}}{{if $.NameChecks}}<td>{{.Checks}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{end}}
{{with $.Timing}}
<h3>{{tr "h.timing"}}</h3>
<table>
<thead><tr><th>{{tr "col.request"}}</th><th class="l">{{tr "col.phase"}}</th><th>{{tr "col.mean"}}</th><th>p50</th><th>p95</th><th>p99</th><th>max</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{with .Name}}{{.}}{{else}}<i>{{tr "timing.all"}}</i>{{end}}</td><td class="l">{{tr .Phase}}</td><td>{{ms .L.Mean}}</td><td>{{ms .L.P50}}</td><td>{{ms .L.P95}}</td><td>{{ms .L.P99}}</td><td>{{ms .L.Max}}</td></tr>
{{end}}</tbody>
</table>
<p class="muted">{{tr "timing.note"}}</p>
{{end}}
{{with $.S}}{{with .WS}}
<h3>{{tr "h.ws"}}</h3>
<table>
<thead><tr><th class="l"></th><th>{{tr "ws.sessions"}}</th><th>{{tr "ws.failed"}}</th><th>{{tr "ws.sent"}}</th><th>{{tr "ws.received"}}</th></tr></thead>
<tbody><tr><td class="l">{{tr "ws.total"}}</td><td>{{.Sessions}}</td><td>{{.SessionsFailed}}</td><td>{{.MessagesSent}}</td><td>{{.MessagesReceived}}</td></tr>
<tr><td class="l">{{tr "ws.perSecond"}}</td><td></td><td></td><td>{{f1 .MessagesSentRate}}</td><td>{{f1 .MessagesReceivedRate}}</td></tr></tbody>
</table>
<table>
<thead><tr><th class="l"></th><th>{{tr "col.mean"}}</th><th>p50</th><th>p95</th><th>p99</th><th>max</th></tr></thead>
<tbody><tr><td class="l">{{tr "ws.connect"}}</td><td>{{ms .Connect.Mean}}</td><td>{{ms .Connect.P50}}</td><td>{{ms .Connect.P95}}</td><td>{{ms .Connect.P99}}</td><td>{{ms .Connect.Max}}</td></tr>
<tr><td class="l">{{tr "ws.roundTrip"}}</td><td>{{ms .RoundTrip.Mean}}</td><td>{{ms .RoundTrip.P50}}</td><td>{{ms .RoundTrip.P95}}</td><td>{{ms .RoundTrip.P99}}</td><td>{{ms .RoundTrip.Max}}</td></tr></tbody>
</table>
{{end}}{{end}}
</section>
{{end}}
{{with .Failures}}
<section id="failures">
<h2>{{tr "h.failures"}}</h2>
<table>
<thead><tr><th>{{tr "col.request"}}</th><th class="l">{{tr "col.kind"}}</th><th>{{tr "col.status"}}</th><th class="l">{{tr "col.message"}}</th><th>{{tr "col.count"}}</th><th>{{tr "col.share"}}</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.Request}}</td><td class="l">{{.Kind}}</td><td>{{if .Status}}{{.Status}}{{else}}—{{end}}</td><td class="l">{{.Message}}{{with .Sample}}
<details><summary>{{tr "fail.sample" "status" .Status}}</summary>
<pre>{{range .Headers}}{{index . 0}}: {{index . 1}}
{{end}}{{if .More}}{{tr "fail.moreHeaders" "n" .More}}
{{end}}</pre>
<pre>{{.Body}}</pre>{{if .Truncated}}<p class="muted">{{tr "fail.truncated"}}</p>{{end}}
</details>{{end}}</td><td>{{.Count}}</td><td>{{.Share}}</td></tr>
{{end}}</tbody>
</table>
{{if $.FailuresMore}}<p class="muted">{{tr "fail.more" "n" $.FailuresMore}}</p>{{end}}
</section>
{{end}}
{{if .S}}
<section id="errors">
<h2>{{tr "h.errorKinds"}}</h2>
{{with .ErrorKinds}}<table>
<thead><tr><th>{{tr "col.kind"}}</th><th>{{tr "col.count"}}</th><th>{{tr "col.shareErrors"}}</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.Key}}</td><td>{{.Count}}</td><td>{{.Share}}</td></tr>
{{end}}</tbody>
</table>{{else}}<p>{{tr "noErrors"}}</p>{{end}}
<h2>{{tr "h.statusCodes"}}</h2>
{{with .StatusCodes}}<table>
<thead><tr><th>{{tr "col.status"}}</th><th>{{tr "col.count"}}</th><th>{{tr "col.share"}}</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.Key}}</td><td>{{.Count}}</td><td>{{.Share}}</td></tr>
{{end}}</tbody>
</table>{{else}}<p>{{tr "noResponses"}}</p>{{end}}
{{with .Protocols}}
<h2>{{tr "h.protocols"}}</h2>
<table>
<thead><tr><th>{{tr "col.protocol"}}</th><th>{{tr "col.count"}}</th><th>{{tr "col.share"}}</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.Key}}</td><td>{{.Count}}</td><td>{{.Share}}</td></tr>
{{end}}</tbody>
</table>
{{end}}
{{with .S.Checks}}
<h2>{{tr "h.checks"}}</h2>
<table>
<thead><tr><th>{{tr "col.request"}}</th><th class="l">{{tr "col.check"}}</th><th>{{tr "col.passes"}}</th><th>{{tr "col.fails"}}</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.Request}}</td><td class="l">{{.Check}}</td><td>{{.Passes}}</td><td>{{.Fails}}</td></tr>
{{end}}</tbody>
</table>
{{end}}{{with .S.Sweep}}
<h2>{{tr "h.sweep"}}</h2>
<table>
<thead><tr><th>VUs</th><th>req/s</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>{{tr "col.errorRate"}}</th><th>CPU %</th><th>RSS</th><th>{{tr "col.knee"}}</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.VUs}}</td><td>{{f1 .RPS}}</td><td>{{ms .P50}}</td><td>{{ms .P90}}</td><td>{{ms .P99}}</td><td>{{pct .ErrorRate}}</td><td>{{f1 .CPUPercent}}</td><td>{{mib .RSSBytes}}</td><td>{{if .Knee}}{{tr "col.knee"}}{{end}}</td></tr>
{{end}}</tbody>
</table>
{{end}}
</section>
{{end}}
<footer>{{tr "footer"}}</footer>
</main>
</body>
</html>
{{define "chart"}}{{if .Empty}}<p>{{tr "chart.empty"}}</p>{{else}}
<svg viewBox="0 0 {{.W}} {{.H}}" role="img" aria-labelledby="{{.ID}}-title">
<title id="{{.ID}}-title">{{.Title}}: {{.YLabel}} / {{.XLabel}}</title>
{{range .Bands}}<rect class="band" x="{{.X}}" y="{{$.Top}}" width="{{.W}}" height="{{$.PlotH}}"/>
{{end}}{{range .YTicks}}<line class="grid" x1="{{$.Left}}" y1="{{.Pos}}" x2="{{$.Right}}" y2="{{.Pos}}"/>
<text x="{{$.Left}}" y="{{.Pos}}" dx="-8" dy="4" text-anchor="end">{{.Label}}</text>
{{end}}{{range .XTicks}}<line class="axis" x1="{{.Pos}}" y1="{{$.Bottom}}" x2="{{.Pos}}" y2="{{$.TickEnd}}"/>
<text x="{{.Pos}}" y="{{$.Bottom}}" dy="20" text-anchor="middle">{{.Label}}</text>
{{end}}<line class="axis" x1="{{.Left}}" y1="{{.Top}}" x2="{{.Left}}" y2="{{.Bottom}}"/>
<line class="axis" x1="{{.Left}}" y1="{{.Bottom}}" x2="{{.Right}}" y2="{{.Bottom}}"/>
{{range .Lines}}{{$name := .Name}}{{$cls := .Class}}{{range .Segments}}<polyline class="{{$cls}}" points="{{.}}"><title>{{$name}}</title></polyline>
{{end}}{{end}}{{range .Marks}}<line class="event" x1="{{.X}}" y1="{{$.Top}}" x2="{{.X}}" y2="{{$.Bottom}}"><title>{{.Label}}</title></line>
<text class="event" x="{{.X}}" y="{{$.Top}}" dx="3" dy="-4">{{.Label}}</text>
{{end}}<text x="{{.XLabelX}}" y="{{.XLabelY}}" text-anchor="middle">{{.XLabel}}</text>
<text x="{{.YLabelX}}" y="{{.YLabelY}}" text-anchor="middle" transform="rotate(-90 {{.YLabelX}} {{.YLabelY}})">{{.YLabel}}</text>
</svg>{{end}}{{end}}`
