package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/monitor"
	"github.com/volley-load/volley/backend/internal/plan"
)

func TestLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:9256": true, "[::1]:9256": true, "localhost:1": true, "127.8.0.1:1": true,
		":9256": false, "0.0.0.0:9256": false, "10.0.0.1:9256": false, "example.com:80": false, "bad": false} {
		if got := loopbackAddr(addr); got != want {
			t.Errorf("%s: %v", addr, got)
		}
	}
}

func TestLoopbackHostHeader(t *testing.T) {
	for h, want := range map[string]bool{"127.0.0.1:9256": true, "[::1]:9256": true, "[::1]": true, "localhost": true, "LOCALHOST.:80": true, "127.0.0.1": true,
		"": false, "evil.example:9256": false, "localhost.evil.example": false, "10.0.0.1": false, "0.0.0.0:9256": false} {
		if got := loopbackHostHeader(h); got != want {
			t.Errorf("%q: %v", h, got)
		}
	}
}

// TestMonitorRefusesShortToken: a --token under 16 characters is a usage error that says why.
func TestMonitorRefusesShortToken(t *testing.T) {
	c := monitorCmd()
	c.SetArgs([]string{"--process", "x", "--token", "s3cret", "--listen", "127.0.0.1:0"})
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	err := c.Execute()
	if err == nil || !strings.Contains(err.Error(), "at least 16") || !strings.Contains(err.Error(), "guessed") {
		t.Fatalf("%v", err)
	}
}

// TestMonitorLoopbackHostGuard: without a token only requests naming a loopback host are answered
// (DNS rebinding), a token-served monitor answers whatever the Host.
func TestMonitorLoopbackHostGuard(t *testing.T) {
	for _, token := range []string{"", "0123456789abcdef"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- serveMonitor(ctx, ln, []string{"vmon-none"}, token) }()
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		for host, ok := range map[string]bool{"": true, "localhost:" + port: true, "[::1]:" + port: true, "rebound.example:" + port: token != "", "192.0.2.1": token != ""} {
			req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/metrics", nil)
			if host != "" {
				req.Host = host
			}
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := http.StatusOK
			if !ok {
				want = http.StatusMisdirectedRequest
			}
			if resp.StatusCode != want || (ok && !strings.Contains(string(body), monitor.ProcessCount)) {
				t.Errorf("token %q, Host %q: %d %q, want %d", token, host, resp.StatusCode, body, want)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// metricValue finds one sample line's value in a text exposition.
func metricValue(t *testing.T, text, series string) float64 {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no %s in:\n%s", series, text)
	return 0
}

// TestMonitorServesProcesses: `volley monitor` sums a named process and its children, keeps its
// CPU counter in step with the kernel's accounting, and wants the bearer token when given one.
func TestMonitorServesProcesses(t *testing.T) {
	// A parent named uniquely (a copy of sh) whose child burns CPU: both are counted.
	name := "vmon-" + strconv.Itoa(os.Getpid()%100000)
	sh := filepath.Join(t.TempDir(), name)
	b, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Skip("no /bin/sh")
	}
	if err := os.WriteFile(sh, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh, "-c", "sh -c 'while :; do :; done' & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid)); err == nil {
			for _, f := range strings.Fields(string(b)) { // the child, by its pid
				if pid, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveMonitor(ctx, ln, []string{name}, "s3cret") }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	url := "http://" + ln.Addr().String() + "/metrics"
	get := func(auth string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	if code, _ := get("Bearer wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", code)
	}
	cpuSeries := monitor.ProcessCPUSeconds + `{process="` + name + `"}`
	deadline := time.Now().Add(10 * time.Second)
	var text string
	for {
		var code int
		code, text = get("Bearer s3cret")
		if code != http.StatusOK {
			t.Fatalf("token: %d", code)
		}
		if metricValue(t, text, monitor.ProcessCount+`{process="`+name+`"}`) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := metricValue(t, text, monitor.ProcessCount+`{process="`+name+`"}`); n != 2 {
		t.Fatalf("%v processes counted, want the parent and its child", n)
	}
	if metricValue(t, text, monitor.ProcessRSS+`{process="`+name+`"}`) <= 0 {
		t.Error("no RSS")
	}
	// The counter against the kernel's utime+stime of both processes, read around it.
	kernel := func() float64 {
		var sum float64
		for _, pid := range []string{strconv.Itoa(cmd.Process.Pid), childOf(t, cmd.Process.Pid)} {
			b, err := os.ReadFile("/proc/" + pid + "/stat")
			if err != nil {
				t.Fatal(err)
			}
			f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
			u, _ := strconv.ParseFloat(f[11], 64)
			s, _ := strconv.ParseFloat(f[12], 64)
			sum += (u + s) / 100
		}
		return sum
	}
	k0 := kernel()
	_, t0 := get("Bearer s3cret")
	time.Sleep(time.Second)
	k1 := kernel()
	_, t1 := get("Bearer s3cret")
	got := metricValue(t, t1, cpuSeries) - metricValue(t, t0, cpuSeries)
	// Each reading is in 10 ms ticks, and the two readings of each pair are a scrape apart.
	if want := k1 - k0; want < 0.05 || got < 0.9*want-0.03 || got > 1.1*want+0.03 {
		t.Errorf("counter advanced %.3f s, the kernel %.3f s", got, want)
	}
	if pct := metricValue(t, t1, monitor.ProcessCPUPercent+`{process="`+name+`"}`); pct <= 0 {
		t.Errorf("cpu percent %v", pct)
	}
}

// childOf returns the pid of a process's only child.
func childOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 1 {
		t.Fatalf("children of %d: %q", pid, b)
	}
	return f[0]
}

// TestMonitorTokenFromPlan: a plan's process monitor with token {{secret.MON_TOKEN}} scrapes a
// `volley monitor --token` (its server, in-process, on loopback) with the secret's value; with a
// wrong token or none its series are gaps and its error names the 401.
func TestMonitorTokenFromPlan(t *testing.T) {
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skip("no /proc/self/comm")
	}
	self := strings.TrimSpace(string(comm))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveMonitor(ctx, ln, []string{self}, "0123456789abcdef-token") }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	p, err := plan.Parse(fmt.Appendf(nil, `{"name":"mon","requests":[{"url":"http://127.0.0.1:1/"}],"load":{"vus":1,"duration":"1s"},
		"monitors":[{"type":"process","url":"http://%s/metrics","interval":"500ms","token":"{{secret.MON_TOKEN}}"}]}`, ln.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	if names := p.SecretNames(); len(names) != 1 || names[0] != "MON_TOKEN" {
		t.Fatalf("secret names %v", names)
	}
	rss := p.Monitors[0].Name + "/rss_bytes/" + self
	// scrape runs the monitors with the given secrets until the RSS series or an error shows.
	scrape := func(secrets plan.SecretValues) (map[string]float64, []metrics.MonitorError) {
		s := monitor.Start(p.Monitors, secrets, nil)
		defer s.Stop()
		var errs []metrics.MonitorError
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			vals, e := s.Read(time.Now())
			errs = append(errs, e...)
			if vals[rss] > 0 || len(errs) > 0 {
				return vals, errs
			}
		}
		t.Fatal("no value and no error in 10s")
		return nil, nil
	}
	if vals, errs := scrape(plan.SecretValues{"MON_TOKEN": "0123456789abcdef-token"}); len(errs) > 0 || vals[rss] <= 0 {
		t.Errorf("right token: values %v, errors %v", vals, errs)
	}
	for secret, want := range map[string]string{"wrong-token-0123456789": "HTTP 401: the endpoint refused the monitor's token", "": "HTTP 401: the endpoint wants a token"} {
		secrets := plan.SecretValues{"MON_TOKEN": secret}
		vals, errs := scrape(secrets)
		if len(vals) > 0 || len(errs) != 1 || !strings.HasPrefix(errs[0].Message, want) {
			t.Errorf("token %q: values %v, errors %v; want the error %q", secret, vals, errs, want)
		}
	}
}
