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

	"github.com/volley-load/volley/backend/internal/monitor"
)

func TestLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:9256": true, "[::1]:9256": true, "localhost:1": true, "127.8.0.1:1": true,
		":9256": false, "0.0.0.0:9256": false, "10.0.0.1:9256": false, "example.com:80": false, "bad": false} {
		if got := loopbackAddr(addr); got != want {
			t.Errorf("%s: %v", addr, got)
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
