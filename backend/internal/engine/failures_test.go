package engine

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// liveSamples merges a run's seconds' failure groups (each second has the groups that changed in
// it, with their counts so far), most frequent first, and counts how often each group's sample
// was sent.
func liveSamples(t *testing.T, samples []metrics.Sample) (map[string]int, []metrics.FailureGroup) {
	t.Helper()
	sent := map[string]int{}
	merged := map[string]metrics.FailureGroup{}
	for _, s := range samples {
		for _, g := range s.Failures {
			if g.Sample != nil {
				sent[g.Message]++
			}
			g.Sample = nil
			merged[g.Message] = g
		}
	}
	var out []metrics.FailureGroup
	for _, g := range merged {
		out = append(out, g)
	}
	metrics.SortFailures(out)
	return sent, out
}

// TestFailureGroupsCountWhatTheTargetServed: a loopback target answers a mix — 200s, 503s with a
// body, connection resets, 200s a check refuses — and counts what it served; the run's groups
// hold exactly those counts, with one sample response each where a response arrived.
func TestFailureGroupsCountWhatTheTargetServed(t *testing.T) {
	var served [4]atomic.Int64
	var next atomic.Int64
	tg := testutil.NewRawServer(t, func(r *http.Request) testutil.RawAnswer {
		i := next.Add(1) - 1
		served[i%4].Add(1)
		switch i % 4 {
		case 0:
			return testutil.RawAnswer{Bytes: []byte("HTTP/1.1 200 OK\r\nX-Ok: 1\r\nContent-Length: 4\r\n\r\nfine")}
		case 1:
			body := fmt.Sprintf("overloaded #%d", i)
			return testutil.RawAnswer{Bytes: fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: %d\r\n\r\n%s", len(body), body)}
		case 2:
			return testutil.RawAnswer{Reset: true}
		}
		return testutil.RawAnswer{Bytes: []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno")}
	})
	p := mustPlan(t, fmt.Sprintf(`{"name":"t","requests":[{"name":"get","url":"http://%s/",
		"checks":[{"type":"header","name":"X-Ok","op":"exists"}]}],
		"load":{"executor":"per-vu-iterations","vus":4,"iterations":50},"http":{"timeout":"5s"}}`, tg.Addr))
	sum, samples := run(t, p)
	if sum.Requests != 200 || tg.Requests() != 200 || sum.Interrupted != 0 {
		t.Fatalf("volley %d requests, target %d", sum.Requests, tg.Requests())
	}
	want := []metrics.FailureGroup{
		{Request: "get", Kind: "status_5xx", Status: 503, Message: "HTTP 503 Service Unavailable", Count: served[1].Load()},
		{Request: "get", Kind: "reset", Message: "read tcp 127.0.0.1->" + tg.Addr + ": read: connection reset by peer", Count: served[2].Load()},
		{Request: "get", Kind: "check_failed", Status: 200, Message: "header X-Ok exists", Count: served[3].Load()},
	}
	metrics.SortFailures(want)
	if len(sum.Failures) != len(want) {
		t.Fatalf("groups %+v, want %+v", sum.Failures, want)
	}
	var total int64
	for i, g := range sum.Failures {
		smp := g.Sample
		g.Sample = nil
		if g != want[i] {
			t.Errorf("group %d = %+v, want %+v", i, g, want[i])
		}
		total += g.Count
		switch g.Kind {
		case "status_5xx":
			if smp == nil || smp.Status != 503 || !strings.HasPrefix(smp.Body, "overloaded #") || smp.BodyTruncated ||
				!hasHeader(smp.Headers, "Retry-After", "1") {
				t.Errorf("503 sample %+v", smp)
			}
		case "check_failed":
			// the body of a 200 that no check reads is not kept: status and headers only
			if smp == nil || smp.Status != 200 || smp.Body != "" || !hasHeader(smp.Headers, "Content-Length", "2") {
				t.Errorf("check sample %+v", smp)
			}
		case "reset":
			if smp != nil {
				t.Errorf("a reset before any answer has no sample: %+v", smp)
			}
		}
	}
	if total != sum.Errors {
		t.Errorf("groups count %d failures, the run %d errors", total, sum.Errors)
	}
	// live: the groups as sent are the summary's, each sample was sent once
	sent, last := liveSamples(t, samples)
	if len(last) != len(want) {
		t.Fatalf("live groups %+v", last)
	}
	for i := range last {
		if last[i].Count != want[i].Count || last[i].Message != want[i].Message {
			t.Errorf("live group %d = %+v, want %+v", i, last[i], want[i])
		}
	}
	if sent["HTTP 503 Service Unavailable"] != 1 || sent["header X-Ok exists"] != 1 || len(sent) != 2 {
		t.Errorf("samples sent live %v, want each once", sent)
	}
}

func hasHeader(h [][2]string, name, value string) bool {
	for _, kv := range h {
		if strings.EqualFold(kv[0], name) && kv[1] == value {
			return true
		}
	}
	return false
}

// TestHostileFailuresStayBounded: huge header values, a 10 MB body behind its Content-Length,
// invalid UTF-8, a body announced at 1 TB and a different error message for every request: the
// groups, their messages and samples stay within their bounds, and the run allocates nothing
// near what the target sent or announced.
func TestHostileFailuresStayBounded(t *testing.T) {
	base := hostileFailures(t, 1000)
	alloc := hostileFailures(t, 10<<20)
	// the same run with 1000-byte bodies in place of 10 MB ones is the baseline (the engine's
	// histograms, the errors of the malformed answers…)
	if alloc > base+4<<20 {
		t.Errorf("the run allocated %d MB, %d MB more than with 1000-byte bodies (the target sent 3 × 10 MB and announced 1 TB)", alloc>>20, (alloc-base)>>20)
	}
}

// hostileFailures runs the hostile mix with 500s of big bytes and returns the bytes it allocated.
func hostileFailures(t *testing.T, big int) uint64 {
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 500 Internal Server Error\r\nX-Long: " + strings.Repeat("L", 2500) + "\r\n")
	for i := range 70 {
		fmt.Fprintf(&head, "X-H%02d: v\r\n", i)
	}
	fmt.Fprintf(&head, "Content-Length: %d\r\n\r\n", big)
	bigAnswer := append(head.Bytes(), bytes.Repeat([]byte{0xff}, big)...)
	var plain, checked atomic.Int64
	tg := testutil.NewRawServer(t, func(r *http.Request) testutil.RawAnswer {
		if r.URL.Path == "/c" {
			checked.Add(1)
			return testutil.RawAnswer{Bytes: []byte("HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\nxx"), Close: true}
		}
		i := plain.Add(1) - 1
		switch {
		case i < 3:
			return testutil.RawAnswer{Bytes: bigAnswer}
		case i%2 == 0: // 148 statuses, a group each: more than the table holds
			code := 400 + i/2
			if code >= 500 {
				code += 3 // not the 500s and 502s counted below
			}
			return testutil.RawAnswer{Bytes: fmt.Appendf(nil, "HTTP/1.1 %d X\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", code), Close: true}
		}
		return testutil.RawAnswer{Bytes: []byte("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 6\r\n\r\n\xff\xfeok\xc3\x28")}
	})
	p := mustPlan(t, fmt.Sprintf(`{"name":"t","flow":"sequence","requests":[{"name":"plain","url":"http://%s/p"},
		{"name":"checked","url":"http://%s/c","checks":[{"type":"body","op":"contains","value":"x"}]}],
		"load":{"executor":"per-vu-iterations","vus":2,"iterations":150},"http":{"timeout":"10s"}}`, tg.Addr, tg.Addr))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sum, samples := run(t, p)
	runtime.ReadMemStats(&after)
	if sum.Requests != 600 || plain.Load() != 300 || checked.Load() != 300 {
		t.Fatalf("requests %d, target %d + %d", sum.Requests, plain.Load(), checked.Load())
	}
	if len(sum.Failures) != metrics.MaxFailureGroups+1 {
		t.Errorf("%d groups, want %d and an (other)", len(sum.Failures), metrics.MaxFailureGroups)
	}
	var total int64
	byMsg := map[string]metrics.FailureGroup{}
	for _, g := range sum.Failures {
		total += g.Count
		byMsg[g.Message] = g
		checkBoundedGroup(t, g)
	}
	if total != sum.Errors || sum.Errors != 600 {
		t.Errorf("groups count %d failures, the run %d errors (of 600)", total, sum.Errors)
	}
	if o := byMsg[metrics.OtherFailures]; o.Count == 0 || o.Request != "" || o.Kind != "" {
		t.Errorf("no (other) group: %+v", o)
	}
	g := byMsg["HTTP 500 Internal Server Error"]
	if g.Count != 3 || g.Sample == nil {
		t.Fatalf("500 group %+v", g)
	}
	if s := g.Sample; len(s.Headers) != metrics.MaxSampleHeaders || !s.BodyTruncated ||
		s.Body != strings.Repeat("\uFFFD", metrics.MaxSampleBody/3) || !hasHeader(s.Headers, "X-Long", strings.Repeat("L", metrics.MaxSampleHeader)) {
		t.Errorf("500 sample: %d headers, truncated %v, body %q…", len(s.Headers), s.BodyTruncated, s.Body[:min(len(s.Body), 20)])
	}
	if g := byMsg["HTTP 502 Bad Gateway"]; g.Count != 149 || g.Sample == nil || g.Sample.Body != "\uFFFD\uFFFDok\uFFFD(" {
		t.Errorf("502 group %+v", g)
	}
	// the 1 TB body is refused unread (checked: the check reads bodies)
	var tooLarge *metrics.FailureGroup
	for i := range sum.Failures {
		if sum.Failures[i].Kind == "body_too_large" {
			tooLarge = &sum.Failures[i]
		}
	}
	if tooLarge == nil || tooLarge.Request != "checked" || tooLarge.Count != 300 || tooLarge.Status != 200 ||
		tooLarge.Sample == nil || tooLarge.Sample.Body != "" || !tooLarge.Sample.BodyTruncated {
		t.Errorf("body_too_large group %+v", tooLarge)
	}
	for _, s := range samples {
		if len(s.Failures) > metrics.MaxFailureGroups+1 {
			t.Fatalf("second %d: %d groups", s.ElapsedS, len(s.Failures))
		}
		for _, g := range s.Failures {
			checkBoundedGroup(t, g)
		}
	}
	return after.TotalAlloc - before.TotalAlloc
}

func checkBoundedGroup(t *testing.T, g metrics.FailureGroup) {
	t.Helper()
	if len(g.Message) > metrics.MaxFailureMessage || !utf8.ValidString(g.Message) || g.Message == "" {
		t.Errorf("message %q", g.Message)
	}
	s := g.Sample
	if s == nil {
		return
	}
	if len(s.Headers) > metrics.MaxSampleHeaders || len(s.Body) > metrics.MaxSampleBody || !utf8.ValidString(s.Body) {
		t.Errorf("sample of %q: %d headers, body %d bytes", g.Message, len(s.Headers), len(s.Body))
	}
	for _, h := range s.Headers {
		if len(h[0]) > metrics.MaxSampleHeader || len(h[1]) > metrics.MaxSampleHeader || !utf8.ValidString(h[0]+h[1]) {
			t.Errorf("sample header %q", h)
		}
	}
}

// TestDeadTargetIsOneGroup: a port where nothing listens fails again and again (each VU backs off
// to one dial per 100 ms: about 16 a second), as one group whose message names the target (no
// ephemeral port splits it).
func TestDeadTargetIsOneGroup(t *testing.T) {
	addr := testutil.ClosedPort(t)
	sum, _ := run(t, mustPlan(t, constantVUs("http://"+addr+"/", 4, "1s")))
	want := metrics.FailureGroup{Request: sum.Failures[0].Request, Kind: "connect_refused",
		Message: "dial tcp " + addr + ": connect: connection refused", Count: sum.Requests}
	if len(sum.Failures) != 1 || sum.Failures[0] != want || sum.Requests < 20 {
		t.Errorf("groups %+v, want [%+v]", sum.Failures, want)
	}
}

// TestErrorTextDropsLocalPorts: messages keep the target's address and drop what changes with
// every connection.
func TestErrorTextDropsLocalPorts(t *testing.T) {
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40312}
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	v6 := &net.TCPAddr{IP: net.IPv6loopback, Port: 51000}
	for _, c := range []struct {
		err  error
		want string
	}{
		{&dialError{&net.OpError{Op: "dial", Net: "tcp", Addr: remote, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}},
			"dial tcp 127.0.0.1:8080: connect: connection refused"},
		{&net.OpError{Op: "read", Net: "tcp", Source: local, Addr: remote, Err: os.NewSyscallError("read", syscall.ECONNRESET)},
			"read tcp 127.0.0.1->127.0.0.1:8080: read: connection reset by peer"},
		{&net.OpError{Op: "write", Net: "tcp", Source: v6, Addr: &net.TCPAddr{IP: net.IPv6loopback, Port: 80}, Err: syscall.EPIPE},
			"write tcp [::1]->[::1]:80: broken pipe"},
		{&malformedError{fasthttp.ErrConnectionClosed}, "malformed response: " + fasthttp.ErrConnectionClosed.Error()},
		{fmt.Errorf("tls: handshake on 10.0.0.1:5555->10.0.0.2:443 failed"), "tls: handshake on 10.0.0.1->10.0.0.2:443 failed"},
	} {
		if got := string(appendErrText(nil, c.err)); got != c.want {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
}

// TestRepeatFailureAllocatesNothing: counting a failure of an existing group takes no allocation
// (and the sample is taken once).
func TestRepeatFailureAllocatesNothing(t *testing.T) {
	p := &plan.Plan{Name: "a", Requests: []plan.Request{{URL: "http://127.0.0.1:1/"}},
		Load: plan.Load{Executor: plan.PerVUIterations, VUs: 1, Iterations: 1}}
	p.Defaults()
	e, err := newEngine(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := newVU(e, 0)
	r := &v.reqs[0]
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	refused := &dialError{&net.OpError{Op: "dial", Net: "tcp", Addr: remote, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	v.resp.SetStatusCode(500)
	v.resp.Header.Set("Server", "x")
	for name, f := range map[string]func(){
		"refused": func() { v.failed(r, metrics.ConnectRefused, 0, refused) },
		"500":     func() { v.failed(r, metrics.Status5xx, 500, nil) },
		// two groups in turn: the VU's cache of its last group misses every time
		"alternating": func() {
			v.failed(r, metrics.ConnectRefused, 0, refused)
			v.failed(r, metrics.Status5xx, 500, nil)
		},
	} {
		f()
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %.1f allocations per repeat failure", name, n)
		}
	}
	var snap failSnapshot
	e.fails.read(&snap)
	groups := e.fails.groups(&snap)
	if len(groups) != 2 || groups[0].Count != 204 || groups[1].Count != 204 {
		t.Errorf("groups %+v", groups)
	}
}

// BenchmarkFailures runs b.N failing requests through the whole engine (10 VUs): against a port
// where nothing listens (every request a connect; most allocations are the dial's own) and against
// a target answering 500 with a small body (keep-alive: the failure path alone).
func BenchmarkFailures(b *testing.B) {
	for _, target := range []string{"dead", "http-500"} {
		b.Run(target, func(b *testing.B) {
			url := "http://" + testutil.ClosedPort(b) + "/"
			if target == "http-500" {
				url = benchServe(b, func(ctx *fasthttp.RequestCtx) {
					ctx.SetStatusCode(500)
					ctx.SetBodyString("internal error: try again later")
				})
			}
			sum := benchRun(b, url, 10)
			if sum.Successes != 0 || len(sum.Failures) != 1 || sum.Failures[0].Count != sum.Requests {
				b.Fatalf("groups %+v", sum.Failures)
			}
		})
	}
}

// TestFailedBodiesAreReadExactly: the body of a 500 is read to its end whatever its framing (the
// connection stays usable), counted exactly, and its first KiB kept as the sample.
func TestFailedBodiesAreReadExactly(t *testing.T) {
	body := strings.Repeat("0123456789", 300) // 3000 bytes
	for name, c := range map[string]struct {
		answer string
		size   int
		close  bool
	}{
		"short":       {"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 10\r\n\r\n" + body[:10], 10, false},
		"in buffer":   {"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2000\r\n\r\n" + body[:2000], 2000, false},
		"beyond":      {"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 3000\r\n\r\n" + body, 3000, false},
		"chunked":     {"HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n" + body[:1000] + "\r\n3e8\r\n" + body[1000:2000] + "\r\n0\r\n\r\n", 2000, false},
		"until close": {"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\n\r\n" + body[:1500], 1500, true},
	} {
		t.Run(name, func(t *testing.T) {
			tg := testutil.NewRawServer(t, func(r *http.Request) testutil.RawAnswer {
				return testutil.RawAnswer{Bytes: []byte(c.answer), Close: c.close}
			})
			sum, _ := run(t, mustPlan(t, fmt.Sprintf(`{"name":"t","requests":[{"url":"http://%s/"}],
				"load":{"executor":"per-vu-iterations","vus":1,"iterations":5},"http":{"timeout":"5s"}}`, tg.Addr)))
			conns := int64(1)
			if c.close {
				conns = 5
			}
			if sum.ErrorKinds["status_5xx"] != 5 || sum.BodyBytesIn != int64(5*c.size) || tg.Conns() != conns {
				t.Fatalf("kinds %v, body bytes %d (want %d), %d connections", sum.ErrorKinds, sum.BodyBytesIn, 5*c.size, tg.Conns())
			}
			s := sum.Failures[0].Sample
			want := body[:min(c.size, metrics.MaxSampleBody)]
			if len(sum.Failures) != 1 || s == nil || s.Body != want || s.BodyTruncated != (c.size > metrics.MaxSampleBody) {
				t.Errorf("groups %+v, sample %+v", sum.Failures, s)
			}
		})
	}
}

// TestFailureTableUnderConcurrency: VUs failing at once with 300 distinct messages fill the table
// with 100 groups; every failure is counted once, a message that has a group has all of its
// failures there, and the rest are in (other).
func TestFailureTableUnderConcurrency(t *testing.T) {
	p := &plan.Plan{Name: "a", Requests: []plan.Request{{URL: "http://127.0.0.1:1/"}},
		Load: plan.Load{Executor: plan.PerVUIterations, VUs: 1, Iterations: 1}}
	p.Defaults()
	e, err := newEngine(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const vus, each, distinct = 8, 1500, 300
	errs := make([]error, distinct)
	for i := range errs {
		errs[i] = fmt.Errorf("failure %d", i)
	}
	var wg sync.WaitGroup
	for id := range vus {
		v := newVU(e, id)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				v.failed(&v.reqs[0], metrics.Other, 0, errs[(i*7+id)%distinct])
			}
		}()
	}
	wg.Wait()
	want := map[string]int64{} // failures per message
	for id := range vus {
		for i := range each {
			want[fmt.Sprintf("failure %d", (i*7+id)%distinct)]++
		}
	}
	var snap failSnapshot
	e.fails.read(&snap)
	groups := e.fails.groups(&snap)
	var total int64
	for _, g := range groups {
		total += g.Count
		if g.Message != metrics.OtherFailures && g.Count != want[g.Message] {
			t.Errorf("%s: %d, want %d", g.Message, g.Count, want[g.Message])
		}
	}
	if len(groups) != metrics.MaxFailureGroups+1 || total != vus*each {
		t.Errorf("%d groups counting %d failures, want %d and %d", len(groups), total, metrics.MaxFailureGroups+1, vus*each)
	}
}

// TestConnectFailureHasNoStatus: VUs whose last request failed with a 503 then fail to connect
// elsewhere: the connection failures have status 0 and no sample, not the 503's.
func TestConnectFailureHasNoStatus(t *testing.T) {
	dead := testutil.ClosedPort(t)
	tg := testutil.NewRawServer(t, func(*http.Request) testutil.RawAnswer {
		return testutil.RawAnswer{Bytes: []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy")}
	})
	p := mustPlan(t, fmt.Sprintf(`{"name":"t","requests":[{"name":"bad503","url":"http://%s/"},{"name":"dead","url":"http://%s/"}],
		"load":{"executor":"per-vu-iterations","vus":5,"iterations":40},"http":{"timeout":"5s"}}`, tg.Addr, dead))
	sum, _ := run(t, p)
	count := map[string]int64{}
	for _, g := range sum.Failures {
		count[g.Request] += g.Count
		want := metrics.FailureGroup{Request: "bad503", Kind: "status_5xx", Status: 503, Message: "HTTP 503 Service Unavailable", Count: g.Count}
		if g.Request == "dead" {
			want = metrics.FailureGroup{Request: "dead", Kind: "connect_refused", Message: "dial tcp " + dead + ": connect: connection refused", Count: g.Count}
		}
		hasSample := g.Sample != nil
		g.Sample = nil
		if g != want || hasSample != (g.Status != 0) {
			t.Errorf("group %+v (sample %v), want %+v", g, hasSample, want)
		}
	}
	if count["dead"] == 0 || count["bad503"] == 0 || count["dead"]+count["bad503"] != 200 || len(sum.Failures) != 2 {
		t.Errorf("failures %v in %d groups, want 200 of both requests in 2", count, len(sum.Failures))
	}
}

// TestBadResponsesAreOneGroup: a target answering different garbage, and different oversized
// headers, each time: one group for each kind, its message fixed (fasthttp's errors quote what came).
func TestBadResponsesAreOneGroup(t *testing.T) {
	var next atomic.Int64
	tg := testutil.NewRawServer(t, func(r *http.Request) testutil.RawAnswer {
		i := next.Add(1)
		if r.URL.Path == "/big" {
			return testutil.RawAnswer{Bytes: fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nX-Big: %s\r\n\r\n", strings.Repeat("x", 5000+int(i)))}
		}
		return testutil.RawAnswer{Bytes: fmt.Appendf(nil, "HTTP/1.1 OK garbage #%d\r\n\r\n", i), Close: true}
	})
	p := mustPlan(t, fmt.Sprintf(`{"name":"t","requests":[{"name":"bad","url":"http://%[1]s/bad"},{"name":"big","url":"http://%[1]s/big"}],
		"load":{"executor":"per-vu-iterations","vus":4,"iterations":25},"http":{"timeout":"5s","max_header":4096}}`, tg.Addr))
	sum, _ := run(t, p)
	want := map[string]string{"malformed_response": malformedMsg, "header_too_large": headerTooLargeMessage(4096)}
	var n int64
	for _, g := range sum.Failures {
		n += g.Count
		if g.Message != want[g.Kind] {
			t.Errorf("group %s %q, want message %q", g.Kind, g.Message, want[g.Kind])
		}
	}
	if len(sum.Failures) != 2 || n != 100 || sum.Errors != 100 {
		t.Errorf("%d failures (%d errors, kinds %v) in %d groups, want 100 in 2", n, sum.Errors, sum.ErrorKinds, len(sum.Failures))
	}
}
