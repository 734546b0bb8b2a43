package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// Every file the CLI creates is private to its owner (mode 0600), whatever the umask lets through:
// `volley run --out` and `--report`, and serve's lock file.
func TestCLIFilesAreCreated0600(t *testing.T) {
	old := syscall.Umask(0o022) // the usual umask, which would leave 0644
	defer syscall.Umask(old)
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	dir := t.TempDir()
	planPath := filepath.Join(dir, "plan.json")
	spec := fmt.Sprintf(`{"name":"modes","requests":[{"url":%q}],"load":{"vus":1,"duration":"1s"}}`, tg.URL)
	if err := os.WriteFile(planPath, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	out, rep := filepath.Join(dir, "summary.json"), filepath.Join(dir, "report.html")
	runReport = reportFile{path: rep}
	defer func() { runReport = reportFile{} }()
	if err := probeWritable(rep); err != nil {
		t.Fatal(err)
	}
	if err := runPlan(io.Discard, io.Discard, planPath, out, true); err != nil {
		t.Fatalf("run: %v", err)
	}
	unlock, err := lockDB(filepath.Join(dir, "volley.db"))
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	for _, p := range []string{out, rep, filepath.Join(dir, "volley.db.lock")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
			continue
		}
		if fi.Size() == 0 && p != filepath.Join(dir, "volley.db.lock") {
			t.Errorf("%s is empty", filepath.Base(p))
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s created with mode %v, want 0600", filepath.Base(p), fi.Mode().Perm())
		}
	}
}

// serve refuses to start on a database it must not use, with the store's message, before it
// listens for requests.
func TestServeRefusesUnusableDatabases(t *testing.T) {
	serveErr := func(db string) error {
		t.Helper()
		return serve(t.Context(), "127.0.0.1:0", db, "", adminInit{}, defaultServeOpts())
	}
	t.Run("zero-byte", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "volley.db")
		if err := os.WriteFile(db, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := serveErr(db); err == nil || !strings.Contains(err.Error(), "zero-byte") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("in use by another serve", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "volley.db")
		unlock, err := lockDB(db)
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
		if err := serveErr(db); err == nil || !strings.Contains(err.Error(), "in use by another volley serve") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("read-only folder", func(t *testing.T) {
		dir := t.TempDir()
		testutil.ReadOnly(t, dir)
		if err := serveErr(filepath.Join(dir, "volley.db")); err == nil || !strings.Contains(err.Error(), "must be writable") {
			t.Errorf("err = %v", err)
		}
	})
}

// A run against a loopback port where nothing listens has no successful response: its outcome
// is FAILED with the dominant error kind, latency is "—" (not 0) and volley run exits 4 — or 1,
// as before, when a threshold failed too.
func TestRunWithoutSuccessExitsFailed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close() // nothing listens there now
	planPath := filepath.Join(t.TempDir(), "plan.json")
	spec := fmt.Sprintf(`{"name":"dead","requests":[{"url":"http://%s/"}],"load":{"vus":1,"duration":"1s"}}`, dead)
	if err := os.WriteFile(planPath, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err = runPlan(&stdout, &stderr, planPath, "", true)
	if !isExit(err, exitFailed) {
		t.Fatalf("exit: %v, want %d; stderr %s", err, exitFailed, stderr.String())
	}
	out := strings.Join(strings.Fields(stdout.String()), " ") // the table's columns as single spaces
	for _, want := range []string{"outcome FAILED error no successful response: ", " connect_refused (of ", "latency ms — (no successful response)"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr.String(), "volley: run failed: no successful response") {
		t.Errorf("stderr: %s", stderr.String())
	}

	withThreshold := strings.Replace(spec, `"duration":"1s"}`, `"duration":"1s"},"thresholds":["p(95)<500ms"]`, 1)
	if err := os.WriteFile(planPath, []byte(withThreshold), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if err := runPlan(io.Discard, &stderr, planPath, "", true); !isExit(err, exitThresholds) {
		t.Errorf("with a failing threshold: exit %v, want %d; stderr %s", err, exitThresholds, stderr.String())
	}
}
