package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// volleyRun runs `volley run ARGS…` in-process and returns its error and stderr.
func volleyRun(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	c := runCmd()
	c.SetArgs(args)
	c.SetOut(&out)
	c.SetErr(&errb)
	c.SilenceUsage, c.SilenceErrors = true, true
	err := c.Execute()
	return errb.String(), err
}

func writePlan(t *testing.T, js string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(p, []byte(js), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunAppliesTheTargetPolicy(t *testing.T) {
	// a literal denied address: refused before any load, the field named
	meta := writePlan(t, `{"name":"m","requests":[{"url":"http://2852039166/latest/meta-data/"}],"load":{"vus":1,"duration":"1s"},
		"http":{"hosts":{"svc.test":"169.254.169.254"}}}`)
	stderr, err := volleyRun(t, "-q", meta)
	if err != exitCode(exitInvalidPlan) || !strings.Contains(stderr, "requests[0].url: 2852039166 (169.254.169.254) is denied by the server's target policy (link-local / cloud metadata)") ||
		!strings.Contains(stderr, `http.hosts: "svc.test" → 169.254.169.254 is denied`) {
		t.Errorf("metadata plan: %v\n%s", err, stderr)
	}

	// the administrator's denial of loopback, by flag and by environment: nothing is sent
	tg := testutil.NewTarget(t, func(http.ResponseWriter, *http.Request) {})
	loop := writePlan(t, `{"name":"l","requests":[{"url":"`+tg.URL+`/"}],"load":{"vus":1,"duration":"1s"}}`)
	stderr, err = volleyRun(t, "-q", "--deny-target", "127.0.0.0/8", loop)
	if err != exitCode(exitInvalidPlan) || !strings.Contains(stderr, "denied by rule 127.0.0.0/8") || tg.Requests() != 0 {
		t.Errorf("--deny-target: %v, %d requests\n%s", err, tg.Requests(), stderr)
	}
	t.Setenv(envDenyTargets, "::1, 127.0.0.1/32")
	stderr, err = volleyRun(t, "-q", loop)
	if err != exitCode(exitInvalidPlan) || !strings.Contains(stderr, "denied by rule 127.0.0.1") || tg.Requests() != 0 {
		t.Errorf("$%s: %v, %d requests\n%s", envDenyTargets, err, tg.Requests(), stderr)
	}
	t.Setenv(envDenyTargets, "")

	// a bad rule is a usage error naming it
	_, err = volleyRun(t, "--deny-target", "10.0.0.0/40", loop)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "10.0.0.0/40") {
		t.Errorf("bad rule: %v", err)
	}

	// a redirect to the metadata address is refused when connecting: blocked_target
	redir := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	out := filepath.Join(t.TempDir(), "sum.json")
	p := writePlan(t, `{"name":"r","requests":[{"url":"`+redir.URL+`/"}],"load":{"executor":"per-vu-iterations","vus":1,"iterations":3},
		"http":{"follow_redirects":true,"timeout":"2s"}}`)
	// every request is refused: the run's outcome is failed (exit 4), its run file written
	if stderr, err := volleyRun(t, "-q", "--out", out, p); !isExit(err, exitFailed) {
		t.Fatalf("redirect run: %v, want exit %d\n%s", err, exitFailed, stderr)
	}
	var sum struct {
		Requests   int64            `json:"requests"`
		ErrorKinds map[string]int64 `json:"error_kinds"`
	}
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &sum); err != nil || sum.Requests != 3 || sum.ErrorKinds["blocked_target"] != 3 {
		t.Errorf("redirect run summary: %s (%v)", b, err)
	}
}
