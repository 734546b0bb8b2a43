package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/volley-load/volley/backend/internal/metrics"
)

func fixture(seconds int) Report {
	started := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ended := started.Add(time.Duration(seconds) * time.Second)
	v := 4.2
	sum := &metrics.Summary{Requests: 12000, Successes: 11950, Errors: 50, DurationS: float64(seconds), RPS: 1000.5,
		SendRate: 1001, ErrorRate: 50.0 / 12000, Executor: "constant-vus", Seconds: seconds, GeneratorBoundSeconds: 2,
		Latency:     metrics.Latency{Min: 0.1, Mean: 1.2, P50: 1, P75: 1.5, P90: 2, P95: 3, P99: 5, P99_9: 9, Max: 20},
		StatusCodes: map[string]int64{"200": 11950, "503": 50}, ErrorKinds: map[string]int64{"status_5xx": 40, "timeout": 10},
		Thresholds: []metrics.ThresholdResult{{Expr: "p(95)<200ms", Value: &v, OK: true}, {Expr: "error_rate<0.1%", OK: false}},
		ByName: map[string]metrics.NameStats{
			"home":               {Requests: 8000, Errors: 10, Latency: metrics.Latency{P50: 1, P95: 2, P99: 4, Max: 9}},
			"<script>x</script>": {Requests: 4000, Errors: 40},
		},
		Checks: []metrics.CheckResult{{Request: "home", Check: "status eq 200", Passes: 7990, Fails: 10}},
		Client: metrics.ClientSummary{CPUPercentAvg: 55, CPUPercentMax: 90, RSSBytesMax: 50 << 20}}
	var samples []metrics.Sample
	for i := 1; i <= seconds; i++ {
		samples = append(samples, metrics.Sample{T: started.Add(time.Duration(i) * time.Second).UnixMilli(), ElapsedS: i,
			IntervalS: 1, Requests: 1000 + int64(i%7), RPS: 1000 + float64(i%7), Errors: int64(i % 3),
			Latency:   metrics.Latency{P50: 1, P90: 2, P95: 3 + float64(i%5)/10, P99: 5, Max: 20},
			ActiveVUs: 10, GeneratorBound: i == 3, Client: metrics.ClientSample{CPUPercent: 55.5, RSSBytes: 50 << 20}})
	}
	return Report{
		Run:     map[string]any{"id": 7, "plan_name": "home page"},
		Meta:    Meta{RunID: 7, PlanName: `home & "page" <b>`, Status: "finished", StartedAt: &started, EndedAt: &ended, Notes: "v2 build\nsecond line", Tags: []string{"baseline", "v2"}},
		Summary: sum,
		Samples: samples,
	}
}

// checkHTML5 checks that doc is well-formed HTML5 and self-contained: a doctype first, every
// element closed in order (void elements and self-closed SVG elements aside), no duplicate
// attribute or id, no script/link/img/iframe/object/embed, no src/href/action/srcset/poster/data
// attribute and no CSS url() or @import — so nothing is fetched from anywhere.
func checkHTML5(t *testing.T, doc []byte) {
	t.Helper()
	if _, err := html.Parse(bytes.NewReader(doc)); err != nil {
		t.Fatalf("html.Parse: %v", err)
	}
	z := html.NewTokenizer(bytes.NewReader(doc))
	void := map[string]bool{"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
		"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true}
	var stack []string
	ids := map[string]bool{}
	first := true
	svgDepth := 0
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Fatalf("tokenizer: %v", z.Err())
			}
			break
		}
		tok := z.Token()
		if first && tt != html.TextToken {
			if tt != html.DoctypeToken || !strings.EqualFold(tok.Data, "html") {
				t.Fatalf("first token %v %q, want <!DOCTYPE html>", tt, tok.Data)
			}
			first = false
			continue
		}
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			switch tok.Data {
			case "script", "link", "img", "iframe", "object", "embed", "base", "image", "use", "foreignobject":
				t.Errorf("element <%s> is not allowed in a self-contained report", tok.Data)
			}
			seen := map[string]bool{}
			for _, a := range tok.Attr {
				key := strings.ToLower(a.Key)
				if a.Namespace != "" {
					key = a.Namespace + ":" + key
				}
				if seen[key] {
					t.Errorf("<%s> repeats attribute %s", tok.Data, key)
				}
				seen[key] = true
				switch key {
				case "src", "href", "xlink:href", "action", "srcset", "poster", "data", "formaction", "background":
					t.Errorf("<%s %s=%q>: no resource attributes allowed", tok.Data, key, a.Val)
				case "id":
					if ids[a.Val] {
						t.Errorf("duplicate id %q", a.Val)
					}
					ids[a.Val] = true
				}
				low := strings.ToLower(a.Val)
				if strings.Contains(low, "http://") || strings.Contains(low, "https://") || strings.Contains(low, "url(") {
					t.Errorf("<%s %s=%q> refers to an external resource", tok.Data, key, a.Val)
				}
				if strings.HasPrefix(key, "on") {
					t.Errorf("<%s %s>: no event handlers", tok.Data, key)
				}
			}
			if tok.Data == "svg" {
				svgDepth++
			}
			if tt == html.SelfClosingTagToken {
				if svgDepth == 0 && !void[tok.Data] {
					t.Errorf("<%s/> self-closed outside SVG", tok.Data)
				}
				continue
			}
			if !void[tok.Data] {
				stack = append(stack, tok.Data)
			}
		case html.EndTagToken:
			if len(stack) == 0 || stack[len(stack)-1] != tok.Data {
				t.Fatalf("</%s> does not close the open element (open: %v)", tok.Data, stack)
			}
			stack = stack[:len(stack)-1]
			if tok.Data == "svg" {
				svgDepth--
			}
		case html.TextToken:
			if len(stack) > 0 && stack[len(stack)-1] == "style" {
				low := strings.ToLower(tok.Data)
				if strings.Contains(low, "url(") || strings.Contains(low, "@import") || strings.Contains(low, "http") {
					t.Errorf("the stylesheet refers to something external")
				}
			}
		}
	}
	if len(stack) != 0 {
		t.Errorf("unclosed elements: %v", stack)
	}
	if first {
		t.Error("empty document")
	}
}

func TestHTMLIsValidSelfContainedHTML5(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, fixture(60)); err != nil {
		t.Fatal(err)
	}
	doc := buf.Bytes()
	checkHTML5(t, doc)

	root, _ := html.Parse(bytes.NewReader(doc))
	var svgs, polylines, tables int
	var title string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch {
			case n.DataAtom == atom.Svg:
				svgs++
			case n.Data == "polyline":
				polylines++
			case n.DataAtom == atom.Table:
				tables++
			case n.DataAtom == atom.Title && n.Parent.DataAtom == atom.Head:
				title = n.FirstChild.Data
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	if svgs != 6 || polylines != 8 || tables < 6 {
		t.Errorf("%d svg charts, %d lines, %d tables; want 6 (rps; p50, p95, p99; errors; VUs; CPU; RSS), 8, ≥ 6", svgs, polylines, tables)
	}
	if title != `Volley run #7 — home & "page" <b>` {
		t.Errorf("title %q", title)
	}
	for _, want := range []string{
		"requests per second (req/s)", "latency (ms)", "elapsed time (s)", // axes with units
		"p(95)&lt;200ms", "FAILED", "passed", // thresholds
		"status_5xx", "timeout", "503", // error kinds, status codes
		"&lt;script&gt;x&lt;/script&gt;", "home", // per-request table, escaped
		"generator-bound", "baseline", "v2 build", "status eq 200",
	} {
		if !bytes.Contains(doc, []byte(want)) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if bytes.Contains(doc, []byte("<script>x")) || !bytes.Contains(doc, []byte(`home &amp; &#34;page&#34; &lt;b&gt;`)) {
		t.Error("user text is not escaped")
	}
	if os.Getenv("VOLLEY_REPORT_SAMPLE") != "" { // write a sample page to look at
		_ = os.WriteFile(filepath.Join(os.Getenv("VOLLEY_REPORT_SAMPLE"), "report.html"), doc, 0o644)
	}
}

func TestHTMLWithoutSummaryOrSeconds(t *testing.T) {
	for name, r := range map[string]Report{
		"running":    {Meta: Meta{RunID: 3, Status: "running"}, Samples: fixture(5).Samples},
		"nothing":    {},
		"one second": {Summary: fixture(1).Summary, Samples: fixture(1).Samples},
	} {
		var buf bytes.Buffer
		if err := WriteHTML(&buf, r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkHTML5(t, buf.Bytes())
	}
}

// A long run's charts are downsampled: the page stays small.
func TestHTMLLongRunIsDownsampled(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, fixture(20000)); err != nil {
		t.Fatal(err)
	}
	checkHTML5(t, buf.Bytes())
	root, _ := html.Parse(bytes.NewReader(buf.Bytes()))
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "polyline" {
			for _, a := range n.Attr {
				if a.Key == "points" {
					if pts := len(strings.Fields(a.Val)); pts > maxChartPoints || pts < maxChartPoints/2 {
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
	if buf.Len() > 400_000 {
		t.Errorf("page of %d bytes", buf.Len())
	}
}

func TestCSV(t *testing.T) {
	var buf bytes.Buffer
	r := fixture(3)
	r.Samples[2].StartedIterations, r.Samples[2].DroppedIterations = 1001, 7 // an open model's second
	if err := WriteCSV(&buf, r.Samples); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || strings.Join(rows[0], ",") != "elapsed_s,t,requests,rps,errors,p50,p90,p95,p99,max,active_vus,cpu_percent,rss_bytes,generator_bound,started_iterations,dropped_iterations" {
		t.Fatalf("rows %v", rows)
	}
	want := fmt.Sprintf("3,%d,1003,1003,0,1,2,3.3,5,20,10,55.5,52428800,true,1001,7", r.Samples[2].T)
	if got := strings.Join(rows[3], ","); got != want {
		t.Errorf("row 3: %s, want %s", got, want)
	}
}

func TestJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, "json", fixture(4)); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Run     map[string]any   `json:"run"`
		Summary *metrics.Summary `json:"summary"`
		Samples []metrics.Sample `json:"samples"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Run["id"] != float64(7) || got.Summary.Requests != 12000 || len(got.Samples) != 4 || got.Samples[3].ElapsedS != 4 {
		t.Errorf("json: %+v", got)
	}
	buf.Reset()
	if err := Write(&buf, "json", Report{}); err != nil || !strings.Contains(buf.String(), `"run": null`) || !strings.Contains(buf.String(), `"samples": []`) {
		t.Errorf("empty report: %s %v", buf.String(), err)
	}
	if err := Write(&buf, "pdf", Report{}); err == nil {
		t.Error("unknown format accepted")
	}
	if Filename(12, "csv") != "volley-run-12.csv" {
		t.Error(Filename(12, "csv"))
	}
}

func TestNiceAxes(t *testing.T) {
	for raw, want := range map[float64]float64{0.7: 1, 1.2: 2, 3: 5, 7: 10, 180: 200, 0: 1} {
		if got := niceStep(raw); got != want {
			t.Errorf("niceStep(%v) = %v, want %v", raw, got, want)
		}
	}
	for v, want := range map[float64]string{0: "0", 0.5: "0.5", 2000: "2000", 20000: "20k", 2500000: "2.5M"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}

// A run without a successful response says it failed, in red, with its error; its latencies are
// "—" in the HTML and empty in the CSV, never 0.
func TestExportsOfARunWithoutSuccess(t *testing.T) {
	r := fixture(2)
	s := *r.Summary
	s.Successes, s.Errors, s.ErrorRate, s.Thresholds = 0, s.Requests, 1, nil
	s.Latency, s.StatusCodes, s.ErrorKinds = metrics.Latency{}, nil, map[string]int64{"connect_refused": s.Requests}
	s.ByName = map[string]metrics.NameStats{"home": {Requests: s.Requests, Errors: s.Requests}}
	r.Summary, r.Meta.Error = &s, s.NoSuccessMessage()
	for i := range r.Samples {
		r.Samples[i].Errors = r.Samples[i].Requests
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	checkHTML5(t, buf.Bytes())
	doc := buf.String()
	for _, want := range []string{`<p class="outcome failed">Outcome: <b>failed</b> <span class="why">— no successful response: 12000 connect_refused (of 12000 requests)</span></p>`,
		"Error: no successful response: 12000 connect_refused (of 12000 requests)",
		"<b>—</b><span>p95 latency</span>", "— no response: latencies are unknown",
		"<td>home</td><td>12000</td><td>12000</td><td>100.00 %</td><td>—</td>"} {
		if !strings.Contains(doc, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if strings.Contains(doc, "0.000 ms") {
		t.Error("HTML shows a 0 ms latency")
	}
	buf.Reset()
	if err := WriteCSV(&buf, r.Samples); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows[1][5:10], ","); got != ",,,," {
		t.Errorf("CSV latencies of a second without success: %q, want empty", got)
	}

	// A passed run says so; one above the error level, with errors.
	for rate, want := range map[float64]string{0.01: "passed", 0.2: "finished with errors"} {
		r := fixture(2)
		r.Summary.ErrorRate, r.Summary.Thresholds = rate, nil
		buf.Reset()
		if err := WriteHTML(&buf, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "Outcome: <b>"+want+"</b>") {
			t.Errorf("error rate %g: HTML lacks outcome %q", rate, want)
		}
	}
}
