package monitor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// nodePayload is a node_exporter answer with two cores whose counters advance by step: core 0
// busy 25 % of its time, core 1 busy 75 %; received bytes grow 1000/s on eth0 (lo ignored).
func nodePayload(step int) string {
	s := float64(step)
	return fmt.Sprintf(`# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu="0",mode="idle"} %g
node_cpu_seconds_total{cpu="0",mode="iowait"} 0
node_cpu_seconds_total{cpu="0",mode="user"} %g
node_cpu_seconds_total{cpu="1",mode="idle"} %g
node_cpu_seconds_total{cpu="1",mode="user"} %g
# TYPE node_memory_MemTotal_bytes gauge
node_memory_MemTotal_bytes 8e+09
# TYPE node_memory_MemAvailable_bytes gauge
node_memory_MemAvailable_bytes 6e+09
# TYPE node_load1 gauge
node_load1 1.5
# TYPE node_network_receive_bytes_total counter
node_network_receive_bytes_total{device="eth0"} %g
node_network_receive_bytes_total{device="lo"} %g
# TYPE node_network_transmit_bytes_total counter
node_network_transmit_bytes_total{device="eth0"} %g
# TYPE node_netstat_Tcp_CurrEstab untyped
node_netstat_Tcp_CurrEstab 42
`, 100+0.75*s, 10+0.25*s, 100+0.25*s, 10+0.75*s, 5000+1000*s, 9e9*s, 2000*s)
}

// served answers each request with body(n) for the n-th request (from 0).
func served(t *testing.T, body func(n int) string) string {
	var n atomic.Int64
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(body(int(n.Add(1) - 1))))
	})
	return tg.URL + "/metrics"
}

func spec(typ, url string) plan.Monitor {
	return plan.Monitor{Name: "web1", Type: typ, URL: url, Interval: plan.Duration(time.Second), Timeout: plan.Duration(800 * time.Millisecond)}
}

// scrapeTwice scrapes a set's only monitor twice, one fake second apart, and reads it.
func scrapeTwice(t *testing.T, s *Set) (map[string]float64, []metrics.MonitorError) {
	t.Helper()
	clock := testutil.NewClock(time.Unix(1000, 0))
	m := s.mons[0]
	m.now = clock.Now
	m.once(context.Background())
	clock.Add(time.Second)
	m.once(context.Background())
	return s.Read(clock.Now())
}

func TestNodePreset(t *testing.T) {
	s := newSet([]plan.Monitor{spec("node", served(t, nodePayload))}, nil)
	vals, errs := scrapeTwice(t, s)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	want := map[string]float64{
		"web1/cpu_percent": 50, "web1/cpu_percent/0": 25, "web1/cpu_percent/1": 75,
		"web1/memory_used_bytes": 2e9, "web1/load1": 1.5, "web1/net_in_bytes_per_s": 1000,
		"web1/net_out_bytes_per_s": 2000, "web1/tcp_conns": 42,
	}
	for id, w := range want {
		if v, ok := vals[id]; !ok || v < w-1e-6 || v > w+1e-6 {
			t.Errorf("%s = %v (present %v), want %v", id, v, ok, w)
		}
	}
	if len(vals) != len(want) {
		t.Errorf("values %v, want exactly %v", vals, want)
	}
	series, stats, _ := s.Summary()
	if len(series) != len(want) || series[0].ID != "web1/cpu_percent" || series[0].Unit != metrics.UnitPercent || series[1].Label != "0" {
		t.Errorf("series %+v", series)
	}
	if stats[0].Seconds != 1 || stats[0].Gaps != 0 || stats[0].Avg != 50 {
		t.Errorf("stat %+v", stats[0])
	}
}

// TestWindowsExporterPreset: a node monitor reads a windows_exporter (two scrapes of a sample
// shaped on windows_exporter 0.25's cpu, cs, os, net and tcp collectors, testdata/windows_exporter_{1,2}.txt,
// one second apart: core "0,0" 20 % busy, core "0,1" 60 %); no load1 series, as Windows has no
// load average. No real windows_exporter runs in CI: the sample is hand-made.
func TestWindowsExporterPreset(t *testing.T) {
	var scrapes [2]string
	for i := range scrapes {
		b, err := os.ReadFile(fmt.Sprintf("testdata/windows_exporter_%d.txt", i+1))
		if err != nil {
			t.Fatal(err)
		}
		scrapes[i] = string(b)
	}
	s := newSet([]plan.Monitor{spec("node", served(t, func(n int) string { return scrapes[min(n, 1)] }))}, nil)
	vals, errs := scrapeTwice(t, s)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	want := map[string]float64{
		"web1/cpu_percent": 40, "web1/cpu_percent/0,0": 20, "web1/cpu_percent/0,1": 60,
		"web1/memory_used_bytes": 17179332608 - 9.6e9, "web1/net_in_bytes_per_s": 250000,
		"web1/net_out_bytes_per_s": 125000, "web1/tcp_conns": 61 + 3,
	}
	for id, w := range want {
		if v, ok := vals[id]; !ok || v < w-1e-6 || v > w+1e-6 {
			t.Errorf("%s = %v (present %v), want %v", id, v, ok, w)
		}
	}
	if len(vals) != len(want) {
		t.Errorf("values %v, want exactly %v (no load1)", vals, want)
	}
	if series, _, _ := s.Summary(); len(series) < 3 || series[1].Label != "0,0" || series[2].Label != "0,1" {
		t.Errorf("series %+v", series)
	}
	// The memory collector's names (windows_exporter 0.30 on) serve as well.
	newer := strings.NewReplacer("windows_cs_physical_memory_bytes", "windows_memory_physical_total_bytes",
		"windows_os_physical_memory_free_bytes", "windows_memory_physical_free_bytes")
	s = newSet([]plan.Monitor{spec("node", served(t, func(n int) string { return newer.Replace(scrapes[min(n, 1)]) }))}, nil)
	if vals, _ := scrapeTwice(t, s); vals["web1/memory_used_bytes"] != want["web1/memory_used_bytes"] {
		t.Errorf("memory collector: %v", vals)
	}
}

func TestCoreOrder(t *testing.T) {
	cores := []string{"1,0", "0,10", "x", "0,2", "10", "2", "0,1"}
	sort.Slice(cores, func(i, j int) bool { return coreLess(cores[i], cores[j]) })
	if got := strings.Join(cores, " "); got != "0,1 0,2 0,10 1,0 2 10 x" {
		t.Errorf("order %s", got)
	}
}

func TestProcessAndCustomPresets(t *testing.T) {
	proc := served(t, func(n int) string {
		return fmt.Sprintf("# TYPE volley_process_cpu_seconds_total counter\nvolley_process_cpu_seconds_total{process=\"nginx\"} %g\n"+
			"# TYPE volley_process_resident_memory_bytes gauge\nvolley_process_resident_memory_bytes{process=\"nginx\"} 1.2e+07\n", 3+1.5*float64(n))
	})
	custom := served(t, func(n int) string {
		return fmt.Sprintf("# TYPE http_requests_total counter\nhttp_requests_total{code=\"200\",job=\"a\"} %d\nhttp_requests_total{code=\"500\",job=\"a\"} %d\nhttp_requests_total{code=\"200\",job=\"b\"} 7\n", 10+20*n, 5*n)
	})
	s := newSet([]plan.Monitor{spec("process", proc)}, nil)
	vals, _ := scrapeTwice(t, s)
	if vals["web1/cpu_percent/nginx"] != 150 || vals["web1/rss_bytes/nginx"] != 1.2e7 || len(vals) != 2 {
		t.Errorf("process values %v", vals)
	}
	c := spec("custom", custom)
	c.Metric, c.Labels = "http_requests_total", map[string]string{"job": "a"}
	s = newSet([]plan.Monitor{c}, nil)
	vals, _ = scrapeTwice(t, s)
	if vals["web1/http_requests_total/code=200"] != 20 || vals["web1/http_requests_total/code=500"] != 5 || len(vals) != 2 {
		t.Errorf("custom values %v", vals)
	}
}

// TestHostileMonitors: a monitor that hangs, floods or answers garbage yields gaps and one error
// each, within its timeout, and a failed scrape never keeps old values.
func TestHostileMonitors(t *testing.T) {
	release := make(chan struct{})
	hang := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	flood := "http://" + testutil.EndlessBodyTarget(t) + "/metrics"
	garbage := served(t, func(int) string { return "# TYPE x counter\nx 1\nthis is {not exposition\n" })
	cases := []struct {
		url, want string
		timeout   time.Duration
	}{
		{hang.URL, "timeout after 200ms", 200 * time.Millisecond},
		{flood, "body over 4 MiB", 5 * time.Second}, // time to read 4 MiB under -race on a busy machine
		{garbage, "line 3: malformed exposition", time.Second},
		{served(t, func(int) string { return "# TYPE up gauge\nup 1\n" }), "not a node_exporter or windows_exporter endpoint: no node_cpu_seconds_total", time.Second},
	}
	probe := testutil.StartSchedProbe(t)
	for _, c := range cases {
		sp := spec("node", c.url)
		sp.Interval, sp.Timeout = plan.Duration(max(c.timeout, time.Second)), plan.Duration(c.timeout)
		s := newSet([]plan.Monitor{sp}, nil)
		t0 := time.Now()
		s.mons[0].once(context.Background())
		if d := time.Since(t0); d > c.timeout+time.Second+probe.Stop().Slack(testutil.StopChain) {
			t.Errorf("%s: scrape took %v", c.want, d)
		}
		vals, errs := s.Read(time.Now())
		if len(vals) != 0 || len(errs) != 1 || !strings.HasPrefix(errs[0].Message, c.want) || errs[0].Seconds != 1 {
			t.Errorf("%s: values %v, errors %+v", c.want, vals, errs)
		}
		// The same error is not repeated in the next second's sample, but it is counted.
		s.mons[0].once(context.Background())
		if _, errs = s.Read(time.Now()); len(errs) != 0 {
			t.Errorf("%s: repeated error %+v", c.want, errs)
		}
		if _, _, sum := s.Summary(); len(sum) != 1 || sum[0].Seconds != 2 {
			t.Errorf("%s: summary errors %+v", c.want, sum)
		}
	}
}

// TestPolicy: monitor URLs are targets: a denied address is refused before any connection, and
// a name that resolves to a denied address is refused by the dial's Control hook.
func TestPolicy(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(nodePayload(0))) })
	port := tg.URL[strings.LastIndexByte(tg.URL, ':')+1:]
	pol, err := netpolicy.New(nil, []string{"127.0.0.0/8", "::1/128"})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"http://169.254.169.254/metrics", "http://localhost:" + port + "/metrics", tg.URL + "/metrics"} {
		p := pol
		if strings.Contains(u, "169.254") {
			p = nil // the built-in denial, with the default policy
		}
		s := newSet([]plan.Monitor{spec("node", u)}, p)
		_, err := s.mons[0].scrape(context.Background())
		var d *netpolicy.Denied
		if !errors.As(err, &d) {
			t.Errorf("%s: %v, want a *netpolicy.Denied", u, err)
		}
	}
	if tg.Requests() != 0 {
		t.Errorf("the target saw %d requests", tg.Requests())
	}
}

// TestStartStop: the scrapers run on their own and Stop ends them.
func TestStartStop(t *testing.T) {
	var n atomic.Int64
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(nodePayload(int(n.Add(1)))))
	})
	sp := spec("node", tg.URL)
	sp.Interval = plan.Duration(50 * time.Millisecond)
	s := Start([]plan.Monitor{sp}, nil, nil)
	// Until a rate is there: two scrapes in a row succeeded (a busy machine may time one out).
	hasRate := func() bool {
		m := s.mons[0]
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, v := range m.vals {
			if v.s.ID == "web1/cpu_percent" {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(20 * time.Second)
	for !hasRate() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	s.Stop()
	after := tg.Requests()
	if after < 2 || !hasRate() {
		t.Fatalf("%d scrapes, no rate", after)
	}
	time.Sleep(120 * time.Millisecond)
	if tg.Requests() != after {
		t.Errorf("scrapes after Stop")
	}
	// Stop cancels a hanging scrape rather than waiting for its timeout.
	release := make(chan struct{})
	defer close(release)
	hang := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	sp = spec("node", hang.URL)
	sp.Timeout = plan.Duration(time.Minute)
	sp.Interval = sp.Timeout
	s = Start([]plan.Monitor{sp}, nil, nil)
	for hang.Requests() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	t0 := time.Now()
	s.Stop()
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("Stop waited %v for a hanging scrape", d)
	}
	if Start(nil, nil, nil) != nil {
		t.Error("a set without monitors")
	}
}
