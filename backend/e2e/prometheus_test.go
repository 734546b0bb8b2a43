package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// promtoolPath is Debian's promtool (package prometheus); VOLLEY_E2E_PROMTOOL overrides it.
var promtoolPath = envOr("VOLLEY_E2E_PROMTOOL", "/usr/bin/promtool")

// GET /metrics of `volley serve` passes `promtool check metrics` while a run against the built-in
// demo target goes on and after it, and once the run has ended its request counter, its
// responses by code and its errors by kind equal the run summary's.
func TestMetricsEndpointMatchesRunSummary(t *testing.T) {
	requireTool(t, promtoolPath)
	db := filepath.Join(t.TempDir(), "volley.db")
	demo := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	srv := startServer(t, db, demo)
	waitTCP(t, demo, nil, 10*time.Second)

	spec := map[string]any{
		"name": "metrics e2e",
		"requests": []map[string]any{
			{"name": "ok", "method": "GET", "url": "http://" + demo + "/"},
			{"name": "missing", "method": "GET", "url": "http://" + demo + "/status/404"},
		},
		"load": map[string]any{"executor": "constant-vus", "vus": 2, "duration": "3s"},
	}
	planID := createPlan(t, srv.base, spec)
	var run runJSON
	if code := apiDo(t, "POST", fmt.Sprintf("%s/api/plans/%d/runs", srv.base, planID), nil, &run); code != http.StatusCreated {
		t.Fatalf("start run: status %d", code)
	}
	runLabel := map[string]string{"run_id": fmt.Sprint(run.ID)}

	// While it runs: the run's series are there and promtool accepts the exposition.
	deadline := time.Now().Add(20 * time.Second)
	for {
		body, fams := scrapeMetrics(t, srv.base)
		if v, ok := metricValue(fams, "volley_run_requests_total", runLabel); ok && v > 0 {
			promtoolCheck(t, body)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no requests counted for run %d after 20 s:\n%s", run.ID, truncate(body, 3000))
		}
		time.Sleep(200 * time.Millisecond)
	}

	ended := waitRunEnded(t, srv.base, run.ID, 30*time.Second)
	if ended.Summary == nil || ended.Summary.Requests == 0 {
		t.Fatalf("run %d ended without requests: %+v", run.ID, ended)
	}
	// The exporter is the runner's last sink: it may see the end a moment after storage does.
	var body string
	var fams map[string]*dto.MetricFamily
	for deadline := time.Now().Add(10 * time.Second); ; {
		body, fams = scrapeMetrics(t, srv.base)
		if v, ok := metricValue(fams, "volley_run_running", runLabel); ok && v == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("volley_run_running of run %d is not 0 10 s after the run ended", run.ID)
		}
		time.Sleep(100 * time.Millisecond)
	}
	promtoolCheck(t, body)
	sum := ended.Summary
	if v, _ := metricValue(fams, "volley_run_requests_total", runLabel); int64(v) != sum.Requests {
		t.Errorf("volley_run_requests_total = %v, run summary requests = %d", v, sum.Requests)
	}
	if v, _ := metricValue(fams, "volley_run_errors_total", runLabel); int64(v) != sum.Errors {
		t.Errorf("volley_run_errors_total = %v, run summary errors = %d", v, sum.Errors)
	}
	if sum.StatusCodes["404"] == 0 || sum.ErrorKinds["status_4xx"] == 0 {
		t.Fatalf("the plan's missing page gave no 404: %v %v", sum.StatusCodes, sum.ErrorKinds)
	}
	for code, n := range sum.StatusCodes {
		if v, _ := metricValue(fams, "volley_run_responses_total", map[string]string{"run_id": runLabel["run_id"], "code": code}); int64(v) != n {
			t.Errorf("responses code %s = %v, summary %d", code, v, n)
		}
	}
	for kind, n := range sum.ErrorKinds {
		if v, _ := metricValue(fams, "volley_run_errors_by_kind_total", map[string]string{"run_id": runLabel["run_id"], "kind": kind}); int64(v) != n {
			t.Errorf("errors of kind %s = %v, summary %d", kind, v, n)
		}
	}
	// Every response with a latency is in the histogram (the summary's latency covers them all).
	h := fams["volley_run_latency_seconds"]
	if h == nil || len(h.Metric) != 1 {
		t.Fatalf("volley_run_latency_seconds: %v", h)
	}
	if got := h.Metric[0].Histogram.GetSampleCount(); got == 0 || int64(got) > sum.Requests {
		t.Errorf("latency histogram count %d, requests %d", got, sum.Requests)
	}
	if v, _ := metricValue(fams, "volley_runs_finished_total", map[string]string{"status": "finished"}); v != 1 {
		t.Errorf("volley_runs_finished_total{status=finished} = %v, want 1", v)
	}
}

func scrapeMetrics(t *testing.T, base string) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", res.StatusCode, truncate(string(b), 500))
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return string(b), fams
}

// metricValue is the counter or gauge value of family name's series whose labels include want.
func metricValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.Metric {
		match := 0
		for _, lp := range m.Label {
			if v, ok := want[lp.GetName()]; ok && v == lp.GetValue() {
				match++
			}
		}
		if match != len(want) {
			continue
		}
		if m.Counter != nil {
			return m.Counter.GetValue(), true
		}
		return m.Gauge.GetValue(), true
	}
	return 0, false
}

func promtoolCheck(t *testing.T, body string) {
	t.Helper()
	cmd := exec.Command(promtoolPath, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
