package promexp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/runner"
)

// exportedNames are the series names GET /metrics serves (histograms as _bucket, _sum, _count),
// from a real exporter that has seen a second of a run with responses, errors and latencies.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	e := New("dev", func() int { return 1 })
	e.Start(1, time.Now())
	h := metrics.NewHist()
	_ = h.RecordValue(1500)
	enc, err := metrics.EncodeHist(h)
	if err != nil {
		t.Fatal(err)
	}
	e.Sample(1, runner.NewSample(metrics.Sample{Requests: 2, Errors: 1, Hist: enc,
		StatusCodes: map[string]int64{"200": 1, "500": 1}, ErrorKinds: map[string]int64{"status_5xx": 1}}))
	e.Finish(1, "finished", time.Now(), time.Now(), &metrics.Summary{Requests: 2, ErrorRate: 0.5}, nil)
	rec := httptest.NewRecorder()
	e.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for name, f := range fams {
		names[name] = true
		if f.GetType().String() == "HISTOGRAM" || f.GetType().String() == "SUMMARY" {
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		}
	}
	return names
}

// dashboardExprs are the PromQL expressions of every panel (and template query) of the dashboard.
func dashboardExprs(t *testing.T) (title string, exprs []string) {
	t.Helper()
	// This package lives in <root>/backend/internal/promexp.
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "grafana", "volley-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("volley-dashboard.json: %v", err)
	}
	for _, p := range d.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" {
				t.Errorf("panel %q has an empty query", p.Title)
			}
			exprs = append(exprs, q.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := strings.CutPrefix(v.Definition, "label_values("); ok { // label_values(metric{…}, label)
			exprs = append(exprs, q[:strings.LastIndex(q, ",")])
		}
	}
	return d.Title, exprs
}

var (
	promStrings   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promMatchers  = regexp.MustCompile(`\{[^}]*\}`)
	promRanges    = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent     = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*\s*\(?`)
	promOperators = []string{"and", "or", "unless", "bool", "offset", "inf", "nan", "group_left", "group_right"}
)

// metricNames are the metric names an expression selects: its identifiers once strings, label
// matchers, ranges and grouping clauses are removed, less function calls and keywords.
func metricNames(expr string) []string {
	s := promStrings.ReplaceAllString(expr, `""`)
	s = promMatchers.ReplaceAllString(s, "")
	s = promRanges.ReplaceAllString(s, "")
	s = promGrouping.ReplaceAllString(s, "")
	var names []string
	for _, id := range promIdent.FindAllString(s, -1) {
		if strings.HasSuffix(id, "(") {
			continue // a function
		}
		if id = strings.TrimSpace(id); slices.Contains(promOperators, strings.ToLower(id)) {
			continue
		}
		names = append(names, id)
	}
	return names
}

func TestMetricNamesParser(t *testing.T) {
	got := metricNames(`histogram_quantile(0.95, sum by (run_id, le) (rate(volley_run_latency_seconds_bucket{job=~"$job", x="a{b}"}[$__rate_interval]))) / on (job) group_left clamp_min(up, 1) and bool other_metric`)
	want := []string{"volley_run_latency_seconds_bucket", "up", "other_metric"}
	if !slices.Equal(got, want) {
		t.Fatalf("metricNames = %q, want %q", got, want)
	}
}

// Every PromQL expression of the Grafana dashboard selects only metrics that GET /metrics
// exports, and the dashboard plots what issue 15 asks for: TPS, errors by kind, p95 from the
// histogram, VUs, generator CPU and RSS. With promtool at hand, each expression also parses.
func TestGrafanaDashboardUsesExportedMetrics(t *testing.T) {
	exported := exportedNames(t)
	title, exprs := dashboardExprs(t)
	if title != "Volley" || len(exprs) < 10 {
		t.Fatalf("dashboard %q with %d queries", title, len(exprs))
	}
	used := map[string]bool{}
	for _, e := range exprs {
		names := metricNames(e)
		if len(names) == 0 {
			t.Errorf("no metric in %q", e)
		}
		for _, n := range names {
			used[n] = true
			if !exported[n] {
				t.Errorf("%q selects %s, which /metrics does not export", e, n)
			}
		}
	}
	all := strings.Join(exprs, "\n")
	for _, want := range []string{
		"rate(volley_run_requests_total", "volley_run_errors_by_kind_total", "histogram_quantile(0.95",
		"volley_run_latency_seconds_bucket", "volley_run_active_vus", "volley_run_generator_cpu_percent",
		"volley_run_generator_resident_memory_bytes",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the dashboard has no query with %s", want)
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("VOLLEY_E2E") == "1" {
			t.Fatal("promtool not found (apt-get install prometheus)")
		}
		t.Log("promtool not found: the expressions' syntax is not checked")
		return
	}
	// promtool check rules parses every expression, Grafana's variables given values.
	vars := strings.NewReplacer("$__rate_interval", "1m", "$__range", "1h", "$job", ".*", "$instance", ".*")
	var rules strings.Builder
	rules.WriteString("groups:\n- name: dashboard\n  rules:\n")
	for i, e := range exprs {
		q, _ := json.Marshal(vars.Replace(e)) // a JSON string is a YAML string
		fmt.Fprintf(&rules, "  - record: dashboard:query%d\n    expr: %s\n", i, q)
	}
	file := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}
