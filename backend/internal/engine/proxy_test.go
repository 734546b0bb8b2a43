package engine

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// testProxy is a small HTTP proxy on loopback: CONNECT opens a tunnel; any other request must be
// in absolute form and is forwarded (keep-alive on both sides). It counts what it was asked.
type testProxy struct {
	addr     string
	connects atomic.Int64
	forwards atomic.Int64
	mu       sync.Mutex
	targets  []string // request targets as received (absolute form, or CONNECT's authority)
	auths    []string // the Proxy-Authorization of each request or CONNECT, "" for none
}

func newTestProxy(t *testing.T) *testProxy {
	t.Helper()
	p := &testProxy{}
	tr := &http.Transport{Proxy: nil} // never the environment's proxy
	t.Cleanup(tr.CloseIdleConnections)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.targets = append(p.targets, r.RequestURI)
		p.auths = append(p.auths, r.Header.Get("Proxy-Authorization"))
		p.mu.Unlock()
		if r.Method == http.MethodConnect {
			p.connects.Add(1)
			up, err := net.Dial("tcp", r.Host)
			if err != nil {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			c, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				_ = up.Close()
				return
			}
			_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
			done := make(chan struct{})
			go func() { _, _ = io.Copy(up, brw); close(done) }()
			_, _ = io.Copy(c, up)
			_ = c.Close()
			_ = up.Close()
			<-done
			return
		}
		if !strings.HasPrefix(r.RequestURI, "http://") {
			http.Error(w, "absolute form required", http.StatusBadRequest)
			return
		}
		p.forwards.Add(1)
		out, _ := http.NewRequest(r.Method, r.RequestURI, r.Body)
		out.Header = r.Header.Clone()
		out.Host = r.Host
		resp, err := tr.RoundTrip(out)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	p.addr = srv.Listener.Addr().String()
	return p
}

// The proxy environment variables never reroute load: with HTTP_PROXY, HTTPS_PROXY and
// ALL_PROXY (and lower-case forms) pointing at a proxy and NO_PROXY empty, every request goes to
// the target directly and the proxy is asked nothing.
func TestProxyEnvironmentIsIgnored(t *testing.T) {
	px := newTestProxy(t)
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		t.Setenv(k, "http://"+px.addr)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	sum, _ := run(t, mustPlan(t, h1Plan(t, tg.URL+"/", 2, 5, "", "")))
	if sum.Requests != 10 || sum.Errors != 0 || tg.Requests() != 10 || px.forwards.Load()+px.connects.Load() != 0 {
		t.Errorf("volley %d requests (errors %v), target %d, proxy asked %d times; want 10, 10, 0",
			sum.Requests, sum.ErrorKinds, tg.Requests(), px.forwards.Load()+px.connects.Load())
	}
}

// http.proxy: an http:// target is asked in absolute form, on kept-alive connections to the
// proxy; an https:// target through a CONNECT tunnel per connection, TLS end to end. The target
// counts what Volley counts.
func TestExplicitProxy(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok "+r.URL.Path) }
	t.Run("http", func(t *testing.T) {
		px := newTestProxy(t)
		tg := testutil.NewTarget(t, ok)
		sum, _ := run(t, mustPlan(t, h1Plan(t, tg.URL+"/p/{{iteration}}", 2, 5,
			`"checks":[{"type":"body","op":"contains","value":"ok /p/"}]`, `"proxy":"http://`+px.addr+`"`)))
		if sum.Requests != 10 || sum.Successes != 10 || tg.Requests() != 10 || px.forwards.Load() != 10 || px.connects.Load() != 0 {
			t.Errorf("volley %d requests, %d successes (errors %v); target %d, proxy forwarded %d, tunnels %d",
				sum.Requests, sum.Successes, sum.ErrorKinds, tg.Requests(), px.forwards.Load(), px.connects.Load())
		}
		px.mu.Lock()
		defer px.mu.Unlock()
		for _, u := range px.targets {
			if !strings.HasPrefix(u, "http://"+strings.TrimPrefix(tg.URL, "http://")+"/p/") {
				t.Errorf("the proxy was asked for %q, want the absolute URL", u)
			}
		}
	})
	t.Run("https", func(t *testing.T) {
		px := newTestProxy(t)
		var served atomic.Int64
		tg := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served.Add(1)
			ok(w, r)
		}))
		t.Cleanup(tg.Close)
		sum, _ := run(t, mustPlan(t, h1Plan(t, tg.URL+"/s", 2, 5,
			`"checks":[{"type":"body","op":"contains","value":"ok /s"}]`, `"proxy":"http://`+px.addr+`","insecure_skip_verify":true`)))
		if sum.Requests != 10 || sum.Successes != 10 || served.Load() != 10 || px.connects.Load() != 2 {
			t.Errorf("volley %d requests, %d successes (errors %v); target %d, tunnels %d (want one per VU)",
				sum.Requests, sum.Successes, sum.ErrorKinds, served.Load(), px.connects.Load())
		}
	})
}

// The target policy judges both ends: a denied proxy address, and a denied target behind an
// allowed proxy, are blocked_target, and the proxy is asked nothing for the latter.
func TestProxyTargetPolicy(t *testing.T) {
	px := newTestProxy(t)
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	pol, err := netpolicy.New(nil, []string{"127.0.0.2/32", "denied.test"})
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(px.addr)
	for _, c := range []struct{ name, url, proxy string }{
		{"denied proxy", tg.URL + "/", "http://127.0.0.2:" + port},
		{"denied target address", "http://127.0.0.2:1/", "http://" + px.addr},
		{"denied target name", "http://denied.test/", "http://" + px.addr},
		{"denied https target", "https://127.0.0.2:1/", "http://" + px.addr},
	} {
		t.Run(c.name, func(t *testing.T) {
			sum := runWithPolicy(t, mustPlan(t, h1Plan(t, c.url, 1, 3, "", `"proxy":"`+c.proxy+`"`)), pol)
			if sum.Requests != 3 || sum.ErrorKinds["blocked_target"] != 3 {
				t.Errorf("%d requests, errors %v; want 3 blocked_target", sum.Requests, sum.ErrorKinds)
			}
		})
	}
	if n := px.forwards.Load() + px.connects.Load(); n != 0 || tg.Requests() != 0 {
		t.Errorf("the proxy was asked %d times, the target %d; want 0", n, tg.Requests())
	}
}

// A plan's Proxy-Authorization header (static or templated) is the proxy's: on an https://
// target it goes on each tunnel's CONNECT and never through the tunnel to the target; on an
// http:// target it goes with every absolute-form request to the proxy.
func TestProxyAuthorizationIsTheProxys(t *testing.T) {
	for _, c := range []struct{ name, value, want string }{
		{"static", "Basic cHg6cHc=", "Basic cHg6cHc="},
		{"templated", "Basic v{{vu}}", "Basic v"},
	} {
		hdr := `"headers":{"proxy-authorization":"` + c.value + `"}`
		t.Run("https "+c.name, func(t *testing.T) {
			px := newTestProxy(t)
			var served, leaked atomic.Int64
			tg := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				served.Add(1)
				if r.Header.Get("Proxy-Authorization") != "" {
					leaked.Add(1)
				}
			}))
			t.Cleanup(tg.Close)
			sum, _ := run(t, mustPlan(t, h1Plan(t, tg.URL+"/s", 2, 3, hdr, `"proxy":"http://`+px.addr+`","insecure_skip_verify":true`)))
			if sum.Successes != 6 || served.Load() != 6 || leaked.Load() != 0 || px.connects.Load() != 2 {
				t.Errorf("%d successes (errors %v); target served %d, %d of them with Proxy-Authorization; %d tunnels; want 6, 6, 0, 2",
					sum.Successes, sum.ErrorKinds, served.Load(), leaked.Load(), px.connects.Load())
			}
			px.mu.Lock()
			defer px.mu.Unlock()
			for _, a := range px.auths {
				if !strings.HasPrefix(a, c.want) || strings.Contains(a, "{{") {
					t.Errorf("CONNECT carried Proxy-Authorization %q; want %q…", a, c.want)
				}
			}
		})
		t.Run("http "+c.name, func(t *testing.T) {
			px := newTestProxy(t)
			tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
			sum, _ := run(t, mustPlan(t, h1Plan(t, tg.URL+"/p", 2, 3, hdr, `"proxy":"http://`+px.addr+`"`)))
			if sum.Successes != 6 || px.forwards.Load() != 6 {
				t.Errorf("%d successes (errors %v), %d forwarded; want 6", sum.Successes, sum.ErrorKinds, px.forwards.Load())
			}
			px.mu.Lock()
			defer px.mu.Unlock()
			for _, a := range px.auths {
				if !strings.HasPrefix(a, c.want) || strings.Contains(a, "{{") {
					t.Errorf("a proxied request carried Proxy-Authorization %q; want %q…", a, c.want)
				}
			}
		})
	}
}

// A proxy answering CONNECT with 200 and then a body (bytes before the VU's TLS handshake) is an
// error saying so, not "proxy refused CONNECT … HTTP 200"; nothing reaches the target.
func TestProxyConnect200WithBody(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil || r.Method != http.MethodConnect {
					return
				}
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
				_, _ = io.Copy(io.Discard, c) // until the VU closes
			}()
		}
	}()
	sum, _ := run(t, mustPlan(t, h1Plan(t, "https://127.0.0.1:1/", 1, 2, "", `"proxy":"http://`+ln.Addr().String()+`"`)))
	if sum.Requests != 2 || sum.ErrorKinds["other"] != 2 || len(sum.Failures) != 1 {
		t.Fatalf("%d requests, errors %v, failures %+v; want 2 of kind other in one group", sum.Requests, sum.ErrorKinds, sum.Failures)
	}
	if m := sum.Failures[0].Message; strings.Contains(m, "refused") || !strings.Contains(m, "HTTP 200 followed by 5 bytes") {
		t.Errorf("message %q; want the 200 followed by 5 bytes", m)
	}
}
