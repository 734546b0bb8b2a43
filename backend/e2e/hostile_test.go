package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// `volley run` against a target declaring a 200 GB body: the run ends on time with every request
// a timeout, and the process's peak RSS stays far from the body's size.
func TestRunSurvivesAHugeContentLength(t *testing.T) {
	addr := testutil.EndlessBodyTarget(t)
	dir := t.TempDir()
	planPath := filepath.Join(dir, "plan.json")
	outPath := filepath.Join(dir, "summary.json")
	const vus = 500
	writeJSON(t, planPath, map[string]any{
		"name":     "huge content-length",
		"requests": []map[string]any{{"url": "http://" + addr + "/"}},
		"load":     map[string]any{"executor": "constant-vus", "vus": vus, "duration": "2s", "graceful_stop": "1s"},
		"http":     map[string]any{"timeout": "1s"},
	})
	var stderr bytes.Buffer
	cmd := exec.Command(volleyBin, "run", planPath, "--out", outPath, "--quiet")
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("volley run did not finish within 30 s; stderr:\n%s", tail2(stderr.String(), 3000))
	}
	took := time.Since(start)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	// No request can succeed (every answer announces 200 GB and times out): the run's outcome is
	// failed, which `volley run` reports with exit 4 — after writing the summary.
	if code := cmd.ProcessState.ExitCode(); code != 4 {
		t.Fatalf("volley run exited %d (%v), want 4 (the run failed: no successful response); stderr:\n%s", code, cmd.ProcessState, tail2(stderr.String(), 3000))
	}
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	b, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	var s summaryJSON
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	t.Logf("volley run, %d VUs against a 200 GB Content-Length: %.2f s, peak RSS %d MiB, requests %d, interrupted %d, kinds %v",
		vus, took.Seconds(), peak>>20, s.Requests, s.Interrupted, s.ErrorKinds)
	if peak > 256<<20 {
		t.Errorf("peak RSS %d MiB, want ≤ 256 MiB", peak>>20)
	}
	// duration 2 s + graceful_stop 1 s + 1 s, and up to 2 s to start the process and write the summary
	if took > 6*time.Second {
		t.Errorf("volley run took %v", took)
	}
	if s.Successes != 0 || s.ErrorKinds["timeout"] == 0 {
		t.Errorf("successes %d, kinds %v: want timeouts", s.Successes, s.ErrorKinds)
	}
	for k, n := range s.ErrorKinds {
		if k != "timeout" && k != "connect_timeout" {
			t.Errorf("%d requests of kind %q, want timeout only", n, k)
		}
	}
}
