// Package monitor scrapes a run's monitors — Prometheus endpoints on the target's side
// (plan.Monitor) — and turns each scrape into the per-second values of metrics.Sample.Target and
// the run's metrics.Summary.Target (issue 15).
//
// Each monitor has a goroutine of its own that scrapes every interval (default 1s) with a
// deadline (default 800ms); a scrape reads at most MaxBody bytes of body and parses at most
// MaxLines sample lines with prometheus/common/expfmt's text parser. The run's collector reads
// the latest values once a second (Set.Read): it never waits for a scrape, so a monitor that
// hangs, floods or answers garbage only makes gaps and an error (metrics.MonitorError), never a
// slower run. Monitor connections are dialled through the server's target policy (netpolicy),
// with its Control hook on every address tried, exactly as the engine dials targets; proxies from
// the environment are never used and redirects are not followed.
//
// Presets (plan.Monitor.Type) and the series they produce (metrics.MonitorSeries):
//   - node (node_exporter): cpu_percent (total, 0..100 of all cores: 100 × (1 − Δ(idle+iowait) /
//     Δall modes) over node_cpu_seconds_total) and cpu_percent/<core> (the same per core);
//     memory_used_bytes = node_memory_MemTotal_bytes − node_memory_MemAvailable_bytes; load1
//     (node_load1); net_in_bytes_per_s and net_out_bytes_per_s (rates of
//     node_network_{receive,transmit}_bytes_total summed over devices but "lo"); tcp_conns
//     (node_netstat_Tcp_CurrEstab).
//     The same series from a windows_exporter, told by windows_cpu_time_total: cpu_percent from
//     it (idle mode only; cores labelled "group,number" as its core label), memory_used_bytes =
//     windows_cs_physical_memory_bytes − windows_os_physical_memory_free_bytes (or the memory
//     collector's windows_memory_physical_{total,free}_bytes), net rates of
//     windows_net_bytes_{received,sent}_total over all NICs, tcp_conns = the sum of
//     windows_tcp_connections_established (ipv4 + ipv6); no load1 (Windows has no load average).
//   - process (`volley monitor`): cpu_percent/<process> (rate of volley_process_cpu_seconds_total
//     × 100: of one core, 200 = two cores busy) and rss_bytes/<process>
//     (volley_process_resident_memory_bytes).
//   - custom: the series of plan.Monitor.Metric whose labels match plan.Monitor.Labels, at most
//     MaxCustomSeries, labelled by their other labels ("k=v,k2=v2"); counters (and histogram or
//     summary counts) as per-second rates, gauges as they are.
//
// A rate needs two scrapes: it appears from the second successful scrape on, and a counter that
// went down (a restart) makes one gap.
package monitor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/plan"
)

// Bounds of one scrape.
const (
	MaxBody         = 4 << 20 // bytes of (decoded) body read; a longer body is an error
	MaxLines        = 20_000  // sample lines parsed; more is an error, found before parsing
	MaxCustomSeries = 50      // series one custom monitor keeps (the first in label order)
	maxErrors       = 64      // distinct (monitor, message) errors kept for the summary
	maxMessage      = 200     // bytes of an error message kept
)

// Set is the running monitors of one run. Start it with Start; Read and Summary are for one
// goroutine (the run's collector); Stop ends the scrapers. A nil *Set (a plan without monitors)
// reads as empty.
type Set struct {
	mons   []*mon
	ctx    context.Context // cancelled by Stop: ends the scrapers and any scrape in flight
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// the reader's state
	series   []metrics.MonitorSeries
	index    map[string]int // series id → index in series and stats
	stats    []stat
	seconds  int
	errs     []metrics.MonitorError
	errIndex map[[2]string]int
	shown    []string // per monitor: the error last put in a sample
}

type stat struct {
	sum, max float64
	n        int
}

// mon is one monitor: its scraper's goroutine writes latest/err under mu, Read reads them.
type mon struct {
	spec   plan.Monitor
	auth   string // "Bearer <token>" (plan.Monitor.Token resolved); "" none
	client *http.Client
	fresh  time.Duration // a value older than this at Read is a gap

	mu   sync.Mutex
	vals []value   // the latest scrape's values; nil after an error
	at   time.Time // when vals were taken
	err  string

	// the scraper's own state
	buf    bytes.Buffer
	parser expfmt.TextParser
	prev   map[string]float64 // counters of the previous scrape, by series id
	prevAt time.Time
	now    func() time.Time // time.Now; tests set a fake clock
}

type value struct {
	s metrics.MonitorSeries
	v float64
}

// Start starts one scraper per monitor (specs as plan.Parse filled them: names, intervals and
// timeouts set). A monitor's token reference is resolved in secrets (the plan's Secrets) and sent
// as "Authorization: Bearer <value>". Every connection is judged by pol (nil:
// netpolicy.Default). It returns nil for no monitors.
func Start(specs []plan.Monitor, secrets plan.SecretValues, pol *netpolicy.Policy) *Set {
	if len(specs) == 0 {
		return nil
	}
	s := newSet(specs, pol)
	for _, m := range s.mons {
		if tok := m.spec.BearerToken(secrets); tok != "" {
			m.auth = "Bearer " + tok
		}
	}
	for _, m := range s.mons {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			m.loop(s.ctx)
		}()
	}
	return s
}

// newSet prepares the monitors without starting their scrapers.
func newSet(specs []plan.Monitor, pol *netpolicy.Policy) *Set {
	if pol == nil {
		pol = netpolicy.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Set{ctx: ctx, cancel: cancel, index: map[string]int{}, errIndex: map[[2]string]int{}, shown: make([]string, len(specs))}
	for _, sp := range specs {
		s.mons = append(s.mons, newMon(sp, pol))
	}
	return s
}

func newMon(sp plan.Monitor, pol *netpolicy.Policy) *mon {
	interval, timeout := sp.Interval.D(), sp.Timeout.D()
	if interval <= 0 {
		interval = plan.DefaultMonitorInterval
	}
	if timeout <= 0 || timeout > interval {
		timeout = min(plan.DefaultMonitorTimeout, interval)
	}
	sp.Interval, sp.Timeout = plan.Duration(interval), plan.Duration(timeout)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctrl, err := pol.DialGuard(addr)
		if err != nil {
			return nil, err
		}
		d := net.Dialer{Timeout: timeout, Control: ctrl}
		return d.DialContext(ctx, network, addr)
	}
	tr := &http.Transport{
		Proxy:                  nil, // never the environment's proxy
		DialContext:            dial,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxIdleConnsPerHost:    1,
		IdleConnTimeout:        2 * interval,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &mon{
		spec:   sp,
		client: &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		fresh:  interval + max(timeout, interval/2),
		parser: expfmt.NewTextParser(model.UTF8Validation),
		now:    time.Now,
	}
}

// loop scrapes at once and then every interval until ctx ends.
func (m *mon) loop(ctx context.Context) {
	defer m.client.CloseIdleConnections()
	t := time.NewTicker(m.spec.Interval.D())
	defer t.Stop()
	for {
		m.once(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// once scrapes and stores the values or the error.
func (m *mon) once(ctx context.Context) {
	vals, err := m.scrape(ctx)
	if ctx.Err() != nil {
		return // stopped: the run is over, nothing to record
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		msg := err.Error()
		if len(msg) > maxMessage {
			msg = msg[:maxMessage] + "…"
		}
		m.vals, m.err = nil, msg
		return
	}
	m.vals, m.at, m.err = vals, now, ""
}

// Scrape errors (metrics.MonitorError.Message).
var (
	errBody  = fmt.Errorf("body over %d MiB", MaxBody>>20)
	errLines = fmt.Errorf("over %d sample lines", MaxLines)
)

// scrape fetches and parses the monitor's endpoint and derives the preset's values.
func (m *mon) scrape(ctx context.Context) ([]value, error) {
	timeout := m.spec.Timeout.D()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.spec.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	req.Header.Set("User-Agent", "volley-monitor")
	if m.auth != "" {
		req.Header.Set("Authorization", m.auth)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, describe(err, timeout)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden:
		if m.auth == "" {
			return nil, fmt.Errorf("HTTP %d: the endpoint wants a token (give the monitor a token, {{secret.NAME}})", resp.StatusCode)
		}
		return nil, fmt.Errorf("HTTP %d: the endpoint refused the monitor's token", resp.StatusCode)
	default:
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	m.buf.Reset()
	if _, err := m.buf.ReadFrom(io.LimitReader(resp.Body, MaxBody+1)); err != nil {
		return nil, describe(err, timeout)
	}
	at := m.now()
	body := m.buf.Bytes()
	if len(body) > MaxBody {
		return nil, errBody
	}
	if lines := bytes.Count(body, []byte{'\n'}) - bytes.Count(body, []byte("\n#")); lines > MaxLines {
		return nil, errLines
	}
	fams, err := m.parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		var pe expfmt.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("line %d: malformed exposition (%s)", pe.Line, pe.Msg)
		}
		return nil, fmt.Errorf("malformed exposition (%v)", err)
	}
	d := deriver{m: m, at: at, cur: map[string]float64{}}
	switch m.spec.Type {
	case plan.MonitorNode:
		err = d.node(fams)
	case plan.MonitorProcess:
		err = d.process(fams)
	default:
		err = d.custom(fams)
	}
	if err != nil {
		return nil, err
	}
	m.prev, m.prevAt = d.cur, at
	return d.out, nil
}

// describe shortens a client error: "timeout after 800ms", the policy's refusal, or the cause.
func describe(err error, timeout time.Duration) error {
	var denied *netpolicy.Denied
	if errors.As(err, &denied) {
		return denied
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("timeout after %v", timeout)
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op
	}
	return err
}

// deriver turns one scrape's families into the preset's values.
type deriver struct {
	m   *mon
	at  time.Time
	cur map[string]float64 // counters, by series id
	out []value
}

func (d *deriver) series(metric, label, unit string) metrics.MonitorSeries {
	id := d.m.spec.Name + "/" + metric
	if label != "" {
		id += "/" + label
	}
	return metrics.MonitorSeries{ID: id, Monitor: d.m.spec.Name, Type: d.m.spec.Type, Metric: metric, Label: label, Unit: unit}
}

func (d *deriver) gauge(s metrics.MonitorSeries, v float64) {
	d.out = append(d.out, value{s, v})
}

// rate records counter c of series s and adds its per-second rate × scale since the previous
// scrape (none on the first scrape or after a reset).
func (d *deriver) rate(s metrics.MonitorSeries, c, scale float64) {
	d.cur[s.ID] = c
	p, ok := d.m.prev[s.ID]
	dt := d.at.Sub(d.m.prevAt).Seconds()
	if !ok || dt <= 0 || c < p {
		return
	}
	d.out = append(d.out, value{s, (c - p) / dt * scale})
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func sampleValue(f *dto.MetricFamily, m *dto.Metric) float64 {
	switch f.GetType() {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_HISTOGRAM:
		return float64(m.GetHistogram().GetSampleCount())
	case dto.MetricType_SUMMARY:
		return float64(m.GetSummary().GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}

func single(fams map[string]*dto.MetricFamily, name string) (float64, bool) {
	f := fams[name]
	if f == nil || len(f.GetMetric()) == 0 {
		return 0, false
	}
	return sampleValue(f, f.GetMetric()[0]), true
}

// hostExporter names the metrics a node preset reads from one kind of exporter.
type hostExporter struct {
	cpu, core string   // the CPU seconds counter and its core label
	idle      []string // its modes that are not busy
	memTotal  []string // total memory, the first present of these
	memFree   []string // free (available) memory, the first present of these
	load      string   // the 1-minute load average; "" none
	netIn     string
	netOut    string
	dev, lo   string // the network counters' device label and the device left out
	tcp       string // established TCP connections (summed over its series)
}

// The exporters a node monitor reads, told apart by their CPU counter.
var hostExporters = []hostExporter{
	{ // node_exporter (Linux and other Unix)
		cpu: "node_cpu_seconds_total", core: "cpu", idle: []string{"idle", "iowait"},
		memTotal: []string{"node_memory_MemTotal_bytes"}, memFree: []string{"node_memory_MemAvailable_bytes"},
		load:  "node_load1",
		netIn: "node_network_receive_bytes_total", netOut: "node_network_transmit_bytes_total", dev: "device", lo: "lo",
		tcp: "node_netstat_Tcp_CurrEstab",
	},
	{ // windows_exporter: no load average on Windows; memory from the cs/os collectors (before
		// 0.30) or the memory collector (0.30 on); its network collector lists no loopback.
		cpu: "windows_cpu_time_total", core: "core", idle: []string{"idle"},
		memTotal: []string{"windows_cs_physical_memory_bytes", "windows_memory_physical_total_bytes"},
		memFree:  []string{"windows_os_physical_memory_free_bytes", "windows_memory_physical_free_bytes"},
		netIn:    "windows_net_bytes_received_total", netOut: "windows_net_bytes_sent_total", dev: "nic",
		tcp: "windows_tcp_connections_established",
	},
}

// coreLess orders core labels numerically: node_exporter's "0", "1", …, windows_exporter's
// "group,number" ("0,2" before "0,10"); others by text.
func coreLess(a, b string) bool {
	ga, na, _ := strings.Cut(a, ",")
	gb, nb, _ := strings.Cut(b, ",")
	x, e1 := strconv.Atoi(ga)
	y, e2 := strconv.Atoi(gb)
	if e1 != nil || e2 != nil {
		return a < b
	}
	if x != y || na == nb {
		return x < y
	}
	x, e1 = strconv.Atoi(na)
	y, e2 = strconv.Atoi(nb)
	if e1 != nil || e2 != nil {
		return na < nb
	}
	return x < y
}

func (d *deriver) node(fams map[string]*dto.MetricFamily) error {
	var ex *hostExporter
	for i := range hostExporters {
		if fams[hostExporters[i].cpu] != nil {
			ex = &hostExporters[i]
			break
		}
	}
	if ex == nil {
		return errors.New("not a node_exporter or windows_exporter endpoint: no node_cpu_seconds_total or windows_cpu_time_total")
	}
	cpu := fams[ex.cpu]
	type core struct{ all, idle float64 }
	cores := map[string]*core{}
	for _, m := range cpu.GetMetric() {
		c := cores[label(m, ex.core)]
		if c == nil {
			c = &core{}
			cores[label(m, ex.core)] = c
		}
		v := m.GetCounter().GetValue() + m.GetUntyped().GetValue()
		c.all += v
		if slices.Contains(ex.idle, label(m, "mode")) {
			c.idle += v
		}
	}
	names := make([]string, 0, len(cores))
	for n := range cores {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return coreLess(names[i], names[j]) })
	// busy% = 100 × (1 − Δidle/Δall): the counters' own clock, so scrape jitter cancels out.
	busy := func(s metrics.MonitorSeries, all, idle float64) {
		pa, ok1 := d.m.prev[s.ID+"#all"]
		pi, ok2 := d.m.prev[s.ID+"#idle"]
		d.cur[s.ID+"#all"], d.cur[s.ID+"#idle"] = all, idle
		if ok1 && ok2 && all > pa && idle >= pi {
			d.gauge(s, 100*(1-(idle-pi)/(all-pa)))
		}
	}
	var all, idle float64
	for _, n := range names {
		all += cores[n].all
		idle += cores[n].idle
	}
	busy(d.series("cpu_percent", "", metrics.UnitPercent), all, idle)
	for _, n := range names {
		busy(d.series("cpu_percent", n, metrics.UnitPercent), cores[n].all, cores[n].idle)
	}
	total, ok1 := first(fams, ex.memTotal)
	free, ok2 := first(fams, ex.memFree)
	if ok1 && ok2 {
		d.gauge(d.series("memory_used_bytes", "", metrics.UnitBytes), total-free)
	}
	if v, ok := single(fams, ex.load); ok {
		d.gauge(d.series("load1", "", metrics.UnitCount), v)
	}
	for _, n := range [2][2]string{{ex.netIn, "net_in_bytes_per_s"}, {ex.netOut, "net_out_bytes_per_s"}} {
		if sum, ok := sumOf(fams[n[0]], ex.dev, ex.lo); ok {
			d.rate(d.series(n[1], "", metrics.UnitBytesPerS), sum, 1)
		}
	}
	if v, ok := sumOf(fams[ex.tcp], "", ""); ok {
		d.gauge(d.series("tcp_conns", "", metrics.UnitCount), v)
	}
	return nil
}

// first is the value of the first of names present in fams.
func first(fams map[string]*dto.MetricFamily, names []string) (float64, bool) {
	for _, n := range names {
		if v, ok := single(fams, n); ok {
			return v, true
		}
	}
	return 0, false
}

// sumOf sums f's series but those whose label key is skip ("" skips none); false without f.
func sumOf(f *dto.MetricFamily, key, skip string) (float64, bool) {
	if f == nil {
		return 0, false
	}
	sum := 0.0
	for _, m := range f.GetMetric() {
		if skip == "" || label(m, key) != skip {
			sum += sampleValue(f, m)
		}
	}
	return sum, true
}

// Metric names `volley monitor` exposes (cmd/volley/monitor.go).
const (
	ProcessCPUSeconds = "volley_process_cpu_seconds_total"
	ProcessCPUPercent = "volley_process_cpu_percent"
	ProcessRSS        = "volley_process_resident_memory_bytes"
	ProcessCount      = "volley_process_count"
	ProcessLabel      = "process"
)

func (d *deriver) process(fams map[string]*dto.MetricFamily) error {
	cpu := fams[ProcessCPUSeconds]
	if cpu == nil {
		return errors.New("not a volley monitor endpoint: no " + ProcessCPUSeconds)
	}
	for _, m := range cpu.GetMetric() {
		d.rate(d.series("cpu_percent", label(m, ProcessLabel), metrics.UnitPercent), sampleValue(cpu, m), 100)
	}
	if f := fams[ProcessRSS]; f != nil {
		for _, m := range f.GetMetric() {
			d.gauge(d.series("rss_bytes", label(m, ProcessLabel), metrics.UnitBytes), sampleValue(f, m))
		}
	}
	return nil
}

func (d *deriver) custom(fams map[string]*dto.MetricFamily) error {
	f := fams[d.m.spec.Metric]
	type match struct {
		label string
		v     float64
	}
	var found []match
	if f != nil {
	metric:
		for _, m := range f.GetMetric() {
			for k, want := range d.m.spec.Labels {
				if label(m, k) != want {
					continue metric
				}
			}
			var rest []string
			for _, l := range m.GetLabel() {
				if _, filtered := d.m.spec.Labels[l.GetName()]; !filtered {
					rest = append(rest, l.GetName()+"="+l.GetValue())
				}
			}
			sort.Strings(rest)
			found = append(found, match{strings.Join(rest, ","), sampleValue(f, m)})
		}
	}
	if len(found) == 0 {
		return fmt.Errorf("no series of %s match", d.m.spec.Metric)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].label < found[j].label })
	found = found[:min(len(found), MaxCustomSeries)]
	counter := f.GetType() != dto.MetricType_GAUGE && f.GetType() != dto.MetricType_UNTYPED
	for _, x := range found {
		s := d.series(d.m.spec.Metric, x.label, metrics.UnitCustomNone)
		if counter {
			d.rate(s, x.v, 1)
		} else {
			d.gauge(s, x.v)
		}
	}
	return nil
}

// Read returns the monitors' latest values at now (a value older than its monitor's interval plus
// the larger of its timeout and half its interval is a gap) and the errors that started or changed
// since the previous Read; it counts the second for the summary. It never waits for a scrape.
func (s *Set) Read(now time.Time) (map[string]float64, []metrics.MonitorError) {
	if s == nil {
		return nil, nil
	}
	s.seconds++
	var vals map[string]float64
	var errs []metrics.MonitorError
	for i, m := range s.mons {
		m.mu.Lock()
		var latest []value
		if m.vals != nil && now.Sub(m.at) <= m.fresh {
			latest = m.vals
		}
		msg := m.err
		m.mu.Unlock()
		for _, v := range latest {
			if vals == nil {
				vals = map[string]float64{}
			}
			vals[v.s.ID] = v.v
			s.add(v)
		}
		if msg == "" {
			s.shown[i] = ""
			continue
		}
		e := metrics.MonitorError{Monitor: m.spec.Name, Message: msg, T: now.UnixMilli(), Seconds: 1}
		if msg != s.shown[i] {
			s.shown[i] = msg
			errs = append(errs, e)
		}
		k := [2]string{m.spec.Name, msg}
		if j, ok := s.errIndex[k]; ok {
			s.errs[j].Seconds++
		} else if len(s.errs) < maxErrors {
			s.errIndex[k] = len(s.errs)
			s.errs = append(s.errs, e)
		}
	}
	return vals, errs
}

func (s *Set) add(v value) {
	j, ok := s.index[v.s.ID]
	if !ok {
		j = len(s.series)
		s.index[v.s.ID] = j
		s.series = append(s.series, v.s)
		s.stats = append(s.stats, stat{max: v.v})
	}
	st := &s.stats[j]
	st.sum += v.v
	st.max = max(st.max, v.v)
	st.n++
}

// Summary returns the series seen (in order of first value), their figures over the seconds read
// (avg and max rounded to 3 decimals; gaps = seconds read without a value) and the errors (one per
// monitor and message, with the second it first appeared and the seconds it lasted).
func (s *Set) Summary() ([]metrics.MonitorSeries, []metrics.TargetStat, []metrics.MonitorError) {
	if s == nil {
		return nil, nil, nil
	}
	stats := make([]metrics.TargetStat, len(s.series))
	for i, ser := range s.series {
		st := s.stats[i]
		stats[i] = metrics.TargetStat{MonitorSeries: ser, Avg: round3(st.sum / float64(st.n)), Max: round3(st.max), Seconds: st.n, Gaps: s.seconds - st.n}
	}
	return s.series, stats, s.errs
}

// Monitors returns the monitors' specs with defaults filled, in plan order.
func (s *Set) Monitors() []plan.Monitor {
	if s == nil {
		return nil
	}
	out := make([]plan.Monitor, len(s.mons))
	for i, m := range s.mons {
		out[i] = m.spec
	}
	return out
}

// Stop ends the scrapers, cancelling a scrape in flight, and waits for them: it does not wait
// for a hanging monitor's timeout. Later calls do nothing.
func (s *Set) Stop() {
	if s == nil {
		return
	}
	s.cancel()
	s.wg.Wait()
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
