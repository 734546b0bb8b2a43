package engine

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// newSlowTarget starts a loopback HTTP/1.1 server that, for each request, sleeps wait before
// writing its first byte (the status line and header), then sleeps trickle before writing the
// body's last bytes. It counts connections.
func newSlowTarget(t *testing.T, wait, trickle time.Duration) *testutil.TCPServer {
	t.Helper()
	return testutil.ServeTCP(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			time.Sleep(wait)
			if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nab")); err != nil {
				return
			}
			time.Sleep(trickle)
			if _, err := c.Write([]byte("cd")); err != nil {
				return
			}
		}
	})
}

// runEngine runs a plan and returns the engine (for its recorder) with the summary and samples.
func runEngine(t *testing.T, js string) (*Engine, *metrics.Summary, []metrics.Sample) {
	t.Helper()
	var samples []metrics.Sample
	e, err := newEngine(mustPlan(t, js), Options{OnSample: func(s metrics.Sample) { samples = append(samples, s) }})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return e, sum, samples
}

// phaseCount is how many values a phase histogram holds.
func phaseCount(c *metrics.PhaseCounts, phase int) int64 {
	var n int64
	for _, v := range c[phase] {
		n += v
	}
	return n
}

// slotErr is the phase histograms' resolution: a figure is its slot's midpoint, within 1/64 of
// the value.
const slotErr = 1.0 / 64

func within(t *testing.T, what string, got float64, lo, hi time.Duration) {
	t.Helper()
	if got < ms(lo)*(1-slotErr) || got > ms(hi)*(1+slotErr) {
		t.Errorf("%s = %.3f ms, want %.3f–%.3f", what, got, ms(lo), ms(hi))
	}
}

// A target that answers after a known wait and sends its body's end after a known delay: the
// wait and receive phases show those delays (margins from the measured scheduling delay, which
// postpones the target's writes as much as the engine's reads), and a keep-alive VU
// counts its one connect once.
func TestTimingWaitAndReceive(t *testing.T) {
	const wait, trickle = 30 * time.Millisecond, 20 * time.Millisecond
	tg := newSlowTarget(t, wait, trickle)
	probe := testutil.StartSchedProbe(t)
	e, sum, samples := runEngine(t, iterationsPlan("http://"+tg.Addr+"/", 8, ""))
	d := probe.Stop()
	slack := 3*time.Millisecond + 2*d.P99
	if sum.Requests != 8 || sum.Errors != 0 {
		t.Fatalf("requests %d errors %v", sum.Requests, sum.ErrorKinds)
	}
	tm := sum.Timing
	// Each phase runs between two of the engine's timestamps (wait: the send's end to the first
	// byte; receive: the first byte to the last). A late earlier timestamp shortens the phase (the
	// target's delay has partly passed when it is taken), so the lower margins are the measured
	// delay too.
	within(t, "wait p50", tm.Wait.P50, wait-min(wait, d.P99), wait+slack)
	within(t, "wait min", tm.Wait.Min, wait-min(wait, d.Max), wait+slack)
	within(t, "receive p50", tm.Receive.P50, trickle-min(trickle, d.P99), trickle+slack)
	within(t, "receive min", tm.Receive.Min, trickle-min(trickle, d.Max), trickle+slack)
	// Phases never exceed the service time; the send, the rest, is small.
	if sum.ServiceTime.P50 < tm.Wait.P50+tm.Receive.P50-1 {
		t.Errorf("service p50 %.3f < wait %.3f + receive %.3f", sum.ServiceTime.P50, tm.Wait.P50, tm.Receive.P50)
	}
	var pc metrics.PhaseCounts
	e.rec.ReadPhases(&pc)
	if got := phaseCount(&pc, metrics.PhaseConnect); got != tg.Conns() || got != 1 {
		t.Errorf("connects recorded %d, target accepted %d, want 1", got, tg.Conns())
	}
	if phaseCount(&pc, metrics.PhaseTLS) != 0 || tm.TLS != (metrics.Latency{}) {
		t.Errorf("TLS on plain HTTP: %+v", tm.TLS)
	}
	if tm.Connect.P50 != 0 || tm.Connect.Max <= 0 {
		t.Errorf("connect %+v, want p50 0 (7 of 8 reused) and a max > 0", tm.Connect)
	}
	// The one name's row is the run's, live and after.
	name := e.reqs[0].r.Name
	n := sum.ByName[name]
	if n.Timing != tm || n.Requests != 8 || n.RPS != sum.RPS {
		t.Errorf("by_name %+v, run timing %+v", n, tm)
	}
	last := samples[len(samples)-1].ByName[name]
	if last.Timing.Wait.P50 != tm.Wait.P50 || last.P95 == 0 || last.P50 > last.P95 || last.P95 > last.P99 {
		t.Errorf("last sample by_name %+v", last)
	}
}

// Without keep-alive every request makes its own connection: each has a connect time, counted
// once per connection the target accepted.
func TestTimingConnectPerRequestWithoutKeepAlive(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	e, sum, _ := runEngine(t, iterationsPlan(tg.URL+"/", 20, `,"keep_alive":false`))
	if sum.Requests != 20 || sum.Errors != 0 {
		t.Fatalf("requests %d errors %v", sum.Requests, sum.ErrorKinds)
	}
	var pc metrics.PhaseCounts
	e.rec.ReadPhases(&pc)
	if got := phaseCount(&pc, metrics.PhaseConnect); got != 20 || tg.Conns() != 20 {
		t.Errorf("connects recorded %d, target accepted %d, want 20", got, tg.Conns())
	}
	if pc[metrics.PhaseConnect][0] != 0 || sum.Timing.Connect.Min <= 0 {
		t.Errorf("a connect of 0: %+v", sum.Timing.Connect)
	}
}

// Over TLS the handshake has a time of its own, only on the requests that made a connection:
// once with keep-alive, on every request without.
func TestTimingTLSOnlyOnNewConnections(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }))
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "https://")
	for _, keepAlive := range []bool{true, false} {
		t.Run(fmt.Sprintf("keep_alive=%v", keepAlive), func(t *testing.T) {
			conns.Store(0)
			const n = 10
			e, sum, _ := runEngine(t, fmt.Sprintf(`{"name":"t","requests":[{"url":"https://secure.example.test/"}],
				"load":{"executor":"per-vu-iterations","vus":1,"iterations":%d},
				"http":{"timeout":"5s","keep_alive":%v,"insecure_skip_verify":true,"hosts":{"secure.example.test":%q}}}`, n, keepAlive, addr))
			if sum.Requests != n || sum.Errors != 0 {
				t.Fatalf("requests %d errors %v", sum.Requests, sum.ErrorKinds)
			}
			var pc metrics.PhaseCounts
			e.rec.ReadPhases(&pc)
			want := int64(1)
			if !keepAlive {
				want = n
			}
			tls, connects := phaseCount(&pc, metrics.PhaseTLS), phaseCount(&pc, metrics.PhaseConnect)
			if tls != want || connects != want || conns.Load() != want {
				t.Errorf("handshakes %d, connects %d, target connections %d; want %d", tls, connects, conns.Load(), want)
			}
			tm := sum.Timing
			if pc[metrics.PhaseTLS][0] != 0 || tm.TLS.Max <= 0 {
				t.Errorf("a handshake took 0: %+v", tm.TLS)
			}
			if keepAlive && tm.TLS.P50 != 0 || !keepAlive && tm.TLS.Min <= 0 {
				t.Errorf("tls %+v", tm.TLS)
			}
		})
	}
}

// A plan with several request names has a row per name, live and after, with its checks, rate,
// percentiles and phases; the run's timing merges the names'.
func TestByNameRowsWithChecksAndTiming(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(10 * time.Millisecond)
		}
		_, _ = w.Write([]byte("ok"))
	})
	_, sum, samples := runEngine(t, `{"name":"t","flow":"sequence","requests":[
		{"name":"fast","url":"`+tg.URL+`/fast","checks":[{"type":"status","op":"eq","value":200}]},
		{"name":"slow","url":"`+tg.URL+`/slow","checks":[{"type":"status","op":"eq","value":201}]}],
		"load":{"executor":"per-vu-iterations","vus":2,"iterations":5},"http":{"timeout":"5s"}}`)
	fast, slow := sum.ByName["fast"], sum.ByName["slow"]
	if fast.Requests != 10 || slow.Requests != 10 || fast.ChecksPassed != 10 || fast.ChecksFailed != 0 ||
		slow.ChecksPassed != 0 || slow.ChecksFailed != 10 || slow.Errors != 10 {
		t.Errorf("fast %+v\nslow %+v", fast, slow)
	}
	if slow.Timing.Wait.P50 < 10*(1-slotErr) || fast.Timing.Wait.P50 >= slow.Timing.Wait.P50 || fast.RPS <= 0 {
		t.Errorf("wait fast %+v slow %+v", fast.Timing.Wait, slow.Timing.Wait)
	}
	if sum.Timing.Wait.Max != max(fast.Timing.Wait.Max, slow.Timing.Wait.Max) || sum.Timing.Connect.Max <= 0 {
		t.Errorf("run timing %+v", sum.Timing)
	}
	var reqs int64
	last := map[string]metrics.NameSample{}
	for _, s := range samples {
		for name, n := range s.ByName {
			reqs += n.Requests
			last[name] = n
		}
	}
	if reqs != 20 || last["slow"].ChecksFailed != 10 || last["fast"].ChecksPassed != 10 ||
		last["slow"].P50 != slow.Latency.P50 || last["slow"].Timing != slow.Timing {
		t.Errorf("samples: %d requests, last %+v", reqs, last)
	}
}

// A redirect's hops add up: wait covers both answers' waits.
func TestTimingSumsRedirectHops(t *testing.T) {
	const wait = 15 * time.Millisecond
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(wait)
		if r.URL.Path == "/from" {
			http.Redirect(w, r, "/to", http.StatusFound)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	probe := testutil.StartSchedProbe(t)
	_, sum, _ := runEngine(t, iterationsPlan(tg.URL+"/from", 3, `,"follow_redirects":true`))
	d := probe.Stop()
	if sum.Requests != 3 || sum.Errors != 0 {
		t.Fatalf("requests %d errors %v", sum.Requests, sum.ErrorKinds)
	}
	// Each hop's wait may start late by the scheduling delay (TestTimingWaitAndReceive).
	if got := sum.Timing.Wait.Min; got < ms(2*wait-min(2*wait, 2*d.Max))*(1-slotErr) {
		t.Errorf("wait min %.3f ms, want ≥ %v (two hops) less 2 × %v scheduling delay", got, 2*wait, d)
	}
	if sum.Timing.Wait.Max > sum.ServiceTime.Max*(1+slotErr) {
		t.Errorf("wait max %.3f > service max %.3f", sum.Timing.Wait.Max, sum.ServiceTime.Max)
	}
}

// With keep-alive, several VUs each count their one connect once: as many as the target accepted.
func TestTimingConnectOncePerConnection(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	e, sum, _ := runEngine(t, fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],
		"load":{"executor":"per-vu-iterations","vus":4,"iterations":25},"http":{"timeout":"5s"}}`, tg.URL+"/"))
	if sum.Requests != 100 || sum.Errors != 0 {
		t.Fatalf("requests %d errors %v", sum.Requests, sum.ErrorKinds)
	}
	var pc metrics.PhaseCounts
	e.rec.ReadPhases(&pc)
	if got := phaseCount(&pc, metrics.PhaseConnect); got != 4 || tg.Conns() != 4 {
		t.Errorf("connects recorded %d, target accepted %d, want 4", got, tg.Conns())
	}
	if phaseCount(&pc, metrics.PhaseWait) != 100 || sum.Timing.Connect.P95 != 0 || sum.Timing.Connect.Max <= 0 {
		t.Errorf("connect %+v", sum.Timing.Connect)
	}
}
