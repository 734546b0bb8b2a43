package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// Two runs of one plan — 20 VUs for 12 s against a loopback target answering in 2 ms, the
// case where a busy machine's scheduling moves throughput and tail latency most from run to run
// (docs/compare.md, "Run-to-run noise") — compared with `volley compare`: no metric is a
// regression and the command exits 0. A difference within the runs' run-to-run noise is no
// change or inconclusive ("repeat both runs"), never a regression. One pair, not three: each
// pair keeps a designed chance of a few per cent of a false call, which three pairs would triple.
func TestSamePlanTwiceIsNoRegression(t *testing.T) {
	if testing.Short() {
		t.Skip("two 12 s runs")
	}
	dir := t.TempDir()
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Millisecond)
		_, _ = w.Write([]byte("ok"))
	})
	plan := fmt.Sprintf(`{"name":"same plan","requests":[{"name":"home","url":%q}],
		"load":{"executor":"constant-vus","vus":20,"duration":"12s"}}`, tg.URL)
	if err := os.WriteFile(filepath.Join(dir, "plan.json"), []byte(plan), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := buildVolley(t, t.TempDir())
	volley := func(args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("volley %s: %v", strings.Join(args, " "), err)
		}
		return cmd.ProcessState.ExitCode(), string(out)
	}
	files := []string{"a.json", "b.json"}
	for _, f := range files {
		if code, out := volley("run", "plan.json", "--out", f, "-q"); code != 0 {
			t.Fatalf("volley run --out %s: exit %d\n%s", f, code, out)
		}
	}
	for _, pair := range [][2]string{{"a.json", "b.json"}} {
		code, out := volley("compare", pair[0], pair[1])
		t.Logf("volley compare %s %s: exit %d\n%s", pair[0], pair[1], code, out)
		if code != 0 || strings.Contains(out, "REGRESSION") {
			t.Errorf("the same plan run twice (%s, %s): exit %d, want 0 and no regression\n%s", pair[0], pair[1], code, out)
		}
	}
}
