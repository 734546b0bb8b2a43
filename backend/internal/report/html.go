package report

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// Bounds of what the page prints of a run's failures: the first maxFailureRows groups (the rest
// counted in one line), the first maxSampleGroups sample responses among them, each with at
// most maxSampleHeaders headers and its body cut at maxSampleBody bytes.
const (
	maxFailureRows   = 100
	maxSampleGroups  = 20
	maxSampleBody    = 1024
	maxSampleHeaders = 64
)

// maxTitle is the longest <title>, in characters (html-validate's long-title rule; search results
// cut there too). The page's heading keeps the whole title.
const maxTitle = 70

type kv struct {
	Key   string
	Count int64
	Share string
}

// latRow is one line of the latency table; a Latency with no maximum is one the run did not
// record (a run of an older version): its cells show "—", not 0.
type latRow struct {
	Name string
	L    metrics.Latency
}

type nameRow struct {
	Name      string
	Requests  int64
	Errors    int64
	ErrorRate string
	RPS       float64
	L         metrics.Latency
	None      bool // no response at all (HasLatency false): its latencies are unknown ("—")
	Checks    string
}

type thresholdRow struct {
	Expr  string
	Value string
	OK    bool
	// Evaluated is false for a plan's threshold when the run has no summary.
	Evaluated bool
}

type timingRow struct {
	Name  string // request name; "" for the whole run
	Phase string // dictionary key
	L     metrics.Latency
}

type failureRow struct {
	metrics.FailureGroup
	Share  string
	Sample *sampleView
}

type sampleView struct {
	Status    int
	Headers   [][2]string
	More      int // headers left out
	Body      string
	Truncated bool
}

type eventRow struct {
	At   string // elapsed, "12.5 s"
	Time string // wall clock, UTC
	Text string
	By   string
}

// verdict is the generator's verdict: could the run's figures be trusted to describe the target?
type verdict struct {
	// Passed: the run passed, so a generator that kept up means the figures describe the target
	// (said only then, as the run view does; a failed run's figures describe its failures).
	Passed         bool
	Bound, Seconds int
	CPUAvg, CPUMax float64
	RSSMax         uint64
	AllocsPerReq   float64
	LagP99         float64 // open models' schedule lag p99, ms; 0 when none
}

type page struct {
	Lang  string
	Title string
	// HeadTitle is Title cut to maxTitle characters, for the browser's tab and the file's title.
	HeadTitle   string
	Meta        Meta
	StatusText  string // the run's status in words (as it is when the dictionary lacks it)
	Started     string
	Ended       string
	Generators  string // "3 agents" for a run over agents; "" for a local run
	S           *metrics.Summary
	Settings    *settings
	Latency     []latRow
	Thresholds  []thresholdRow
	ErrorKinds  []kv
	StatusCodes []kv
	ByName      []nameRow
	// NameRPS / NameChecks: some request name has the figure (runs recorded before it existed
	// have none, and the column is left out rather than filled with zeros).
	NameRPS, NameChecks bool
	Timing              []timingRow
	Failures            []failureRow
	FailuresMore        int64 // failed requests in groups not printed
	Events              []eventRow
	Warnings            []string
	Charts              []chart
	Target              *targetView // the monitors (target.go); nil without
	Verdict             *verdict
	// Outcome is the run's outcome (metrics.OutcomeOf) and OutcomeText it in words, with
	// OutcomeWhy its reason; "" when unknown (no summary, and a status that does not say).
	Outcome     string
	OutcomeText string
	OutcomeWhy  string
	// NoLatency: no response at all (HasLatency false), so the run's latencies are unknown ("—", never 0).
	NoLatency bool
	// Protocols: responses by negotiated protocol (HTTP/2 plans only; Summary.Protocols).
	Protocols []kv
}

var funcs = template.FuncMap{
	"ms":  func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) },
	"f1":  func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"pct": func(v float64) string { return strconv.FormatFloat(v*100, 'f', 2, 64) + " %" },
	"mib": mib,
	"tr":  func(key string, args ...any) string { return tr(DefaultLang, key, args...) },
}

func mib(v any) string {
	var b float64
	switch x := v.(type) {
	case int64:
		b = float64(x)
	case uint64:
		b = float64(x)
	}
	return strconv.FormatFloat(b/(1<<20), 'f', 1, 64) + " MiB"
}

var tmpl = template.Must(template.New("report").Funcs(funcs).Parse(pageHTML))

// WriteHTML writes the run as one self-contained HTML5 page in r.Lang (DefaultLang when empty
// or unknown). Any invalid UTF-8 from the plan or the run is replaced by U+FFFD.
func WriteHTML(w io.Writer, r Report) error {
	lang := r.Lang
	if _, ok := dictionaries[lang]; !ok {
		lang = DefaultLang
	}
	t, err := tmpl.Clone()
	if err != nil {
		return err
	}
	t.Funcs(template.FuncMap{"tr": func(key string, args ...any) string { return tr(lang, key, args...) }})
	var buf bytes.Buffer
	if err := t.Execute(&buf, buildPage(r, lang)); err != nil {
		return err
	}
	_, err = w.Write(bytes.ToValidUTF8(buf.Bytes(), []byte("\uFFFD")))
	return err
}

func buildPage(r Report, lang string) page {
	t := func(key string, args ...any) string { return tr(lang, key, args...) }
	p := page{Lang: lang, Meta: r.Meta, S: r.Summary}
	p.Title = t("title")
	if r.Meta.RunID > 0 {
		p.Title += fmt.Sprintf(" #%d", r.Meta.RunID)
	}
	if r.Meta.PlanName != "" {
		p.Title += " — " + r.Meta.PlanName
	}
	p.HeadTitle = p.Title
	if rs := []rune(p.Title); len(rs) > maxTitle {
		p.HeadTitle = string(rs[:maxTitle-1]) + "…"
	}
	if st := r.Meta.Status; st != "" {
		p.StatusText = st
		if _, ok := dictionaries[lang]["status."+st]; ok {
			p.StatusText = t("status." + st)
		}
	}
	if tm := r.Meta.StartedAt; tm != nil {
		p.Started = tm.UTC().Format(time.RFC3339)
	}
	if tm := r.Meta.EndedAt; tm != nil {
		p.Ended = tm.UTC().Format(time.RFC3339)
	}
	p.Settings = settingsOf(r.Plan, t)
	s := r.Summary
	if r.Meta.Agents > 0 {
		p.Generators = t("generators", "n", r.Meta.Agents)
	}
	if r.Meta.Degraded || s != nil && s.Degraded {
		lost := "—"
		if s != nil && len(s.LostAgents) > 0 {
			lost = strings.Join(s.LostAgents, ", ")
		}
		p.Warnings = append(p.Warnings, t("warn.degraded", "lost", lost))
	}
	if s != nil {
		p.Outcome, p.NoLatency = s.Outcome(r.Meta.Status), !HasLatency(s.Latency, s.StatusCodes)
	} else if r.Meta.Status != "" {
		// without a summary only a failed or interrupted run has a known outcome
		if o := metrics.OutcomeOf(r.Meta.Status, 1, 0, nil); o == metrics.OutcomeFailed {
			p.Outcome = o
		}
	}
	if p.Outcome != "" {
		p.OutcomeText = t("outcome." + p.Outcome)
		p.OutcomeWhy = outcomeReason(r, p.Outcome, t)
	}
	if s != nil {
		p.Latency = []latRow{{t("lat.all"), s.Latency}, {t("lat.success"), s.LatencySuccess}, {t("lat.service"), s.ServiceTime}}
		for _, th := range s.Thresholds {
			row := thresholdRow{Expr: th.Expr, OK: th.OK, Value: t("noData"), Evaluated: true}
			if th.Value != nil {
				row.Value = ThresholdValue(th.Expr, *th.Value)
			}
			p.Thresholds = append(p.Thresholds, row)
		}
		p.ErrorKinds = counts(s.ErrorKinds, s.Errors)
		p.StatusCodes = counts(s.StatusCodes, 0)
		p.Protocols = counts(s.Protocols, 0)
		p.byName(s)
		p.timing(s)
		p.failures(s)
		if s.GeneratorBoundSeconds > 0 {
			p.Warnings = append(p.Warnings, t("warn.bound", "n", s.GeneratorBoundSeconds, "of", s.Seconds))
		}
		if s.Aborted != "" {
			p.Warnings = append(p.Warnings, t("warn.aborted", "why", s.Aborted))
		}
		p.Verdict = &verdict{Passed: p.Outcome == metrics.OutcomePassed, Bound: s.GeneratorBoundSeconds, Seconds: s.Seconds, CPUAvg: s.Client.CPUPercentAvg,
			CPUMax: s.Client.CPUPercentMax, RSSMax: s.Client.RSSBytesMax, AllocsPerReq: s.Client.HeapAllocsPerRequest, LagP99: s.ScheduleLag.P99}
	} else {
		p.Warnings = append(p.Warnings, t("warn.noSummary"))
		if r.Plan != nil {
			for _, th := range r.Plan.Thresholds {
				p.Thresholds = append(p.Thresholds, thresholdRow{Expr: th.Label(), Value: "—"})
			}
		}
	}
	events := runEvents(r)
	for _, e := range events {
		p.Events = append(p.Events, eventRow{At: strconv.FormatFloat(e.ElapsedS, 'f', 1, 64) + " s",
			Time: time.UnixMilli(e.T).UTC().Format("15:04:05"), Text: eventText(e, t), By: e.By})
	}
	p.Charts = charts(r, events, t)
	p.Target = targetSection(r, t)
	return p
}

// outcomeReason says why the run has its outcome.
func outcomeReason(r Report, outcome string, t func(string, ...any) string) string {
	s := r.Summary
	switch outcome {
	case metrics.OutcomeFailed:
		switch {
		case r.Meta.Error != "":
			return r.Meta.Error
		case s != nil && s.Aborted != "":
			return s.Aborted
		case s != nil && s.NoSuccessMessage() != "":
			return s.NoSuccessMessage()
		}
		return t("why.status", "status", r.Meta.Status)
	case metrics.OutcomeFinishedWithErrors:
		var why []string
		if s.ErrorRate > metrics.MaxPassedErrorRate {
			why = append(why, t("why.errorRate", "rate", pctText(s.ErrorRate), "max", pctText(metrics.MaxPassedErrorRate)))
		}
		if n := failedThresholds(s); n > 0 {
			why = append(why, t("why.thresholds", "n", n))
		}
		return strings.Join(why, t("why.join"))
	case metrics.OutcomePassed:
		return t("why.passed", "max", pctText(metrics.MaxPassedErrorRate))
	case metrics.OutcomeStopped:
		return t("why.stopped")
	}
	return ""
}

func failedThresholds(s *metrics.Summary) int {
	n := 0
	for _, th := range s.Thresholds {
		if !th.OK {
			n++
		}
	}
	return n
}

// ThresholdValue prints a threshold's observed value in its metric's unit, as the run view does
// (fmtThresholdValue in frontend/src/lib/format.ts): an error_rate fraction as a percentage with 3
// significant digits (0.202818 → "20.3 %"), a latency in ms with 3 decimals (as the
// report's latency tables), rps in req/s with 1,
// anything else with 4 significant digits.
func ThresholdValue(expr string, v float64) string {
	rule, err := plan.ParseThreshold(expr)
	switch {
	case err != nil:
	case rule.Metric == "error_rate":
		return sig3(v*100) + " %"
	case rule.Metric == "rps":
		return strconv.FormatFloat(v, 'f', 1, 64) + " req/s"
	default: // p, avg, min, max, med: ms
		return strconv.FormatFloat(v, 'f', 3, 64) + " ms"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// sig3 prints v rounded to 3 significant digits, without an exponent or trailing zeros (100 and
// more: no decimals).
func sig3(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	d := max(2-int(math.Floor(math.Log10(math.Abs(v)))), 0)
	text := strconv.FormatFloat(v, 'f', d, 64)
	if d > 0 {
		text = strings.TrimRight(strings.TrimRight(text, "0"), ".")
	}
	return text
}

// HasLatency tells whether a latency block (ms) describes any response, error statuses (503, a
// failed check) included: some status was counted, or some latency is above 0. A request that got
// no response (connection refused, timeout) records no latency, so a name or run with none has
// unknown latencies ("—"), never 0. The frontend's hasLatencyData (frontend/src/lib/format.ts)
// is the same rule.
func HasLatency(l metrics.Latency, statusCodes map[string]int64) bool {
	for _, n := range statusCodes {
		if n > 0 {
			return true
		}
	}
	return l.Max > 0
}

func pctText(v float64) string { return strconv.FormatFloat(v*100, 'f', 2, 64) + " %" }

func (p *page) byName(s *metrics.Summary) {
	for _, name := range slices.Sorted(maps.Keys(s.ByName)) {
		n := s.ByName[name]
		row := nameRow{Name: name, Requests: n.Requests, Errors: n.Errors, L: n.Latency, RPS: n.RPS, ErrorRate: "–", None: !HasLatency(n.Latency, nil)}
		if n.Requests > 0 {
			row.ErrorRate = pctText(float64(n.Errors) / float64(n.Requests))
		}
		if c := n.ChecksPassed + n.ChecksFailed; c > 0 {
			row.Checks = fmt.Sprintf("%d / %d", n.ChecksPassed, c)
			p.NameChecks = true
		}
		p.NameRPS = p.NameRPS || n.RPS > 0
		p.ByName = append(p.ByName, row)
	}
}

// timing lists the timing breakdown of the run and of each request name; a phase that never
// took any time anywhere (TLS over plain HTTP) is left out, and so is a run recorded before
// the breakdown existed.
func (p *page) timing(s *metrics.Summary) {
	phases := []struct {
		key string
		get func(metrics.Timing) metrics.Latency
	}{
		{"phase.connect", func(t metrics.Timing) metrics.Latency { return t.Connect }},
		{"phase.tls", func(t metrics.Timing) metrics.Latency { return t.TLS }},
		{"phase.wait", func(t metrics.Timing) metrics.Latency { return t.Wait }},
		{"phase.receive", func(t metrics.Timing) metrics.Latency { return t.Receive }},
	}
	type named struct {
		name string
		t    metrics.Timing
	}
	all := []named{{"", s.Timing}}
	if len(s.ByName) > 1 {
		for _, name := range slices.Sorted(maps.Keys(s.ByName)) {
			all = append(all, named{name, s.ByName[name].Timing})
		}
	}
	for _, ph := range phases {
		used := false
		for _, n := range all {
			used = used || ph.get(n.t).Max > 0
		}
		if !used {
			continue
		}
		for _, n := range all {
			if n.t != (metrics.Timing{}) {
				p.Timing = append(p.Timing, timingRow{Name: n.name, Phase: ph.key, L: ph.get(n.t)})
			}
		}
	}
	// group by request: the whole run's phases first, then each name's
	slices.SortStableFunc(p.Timing, func(a, b timingRow) int { return cmp.Compare(a.Name, b.Name) })
}

func (p *page) failures(s *metrics.Summary) {
	var total int64
	for _, g := range s.Failures {
		total += g.Count
	}
	samples := 0
	for i, g := range s.Failures {
		if i >= maxFailureRows {
			p.FailuresMore += g.Count
			continue
		}
		row := failureRow{FailureGroup: g}
		if total > 0 {
			row.Share = pctText(float64(g.Count) / float64(total))
		}
		if g.Sample != nil && samples < maxSampleGroups {
			samples++
			v := &sampleView{Status: g.Sample.Status, Body: g.Sample.Body, Truncated: g.Sample.BodyTruncated, Headers: g.Sample.Headers}
			if len(v.Body) > maxSampleBody {
				cut := maxSampleBody
				for cut > 0 && !utf8.RuneStart(v.Body[cut]) {
					cut--
				}
				v.Body, v.Truncated = v.Body[:cut], true
			}
			if len(v.Headers) > maxSampleHeaders {
				v.Headers, v.More = v.Headers[:maxSampleHeaders], len(v.Headers)-maxSampleHeaders
			}
			row.Sample = v
		}
		p.Failures = append(p.Failures, row)
	}
}

// runEvents are the run's live-control events: the summary's, or (a run without one yet) the
// seconds'.
func runEvents(r Report) []metrics.RunEvent {
	if r.Summary != nil && len(r.Summary.Events) > 0 {
		return r.Summary.Events
	}
	var ev []metrics.RunEvent
	for _, s := range r.Samples {
		ev = append(ev, s.Events...)
	}
	return ev
}

func eventText(e metrics.RunEvent, t func(string, ...any) string) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return t("event."+e.Kind, "from", f(e.From), "to", f(e.To))
}

// charts are the run view's charts: throughput (generator-bound seconds shaded), latency
// percentiles, errors (and dropped iterations of open models), VUs, status codes, the
// generator's CPU and memory, and open models' schedule lag; each with the live-control events
// marked.
func charts(r Report, events []metrics.RunEvent, t func(string, ...any) string) []chart {
	ss := r.Samples
	xl := t("axis.elapsed")
	o := chartOpts{events: events, eventText: func(e metrics.RunEvent) string { return eventText(e, t) }}
	noSuccess := func(s metrics.Sample) bool { return s.Requests > 0 && s.Errors >= s.Requests }
	latency := func(get func(metrics.Latency) float64) func(metrics.Sample) float64 {
		return func(s metrics.Sample) float64 {
			if noSuccess(s) || s.Requests == 0 {
				return math.NaN() // no response this second: unknown, not 0
			}
			return get(s.Latency)
		}
	}
	var dropped, lag bool
	for _, s := range ss {
		dropped = dropped || s.DroppedIterations > 0
		lag = lag || s.Client.ScheduleLagP99Ms > 0
	}
	if r.Plan != nil && strings.Contains(r.Plan.Load.Executor, "arrival-rate") {
		dropped, lag = true, true
	}
	tps := o
	tps.band, tps.bandLabel = func(s metrics.Sample) bool { return s.GeneratorBound }, t("chart.bound")
	out := []chart{
		lineChart("tps", t("chart.tps"), t("axis.rps"), xl, ss, []seriesDef{
			{t("series.rps"), func(s metrics.Sample) float64 { return s.RPS }, 0},
		}, tps),
		lineChart("latency", t("chart.latency"), t("axis.ms"), xl, ss, []seriesDef{
			{"p50", latency(func(l metrics.Latency) float64 { return l.P50 }), 6},
			{"p95", latency(func(l metrics.Latency) float64 { return l.P95 }), 7},
			{"p99", latency(func(l metrics.Latency) float64 { return l.P99 }), 1},
		}, o),
	}
	errs := []seriesDef{{t("series.errors"), func(s metrics.Sample) float64 { return perS(s, s.Errors) }, 1}}
	title := t("chart.errors")
	if dropped {
		errs = append(errs, seriesDef{t("series.dropped"), func(s metrics.Sample) float64 { return perS(s, s.DroppedIterations) }, 3})
		title = t("chart.errorsDropped")
	}
	out = append(out,
		lineChart("errors", title, t("axis.perS"), xl, ss, errs, o),
		lineChart("vus", t("chart.vus"), t("axis.vus"), xl, ss, []seriesDef{
			{"VUs", func(s metrics.Sample) float64 { return float64(s.ActiveVUs) }, 2},
		}, o))
	if c := statusChart(ss, xl, o, t); c != nil {
		out = append(out, *c)
	}
	out = append(out,
		lineChart("cpu", t("chart.cpu"), t("axis.cpu"), xl, ss, []seriesDef{
			{"CPU", func(s metrics.Sample) float64 { return s.Client.CPUPercent }, 4},
		}, o),
		lineChart("rss", t("chart.rss"), t("axis.mib"), xl, ss, []seriesDef{
			{"RSS", func(s metrics.Sample) float64 { return float64(s.Client.RSSBytes) / (1 << 20) }, 5},
		}, o))
	if lag {
		out = append(out, lineChart("lag", t("chart.lag"), t("axis.ms"), xl, ss, []seriesDef{
			{"p99", func(s metrics.Sample) float64 { return s.Client.ScheduleLagP99Ms }, 3},
		}, o))
	}
	return out
}

// perS is n over the second's interval (n when the interval is unknown).
func perS(s metrics.Sample, n int64) float64 {
	if s.IntervalS > 0 {
		return float64(n) / s.IntervalS
	}
	return float64(n)
}

// maxStatusLines bounds the status-code chart: the most frequent codes, the rest as "other".
const maxStatusLines = 5

// statusChart draws responses per second by status code; nil when no second has any.
func statusChart(ss []metrics.Sample, xl string, o chartOpts, t func(string, ...any) string) *chart {
	total := map[string]int64{}
	for _, s := range ss {
		for k, v := range s.StatusCodes {
			total[k] += v
		}
	}
	if len(total) == 0 {
		return nil
	}
	rows := counts(total, 0)
	var defs []seriesDef
	top := map[string]bool{}
	for i, row := range rows {
		if i == maxStatusLines {
			break
		}
		code := row.Key
		top[code] = true
		defs = append(defs, seriesDef{code, func(s metrics.Sample) float64 { return perS(s, s.StatusCodes[code]) }, -1})
	}
	if len(rows) > maxStatusLines {
		defs = append(defs, seriesDef{t("series.other"), func(s metrics.Sample) float64 {
			var n int64
			for k, v := range s.StatusCodes {
				if !top[k] {
					n += v
				}
			}
			return perS(s, n)
		}, -1})
	}
	c := lineChart("status", t("chart.status"), t("axis.perS"), xl, ss, defs, o)
	return &c
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
			row.Share = pctText(float64(v) / float64(total))
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
