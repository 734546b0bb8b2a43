package engine

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// h2Target is a loopback HTTP/2 server that counts the requests it answers, those that did not
// come over HTTP/2, and the connections made to it.
type h2Target struct {
	srv                    *httptest.Server
	requests, notH2, conns atomic.Int64
	addr                   string
}

// newH2Target starts h as an h2c server (cleartext, prior knowledge) or, with tlsOn, a TLS server
// offering h2 (and http/1.1) in ALPN; h2Off leaves h2 out of ALPN.
func newH2Target(t *testing.T, tlsOn, h2Off bool, h http.HandlerFunc) *h2Target {
	t.Helper()
	tg := &h2Target{}
	count := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.requests.Add(1)
		if r.ProtoMajor != 2 {
			tg.notH2.Add(1)
		}
		h(w, r)
	})
	var handler http.Handler = count
	if !tlsOn {
		handler = h2c.NewHandler(count, &http2.Server{})
	}
	tg.srv = httptest.NewUnstartedServer(handler)
	tg.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			tg.conns.Add(1)
		}
	}
	tg.srv.Config.ErrorLog = quietLog()
	if tlsOn {
		tg.srv.EnableHTTP2 = !h2Off
		tg.srv.StartTLS()
	} else {
		tg.srv.Start()
	}
	t.Cleanup(tg.srv.Close)
	tg.addr = tg.srv.Listener.Addr().String()
	return tg
}

// A sequence with a POST, extraction from a JSON body and a header, a templated header, body,
// JSON and header checks, over h2c: every request the server answered is one Volley counted,
// all over HTTP/2, the checks judged on the HTTP/2 answers, and the summary says h2.
func TestH2CScenarioCountsChecksExtraction(t *testing.T) {
	var bad atomic.Int64
	tg := newH2Target(t, false, false, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			if b, _ := io.ReadAll(r.Body); r.Method != "POST" || string(b) != `{"user":"u"}` {
				bad.Add(1)
			}
			w.Header().Set("X-Session", "s-1")
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"data":{"token":"tok-9"}}`))
		case "/items":
			if r.Header.Get("Authorization") != "Bearer tok-9" || r.Header.Get("X-Session") != "s-1" || r.Host != "app.example.test" {
				bad.Add(1)
				w.WriteHeader(401)
				return
			}
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte(`{"items":[{"id":41},{"id":42}],"status":"active"}` + strings.Repeat(" ", 70000)))
		default:
			w.WriteHeader(404)
			_, _ = w.Write([]byte("no such page"))
		}
	})
	for _, shared := range []int{0, 2} {
		t.Run(fmt.Sprintf("h2_connections=%d", shared), func(t *testing.T) {
			tg.requests.Store(0)
			tg.conns.Store(0)
			const vus, iters = 4, 5
			_, sum, samples := runEngine(t, fmt.Sprintf(`{"name":"t","flow":"sequence",
			"requests":[
			  {"name":"login","method":"POST","url":"http://app.example.test/login","body":"{\"user\":\"u\"}",
			   "extract":[{"var":"token","from":"json","path":"data.token"},{"var":"sess","from":"header","name":"X-Session"}]},
			  {"name":"items","url":"http://app.example.test/items","headers":{"Authorization":"Bearer {{token}}","X-Session":"{{sess}}"},
			   "checks":[{"type":"json","path":"items.1.id","op":"eq","value":42},
			             {"type":"header","name":"Content-Type","op":"contains","value":"text/plain"}]},
			  {"name":"missing","url":"http://app.example.test/nope"}],
			"load":{"executor":"per-vu-iterations","vus":%d,"iterations":%d},
			"http":{"timeout":"5s","version":"h2c","h2_connections":%d,"hosts":{"app.example.test":%q}}}`, vus, iters, shared, tg.addr))
			want := int64(vus * iters * 3)
			if sum.Requests != want || tg.requests.Load() != want || tg.notH2.Load() != 0 || bad.Load() != 0 {
				t.Fatalf("volley %d, server %d (not h2 %d, bad %d); want %d; kinds %v", sum.Requests, tg.requests.Load(), tg.notH2.Load(), bad.Load(), want, sum.ErrorKinds)
			}
			if sum.ErrorKinds["status_4xx"] != vus*iters || sum.Errors != vus*iters || sum.StatusCodes["404"] != vus*iters {
				t.Errorf("kinds %v codes %v", sum.ErrorKinds, sum.StatusCodes)
			}
			for _, c := range sum.Checks {
				if c.Passes != vus*iters || c.Fails != 0 {
					t.Errorf("check %+v", c)
				}
			}
			if len(sum.Protocols) != 1 || sum.Protocols[metrics.ProtoH2] != want {
				t.Errorf("protocols %v, want h2: %d", sum.Protocols, want)
			}
			var perSecond int64
			for _, s := range samples {
				perSecond += s.Protocols[metrics.ProtoH2]
			}
			if perSecond != want {
				t.Errorf("samples' h2 responses %d, want %d", perSecond, want)
			}
			// the big body (70 kB, several DATA frames) was read into the response for its checks
			if min := int64(vus * iters * 70000); sum.BodyBytesIn < min || sum.BytesIn < sum.BodyBytesIn || sum.BytesOut <= 0 {
				t.Errorf("body bytes %d (want ≥ %d), bytes in %d, out %d", sum.BodyBytesIn, min, sum.BytesIn, sum.BytesOut)
			}
			wantConns := int64(vus)
			if shared > 0 {
				wantConns = int64(shared)
			}
			if tg.conns.Load() != wantConns {
				t.Errorf("connections %d, want %d", tg.conns.Load(), wantConns)
			}
			if len(sum.Failures) == 0 || sum.Failures[0].Sample == nil || sum.Failures[0].Sample.Body != "no such page" || sum.Failures[0].Sample.Status != 404 {
				t.Errorf("failure sample %+v", sum.Failures)
			}
		})
	}
}

// HTTP/2 over TLS: ALPN settles on h2; one connection (and handshake) per VU, or h2_connections
// shared ones.
func TestH2OverTLS(t *testing.T) {
	tg := newH2Target(t, true, false, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	for _, shared := range []int{0, 2} {
		t.Run(fmt.Sprintf("h2_connections=%d", shared), func(t *testing.T) {
			tg.requests.Store(0)
			tg.conns.Store(0)
			const vus, iters = 3, 7
			e, sum, _ := runEngine(t, fmt.Sprintf(`{"name":"t","requests":[{"url":"https://secure.example.test/",
				"checks":[{"type":"body","op":"contains","value":"ok"}]}],
				"load":{"executor":"per-vu-iterations","vus":%d,"iterations":%d},
				"http":{"timeout":"5s","version":"2","h2_connections":%d,"insecure_skip_verify":true,"hosts":{"secure.example.test":%q}}}`, vus, iters, shared, tg.addr))
			want := int64(vus * iters)
			if sum.Requests != want || sum.Errors != 0 || tg.requests.Load() != want || tg.notH2.Load() != 0 {
				t.Fatalf("volley %d (kinds %v), server %d (not h2 %d)", sum.Requests, sum.ErrorKinds, tg.requests.Load(), tg.notH2.Load())
			}
			conns := int64(vus)
			if shared > 0 {
				conns = int64(shared)
			}
			if sum.Protocols[metrics.ProtoH2] != want || tg.conns.Load() != conns {
				t.Errorf("protocols %v, connections %d, want %d", sum.Protocols, tg.conns.Load(), conns)
			}
			var pc metrics.PhaseCounts
			e.rec.ReadPhases(&pc)
			if n := phaseCount(&pc, metrics.PhaseTLS); n != conns {
				t.Errorf("handshakes %d, want %d", n, conns)
			}
			if n := phaseCount(&pc, metrics.PhaseWait); n != want || sum.Timing.Wait.Max <= 0 {
				t.Errorf("waits %d, want %d: %+v", n, want, sum.Timing.Wait)
			}
		})
	}
}

// A TLS server whose ALPN does not offer h2: version "2" refuses (h2_error, nothing reaches the
// server's handler), unless h2_fallback lets the connection carry HTTP/1.1 — then every request
// is answered and the summary says http/1.1.
func TestH2RefusedOrFallback(t *testing.T) {
	tg := newH2Target(t, true, true, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	for _, c := range []struct {
		fallback bool
		shared   int
	}{{false, 0}, {true, 0}, {false, 2}, {true, 2}} {
		fallback := c.fallback
		t.Run(fmt.Sprintf("fallback=%v/h2_connections=%d", fallback, c.shared), func(t *testing.T) {
			tg.requests.Store(0)
			tg.notH2.Store(0)
			const n = 6
			_, sum, _ := runEngine(t, fmt.Sprintf(`{"name":"t","requests":[{"url":"https://secure.example.test/"}],
				"load":{"executor":"per-vu-iterations","vus":1,"iterations":%d},
				"http":{"timeout":"5s","version":"2","h2_fallback":%v,"h2_connections":%d,"insecure_skip_verify":true,"hosts":{"secure.example.test":%q}}}`, n, fallback, c.shared, tg.addr))
			if sum.Requests != n {
				t.Fatalf("requests %d", sum.Requests)
			}
			if !fallback {
				if sum.ErrorKinds["h2_error"] != n || tg.requests.Load() != 0 || sum.Protocols != nil {
					t.Errorf("kinds %v, server %d, protocols %v", sum.ErrorKinds, tg.requests.Load(), sum.Protocols)
				}
				if len(sum.Failures) == 0 || !strings.Contains(sum.Failures[0].Message, "h2_fallback") {
					t.Errorf("failures %+v", sum.Failures)
				}
				return
			}
			if sum.Errors != 0 || tg.requests.Load() != n || tg.notH2.Load() != n || sum.Protocols[metrics.ProtoHTTP11] != n || len(sum.Protocols) != 1 {
				t.Errorf("kinds %v, server %d (not h2 %d), protocols %v", sum.ErrorKinds, tg.requests.Load(), tg.notH2.Load(), sum.Protocols)
			}
		})
	}
}

// A stream the server resets (RST_STREAM) is h2_error; the connection stays, and the next
// request on it succeeds.
func TestH2StreamResetIsH2Error(t *testing.T) {
	var i atomic.Int64
	tg := newH2Target(t, false, false, func(w http.ResponseWriter, r *http.Request) {
		if i.Add(1)%2 == 0 {
			panic(http.ErrAbortHandler) // net/http's HTTP/2 server resets the stream
		}
		_, _ = w.Write([]byte("ok"))
	})
	const n = 10
	_, sum, _ := runEngine(t, fmt.Sprintf(`{"name":"t","requests":[{"url":"http://%s/"}],
		"load":{"executor":"per-vu-iterations","vus":1,"iterations":%d},"http":{"timeout":"5s","version":"h2c"}}`, tg.addr, n))
	if sum.Requests != n || tg.requests.Load() != n || sum.ErrorKinds["h2_error"] != n/2 || sum.Successes != n/2 {
		t.Errorf("volley %d, server %d, kinds %v", sum.Requests, tg.requests.Load(), sum.ErrorKinds)
	}
	if tg.conns.Load() != 1 {
		t.Errorf("connections %d: a stream reset dropped the connection", tg.conns.Load())
	}
	// Every reset is one failure group, whatever its stream id.
	if len(sum.Failures) != 1 || sum.Failures[0].Count != n/2 || strings.Contains(sum.Failures[0].Message, "stream ID") {
		t.Errorf("failure groups %+v, want one of %d resets", sum.Failures, n/2)
	}
}

// keep_alive false on HTTP/2: a connection per request, as on HTTP/1.1 (the Connection header
// itself is not sent: HTTP/2 has none).
func TestH2WithoutKeepAlive(t *testing.T) {
	tg := newH2Target(t, false, false, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Connection") != "" {
			w.WriteHeader(400)
		}
	})
	const n = 5
	_, sum, _ := runEngine(t, fmt.Sprintf(`{"name":"t","requests":[{"url":"http://%s/"}],
		"load":{"executor":"per-vu-iterations","vus":1,"iterations":%d},"http":{"timeout":"5s","keep_alive":false,"version":"h2c"}}`, tg.addr, n))
	if sum.Requests != n || sum.Errors != 0 || tg.requests.Load() != n || tg.conns.Load() != n || sum.Protocols[metrics.ProtoH2] != n {
		t.Errorf("volley %d (kinds %v), server %d over %d connections, protocols %v", sum.Requests, sum.ErrorKinds, tg.requests.Load(), tg.conns.Load(), sum.Protocols)
	}
}

// A body over http.max_body that a check reads is body_too_large on HTTP/2 as on HTTP/1.1; a
// request without answer in time is a timeout.
func TestH2BodyTooLargeAndTimeout(t *testing.T) {
	release := make(chan struct{})
	tg := newH2Target(t, false, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
			return
		}
		_, _ = w.Write([]byte(strings.Repeat("x", 4096)))
	})
	t.Cleanup(func() { close(release) })
	_, sum, _ := runEngine(t, fmt.Sprintf(`{"name":"t","flow":"sequence","requests":[
		{"url":"http://%[1]s/big","checks":[{"type":"body","op":"contains","value":"x"}]},
		{"url":"http://%[1]s/slow"}],
		"load":{"executor":"per-vu-iterations","vus":1,"iterations":2},"http":{"timeout":"300ms","max_body":1024,"version":"h2c"}}`, tg.addr))
	if sum.Requests != 4 || sum.ErrorKinds["body_too_large"] != 2 || sum.ErrorKinds["timeout"] != 2 {
		t.Errorf("requests %d, kinds %v", sum.Requests, sum.ErrorKinds)
	}
}

// quietLog keeps the test server's expected complaints (reset streams, refused protocols) out of
// the test log.
func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }
