package runs_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/store"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// startRun starts stored plan pid through the service.
func (r *rig) startRun(pid int64) int64 {
	r.t.Helper()
	id, _, err := r.svc.Start(r.t.Context(), pid, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	return id
}

func (r *rig) samples(id int64) []store.Sample {
	r.t.Helper()
	smps, err := r.st.Samples(r.t.Context(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return smps
}

func (r *rig) updatePlan(pid int64, spec string) {
	r.t.Helper()
	if _, err := r.st.UpdatePlan(r.t.Context(), pid, "runs test", []byte(spec)); err != nil {
		r.t.Fatal(err)
	}
}

// TestDiskFullFailsTheRunAndTellsViewers runs the service on a database in a small tmpfs and
// fills the disk mid-run: the run must end "failed" with a reason that says the disk is full,
// the live viewer must be told (an error message, then a summary with status failed — never a
// normal end), and the seconds stored before, and an earlier run, must be intact.
func TestDiskFullFailsTheRunAndTellsViewers(t *testing.T) {
	dir := testutil.MountTmpfs(t, 16<<20)
	r := newRig(t, rigConfig{db: filepath.Join(dir, "volley.db"), bufferFor: 2 * time.Second}) // stopped before the tmpfs is unmounted
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })

	pid := r.plan(planJSON(tg.URL, 1, "2s"))
	earlier := r.startRun(pid)
	<-r.rn.Done(earlier)
	earlierRun, earlierSamples := r.run(earlier), r.samples(earlier)
	if earlierRun.Status != store.StatusFinished || len(earlierSamples) == 0 {
		t.Fatalf("earlier run: %q, %d seconds", earlierRun.Status, len(earlierSamples))
	}

	r.updatePlan(pid, planJSON(tg.URL, 2, "1m"))
	id := r.startRun(pid)
	read := r.follow(id, 30*time.Second)
	for n := 0; n < 3; {
		if m := read(); m == nil {
			t.Fatal("the stream ended")
		} else if m.Type == "sample" {
			n++
		}
	}
	// Stored seconds so far: the first ones must survive unchanged.
	kept := r.samples(id)
	if len(kept) < 2 {
		t.Fatalf("%d stored seconds before the disk filled", len(kept))
	}
	filled := time.Now()
	testutil.FillDisk(t, dir, "filler")

	var errMsg, summary *liveMsg
	for summary == nil {
		m := read()
		if m == nil {
			t.Fatal("the stream ended without a summary")
		}
		switch m.Type {
		case "error":
			if errMsg != nil {
				t.Error("two error messages")
			}
			errMsg = m
		case "summary":
			summary = m
		}
	}
	ended := time.Since(filled)
	t.Logf("disk filled; run ended %v later", ended.Round(time.Millisecond))
	if errMsg == nil {
		t.Fatal("the viewer got no error message before the summary")
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(errMsg.Data, &e); err != nil || !strings.Contains(e.Error, "the disk is full") {
		t.Errorf("error message %s: %v", errMsg.Data, err)
	}
	if summary.Run["status"] != "failed" || !strings.Contains(summary.Run["error"].(string), "the disk is full") {
		t.Errorf("summary run: status %v, error %v; want failed, the disk is full", summary.Run["status"], summary.Run["error"])
	}
	// Bound 2 s, graceful stop 5 s at most, the end's write: well under 20 s.
	if ended > 20*time.Second {
		t.Errorf("the run ended %v after the disk filled", ended)
	}

	// Storage says so, and keeps what was stored.
	<-r.rn.Done(id)
	got := r.run(id)
	if got.Status != store.StatusFailed || !strings.Contains(got.Error, "the disk is full") || got.EndedAt == nil {
		t.Errorf("run after the fault: status %v, error %v, ended_at %v", got.Status, got.Error, got.EndedAt)
	}
	t.Logf("run error: %v", got.Error)
	stored := r.samples(id)
	if len(stored) < len(kept) {
		t.Fatalf("%d stored seconds after the fault, %d before", len(stored), len(kept))
	}
	for i := range kept {
		if !reflect.DeepEqual(kept[i], stored[i]) {
			t.Errorf("second %d changed:\nbefore %+v\nafter  %+v", i+1, kept[i], stored[i])
		}
	}
	if !reflect.DeepEqual(earlierRun, r.run(earlier)) || !reflect.DeepEqual(earlierSamples, r.samples(earlier)) {
		t.Error("the earlier run changed")
	}

	// Space freed: the service takes a new run and stores it.
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	r.updatePlan(pid, planJSON(tg.URL, 1, "2s"))
	again := r.startRun(pid)
	<-r.rn.Done(again)
	if got := r.run(again); got.Status != store.StatusFinished {
		t.Errorf("run after freeing space: %v %v", got.Status, got.Error)
	}
}

// TestLockedDatabaseFailsTheRunThenStoresItsEnd: another program (the sqlite3 shell) holds the
// database's write lock mid-run. The run fails with a reason that says the database is locked, the
// viewer is told at once, and once the lock is released the run's end is stored (the end is
// retried, not dropped).
func TestLockedDatabaseFailsTheRunThenStoresItsEnd(t *testing.T) {
	sqlite3, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("sqlite3 shell not installed")
	}
	path := filepath.Join(t.TempDir(), "volley.db")
	r := newRig(t, rigConfig{db: path, bufferFor: 2 * time.Second})
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	id := r.startRun(r.plan(planJSON(tg.URL, 2, "1m")))
	read := r.follow(id, 60*time.Second)
	next := func() *liveMsg {
		t.Helper()
		m := read()
		if m == nil {
			t.Fatal("the stream ended")
		}
		return m
	}
	for n := 0; n < 2; {
		if next().Type == "sample" {
			n++
		}
	}
	before := r.samples(id)

	shell := exec.Command(sqlite3, path)
	stdin, _ := shell.StdinPipe()
	stdout, _ := shell.StdoutPipe()
	if err := shell.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = shell.Wait() }()
	io.WriteString(stdin, "BEGIN IMMEDIATE;\nUPDATE plans SET name = name;\n.print locked\n")
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("sqlite3 shell: %q %v", line, err)
	}
	locked := time.Now()
	var m *liveMsg
	for m = next(); m.Type == "sample"; m = next() {
	}
	if m.Type != "error" || !strings.Contains(string(m.Data), "the database is locked by another program") {
		t.Fatalf("after the lock: %s %s, want the error message", m.Type, m.Data)
	}
	t.Logf("viewer told %v after the lock was taken", time.Since(locked).Round(time.Millisecond))
	time.Sleep(6 * time.Second) // the end's first writes meet the lock too
	io.WriteString(stdin, "ROLLBACK;\n.quit\n")
	stdin.Close()
	_ = shell.Wait()

	for m = next(); m.Type != "summary"; m = next() {
	}
	if m.Run["status"] != "failed" {
		t.Errorf("summary status %v, want failed", m.Run["status"])
	}
	<-r.rn.Done(id)
	got := r.run(id)
	if got.Status != store.StatusFailed || !strings.Contains(got.Error, "the database is locked by another program") {
		t.Errorf("stored run: status %v, error %v", got.Status, got.Error)
	}
	after := r.samples(id)
	if len(after) < len(before) || !reflect.DeepEqual(before, after[:len(before)]) {
		t.Errorf("stored seconds changed: %d before, %d after", len(before), len(after))
	}
}
