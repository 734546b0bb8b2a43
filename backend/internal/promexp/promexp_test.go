package promexp

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/runner"
)

// Every bound is where one of Volley's HDR sub-buckets starts, so no sub-bucket straddles it.
func TestBucketBoundsAreHDRSubBucketStarts(t *testing.T) {
	if len(LatencyBucketsUs) != 37 || LatencyBucketsUs[0] != 250 || LatencyBucketsUs[36] != 65_536_000 {
		t.Fatalf("layout %v: want 37 bounds from 250 µs to 65.536 s", LatencyBucketsUs)
	}
	h := metrics.NewHist()
	for i, b := range LatencyBucketsUs {
		if i > 0 && b <= LatencyBucketsUs[i-1] {
			t.Fatalf("bounds not increasing at %d: %v", i, LatencyBucketsUs)
		}
		if h.ValuesAreEquivalent(b-1, b) {
			t.Errorf("bound %d µs is inside an HDR sub-bucket (%d µs is in it too)", b, b-1)
		}
	}
}

// hdrValueAt inverts the library's slot layout.
func TestHDRValueAtMatchesLibrary(t *testing.T) {
	for _, v := range []int64{0, 1, 1023, 1024, 2047, 2048, 2049, 4095, 4096, 5000, 123_457, 999_999, 1_000_000, 65_536_000, 3_599_999_999} {
		h := metrics.NewHist()
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
		bars := h.Distribution() // one bar per slot, up to the last recorded
		for i, c := range h.Export().Counts {
			if c != 0 {
				if got, want := hdrValueAt(i), bars[i].From; got != want || !h.ValuesAreEquivalent(got, v) {
					t.Errorf("value %d: slot %d → %d, want %d", v, i, got, want)
				}
			}
		}
	}
}

// The exported buckets count exactly the values below each bound, checked value by value,
// values on and beside every bound included.
func TestBucketCountsAreExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var vals []int64
	for range 20000 {
		vals = append(vals, int64(rng.ExpFloat64()*30_000)) // mean 30 ms, tail to seconds
	}
	for _, b := range LatencyBucketsUs {
		vals = append(vals, b-1, b, b+1)
	}
	vals = append(vals, 0, 90_000_000) // beyond the last bound: +Inf only
	h := metrics.NewHist()
	for _, v := range vals {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	out := make([]uint64, len(LatencyBucketsUs)+1)
	if total := bucketCounts(h, out); total != uint64(len(vals)) {
		t.Fatalf("total %d, want %d", total, len(vals))
	}
	var cum uint64
	for i, b := range LatencyBucketsUs {
		cum += out[i]
		var want uint64
		for _, v := range vals {
			if v < b {
				want++
			}
		}
		if cum != want {
			t.Errorf("le %d µs: %d values below, want %d", b, cum, want)
		}
	}
	if inf := out[len(LatencyBucketsUs)]; inf != 3 { // 65.536 s, 65.536001 s, 90 s
		t.Errorf("the +Inf-only bucket holds %d, want 3", inf)
	}
}

// sample makes one second with the given latencies (µs), status codes and error kinds.
func sample(t *testing.T, lat []int64, codes, kinds map[string]int64, vus int64) *runner.Sample {
	t.Helper()
	h := metrics.NewHist()
	var sum int64
	for _, v := range lat {
		_ = h.RecordValue(v)
		sum += v
	}
	enc, err := metrics.EncodeHist(h)
	if err != nil {
		t.Fatal(err)
	}
	var req, errs int64
	for _, n := range codes {
		req += n
	}
	for _, n := range kinds {
		errs += n
	}
	s := metrics.Sample{Requests: req, Errors: errs, StatusCodes: codes, ErrorKinds: kinds, ActiveVUs: vus,
		Latency: metrics.LatencyOf(h, uint64(sum)), Hist: enc,
		Client: metrics.ClientSample{CPUPercent: 42.5, RSSBytes: 50 << 20}}
	return runner.NewSample(s)
}

func scrape(t *testing.T, e *Exporter) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	rec := httptest.NewRecorder()
	e.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, body)
	}
	return body, fams
}

// value is the value of family name's metric whose labels include want.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no %s", name)
	}
next:
	for _, m := range f.Metric {
		for k, v := range want {
			found := false
			for _, lp := range m.Label {
				found = found || (lp.GetName() == k && lp.GetValue() == v)
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no %s with %v", name, want)
	return 0
}

func TestExporterRunSeries(t *testing.T) {
	clients := 3
	e := New("1.2.3", func() int { return clients })
	if _, fams := scrape(t, e); fams["volley_run_requests_total"] != nil {
		t.Fatal("run series before any run")
	}
	e.Start(7, time.Now())
	e.Sample(7, sample(t, []int64{100, 900, 1500, 3000}, map[string]int64{"200": 3, "503": 1}, map[string]int64{"status_5xx": 1}, 10))
	e.Sample(7, sample(t, []int64{2_000_000}, map[string]int64{"200": 1, "0": 1}, map[string]int64{"timeout": 1}, 12))
	e.Sample(8, sample(t, []int64{1}, map[string]int64{"200": 100}, nil, 1)) // another run's stray second: ignored
	run := map[string]string{"run_id": "7"}
	_, fams := scrape(t, e)
	for name, want := range map[string]float64{
		"volley_run_requests_total": 6, "volley_run_errors_total": 2, "volley_run_active_vus": 12,
		"volley_run_running": 1, "volley_run_generator_cpu_percent": 42.5, "volley_run_latency_seconds": 5,
		"volley_run_generator_resident_memory_bytes": 50 << 20, "volley_live_clients": 3, "volley_runs_started_total": 1,
	} {
		lbl := run
		if strings.HasPrefix(name, "volley_runs_") || name == "volley_live_clients" {
			lbl = nil
		}
		if got := value(t, fams, name, lbl); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	for code, want := range map[string]float64{"200": 4, "503": 1, "0": 1} {
		if got := value(t, fams, "volley_run_responses_total", map[string]string{"run_id": "7", "code": code}); got != want {
			t.Errorf("responses code %s = %v, want %v", code, got, want)
		}
	}
	for kind, want := range map[string]float64{"status_5xx": 1, "timeout": 1} {
		if got := value(t, fams, "volley_run_errors_by_kind_total", map[string]string{"run_id": "7", "kind": kind}); got != want {
			t.Errorf("errors kind %s = %v, want %v", kind, got, want)
		}
	}
	hist := fams["volley_run_latency_seconds"].Metric[0].Histogram
	le := map[float64]uint64{}
	for _, b := range hist.Bucket {
		le[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	// 100 and 900 µs are below 1 ms; 1500 µs is not below the 1.5 ms bound, 3000 µs not below 3 ms.
	for bound, want := range map[float64]uint64{0.00025: 1, 0.001: 2, 0.0015: 2, 0.002: 3, 0.003: 3, 0.004: 4, 1.536: 4, 2.048: 5} {
		if le[bound] != want {
			t.Errorf("le %v: %d, want %d", bound, le[bound], want)
		}
	}
	if s := hist.GetSampleSum(); s < 2.0055 || s > 2.0056 { // 0.0055 + 2 s
		t.Errorf("latency sum %v s, want 2.0055", s)
	}

	e.Finish(7, "finished", time.Now(), time.Now(), &metrics.Summary{Requests: 6, ErrorRate: 2.0 / 6}, nil)
	_, fams = scrape(t, e)
	if got := value(t, fams, "volley_run_running", run); got != 0 {
		t.Errorf("running after finish = %v", got)
	}
	if got := value(t, fams, "volley_run_requests_total", run); got != 6 {
		t.Errorf("requests after finish = %v, want 6 (kept until the next run)", got)
	}
	if got := value(t, fams, "volley_runs_finished_total", map[string]string{"status": "finished", "outcome": "finished_with_errors"}); got != 1 {
		t.Errorf("runs finished = %v", got)
	}
	e.Start(9, time.Now())
	_, fams = scrape(t, e)
	if got := value(t, fams, "volley_run_requests_total", map[string]string{"run_id": "9"}); got != 0 {
		t.Errorf("new run starts at %v", got)
	}
	if len(fams["volley_run_requests_total"].Metric) != 1 {
		t.Errorf("the previous run's series remain: %v", fams["volley_run_requests_total"])
	}
}

// promtool (Debian's prometheus package) accepts the exposition: required with VOLLEY_E2E=1.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("VOLLEY_E2E") == "1" {
			t.Fatal("promtool not found (apt-get install prometheus)")
		}
		t.Skip("promtool not found (apt-get install prometheus)")
	}
	e := New("dev", func() int { return 0 })
	e.Start(1, time.Now())
	e.Sample(1, sample(t, []int64{100, 5000, 70_000}, map[string]int64{"200": 2, "500": 1}, map[string]int64{"status_5xx": 1}, 4))
	body, _ := scrape(t, e)
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out.String())
	}
	if out.Len() > 0 {
		t.Fatalf("promtool check metrics has remarks:\n%s", out.String())
	}
}
