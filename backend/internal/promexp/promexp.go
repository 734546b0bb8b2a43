// Package promexp is Volley's Prometheus exposition: GET /metrics on `volley serve`. It holds
// the server's own health (Go runtime, process, build, runs started and finished, live-stream
// clients) and the figures of the run in progress — or of the last run, until the next starts —
// fed once a second from the samples the runner fans out to its sinks (Exporter is a
// runner.Sink), never from the engine's hot path.
//
// The run's series carry a run_id label; only one run's series exist at a time, so a run's
// counters start at zero and end at the run's totals (volley_run_requests_total equals the run
// summary's requests once the run has ended). docs/api.md lists every metric.
package promexp

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/runner"
)

// Exporter is the /metrics registry and the runner sink that feeds it. Its methods are safe for
// concurrent use: the runner calls the sink methods from its goroutines, scrapes read.
type Exporter struct {
	reg *prometheus.Registry

	runsStarted  prometheus.Counter
	runsFinished *prometheus.CounterVec

	mu  sync.Mutex
	run *runFigures // the run in progress or the last one; nil before the first
}

// runFigures are one run's totals so far.
type runFigures struct {
	id        string
	running   bool
	requests  uint64
	errors    uint64
	bytesIn   uint64
	bytesOut  uint64
	codes     map[string]uint64
	kinds     map[string]uint64
	vus       float64
	cpu       float64  // percent of one core
	rss       float64  // bytes
	buckets   []uint64 // non-cumulative, len(LatencyBucketsUs)+1 (the last: +Inf)
	latCount  uint64
	latSumSec float64
}

// New makes the exporter. version is Volley's version (volley_build_info); clients, when not
// nil, counts the live-stream (websocket) clients connected now (hub.Hub.Clients).
func New(version string, clients func() int) *Exporter {
	e := &Exporter{reg: prometheus.NewRegistry()}
	e.runsStarted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "volley_runs_started_total", Help: "Runs started since the server started.",
	})
	e.runsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "volley_runs_finished_total",
		Help: "Runs ended since the server started, by status (finished, stopped, failed, interrupted) and outcome (passed, finished_with_errors, failed, stopped).",
	}, []string{"status", "outcome"})
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "volley_build_info", Help: "Always 1; the version label is Volley's version.",
		ConstLabels: prometheus.Labels{"version": version},
	})
	info.Set(1)
	e.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector(),
		info, e.runsStarted, e.runsFinished, (*runCollector)(e),
	)
	if clients != nil {
		e.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "volley_live_clients", Help: "Live-stream (websocket) clients connected now.",
		}, func() float64 { return float64(clients()) }))
	}
	return e
}

// Handler serves the registry in the Prometheus text format (or OpenMetrics when asked).
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{Timeout: 10 * time.Second})
}

// Start implements runner.Sink: the previous run's series are dropped, the new run's start at 0.
func (e *Exporter) Start(runID int64, _ time.Time) {
	e.runsStarted.Inc()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.run = &runFigures{id: strconv.FormatInt(runID, 10), running: true,
		codes: map[string]uint64{}, kinds: map[string]uint64{}, buckets: make([]uint64, len(LatencyBucketsUs)+1)}
}

// Sample implements runner.Sink: the second's counts are added to the run's counters, its
// gauges replace the last second's. The second's latency histogram (metrics.Sample.Hist) is
// decoded here, once a second, and its counts added to the exported buckets.
func (e *Exporter) Sample(runID int64, s *runner.Sample) {
	var buckets []uint64
	var latCount uint64
	if s.Hist != "" {
		if h, err := metrics.DecodeHist(s.Hist); err == nil {
			buckets = make([]uint64, len(LatencyBucketsUs)+1)
			latCount = bucketCounts(h, buckets)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.run
	if r == nil || r.id != strconv.FormatInt(runID, 10) {
		return
	}
	r.requests += uint64(max(s.Requests, 0))
	r.errors += uint64(max(s.Errors, 0))
	r.bytesIn += uint64(max(s.BytesIn, 0))
	r.bytesOut += uint64(max(s.BytesOut, 0))
	for code, n := range s.StatusCodes {
		r.codes[code] += uint64(max(n, 0))
	}
	for kind, n := range s.ErrorKinds {
		r.kinds[kind] += uint64(max(n, 0))
	}
	r.vus, r.cpu, r.rss = float64(s.ActiveVUs), s.Client.CPUPercent, float64(s.Client.RSSBytes)
	for i, n := range buckets {
		r.buckets[i] += n
	}
	r.latCount += latCount
	// The sample's mean is rounded to the microsecond: the sum is exact to ½ µs per response.
	r.latSumSec += s.Latency.Mean / 1000 * float64(latCount)
}

// Finish implements runner.Sink: the run's gauges say it no longer runs (its counters stay until
// the next run starts) and it is counted by status and outcome.
func (e *Exporter) Finish(runID int64, status string, _, _ time.Time, sum *metrics.Summary, _ error) {
	outcome := metrics.OutcomeOf(status, 0, 0, nil)
	if sum != nil {
		outcome = metrics.OutcomeOf(status, sum.Requests, sum.ErrorRate, thresholdsOK(sum))
	}
	e.runsFinished.WithLabelValues(status, outcome).Inc()
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.run; r != nil && r.id == strconv.FormatInt(runID, 10) {
		r.running, r.vus = false, 0
	}
}

func thresholdsOK(sum *metrics.Summary) *bool {
	if len(sum.Thresholds) == 0 {
		return nil
	}
	ok := sum.ThresholdsOK()
	return &ok
}

// The run's metric descriptions; every one has the run_id label.
var (
	runLabels    = []string{"run_id"}
	descRunning  = prometheus.NewDesc("volley_run_running", "1 while the run runs, 0 once it has ended (its series stay until the next run starts).", runLabels, nil)
	descRequests = prometheus.NewDesc("volley_run_requests_total", "Requests the run completed (the run summary's requests once it has ended).", runLabels, nil)
	descErrors   = prometheus.NewDesc("volley_run_errors_total", "Failed requests of the run.", runLabels, nil)
	descCodes    = prometheus.NewDesc("volley_run_responses_total", "Requests of the run by HTTP status code (0: no response).", []string{"run_id", "code"}, nil)
	descKinds    = prometheus.NewDesc("volley_run_errors_by_kind_total", "Failed requests of the run by error kind (timeout, connect_refused, status_5xx, …).", []string{"run_id", "kind"}, nil)
	descBytesIn  = prometheus.NewDesc("volley_run_received_bytes_total", "Bytes the run received (wire bytes).", runLabels, nil)
	descBytesOut = prometheus.NewDesc("volley_run_sent_bytes_total", "Bytes the run sent.", runLabels, nil)
	descVUs      = prometheus.NewDesc("volley_run_active_vus", "Virtual users active in the run's last second.", runLabels, nil)
	descCPU      = prometheus.NewDesc("volley_run_generator_cpu_percent", "The load generator's CPU in the run's last second, percent of one core (200: two cores busy).", runLabels, nil)
	descRSS      = prometheus.NewDesc("volley_run_generator_resident_memory_bytes", "The load generator's resident memory in the run's last second.", runLabels, nil)
	descLatency  = prometheus.NewDesc("volley_run_latency_seconds", "Latency of the run's responses (intended start to last byte); fixed buckets, exact counts (docs/api.md).", runLabels, nil)
)

// runCollector exports the run's figures (an Exporter under another method set).
type runCollector Exporter

func (c *runCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRunning, descRequests, descErrors, descCodes, descKinds,
		descBytesIn, descBytesOut, descVUs, descCPU, descRSS, descLatency} {
		ch <- d
	}
}

func (c *runCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.run
	if r == nil {
		return
	}
	running := 0.0
	if r.running {
		running = 1
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{r.id}, labels...)...)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, r.id)
	}
	gauge(descRunning, running)
	counter(descRequests, r.requests)
	counter(descErrors, r.errors)
	for code, n := range r.codes {
		counter(descCodes, n, code)
	}
	for kind, n := range r.kinds {
		counter(descKinds, n, kind)
	}
	counter(descBytesIn, r.bytesIn)
	counter(descBytesOut, r.bytesOut)
	gauge(descVUs, r.vus)
	gauge(descCPU, r.cpu)
	gauge(descRSS, r.rss)
	cum := make(map[float64]uint64, len(LatencyBucketsUs))
	var acc uint64
	for i, le := range boundsSeconds() {
		acc += r.buckets[i]
		cum[le] = acc
	}
	ch <- prometheus.MustNewConstHistogram(descLatency, r.latCount, r.latSumSec, cum, r.id)
}
