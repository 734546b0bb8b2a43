package engine

// Behaviour tests: a loopback target with one controlled misbehaviour, a load, and the answer a
// correct load tester must give (issue "Engine: measurements that stay right against misbehaving
// servers"). Tolerances allow for timer granularity on a shared 2-core machine.

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

func openPlan(url string, rate int, dur string, maxVUs int, timeout string, extra string) string {
	return fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],
		"load":{"executor":"constant-arrival-rate","rate":%d,"duration":%q,"pre_allocated_vus":10,"max_vus":%d},
		"http":{"timeout":%q%s}}`, url, rate, dur, maxVUs, timeout, extra)
}

func closedPlan(url string, vus int, dur string, timeout string, extra string) string {
	return fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],
		"load":{"executor":"constant-vus","vus":%d,"duration":%q},
		"http":{"timeout":%q%s}}`, url, vus, dur, timeout, extra)
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// delay is how late goroutines woke during a run, in ms, measured twice: by a testutil.SchedProbe
// beside the run (the target's handlers and timers wake as late) and by the engine itself (its
// schedule lag: how late each open-model VU sent against the due time its latency counts from).
// A test widens its timing margins by it, so that they are tight on a quiet machine and still
// hold on a busy one: typical (p99s) for medians, worst (maxima) for tails.
type delay struct {
	probe          testutil.SchedDelay
	typical, worst float64
}

// runProbed runs p and measures its delay.
func runProbed(t *testing.T, p *plan.Plan) (*metrics.Summary, delay) {
	t.Helper()
	sum, _, d := runSamplesProbed(t, p)
	return sum, d
}

// runSamplesProbed is runProbed that keeps the samples.
func runSamplesProbed(t *testing.T, p *plan.Plan) (*metrics.Summary, []metrics.Sample, delay) {
	t.Helper()
	probe := testutil.StartSchedProbe(t)
	sum, samples := run(t, p)
	pd := probe.Stop()
	d := delay{probe: pd, typical: ms(pd.P99) + sum.ScheduleLag.P99, worst: ms(pd.Max) + sum.ScheduleLag.Max}
	t.Logf("%v; engine schedule lag p99 %.3g ms, max %.3g ms", pd, sum.ScheduleLag.P99, sum.ScheduleLag.Max)
	return sum, samples, d
}

// checkDropped checks the open model's accounting: every one of the n scheduled iterations was
// sent or counted as dropped — but for those due within the worst delay before the end (at rate
// per second), whose VUs may wake after the run has ended — and iterations are dropped only when
// goroutines woke late. An iteration is dropped when its VU wakes more than dropTolerance after
// its due time: when the probe saw no wakeup even half that late, none may be; when it did, how
// many depends on how the VUs fared against the other processes, and is only logged.
func checkDropped(t *testing.T, sum *metrics.Summary, n, rate int64, dl delay) {
	t.Helper()
	atEnd := int64(math.Ceil(float64(rate) * dl.worst / 1000))
	if got := sum.Requests + sum.Interrupted + sum.DroppedIterations; got > n || got < n-atEnd {
		t.Errorf("requests %d + interrupted %d + dropped %d = %d, want %d (-%d at the end)", sum.Requests, sum.Interrupted, sum.DroppedIterations, got, n, atEnd)
	}
	late := dl.probe.Later(dropTolerance / 2)
	if sum.DroppedIterations > 0 {
		t.Logf("dropped %d of %d iterations; %d of %d probe wakeups were over %v late", sum.DroppedIterations, n, late, dl.probe.Wakeups, dropTolerance/2)
	}
	if late == 0 && sum.DroppedIterations > 0 {
		t.Errorf("dropped %d iterations although no probe wakeup was over %v late", sum.DroppedIterations, dropTolerance/2)
	}
	if sum.Requests == 0 {
		t.Error("no request was sent")
	}
}

func between(t *testing.T, what string, v, lo, hi float64) {
	t.Helper()
	if v < lo || v > hi {
		t.Errorf("%s = %.4g, want %.4g–%.4g", what, v, lo, hi)
	}
}

// stallTarget answers at once, except that every request arriving between 2 s and 4 s after
// t0 is held until the 4 s mark. Calling the returned start sets t0 to now; late is how far past
// the 4 s mark the last held request was let go (a busy machine wakes and serves the ~200 held
// requests late).
func stallTarget(t *testing.T) (tg *testutil.Target, start func(), late func() time.Duration) {
	var t0 time.Time
	var mu sync.Mutex
	var latest atomic.Int64
	tg = testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		start := t0
		mu.Unlock()
		el := time.Since(start)
		if el >= 2*time.Second && el < 4*time.Second {
			time.Sleep(4*time.Second - el)
			for l := int64(time.Since(start) - 4*time.Second); ; {
				if p := latest.Load(); l <= p || latest.CompareAndSwap(p, l) {
					break
				}
			}
		}
	})
	return tg, func() {
			mu.Lock()
			t0 = time.Now()
			mu.Unlock()
		}, func() time.Duration {
			return time.Duration(latest.Load())
		}
}

func TestOpenModelSeesAStallInItsPercentiles(t *testing.T) {
	tg, startClock, released := stallTarget(t)
	p := mustPlan(t, openPlan(tg.URL, 100, "6s", 400, "5s", ""))
	startClock()
	sum, d := runProbed(t, p)
	// The held answers leave the target late by released(), and are read as late again.
	rel := 2 * ms(released())
	t.Logf("the held answers left the target up to %.3g ms late", rel/2)
	checkDropped(t, sum, 600, 100, d)
	if sum.Errors != 0 {
		t.Errorf("errors %v", sum.ErrorKinds)
	}
	// Latency is counted from the due time, so each figure may include the VU's late send and the
	// target's late wakeup: the median by the typical delay, the stall's tail by the worst. The
	// lower bounds, the stall seen in the percentiles, fall only by the dropped iterations: each
	// may have been one of the stalled ones, 10 ms of the stall (at 100/s) not measured.
	l := sum.Latency
	missed := 10 * float64(sum.DroppedIterations)
	between(t, "p50 ms", l.P50, 0, 5+d.typical)
	between(t, "p90 ms", l.P90, 1250-missed, 1550+d.worst+rel)
	between(t, "p99 ms", l.P99, 1850-missed, 2050+d.worst+rel)
	between(t, "max ms", l.Max, 0, 2100+d.worst+rel)
	checkOrdered(t, l)
	if sum.Requests+sum.Interrupted != tg.Requests() {
		t.Errorf("volley %d, target %d", sum.Requests, tg.Requests())
	}
	// Achieved arrival rate while the target keeps up: within 1% of 100/s (when none was dropped).
	if sum.DroppedIterations == 0 {
		between(t, "send rate", sum.SendRate, 99, 101)
	}
}

func TestClosedModelKeepsTheStalledRequest(t *testing.T) {
	tg, startClock, released := stallTarget(t)
	p := mustPlan(t, closedPlan(tg.URL, 1, "6s", "5s", ""))
	startClock()
	sum, d := runProbed(t, p)
	between(t, "max ms", sum.Latency.Max, 1900, 2100+d.worst+2*ms(released()))
	if sum.Errors != 0 || sum.Requests+sum.Interrupted != tg.Requests() {
		t.Errorf("errors %v; volley %d target %d", sum.ErrorKinds, sum.Requests, tg.Requests())
	}
}

func TestOpenModelAgainstASlowTarget(t *testing.T) {
	var inFlight, peak atomic.Int64
	var first, last, answered atomic.Int64
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		now := time.Now().UnixNano()
		first.CompareAndSwap(0, now)
		last.Store(now)
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(2 * time.Second)
		inFlight.Add(-1)
		for now := time.Now().UnixNano(); ; { // the latest: when the last answer left
			if a := answered.Load(); now <= a || answered.CompareAndSwap(a, now) {
				break
			}
		}
	})
	start := time.Now()
	sum, d := runProbed(t, mustPlan(t, openPlan(tg.URL, 20, "5s", 100, "10s", "")))
	took := time.Since(start)
	// Late sends (d.worst) and dropped iterations move the figures by what was measured.
	late, drops := d.worst/1000, float64(sum.DroppedIterations)
	checkDropped(t, sum, 100, 20, d)
	between(t, "last sent after first (s)", time.Duration(last.Load()-first.Load()).Seconds(), 4.8-late, 5.0+late)
	between(t, "peak in flight", float64(peak.Load()), 38-drops-20*late, 42+20*late)
	between(t, "min ms", sum.Latency.Min, 1995, 2100+d.worst) // HDR buckets: 0.1% precision
	between(t, "max ms", sum.Latency.Max, 2000, 2100+d.worst)
	// The run waits for the answers to its last sends (5 s + 2 s), and ends soon after the last.
	lastAnswer := time.Duration(answered.Load() - start.UnixNano()).Seconds()
	// After the last answer, the run's end is a chain of wakeups (the VU, the engine, the summary).
	between(t, "run length (s)", took.Seconds(), 6.9, max(7.5, lastAnswer+0.5)+late+d.probe.Slack(testutil.StopChain).Seconds())
	if sum.DroppedIterations == 0 {
		between(t, "send rate", sum.SendRate, 19.8, 20.2)
	}
	if sum.RPS <= 0 || sum.RPS >= sum.SendRate {
		t.Errorf("completion rate %.2f should be below the send rate %.2f (the run lasts 7 s)", sum.RPS, sum.SendRate)
	}
	if sum.Errors != 0 || tg.Requests() != sum.Requests {
		t.Errorf("errors %v; volley %d target %d", sum.ErrorKinds, sum.Requests, tg.Requests())
	}
}

func TestClosedModelAccountsForEveryRequest(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { time.Sleep(800 * time.Millisecond) })
	sum, d := runProbed(t, mustPlan(t, closedPlan(tg.URL, 10, "3s", "5s", "")))
	if tg.Requests() != 40 {
		t.Errorf("target received %d, want 40", tg.Requests())
	}
	if sum.Requests+sum.Interrupted != 40 || sum.Errors != 0 {
		t.Errorf("requests %d interrupted %d errors %v", sum.Requests, sum.Interrupted, sum.ErrorKinds)
	}
	between(t, "p50 ms", sum.Latency.P50, 800, 830+d.typical)
}

func TestConnectionCloseEveryResponse(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		w.Header().Set("Connection", "close")
	})
	sum, d := runProbed(t, mustPlan(t, closedPlan(tg.URL, 4, "3s", "1s", "")))
	if sum.Errors != 0 {
		t.Errorf("errors %v", sum.ErrorKinds)
	}
	// 4 VUs, each a request per ~55 ms (50 ms + a new connection) on a quiet machine; a late
	// wakeup adds to each.
	between(t, "rps", sum.RPS, 4000/(61.5+d.typical), 80)
	between(t, "p50 ms", sum.Latency.P50, 50, 56+d.typical)
	if tg.Conns() < sum.Requests {
		t.Errorf("%d connections for %d requests with Connection: close", tg.Conns(), sum.Requests)
	}
}

func TestBodilessResponses(t *testing.T) {
	cases := map[string]string{
		"HEAD with Content-Length": "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n",
		"HEAD announcing chunked":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
		"204 No Content":           "HTTP/1.1 204 No Content\r\n\r\n",
		"304 Not Modified":         "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n",
	}
	for name, resp := range cases {
		t.Run(name, func(t *testing.T) {
			srv := testutil.NewRawServer(t, func(r *http.Request) testutil.RawAnswer { return testutil.RawAnswer{Bytes: []byte(resp)} })
			method := "GET"
			if strings.HasPrefix(name, "HEAD") {
				method = "HEAD"
			}
			js := fmt.Sprintf(`{"name":"t","requests":[{"method":%q,"url":"http://%s/"}],"load":{"vus":2,"duration":"2s"},"http":{"timeout":"1s"}}`, method, srv.Addr)
			sum, d := runProbed(t, mustPlan(t, js))
			if sum.Errors != 0 || sum.Requests == 0 {
				t.Fatalf("requests %d errors %v", sum.Requests, sum.ErrorKinds)
			}
			between(t, "p99 ms", sum.Latency.P99, 0, 20+d.typical)
			if sum.BodyBytesIn != 0 {
				t.Errorf("body bytes %d", sum.BodyBytesIn)
			}
			if sum.Requests+sum.Interrupted != srv.Requests() {
				t.Errorf("volley %d target %d", sum.Requests, srv.Requests())
			}
			if strings.HasPrefix(name, "304") && sum.StatusCodes["304"] != sum.Requests {
				t.Errorf("304s: %v", sum.StatusCodes)
			}
		})
	}
}

func TestOneConnectionPerVU(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { time.Sleep(time.Millisecond) })
	sum, _ := run(t, mustPlan(t, closedPlan(tg.URL, 8, "3s", "1s", "")))
	if tg.Conns() != 8 || sum.Errors != 0 {
		t.Errorf("target saw %d connections (want 8), errors %v", tg.Conns(), sum.ErrorKinds)
	}
}

func TestStatusMixIsCountedAsTheTargetSentIt(t *testing.T) {
	var n atomic.Int64
	var sent503, sent200 atomic.Int64
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			w.WriteHeader(404)
			return
		}
		if n.Add(1)%10 < 3 {
			sent503.Add(1)
			w.WriteHeader(503)
			return
		}
		sent200.Add(1)
	})
	sum, samples := run(t, mustPlan(t, closedPlan(tg.URL+"/", 4, "2s", "1s", "")))
	if sum.StatusCodes["503"] != sent503.Load() || sum.StatusCodes["200"] != sent200.Load() {
		t.Errorf("volley %v, target sent 200×%d 503×%d", sum.StatusCodes, sent200.Load(), sent503.Load())
	}
	between(t, "error rate", sum.ErrorRate, 0.29, 0.31)
	if sum.ErrorKinds["status_5xx"] != sum.StatusCodes["503"] {
		t.Errorf("kinds %v", sum.ErrorKinds)
	}
	var tps float64
	for _, s := range samples {
		tps += s.RPS * s.IntervalS
	}
	between(t, "TPS × seconds", tps, float64(sum.Requests)*0.995, float64(sum.Requests)*1.005) // rps and interval_s are rounded

	sum404, _ := run(t, mustPlan(t, closedPlan(tg.URL+"/missing", 2, "1s", "1s", "")))
	if sum404.RPS <= 0 || sum404.ErrorKinds["status_4xx"] != sum404.Requests {
		t.Errorf("all-404: rps %.1f kinds %v", sum404.RPS, sum404.ErrorKinds)
	}
}

func redirectTarget(t *testing.T) *testutil.Target {
	return testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		switch r.URL.Path {
		case "/":
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			w.Write([]byte("final"))
		}
	})
}

func TestRedirects(t *testing.T) {
	t.Run("not following", func(t *testing.T) {
		tg := redirectTarget(t)
		sum, _ := run(t, mustPlan(t, openPlan(tg.URL+"/", 20, "2s", 20, "2s", "")))
		// 40 arrivals: each one answered 302 (counted once, as the target counts it), or, on a
		// machine too busy to hand it to a VU in time, dropped or cut off by the end — never lost.
		got := sum.StatusCodes["302"]
		if got != int64(tg.Requests()) || sum.Errors != 0 || got+sum.DroppedIterations+sum.Interrupted != 40 || got < 36 {
			t.Errorf("codes %v errors %v dropped %d interrupted %d target %d", sum.StatusCodes, sum.ErrorKinds,
				sum.DroppedIterations, sum.Interrupted, tg.Requests())
		}
	})
	t.Run("following", func(t *testing.T) {
		tg := redirectTarget(t)
		sum, d := runProbed(t, mustPlan(t, openPlan(tg.URL+"/", 20, "2s", 20, "2s", `,"follow_redirects":true`)))
		// 40 arrivals, each two hops to the target; on a busy machine a few dropped or cut off
		// (chains hold a VU longer than single requests: a lower floor than "not following")
		n := sum.Requests
		if sum.StatusCodes["200"] != n || sum.Errors != 0 || n+sum.DroppedIterations+sum.Interrupted != 40 || n < 30 ||
			tg.Requests() < 2*n || tg.Requests() > 2*(n+sum.Interrupted) {
			t.Errorf("codes %v requests %d errors %v dropped %d interrupted %d target %d", sum.StatusCodes, n, sum.ErrorKinds,
				sum.DroppedIterations, sum.Interrupted, tg.Requests())
		}
		between(t, "p50 ms", sum.Latency.P50, 40, 50+d.typical)
	})
	t.Run("loop", func(t *testing.T) {
		tg := redirectTarget(t)
		sum, _ := run(t, mustPlan(t, openPlan(tg.URL+"/loop", 20, "2s", 20, "2s", `,"follow_redirects":true,"max_redirects":5`)))
		n := sum.Requests
		if sum.ErrorKinds["redirect_loop"] != n || n+sum.DroppedIterations+sum.Interrupted != 40 || n < 30 ||
			tg.Requests() < 6*n || tg.Requests() > 6*(n+sum.Interrupted) {
			t.Errorf("kinds %v requests %d dropped %d interrupted %d target %d (want 6 per request)", sum.ErrorKinds, n,
				sum.DroppedIterations, sum.Interrupted, tg.Requests())
		}
	})
}

func TestTimeoutsCoverTheWholeExchange(t *testing.T) {
	t.Run("hang", func(t *testing.T) {
		var n atomic.Int64
		tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1)%2 == 0 {
				select {
				case <-time.After(5 * time.Second):
				case <-r.Context().Done():
				}
			}
		})
		sum, d := runProbed(t, mustPlan(t, openPlan(tg.URL, 20, "4s", 100, "1s", "")))
		checkDropped(t, sum, 80, 20, d)
		// The target hangs every second request it sees, whichever were dropped.
		if n := tg.Requests(); sum.Requests != n || sum.ErrorKinds["timeout"] != n/2 || sum.Successes != n-n/2 {
			t.Errorf("successes %d kinds %v target %d", sum.Successes, sum.ErrorKinds, n)
		}
		between(t, "max ms", sum.Latency.Max, 0, 1050+d.worst) // the timeout, from a late send, by a late timer
	})
	t.Run("trickle", func(t *testing.T) {
		tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "20")
			w.WriteHeader(200)
			for i := 0; i < 20; i++ {
				w.Write([]byte("x"))
				w.(http.Flusher).Flush()
				select {
				case <-time.After(200 * time.Millisecond):
				case <-r.Context().Done():
					return
				}
			}
		})
		sum, d := runProbed(t, mustPlan(t, openPlan(tg.URL, 5, "3s", 20, "1s", "")))
		checkDropped(t, sum, 15, 5, d)
		if n := sum.Requests; sum.ErrorKinds["timeout"] != n || tg.Requests() != n {
			t.Errorf("kinds %v requests %d target %d", sum.ErrorKinds, sum.Requests, tg.Requests())
		}
	})
}

func TestDeadTargets(t *testing.T) {
	t.Run("port closed", func(t *testing.T) {
		sum, d := runProbed(t, mustPlan(t, openPlan("http://"+testutil.ClosedPort(t)+"/", 50, "2s", 20, "1s", "")))
		checkDropped(t, sum, 100, 50, d)
		if sum.ErrorKinds["connect_refused"] != sum.Requests || sum.Requests == 0 {
			t.Errorf("kinds %v requests %d", sum.ErrorKinds, sum.Requests)
		}
	})
	t.Run("reset after reading", func(t *testing.T) {
		srv := testutil.NewRawServer(t, func(r *http.Request) testutil.RawAnswer { return testutil.RawAnswer{Reset: true} })
		sum, d := runProbed(t, mustPlan(t, openPlan("http://"+srv.Addr+"/", 50, "2s", 20, "1s", "")))
		checkDropped(t, sum, 100, 50, d)
		// fasthttp turns an error on the first response byte into io.EOF; the VU's connection
		// keeps the reset, so it is counted as one
		if n := sum.Requests; sum.ErrorKinds["reset"] != n || n == 0 || srv.Requests() != n {
			t.Errorf("kinds %v requests %d; target read %d (want one read per request, no retries)", sum.ErrorKinds, sum.Requests, srv.Requests())
		}
	})
}

func TestSamplesCarryScheduleLag(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	sum, samples, d := runSamplesProbed(t, mustPlan(t, openPlan(tg.URL, 200, "2s", 50, "1s", "")))
	// present, in ms, and of the size of the machine's own lateness (a lag counted from the run's
	// start or in µs would be far off)
	if sum.ScheduleLag.Max <= 0 || sum.ScheduleLag.P99 > 50+ms(d.probe.Max) {
		t.Errorf("schedule lag %+v", sum.ScheduleLag)
	}
	if len(samples) == 0 || samples[0].Client.ScheduleLagP99Ms <= 0 {
		t.Errorf("samples lack schedule lag")
	}
	var _ = metrics.Sample{}
}

func TestKeepAliveOffOpensAConnectionPerRequest(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	sum, _ := run(t, mustPlan(t, closedPlan(tg.URL, 2, "1s", "1s", `,"keep_alive":false`)))
	if sum.Errors != 0 || sum.Requests == 0 || tg.Conns() != sum.Requests+sum.Interrupted {
		t.Errorf("requests %d, connections %d, errors %v", sum.Requests, tg.Conns(), sum.ErrorKinds)
	}
}

func TestHostHeaderOverrideChangesTheHeaderNotTheAddress(t *testing.T) {
	var host atomic.Value
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { host.Store(r.Host) })
	js := fmt.Sprintf(`{"name":"t","requests":[{"url":%q,"headers":{"Host":"api.example.test"}}],"load":{"vus":1,"duration":"1s"}}`, tg.URL)
	sum, _ := run(t, mustPlan(t, js))
	if sum.Errors != 0 || host.Load() != "api.example.test" {
		t.Errorf("errors %v, Host %v", sum.ErrorKinds, host.Load())
	}
}

func TestTLSWithSNIFromTheURLHost(t *testing.T) {
	var sni atomic.Value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sni.Store(r.TLS.ServerName) }))
	var handshakes *testutil.ExpectedErrors // the verified run's: one per refused connection
	srv.Config.ErrorLog, handshakes = testutil.ExpectErrors(t, "http: TLS handshake error")
	srv.StartTLS()
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "https://")
	plan := func(insecure bool) string {
		return fmt.Sprintf(`{"name":"t","requests":[{"url":"https://secure.example.test/"}],"load":{"vus":1,"duration":"1s"},
			"http":{"insecure_skip_verify":%v,"hosts":{"secure.example.test":%q}}}`, insecure, addr)
	}
	sum, _ := run(t, mustPlan(t, plan(true)))
	if sum.Errors != 0 || sum.Requests == 0 || sni.Load() != "secure.example.test" {
		t.Errorf("insecure: requests %d errors %v SNI %v", sum.Requests, sum.ErrorKinds, sni.Load())
	}
	// Without skipping verification the test server's self-signed certificate is a tls error.
	sum, _ = run(t, mustPlan(t, plan(false)))
	if sum.Requests == 0 || sum.ErrorKinds["tls"] != sum.Requests {
		t.Errorf("verified: requests %d kinds %v", sum.Requests, sum.ErrorKinds)
	}
	if handshakes.Count() == 0 {
		t.Error("the server saw no failed handshake")
	}
}

func TestRequestBodyAndContentLength(t *testing.T) {
	var bad atomic.Int64
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.ContentLength != int64(len(b)) || string(b) != `{"hello":"world"}` || r.Method != "PUT" {
			bad.Add(1)
		}
	})
	js := fmt.Sprintf(`{"name":"t","requests":[{"method":"PUT","url":%q,"body":"{\"hello\":\"world\"}","headers":{"Content-Type":"application/json"}}],"load":{"vus":2,"duration":"1s"}}`, tg.URL)
	sum, _ := run(t, mustPlan(t, js))
	if sum.Errors != 0 || sum.Requests == 0 || bad.Load() != 0 {
		t.Errorf("requests %d errors %v bad bodies %d", sum.Requests, sum.ErrorKinds, bad.Load())
	}
}

func TestLargeBodiesAreStreamedAndCountedExactly(t *testing.T) {
	const size = 3 << 20
	body := strings.Repeat("x", size)
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
	sum, _ := run(t, mustPlan(t, closedPlan(tg.URL, 2, "1s", "5s", "")))
	if sum.Errors != 0 || sum.Requests == 0 || sum.BodyBytesIn != int64(size)*sum.Requests {
		t.Errorf("requests %d errors %v body bytes %d (want %d each)", sum.Requests, sum.ErrorKinds, sum.BodyBytesIn, size)
	}
}
