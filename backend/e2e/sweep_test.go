package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A concurrency sweep against Debian's nginx produces the capacity table: one row per level,
// rows that add up to the run, and every request accounted for in nginx's access log.
func TestSweepCapacityTableAgainstNginx(t *testing.T) {
	ng := startNginx(t)
	dir := t.TempDir()
	plan := fmt.Sprintf(`{"name":"sweep","requests":[{"url":%q}],
		"load":{"executor":"concurrency-sweep","levels":[1,10,50],"step_duration":"2s"},"http":{"timeout":"5s"}}`, ng.url)
	planPath := filepath.Join(dir, "sweep.json")
	if err := os.WriteFile(planPath, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "summary.json")
	code, stdout, stderr := runCLI(t, 60*time.Second, "run", "-q", planPath, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Logf("\n%s", stdout)
	var sum struct {
		Requests    int64 `json:"requests"`
		Interrupted int64 `json:"interrupted"`
		Errors      int64 `json:"errors"`
		Sweep       []struct {
			VUs      int     `json:"vus"`
			Requests int64   `json:"requests"`
			RPS      float64 `json:"rps"`
			P50      float64 `json:"p50_ms"`
			P90      float64 `json:"p90_ms"`
			P99      float64 `json:"p99_ms"`
			CPU      float64 `json:"cpu_percent"`
			RSS      uint64  `json:"rss_bytes"`
		} `json:"sweep"`
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Sweep) != 3 {
		t.Fatalf("%d sweep rows", len(sum.Sweep))
	}
	var rows int64
	for i, r := range sum.Sweep {
		if want := []int{1, 10, 50}[i]; r.VUs != want || r.Requests == 0 || r.RPS <= 0 || r.RSS == 0 {
			t.Errorf("row %d: %+v", i, r)
		}
		if !(r.P50 <= r.P90 && r.P90 <= r.P99) {
			t.Errorf("row %d percentiles out of order: %+v", i, r)
		}
		rows += r.Requests
	}
	if rows != sum.Requests || sum.Errors != 0 {
		t.Errorf("rows add to %d, run %d, errors %d", rows, sum.Requests, sum.Errors)
	}
	if !strings.Contains(stdout, "capacity") {
		t.Errorf("no capacity table printed")
	}
	logged := ng.loggedRequests(t, 300*time.Millisecond, 10*time.Second)
	if int64(logged) < sum.Requests || int64(logged) > sum.Requests+sum.Interrupted {
		t.Errorf("nginx logged %d, volley counted %d (+%d interrupted)", logged, sum.Requests, sum.Interrupted)
	}
}
