//go:build linux

package engine

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// A hostile target: answers no load generator should be crashed, bloated or stalled by. The
// target runs in a child process (the test binary itself, TestHelperHostileTarget), so that the
// RSS measured here is the generator's alone; it picks its behaviour from the request path.
var hostileBehaviours = map[string]func(c net.Conn){
	// 200 GB declared, then bytes as fast as the connection takes them.
	"/huge-length": func(c net.Conn) {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 200000000000\r\n\r\n")
		sendZeros(c, -1)
	},
	// a 5 GB body sent at speed
	"/5gb": func(c net.Conn) {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5000000000\r\n\r\n")
		sendZeros(c, 5_000_000_000)
	},
	// chunks of 32 KiB that never end
	"/endless-chunked": func(c net.Conn) {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
		chunk := append(append([]byte("8000\r\n"), make([]byte, 0x8000)...), "\r\n"...)
		for {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	},
	// header fields that never end
	"/endless-headers": func(c net.Conn) {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := bytes.Repeat([]byte("X-Endless: yes\r\n"), 1024)
		for {
			if _, err := c.Write(line); err != nil {
				return
			}
		}
	},
	"/200kb-header": func(c net.Conn) {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("b", 200<<10)+"\r\nContent-Length: 0\r\n\r\n")
	},
	"/many-headers": func(c net.Conn) {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n"+strings.Repeat("A: b\r\n", 20_000)+"Content-Length: 0\r\n\r\n")
	},
	// an HTTP/0.9 answer: the body alone, then the connection closes
	"/http09": func(c net.Conn) {
		_, _ = io.WriteString(c, "<html><body>hello from 1991</body></html>\n")
		closeHard(c)
	},
	"/bad-status-line": func(c net.Conn) {
		_, _ = io.WriteString(c, "HTTP/1.1 OK 200\r\nContent-Length: 0\r\n\r\n")
	},
	"/conflicting-length": func(c net.Conn) {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello!!")
	},
	"/bad-chunk-size": func(c net.Conn) {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n")
	},
	// 1 000 of 100 000 declared bytes, then the connection closes
	"/stops-midway": func(c net.Conn) {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"+strings.Repeat("x", 1000))
		closeHard(c)
	},
	// one byte a second
	"/trickle": func(c net.Conn) {
		for _, b := range []byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello") {
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(time.Second)
		}
	},
}

var zeros = make([]byte, 64<<10)

// sendZeros writes n zero bytes (n < 0: until the connection fails).
func sendZeros(c net.Conn, n int64) {
	for n != 0 {
		b := zeros
		if n > 0 && n < int64(len(b)) {
			b = b[:n]
		}
		k, err := c.Write(b)
		if err != nil {
			return
		}
		if n > 0 {
			n -= int64(k)
		}
	}
}

// closeHard ends the exchange: the reading side of serveHostile closes the connection.
func closeHard(c net.Conn) { _ = c.Close() }

// TestHelperHostileTarget is not a test: it is the child process that TestHostileTargets starts.
func TestHelperHostileTarget(t *testing.T) {
	if os.Getenv("VOLLEY_HOSTILE_TARGET") != "1" {
		t.Skip("the child process of TestHostileTargets")
	}
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(ln.Addr().String())
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveHostile(c)
		}
	}()
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

func serveHostile(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		b := hostileBehaviours[req.URL.Path]
		if b == nil {
			_, _ = io.WriteString(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
			continue
		}
		b(c)
	}
}

// procStatus reads a "VmRSS"-like field of /proc/self/status, in bytes.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skipf("no %s in /proc/self/status", field)
	return 0
}

// peakRSS measures the process's peak RSS from now until stop is called: the kernel's high-water
// mark (reset through clear_refs), or, where that cannot be reset, samples every 10 ms.
func peakRSS(t *testing.T) (stop func() int64) {
	t.Helper()
	if os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil {
		return func() int64 { return procStatus(t, "VmHWM") }
	}
	return samplePeak(10*time.Millisecond, func() int64 { return procStatus(t, "VmRSS") })
}

// samplePeak reads read now and every interval until stop is called, which reads once more and
// returns the largest value read.
func samplePeak(every time.Duration, read func() int64) (stop func() int64) {
	peak := read()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				peak = max(peak, read())
			}
		}
	}()
	return func() int64 {
		close(done)
		<-finished
		return max(peak, read())
	}
}

// goMem is the memory the Go runtime holds from the OS now (runtime/metrics: all its memory
// classes less the heap released to the OS). Unlike RSS it leaves out the race detector's shadow
// memory, which the Go documentation puts at 5–10× a program's own under -race.
func goMem() int64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	rtmetrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

type hostileCase struct {
	path   string
	checks bool     // the request has a body check (the body is read into memory, up to max_body)
	want   []string // the error kinds it may end in; the first must be there
}

// hostileRun runs vus VUs against one behaviour for 1 s (timeout 1 s, graceful stop 1 s) and
// checks the three promises: RSS ≤ idle + 256 MiB, every failure a named kind (never other), and
// the run over within duration + graceful_stop + 1 s.
func hostileRun(t *testing.T, addr string, c hostileCase, vus int) {
	t.Helper()
	extra := ""
	if c.checks {
		extra = `,"checks":[{"type":"body","op":"contains","value":"hello"}]`
	}
	js := fmt.Sprintf(`{"name":"hostile","requests":[{"url":"http://%s%s"%s}],
		"load":{"executor":"constant-vus","vus":%d,"duration":"1s","graceful_stop":"1s"},
		"http":{"timeout":"1s","max_body":65536}}`, addr, c.path, extra, vus)
	p := mustPlan(t, js)
	e, err := newEngine(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	debug.FreeOSMemory()
	idle, goIdle := procStatus(t, "VmRSS"), goMem()
	stop, goStop := peakRSS(t), samplePeak(5*time.Millisecond, goMem)
	probe := testutil.StartSchedProbe(t)
	start := time.Now()
	sum, err := e.Run(context.Background())
	took := time.Since(start)
	delay := probe.Stop()
	peak, goPeak := stop(), goStop()
	if err != nil {
		t.Fatal(err)
	}
	kinds := make([]string, 0, len(sum.ErrorKinds))
	for k := range sum.ErrorKinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	t.Logf("%-20s checks=%-5v vus=%d: %.2f s (summary %.2f s), RSS idle %d MiB, peak +%d MiB (Go's own +%d MiB); requests %d, interrupted %d, kinds %v; %v",
		c.path, c.checks, vus, took.Seconds(), sum.DurationS, idle>>20, (peak-idle)>>20, (goPeak-goIdle)>>20, sum.Requests, sum.Interrupted, sum.ErrorKinds, delay)
	// The bound is on the generator's memory: what the Go runtime holds, always; the process's RSS
	// too, except under -race, where RSS also holds the detector's shadow memory (several times
	// the program's: +285 MiB of RSS for +80 MiB of Go memory at /endless-headers).
	if goPeak-goIdle > 256<<20 {
		t.Errorf("%s: Go's memory peaked %d MiB over idle (%d MiB), want ≤ 256 MiB", c.path, (goPeak-goIdle)>>20, goIdle>>20)
	}
	if !raceDetector && peak-idle > 256<<20 {
		t.Errorf("%s: peak RSS %d MiB over idle (%d MiB), want ≤ 256 MiB", c.path, (peak-idle)>>20, idle>>20)
	}
	limit := 3 * time.Second // duration 1 s + graceful_stop 1 s + 1 s
	if raceDetector {
		// Building the summary alone takes 0.5–0.9 s under -race on a 2-core machine (≈ 0.1 s
		// without); the traffic itself must still end by duration + graceful_stop + 1 s.
		limit += time.Second
	}
	// The end is a chain of wakeups (the stop timer, each VU, the summary) that a busy machine
	// delays each by up to what the probe measured.
	limit += delay.Slack(testutil.StopChain)
	traffic := 3 + delay.Slack(testutil.StopChain).Seconds()
	if took > limit || sum.DurationS > traffic {
		t.Errorf("%s: the run took %v (its traffic %.2f s), want ≤ %v (≤ %.2f s)", c.path, took, sum.DurationS, limit, traffic)
	}
	if sum.Successes != 0 {
		t.Errorf("%s: %d successes against a hostile target", c.path, sum.Successes)
	}
	// The hostile answer must be recognised as what it is. On a busy machine the target, another
	// process still writing the endless answers of the cases before, may not send a single answer
	// to 200 VUs within the 1 s timeout: then one request with a 10 s timeout must see it.
	if kind := c.want[0]; sum.ErrorKinds[kind] == 0 {
		t.Logf("%s: no %s in the run (kinds %v): one request with a 10 s timeout instead", c.path, kind, sum.ErrorKinds)
		one := mustPlan(t, fmt.Sprintf(`{"name":"hostile","requests":[{"url":"http://%s%s"%s}],
			"load":{"executor":"per-vu-iterations","vus":1,"iterations":1},"http":{"timeout":"10s","max_body":65536}}`, addr, c.path, extra))
		if s, _ := run(t, one); s.ErrorKinds[kind] != 1 {
			t.Errorf("%s: no %s (kinds %v; alone with a 10 s timeout: %v)", c.path, kind, sum.ErrorKinds, s.ErrorKinds)
		}
	}
	// A 2-core machine running 1 000 VUs and the target at once misses some 1 s timeouts whatever
	// the answer: connects and first bytes that wait for a CPU.
	allowed := map[string]bool{metrics.ConnectTimeout.String(): true, metrics.Timeout.String(): true}
	for _, k := range c.want {
		allowed[k] = true
	}
	for _, k := range kinds {
		if !allowed[k] {
			t.Errorf("%s: %d requests of kind %q, want only %v", c.path, sum.ErrorKinds[k], k, c.want)
		}
	}
}

// The full table of hostile behaviours at 200 VUs, and the ones that once killed or stalled the
// generator at 1 000 VUs. Each run: RSS ≤ idle + 256 MiB, every failure a named kind, and over
// within duration + graceful_stop + 1 s.
func TestHostileTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("hostile-target suite: ~40 s")
	}
	addr := startChildTarget(t, "TestHelperHostileTarget", "VOLLEY_HOSTILE_TARGET")
	timeout := []string{"timeout"} // endless or slow: cut off by the request timeout or the hard stop
	cases := []hostileCase{
		{path: "/huge-length", want: timeout},
		{path: "/huge-length", checks: true, want: []string{"body_too_large"}},
		{path: "/5gb", want: timeout},
		{path: "/5gb", checks: true, want: []string{"body_too_large"}},
		{path: "/endless-chunked", want: timeout},
		{path: "/endless-chunked", checks: true, want: []string{"body_too_large", "timeout"}},
		{path: "/endless-headers", want: []string{"header_too_large", "timeout"}},
		{path: "/200kb-header", want: []string{"header_too_large", "timeout"}},
		{path: "/many-headers", want: []string{"header_too_large", "timeout"}},
		{path: "/http09", want: []string{"malformed_response", "timeout"}},
		{path: "/bad-status-line", want: []string{"malformed_response", "timeout"}},
		{path: "/conflicting-length", want: []string{"malformed_response", "timeout"}},
		{path: "/bad-chunk-size", want: []string{"malformed_response", "timeout"}},
		{path: "/stops-midway", want: []string{"read", "timeout"}},
		{path: "/trickle", want: timeout},
	}
	vus := 200 // VOLLEY_HOSTILE_VUS=1000 runs the whole table at 1 000 VUs (~50 s)
	if n, err := strconv.Atoi(os.Getenv("VOLLEY_HOSTILE_VUS")); err == nil && n > 0 {
		vus = n
	}
	for _, c := range cases {
		name := strings.TrimPrefix(c.path, "/")
		if c.checks {
			name += "+checks"
		}
		t.Run(name, func(t *testing.T) { hostileRun(t, addr, c, vus) })
	}
	for _, c := range []hostileCase{cases[0], cases[4], cases[6]} {
		if vus == 1000 {
			break
		}
		t.Run("1000VUs/"+strings.TrimPrefix(c.path, "/"), func(t *testing.T) { hostileRun(t, addr, c, 1000) })
	}
}

// A body nobody checks is read and dropped whatever its framing and size, and counted exactly:
// bytes_in is every byte the target sent, body_bytes_in every body byte.
func TestUncheckedBodiesAreDroppedAndCountedExactly(t *testing.T) {
	const size = 5<<20 + 17
	body := strings.Repeat("x", size)
	var chunked strings.Builder
	for rest := body; rest != ""; {
		n := min(len(rest), 100_000)
		fmt.Fprintf(&chunked, "%x\r\n%s\r\n", n, rest[:n])
		rest = rest[n:]
	}
	chunked.WriteString("0\r\nX-Trailer: yes\r\n\r\n")
	for _, c := range []struct {
		name   string
		answer string
		close  bool
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(size) + "\r\n\r\n" + body, false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked.String(), false},
		{"until close", "HTTP/1.1 200 OK\r\n\r\n" + body, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := testutil.NewRawServer(t, func(*http.Request) testutil.RawAnswer {
				return testutil.RawAnswer{Bytes: []byte(c.answer), Close: c.close}
			})
			sum, _ := run(t, mustPlan(t, closedPlan("http://"+srv.Addr+"/", 2, "1s", "10s", "")))
			if sum.Requests == 0 || sum.Successes != sum.Requests || sum.BodyBytesIn != size*sum.Requests ||
				sum.BytesIn != int64(len(c.answer))*sum.Requests {
				t.Errorf("requests %d successes %d kinds %v: body bytes %d (want %d each), bytes in %d (want %d each)",
					sum.Requests, sum.Successes, sum.ErrorKinds, sum.BodyBytesIn, size, sum.BytesIn, len(c.answer))
			}
			if !c.close && srv.Conns() != 2 {
				t.Errorf("%d connections, want 2 (kept alive after each body)", srv.Conns())
			}
		})
	}
}

// A body a check reads is kept up to http.max_body, whatever its framing; one over the limit is
// body_too_large, and a declared length over it fails before any of the body is read.
func TestCheckedBodiesUpToMaxBody(t *testing.T) {
	small := strings.Repeat("x", 3000) + "needle"
	big := strings.Repeat("x", 70_000) + "needle"
	answers := map[string]string{
		"/length/small":  "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(small)) + "\r\n\r\n" + small,
		"/length/big":    "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(big)) + "\r\n\r\n" + big,
		"/chunked/small": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(small), small),
		"/chunked/big":   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(big), big),
		"/close/small":   "HTTP/1.1 200 OK\r\n\r\n" + small,
		"/close/big":     "HTTP/1.1 200 OK\r\n\r\n" + big,
	}
	srv := testutil.NewRawServer(t, func(r *http.Request) testutil.RawAnswer {
		return testutil.RawAnswer{Bytes: []byte(answers[r.URL.Path]), Close: strings.HasPrefix(r.URL.Path, "/close/")}
	})
	for path := range answers {
		t.Run(path, func(t *testing.T) {
			js := fmt.Sprintf(`{"name":"t","requests":[{"url":"http://%s%s","checks":[{"type":"body","op":"contains","value":"needle"}]}],
				"load":{"executor":"per-vu-iterations","vus":2,"iterations":5},"http":{"timeout":"5s","max_body":65536}}`, srv.Addr, path)
			sum, _ := run(t, mustPlan(t, js))
			want := "" // success: the check saw the needle at the end of the body
			if strings.HasSuffix(path, "/big") {
				want = "body_too_large"
			}
			if sum.Requests != 10 || (want == "" && sum.Successes != 10) || (want != "" && sum.ErrorKinds[want] != 10) {
				t.Errorf("requests %d successes %d kinds %v, want 10 × %q", sum.Requests, sum.Successes, sum.ErrorKinds, want)
			}
		})
	}
}

// Stop cuts off a VU stuck reading an endless body: the run ends within the graceful stop, the
// request is interrupted, and the VU lets go of its connection at once, not at its (far) timeout.
func TestStopCutsOffAnEndlessBody(t *testing.T) {
	addr := testutil.EndlessBodyTarget(t)
	p := mustPlan(t, fmt.Sprintf(`{"name":"t","requests":[{"url":"http://%s/"}],
		"load":{"executor":"constant-vus","vus":20,"duration":"1m","graceful_stop":"1s"},"http":{"timeout":"1m"}}`, addr))
	e, err := newEngine(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	probe := testutil.StartSchedProbe(t)
	start := time.Now()
	sum, err := e.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// stop at 0.5 s + graceful_stop 1 s + 1 s, and the stop's wakeups on a busy machine
	if took, limit := time.Since(start), 3*time.Second+probe.Stop().Slack(testutil.StopChain); took > limit {
		t.Errorf("the run took %v after a stop at 0.5 s (limit %v)", took, limit)
	}
	if sum.Interrupted != 20 || sum.Requests != 0 {
		t.Errorf("interrupted %d, requests %d kinds %v: want the 20 stuck requests interrupted", sum.Interrupted, sum.Requests, sum.ErrorKinds)
	}
	deadline := time.Now().Add(2 * time.Second)
	for e.rec.OpenConns() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := e.rec.OpenConns(); n != 0 {
		t.Errorf("%d connections still open 2 s after the run: the stuck VUs were not interrupted", n)
	}
}

// Where the line between malformed_response and a connection's failure runs: bytes that do not
// begin like HTTP are malformed whatever ended the read; an HTTP header cut short is a read error.
func TestMalformedOrCutShort(t *testing.T) {
	for _, c := range []struct {
		name, answer, want string
	}{
		{"garbage without a line end, then close", "hello there", "malformed_response"},
		{"an HTTP header cut short, then close", "HTTP/1.1 200 OK\r\nContent-Le", "read"},
		{"a chunked body cut short, then close", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", "read"},
		{"a negative Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello", "malformed_response"},
		{"a header line without a colon", "HTTP/1.1 200 OK\r\nno colon here\r\nContent-Length: 0\r\n\r\n", "malformed_response"},
		{"101 interim answers", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 101) + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "malformed_response"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := testutil.NewRawServer(t, func(*http.Request) testutil.RawAnswer {
				return testutil.RawAnswer{Bytes: []byte(c.answer), Close: true}
			})
			js := fmt.Sprintf(`{"name":"t","requests":[{"url":"http://%s/"}],
				"load":{"executor":"per-vu-iterations","vus":2,"iterations":5},"http":{"timeout":"5s"}}`, srv.Addr)
			sum, _ := run(t, mustPlan(t, js))
			if sum.Requests != 10 || sum.ErrorKinds[c.want] != 10 {
				t.Errorf("requests %d kinds %v, want 10 × %s", sum.Requests, sum.ErrorKinds, c.want)
			}
		})
	}
}
