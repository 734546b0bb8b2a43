package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/volley-load/volley/backend/internal/testutil"
)

func cliCanary(t *testing.T, tag string) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return tag + hex.EncodeToString(b)
}

func TestSecretCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "volley.db")
	value := cliCanary(t, "CLI")
	var out, errb bytes.Buffer
	if err := secretList(&out, &errb, db); !isExit(err, exitCannotRun) || !strings.Contains(errb.String(), "no database file") {
		t.Errorf("list without a database: %v %q", err, errb.String())
	}
	errb.Reset()
	if err := secretSet(strings.NewReader(value+"\n"), &out, &errb, db, "API_KEY"); err != nil {
		t.Fatalf("set: %v %s", err, errb.String())
	}
	if err := secretSet(strings.NewReader(value), &out, &errb, db, "API_KEY"); err != nil {
		t.Fatalf("replace: %v %s", err, errb.String())
	}
	if err := secretSet(strings.NewReader(""), &out, &errb, db, "EMPTY"); !isExit(err, exitUsage) {
		t.Errorf("empty value: %v", err)
	}
	if err := secretSet(strings.NewReader("x"), &out, &errb, db, "bad-name"); !isExit(err, exitUsage) {
		t.Errorf("bad name: %v", err)
	}
	if err := secretList(&out, &errb, db); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "secret API_KEY set\nsecret API_KEY replaced\n") || !strings.Contains(out.String(), "API_KEY  ") {
		t.Errorf("stdout: %q", out.String())
	}
	if err := secretDel(&out, &errb, db, "API_KEY"); err != nil {
		t.Fatal(err)
	}
	if err := secretDel(&out, &errb, db, "API_KEY"); !isExit(err, exitThresholds) {
		t.Errorf("delete twice: %v", err)
	}
	for what, s := range map[string]string{"stdout": out.String(), "stderr": errb.String()} {
		if strings.Contains(s, value) {
			t.Errorf("the value is in %s: %q", what, s)
		}
	}
}

func isExit(err error, code int) bool {
	var ec exitCode
	return errors.As(err, &ec) && int(ec) == code
}

// `volley run` with canaries in an Authorization header, a header marked secret and a
// {{secret.NAME}} from the environment: the target receives the real values; stdout, stderr,
// --out and --report (HTML, JSON, CSV) carry none of them; a missing variable is an invalid plan
// naming the field, before any load.
func TestRunCanarySecrets(t *testing.T) {
	cAuth, cMarked, cEnv := cliCanary(t, "AUTH"), cliCanary(t, "MARK"), cliCanary(t, "ENV")
	var good, bad atomic.Int64
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Authorization") == "Bearer "+cAuth && r.Header.Get("X-Api-Key") == cMarked &&
			r.URL.Path == "/e/"+cEnv && string(b) == cEnv && r.URL.Query().Get("k") == "K" {
			good.Add(1)
		} else {
			bad.Add(1)
		}
		if r.URL.Query().Get("fail") != "" {
			w.WriteHeader(500)
		}
	})
	dir := t.TempDir()
	planPath := filepath.Join(dir, "plan.json")
	body := fmt.Sprintf(`{"name":"cli secrets","requests":[
	  {"url":"%s/e/{{secret.TOKEN}}?k=K","method":"POST","body":"{{secret.TOKEN}}",
	   "headers":{"Authorization":"Bearer %s","X-Api-Key":"%s"},"secret_headers":["X-Api-Key"],
	   "checks":[{"type":"body","op":"contains","value":"absent"}]},
	  {"url":"%s/e/{{secret.TOKEN}}?k=K&fail=1","method":"POST","body":"{{secret.TOKEN}}",
	   "headers":{"Authorization":"Bearer %s","X-Api-Key":"%s"},"secret_headers":["X-Api-Key"]}],
	  "flow":"sequence","load":{"executor":"per-vu-iterations","vus":2,"iterations":3},
	  "thresholds":["error_rate<1%%"]}`, tg.URL, cAuth, cMarked, tg.URL, cAuth, cMarked)
	if err := os.WriteFile(planPath, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	scan := func(where, s string) {
		t.Helper()
		for _, c := range []string{cAuth, cMarked, cEnv} {
			if n := strings.Count(s, c); n > 0 {
				t.Errorf("%s: the canary %s… appears %d times", where, c[:4], n)
			}
		}
	}

	// Without the variable: exit 2 naming the fields, nothing sent.
	var stdout, stderr bytes.Buffer
	err := runPlan(&stdout, &stderr, planPath, "", true)
	if !isExit(err, exitInvalidPlan) || !strings.Contains(stderr.String(), "requests[0].url") || !strings.Contains(stderr.String(), "VOLLEY_SECRET_NAME") {
		t.Fatalf("missing variable: %v %q", err, stderr.String())
	}
	if tg.Requests() != 0 {
		t.Fatalf("%d requests sent with a missing secret", tg.Requests())
	}
	t.Setenv("VOLLEY_SECRET_TOKEN", cEnv)
	for _, ext := range []string{"html", "json", "csv"} {
		stdout.Reset()
		stderr.Reset()
		out := filepath.Join(dir, "out-"+ext+".json")
		runReport = reportFile{path: filepath.Join(dir, "report."+ext)}
		err := runPlan(&stdout, &stderr, planPath, out, false)
		runReport = reportFile{}
		if !isExit(err, exitThresholds) { // the failing request makes error_rate<1% fail
			t.Fatalf("run: %v %s", err, stderr.String())
		}
		for _, f := range []string{out, filepath.Join(dir, "report."+ext)} {
			b, err := os.ReadFile(f)
			if err != nil || len(b) == 0 {
				t.Fatalf("%s: %v", f, err)
			}
			scan(filepath.Base(f), string(b))
		}
		scan("stdout", stdout.String())
		scan("stderr", stderr.String())
		if !strings.Contains(stdout.String(), "requests") {
			t.Errorf("stdout: %q", stdout.String())
		}
	}
	if good.Load() != 36 || bad.Load() != 0 {
		t.Errorf("the target got %d requests with the real values and %d without, want 36 and 0", good.Load(), bad.Load())
	}
}
