package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestRestartMarksRunInterrupted kills the server mid-run and checks that, on restart, the run is
// marked interrupted with the seconds stored before the kill kept, and that new runs can start.
func TestRestartMarksRunInterrupted(t *testing.T) {
	db := filepath.Join(t.TempDir(), "volley.db")
	demo := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	srv := startServer(t, db, demo)
	waitTCP(t, demo, nil, 10*time.Second)

	spec := map[string]any{
		"name":     "restart e2e",
		"requests": []map[string]any{{"method": "GET", "url": "http://" + demo + "/"}},
		"load":     map[string]any{"executor": "constant-vus", "vus": 5, "duration": "60s"},
	}
	var plan struct {
		ID int64 `json:"id"`
	}
	if code := apiDo(t, "POST", srv.base+"/api/plans", spec, &plan); code != http.StatusCreated {
		t.Fatalf("POST /api/plans: status %d", code)
	}
	var run runJSON
	if code := apiDo(t, "POST", fmt.Sprintf("%s/api/plans/%d/runs", srv.base, plan.ID), nil, &run); code != http.StatusCreated {
		t.Fatalf("POST /api/plans/%d/runs: status %d", plan.ID, code)
	}
	if run.Status != "running" {
		t.Fatalf("new run status %q, want running", run.Status)
	}

	deadline := time.Now().Add(20 * time.Second)
	var before []json.RawMessage
	for {
		before = getSamples(t, srv.base, run.ID)
		if len(before) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d samples after 20s", len(before))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("run %d: %d samples before SIGKILL", run.ID, len(before))
	srv.kill(t) // SIGKILL to the server's process group
	restarted := time.Now()

	srv2 := startServer(t, db, demo)
	var after runJSON
	if code := apiDo(t, "GET", fmt.Sprintf("%s/api/runs/%d", srv2.base, run.ID), nil, &after); code != http.StatusOK {
		t.Fatalf("GET run %d after restart: status %d", run.ID, code)
	}
	if after.Status != "interrupted" {
		t.Errorf("status after restart %q, want interrupted", after.Status)
	}
	if after.EndedAt == nil || *after.EndedAt == "" {
		t.Error("ended_at not set on the interrupted run")
	} else if end, err := time.Parse(time.RFC3339, *after.EndedAt); err != nil {
		t.Errorf("ended_at %q is not RFC 3339: %v", *after.EndedAt, err)
	} else {
		if start, err := time.Parse(time.RFC3339, after.StartedAt); err == nil && end.Before(start) {
			t.Errorf("ended_at %s before started_at %s", end, start)
		}
		// The run ended with its last stored second, not when the server came back.
		var last struct {
			T int64 `json:"t"`
		}
		if err := json.Unmarshal(before[len(before)-1], &last); err == nil && end.Before(time.UnixMilli(last.T).Add(-time.Millisecond)) {
			t.Errorf("ended_at %s is before the last sample seen before the kill (%s)", end, time.UnixMilli(last.T).UTC())
		}
		if end.After(restarted) {
			t.Errorf("ended_at %s is after the restart (%s): it should be the end of the last stored second", end, restarted)
		}
	}
	kept := getSamples(t, srv2.base, run.ID)
	if len(kept) < 3 {
		t.Fatalf("%d samples after restart, want >= 3", len(kept))
	}
	for i := 0; i < 3; i++ {
		var a, b any
		if err := json.Unmarshal(before[i], &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(kept[i], &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("sample %d changed across the restart:\nbefore %s\nafter  %s", i, before[i], kept[i])
		}
	}
	t.Logf("after restart: status %s, ended_at %v, %d samples kept", after.Status, deref(after.EndedAt), len(kept))

	// The restarted server has no run in progress: a new one starts.
	var again runJSON
	if code := apiDo(t, "POST", fmt.Sprintf("%s/api/plans/%d/runs", srv2.base, plan.ID), nil, &again); code != http.StatusCreated {
		t.Fatalf("new run after restart: status %d, want 201", code)
	}
	if code := apiDo(t, "POST", fmt.Sprintf("%s/api/runs/%d/stop", srv2.base, again.ID), nil, nil); code != http.StatusAccepted {
		t.Errorf("stop run %d: status %d, want 202", again.ID, code)
	}
	if r := waitRunEnded(t, srv2.base, again.ID, 20*time.Second); r.Status != "stopped" {
		t.Errorf("stopped run has status %q, want stopped", r.Status)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestCLIRunThresholdExitCode checks `volley run`'s exit status and summary file: 1 when a threshold
// fails, 0 when all pass, 2 with every bad field named when the plan is invalid.
func TestCLIRunThresholdExitCode(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	tg := startProc(t, "volley-target", volleyBin, "target", "--addr", addr)
	waitTCP(t, addr, tg, 10*time.Second)
	dir := t.TempDir()

	plan := func(threshold string) map[string]any {
		return map[string]any{
			"name":       "cli threshold",
			"requests":   []map[string]any{{"method": "GET", "url": "http://" + addr + "/"}},
			"load":       map[string]any{"executor": "constant-vus", "vus": 2, "duration": "2s"},
			"thresholds": []string{threshold},
		}
	}
	for _, tc := range []struct {
		threshold string
		exit      int
		ok        bool
	}{
		{"p(95)<0.001ms", 1, false},
		{"p(95)<10s", 0, true},
	} {
		planPath := filepath.Join(dir, fmt.Sprintf("plan-%d.json", tc.exit))
		outPath := filepath.Join(dir, fmt.Sprintf("s-%d.json", tc.exit))
		writeJSON(t, planPath, plan(tc.threshold))
		code, _, stderr := runCLI(t, 30*time.Second, "run", planPath, "--out", outPath, "--quiet")
		if code != tc.exit {
			t.Errorf("threshold %s: exit %d, want %d; stderr:\n%s", tc.threshold, code, tc.exit, stderr)
		}
		b, err := os.ReadFile(outPath)
		if err != nil {
			t.Errorf("threshold %s: no summary file: %v", tc.threshold, err)
			continue
		}
		var s summaryJSON
		if err := json.Unmarshal(b, &s); err != nil {
			t.Errorf("threshold %s: summary file does not parse: %v", tc.threshold, err)
			continue
		}
		if s.Requests <= 0 {
			t.Errorf("threshold %s: summary requests = %d, want > 0", tc.threshold, s.Requests)
		}
		if len(s.Thresholds) != 1 || s.Thresholds[0].OK != tc.ok || s.Thresholds[0].Expr != tc.threshold {
			t.Errorf("threshold %s: summary thresholds %+v, want one with ok=%v", tc.threshold, s.Thresholds, tc.ok)
		}
		t.Logf("threshold %s: exit %d, requests %d, rps %.0f, p95 %.3fms, thresholds %+v", tc.threshold, code, s.Requests, s.RPS, s.Latency.P95, s.Thresholds)
	}

	bad := filepath.Join(dir, "bad.json")
	writeJSON(t, bad, map[string]any{
		"name":     "invalid",
		"requests": []map[string]any{{"method": "GET", "url": "ftp://x"}},
		"load":     map[string]any{"executor": "constant-vus", "vus": 0, "duration": "2s", "vuz": 3},
	})
	badOut := filepath.Join(dir, "bad-summary.json")
	code, _, stderr := runCLI(t, 20*time.Second, "run", bad, "--out", badOut)
	if code != 2 {
		t.Errorf("invalid plan: exit %d, want 2; stderr:\n%s", code, stderr)
	}
	for _, field := range []string{"load.vus", "requests[0].url", "load.vuz"} {
		if !containsField(stderr, field) {
			t.Errorf("invalid plan: stderr does not name %s:\n%s", field, stderr)
		}
	}
	if _, err := os.Stat(badOut); err == nil {
		t.Error("an invalid plan still wrote a summary file")
	}
	t.Logf("invalid plan: exit %d, stderr:\n%s", code, stderr)

	// command-line mistakes are bad input too (2), never a failed threshold (1)
	for _, args := range [][]string{
		{"run"}, {"run", bad, "--no-such-flag"}, {"run", bad, "--pprof", "0.0.0.0:6060"}, {"no-such-command"},
	} {
		code, _, stderr := runCLI(t, 20*time.Second, args...)
		if code != 2 || !strings.Contains(stderr, "volley:") {
			t.Errorf("volley %v: exit %d, want 2 with a message; stderr:\n%s", args, code, stderr)
		}
	}
}

// containsField reports whether field appears in s as a whole path ("load.vus", not "load.vuses").
func containsField(s, field string) bool { return hasWord(s, field) }

// hasWord: field appears in line not as part of a longer path (e.g. "load.vus" inside "load.vuses").
func hasWord(line, field string) bool {
	for i := 0; i+len(field) <= len(line); i++ {
		if line[i:i+len(field)] != field {
			continue
		}
		after := i + len(field)
		if after == len(line) || !isPathChar(line[after]) {
			if i == 0 || !isPathChar(line[i-1]) {
				return true
			}
		}
	}
	return false
}

func isPathChar(c byte) bool {
	return c == '.' || c == '_' || c == '[' || c == ']' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
