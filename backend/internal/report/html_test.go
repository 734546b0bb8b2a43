package report

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

const secretValue = "s3cr3t-token-value"

// rich is fixture(seconds) with everything a report can show: the plan, per-request timing,
// checks and rates, failures with sample responses, live-control events and status codes per
// second.
func rich(seconds int) Report {
	r := fixture(seconds)
	keep := false
	r.Plan = &plan.Plan{Name: "home page", ThinkTime: "500ms-2s",
		Requests: []plan.Request{
			{Name: "home", Method: "GET", URL: "https://shop.example.test/?key={{secret.API_KEY}}", Weight: 3,
				Headers: map[string]string{"Authorization": "Bearer " + secretValue, "X-Trace": "on"}},
			{Name: "<script>x</script>", Method: "POST", URL: "https://shop.example.test/cart", Weight: 1, Checks: []plan.Check{{Type: "status", Op: "eq", Value: 200}}},
		},
		Load:       plan.Load{Executor: "ramping-arrival-rate", StartRate: 10, TimeUnit: plan.Duration(1e9), PreAllocatedVUs: 20, MaxVUs: 200, GracefulStop: plan.Duration(5e9), Stages: []plan.Stage{{Duration: plan.Duration(30e9), Target: 100}, {Duration: plan.Duration(60e9), Target: 400}}},
		HTTP:       plan.HTTP{Timeout: plan.Duration(10e9), ConnectTimeout: plan.Duration(3e9), KeepAlive: &keep},
		Thresholds: []plan.Threshold{{Expr: "p(95)<200ms"}, {Expr: "error_rate<0.1%", AbortOnFail: true}},
		Secrets:    plan.SecretValues{"API_KEY": secretValue},
	}
	s := r.Summary
	lat := func(base float64) metrics.Latency {
		return metrics.Latency{Min: base / 2, Mean: base, P50: base, P75: base * 1.2, P90: base * 1.5, P95: base * 2, P99: base * 3, P99_9: base * 4, Max: base * 5}
	}
	s.Timing = metrics.Timing{Connect: lat(0.25), TLS: lat(1.5), Wait: lat(0.75), Receive: lat(0.125)}
	home := s.ByName["home"]
	home.Timing, home.RPS, home.ChecksPassed, home.ChecksFailed = s.Timing, 666.7, 7990, 10
	s.ByName["home"] = home
	s.ByName["dead"] = metrics.NameStats{Requests: 5, Errors: 5}
	s.Failures = []metrics.FailureGroup{
		{Request: "<script>x</script>", Kind: "status_5xx", Status: 503, Message: "HTTP 503 Service Unavailable", Count: 40,
			Sample: &metrics.FailureSample{Status: 503, Headers: [][2]string{{"Content-Type", "text/html"}, {"Retry-After", "5"}},
				Body: `<html><body>down for maintenance</body></html>`}},
		{Request: "home", Kind: "timeout", Message: "request timed out after 10s", Count: 10},
	}
	s.Events = []metrics.RunEvent{{T: r.Samples[0].T + 20_000, ElapsedS: 21, Kind: "vus", From: 10, To: 50, By: "alice"},
		{T: r.Samples[0].T + 40_000, ElapsedS: 41.5, Kind: "rate", From: 100, To: 250, By: "api token ci"}}
	for i := range r.Samples {
		r.Samples[i].StatusCodes = map[string]int64{"200": r.Samples[i].Requests - r.Samples[i].Errors, "503": r.Samples[i].Errors}
		r.Samples[i].DroppedIterations = int64(i % 2)
		r.Samples[i].Client.ScheduleLagP99Ms = 0.5
	}
	return r
}

func render(t *testing.T, r Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	checkHTML5(t, buf.Bytes())
	if !utf8.Valid(buf.Bytes()) {
		t.Error("the page is not valid UTF-8")
	}
	if i := strings.Index(buf.String(), "⟦"); i >= 0 {
		t.Errorf("a text has no dictionary entry: %.60s", buf.String()[i:])
	}
	if dir := os.Getenv("VOLLEY_REPORT_SAMPLE"); dir != "" { // write the page to look at
		_ = os.WriteFile(filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+".html"), buf.Bytes(), 0o644)
	}
	return buf.String()
}

// Every section is there, in each language, with its values formatted.
func TestHTMLSectionsPerLanguage(t *testing.T) {
	for _, lang := range Langs {
		t.Run(lang, func(t *testing.T) {
			r := rich(60)
			r.Lang = lang
			// every response an error (503), yet responses: their latency is known
			r.Summary.ByName["unavailable"] = metrics.NameStats{Requests: 4, Errors: 4, Latency: metrics.Latency{P50: 2, P90: 3, P95: 4, P99: 5, Max: 6}}
			doc := render(t, r)
			tt := func(key string, args ...any) string { return template_escape(tr(lang, key, args...)) }
			for _, want := range []string{
				`<html lang="` + lang + `">`,
				`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
				tt("h.summary"), tt("h.settings"), tt("h.stages"), tt("h.requestList"), tt("h.thresholds"), tt("h.generator"),
				tt("h.charts"), tt("h.events"), tt("h.latency"), tt("h.requests"), tt("h.timing"), tt("h.failures"),
				tt("h.errorKinds"), tt("h.statusCodes"), tt("h.checks"),
				// load settings
				"<dd>ramping-arrival-rate</dd>", tt("set.preAllocatedVUs") + "</dt><dd>20</dd>", tt("set.timeUnit") + "</dt><dd>1s</dd>",
				tt("set.startRate") + "</dt><dd>10</dd>", tt("set.keepAlive") + "</dt><dd>" + tt("no") + "</dd>", tt("set.timeout") + "</dt><dd>10s</dd>",
				tt("set.thinkTime") + "</dt><dd>500ms-2s</dd>", "<td>2</td><td>1m0s</td><td>400</td>", tt("set.stageRate"),
				`<td class="url">https://shop.example.test/?key={{secret.API_KEY}}<br><span class="muted">Authorization: ********</span><br><span class="muted">X-Trace: on</span></td><td>3</td>`,
				"<td>&lt;script&gt;x&lt;/script&gt;</td><td class=\"l\">POST</td>",
				// thresholds with results, the outcome and its reason
				"p(95)&lt;200ms</td><td>4.200 ms</td><td><span class=\"ok\">" + tt("th.passed"), tt("th.failed"),
				tt("outcome.finished_with_errors"), tt("why.thresholds", "n", 1),
				// generator verdict
				tt("gen.bound", "n", 2, "of", 60), "<dd>2 / 60</dd>", "<dd>55.0 % / 90.0 %</dd>", "<dd>50.0 MiB</dd>",
				// per request: rate and checks of the names that have them
				"<td>home</td><td>8000</td><td>666.7</td><td>10</td><td>0.12 %</td><td>1.000</td>", "<td>7990 / 8000</td>",
				// the timing breakdown: the run's, then each name's
				"<td class=\"l\">" + tt("phase.wait") + "</td><td>0.750</td><td>0.750</td><td>1.500</td><td>2.250</td><td>3.750</td>",
				tt("phase.tls"), tt("timing.all"),
				// failures, with the sample response in <details>
				"HTTP 503 Service Unavailable", "<td>80.00 %</td>", "<summary>" + tt("fail.sample", "status", 503) + "</summary>",
				"&lt;html&gt;&lt;body&gt;down for maintenance", "request timed out after 10s</td><td>10</td><td>20.00 %</td>",
				// events: in the table and on each time chart
				tt("event.vus", "from", 10, "to", 50), tt("event.rate", "from", 100, "to", 250), "<td>41.5 s</td>", "api token ci",
				// every chart of the run view
				tt("chart.tps"), tt("chart.latency"), tt("chart.errorsDropped"), tt("chart.vus"), tt("chart.status"),
				tt("chart.cpu"), tt("chart.rss"), tt("chart.lag"), tt("chart.bound"),
			} {
				if !strings.Contains(doc, want) {
					t.Errorf("the page lacks %q", want)
				}
			}
			if strings.Contains(doc, secretValue) {
				t.Error("a secret value is in the page")
			}
			// 8 charts (status codes, lag and dropped iterations included), each with 2 event marks
			if n := strings.Count(doc, "<svg"); n != 8 {
				t.Errorf("%d charts, want 8", n)
			}
			if n := strings.Count(doc, `<line class="event"`); n != 16 {
				t.Errorf("%d event marks, want 2 on each of 8 charts", n)
			}
			if n := strings.Count(doc, `<rect class="band"`); n != 1 {
				t.Errorf("%d generator-bound bands, want 1 (second 3)", n)
			}
			// a latency the run did not record (service time, here) shows "—", never 0
			if !strings.Contains(doc, "<tr><td>"+tt("lat.service")+"</td><td>—</td>") {
				t.Error("an unrecorded latency does not show —")
			}
			if !strings.Contains(doc, "<td>unavailable</td><td>4</td><td>0.0</td><td>4</td><td>100.00 %</td><td>2.000</td><td>3.000</td><td>4.000</td><td>5.000</td><td>6.000</td>") {
				t.Error("a request name whose responses were all errors does not show its latencies")
			}
			// the name without any response shows "—" for its latencies, never 0
			if !strings.Contains(doc, "<td>dead</td><td>5</td><td>0.0</td><td>5</td><td>100.00 %</td><td>—</td><td>—</td><td>—</td><td>—</td><td>—</td><td></td></tr>") {
				t.Error("a request name without success does not show — for its latencies")
			}
		})
	}
}

// template_escape is how html/template writes plain text.
func template_escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// An older run has no failure groups, timing breakdown, per-name rate or checks, and no events:
// the page leaves them out rather than showing zeros.
func TestHTMLOlderRunLeavesOutWhatItLacks(t *testing.T) {
	r := fixture(30)
	doc := render(t, r)
	for _, absent := range []string{`id="failures"`, tr("en", "h.timing"), tr("en", "h.events"), `class="event"`,
		"<th>req/s</th>", tr("en", "col.checksPassed"), tr("en", "chart.lag"), tr("en", "h.settings")} {
		if strings.Contains(doc, absent) {
			t.Errorf("the page shows %q for a run that lacks it", absent)
		}
	}
	// the latency chart breaks, rather than dropping to 0, in a second without success
	r.Samples[10].Errors = r.Samples[10].Requests
	doc = render(t, r)
	if n := strings.Count(doc, "<title>p95</title>"); n != 2 {
		t.Errorf("the p95 line has %d segments, want 2 around the second without a response", n)
	}
}

// Text from the plan and the run is escaped, and invalid UTF-8 replaced: a hostile plan name, URL,
// header or failure body cannot add markup to the page.
func TestHTMLEscapesHostileInput(t *testing.T) {
	const evil = "</script><script>alert(1)</script>\"'><img src=x onerror=alert(2)>\xff\xfe"
	r := rich(10)
	r.Meta.PlanName, r.Meta.Notes, r.Meta.Tags, r.Meta.Error = evil, evil, []string{evil}, evil
	r.Plan.Requests[0].URL = "https://x.test/" + evil
	r.Plan.Requests[0].Name = evil
	r.Plan.Requests[0].Headers = map[string]string{evil: evil}
	r.Summary.Failures[0].Message = evil
	r.Summary.Failures[0].Request = evil
	r.Summary.Failures[0].Sample.Body = evil + strings.Repeat("é", 2000)
	r.Summary.Failures[0].Sample.Headers = [][2]string{{evil, evil}}
	r.Summary.Events[0].By = evil
	r.Summary.ByName[evil] = metrics.NameStats{Requests: 1}
	r.Summary.Thresholds[0].Expr = evil
	for _, lang := range Langs {
		r.Lang = lang
		doc := render(t, r)
		low := strings.ToLower(doc)
		if strings.Contains(low, "<script") || strings.Contains(low, "<img") || strings.Contains(doc, "\xff") {
			t.Errorf("%s: hostile text reached the page as markup", lang)
		}
		if !strings.Contains(doc, "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&#34;&#39;&gt;&lt;img src=x onerror=alert(2)&gt;\uFFFD") {
			t.Errorf("%s: hostile text is not shown escaped", lang)
		}
		// the body is cut at 1 KiB on a character boundary
		if !strings.Contains(doc, tr(lang, "fail.truncated")) {
			t.Errorf("%s: the long body is not marked as cut", lang)
		}
	}
}

// A run of an hour keeps its page light: each line is downsampled, the failures printed are
// bounded.
func TestHTMLHourLongRunIsLight(t *testing.T) {
	r := rich(3600)
	for i := range 300 { // more failure groups than are printed, each with a sample
		r.Summary.Failures = append(r.Summary.Failures, metrics.FailureGroup{Request: "home", Kind: "status_5xx", Status: 500,
			Message: fmt.Sprintf("HTTP 500 #%d", i), Count: 1, Sample: &metrics.FailureSample{Status: 500, Body: strings.Repeat("x", 1024)}})
	}
	doc := render(t, r)
	root, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "polyline" {
			for _, a := range n.Attr {
				if a.Key == "points" {
					if pts := len(strings.Fields(a.Val)); pts > maxChartPoints {
						t.Errorf("a line has %d points, want ≤ %d", pts, maxChartPoints)
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	if n := strings.Count(doc, "<details>"); n != maxSampleGroups {
		t.Errorf("%d sample responses printed, want %d", n, maxSampleGroups)
	}
	if !strings.Contains(doc, tr("en", "fail.more", "n", 300+2-maxFailureRows)) {
		t.Error("the failed requests of groups not printed are not counted")
	}
	t.Logf("a 3600-second run's page: %d bytes", len(doc))
	if len(doc) > 400_000 {
		t.Errorf("page of %d bytes", len(doc))
	}
}

var placeholder = regexp.MustCompile(`\{([a-z]+)\}`)

// Both languages define every key, with the same placeholders; every key the page uses exists.
func TestDictionariesAgree(t *testing.T) {
	en := dictionaries["en"]
	for _, lang := range Langs {
		d := dictionaries[lang]
		if d == nil {
			t.Fatalf("no dictionary for %s", lang)
		}
		for k, v := range en {
			w, ok := d[k]
			if !ok {
				t.Errorf("%s lacks %q", lang, k)
				continue
			}
			a, b := placeholder.FindAllString(v, -1), placeholder.FindAllString(w, -1)
			slices.Sort(a)
			slices.Sort(b)
			if !slices.Equal(a, b) {
				t.Errorf("%s %q has placeholders %v, en %v", lang, k, b, a)
			}
		}
		for k := range d {
			if _, ok := en[k]; !ok {
				t.Errorf("%s has %q, en does not", lang, k)
			}
		}
	}
	if len(dictionaries) != len(Langs) {
		t.Errorf("dictionaries for %v, languages %v", slices.Sorted(maps.Keys(dictionaries)), Langs)
	}
	// the keys written literally in the template and the code
	var src []byte
	for _, f := range []string{"template.go", "html.go", "settings.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	used := regexp.MustCompile(`(?:\btr |\bt\(|\btt\()"([a-zA-Z]+(?:\.[a-zA-Z_]+)?)"|"((?:set|phase)\.[a-zA-Z]+)"`).FindAllSubmatch(src, -1)
	if len(used) < 50 {
		t.Fatalf("found only %d keys in the sources", len(used))
	}
	for _, m := range used {
		k := string(m[1]) + string(m[2])
		if _, ok := en[k]; !ok && !strings.HasSuffix(k, ".") {
			t.Errorf("key %q is used but not defined", k)
		}
	}
	for _, k := range []string{metrics.OutcomePassed, metrics.OutcomeFinishedWithErrors, metrics.OutcomeFailed} {
		if _, ok := en["outcome."+k]; !ok {
			t.Errorf("outcome %q has no text", k)
		}
	}
}

func TestLang(t *testing.T) {
	for _, c := range []struct {
		query, accept, want string
		ok                  bool
	}{
		{"", "", "en", true},
		{"zh-CN", "en", "zh-CN", true},
		{"ZH-cn", "", "zh-CN", true},
		{"zh", "", "zh-CN", true},
		{"en", "zh-CN", "en", true},
		{"fr", "", "en", false},
		{"", "zh-CN,zh;q=0.9,en;q=0.8", "zh-CN", true},
		{"", "fr-FR, en;q=0.5, zh-TW;q=0.7", "zh-CN", true},
		{"", "de, en-GB;q=0.9", "en", true},
		{"", "fr", "en", true},
		{"", "zh;q=0, en", "en", true},
	} {
		if got, ok := Lang(c.query, c.accept); got != c.want || ok != c.ok {
			t.Errorf("Lang(%q, %q) = %q, %v; want %q, %v", c.query, c.accept, got, ok, c.want, c.ok)
		}
	}
}

// "The generator kept up … the figures describe the target" is said of a passed run only (as the
// run view does); a failed run's figures describe its failures.
func TestHTMLKeptUpOnlyWhenPassed(t *testing.T) {
	v, rate := 4.2, 0.000202818
	for _, passed := range []bool{true, false} {
		r := fixture(3)
		s := *r.Summary
		s.GeneratorBoundSeconds = 0
		s.Thresholds = []metrics.ThresholdResult{{Expr: "p(95)<200ms", Value: &v, OK: true}, {Expr: "error_rate<1%", Value: &rate, OK: passed}}
		r.Summary = &s
		doc := render(t, r)
		if got := strings.Contains(doc, template_escape(tr(r.Lang, "gen.keptUp", "of", s.Seconds))); got != passed {
			t.Errorf("passed %v: kept-up note shown %v", passed, got)
		}
		// threshold values in their unit, not raw
		if !strings.Contains(doc, "<td>4.200 ms</td>") || !strings.Contains(doc, "<td>0.0203 %</td>") {
			t.Errorf("threshold values not formatted in:\n%s", doc[strings.Index(doc, `id="thresholds"`):][:600])
		}
	}
}

func TestThresholdValue(t *testing.T) {
	for _, c := range []struct {
		expr string
		v    float64
		want string
	}{
		{"error_rate<5%", 0.20114255086900537, "20.1 %"},
		{"error_rate < 0.05", 0.000045, "0.0045 %"},
		{"error_rate<5%", 1, "100 %"},
		{"error_rate<5%", 0, "0 %"},
		{"p(95)<200ms", 12.34567, "12.346 ms"},
		{"avg<1s", 0.5, "0.500 ms"},
		{"rps>100", 1234.56, "1234.6 req/s"},
	} {
		if got := ThresholdValue(c.expr, c.v); got != c.want {
			t.Errorf("ThresholdValue(%q, %v) = %q, want %q", c.expr, c.v, got, c.want)
		}
	}
}
