package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// TestDiskFullFailsTheRunAndTellsViewers runs the whole server on a database in a small tmpfs and
// fills the disk mid-run: the run must end "failed" with a reason that says the disk is full,
// the live viewer must be told (an error message, then a summary with status failed — never a
// normal end), and the seconds stored before, and an earlier run, must be intact.
func TestDiskFullFailsTheRunAndTellsViewers(t *testing.T) {
	dir := testutil.MountTmpfs(t, 16<<20)
	s := newStack(t, stackConfig{db: filepath.Join(dir, "volley.db"), bufferFor: 2 * time.Second}) // stopped before the tmpfs is unmounted
	a, st, rn := s.app, s.st, s.rn

	_, p := a.do("POST", "/api/plans", planJSON("http://127.0.0.1:9/", 1, "1m"))
	pid := int64(p["id"].(float64))
	earlier := seedRun(t, st, pid, time.Now().Add(-time.Hour), seeded{seconds: 20, rps: 100, medianMs: 5}, 1)
	_, earlierRun := a.do("GET", fmt.Sprintf("/api/runs/%d", earlier), "")
	_, earlierSamples := a.do("GET", fmt.Sprintf("/api/runs/%d/samples", earlier), "")

	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	a.do("PUT", fmt.Sprintf("/api/plans/%d", pid), planJSON(tg.URL, 2, "1m"))
	code, run := a.do("POST", fmt.Sprintf("/api/plans/%d/runs", pid), "")
	if code != 201 {
		t.Fatalf("start: %d %v", code, run)
	}
	id := int64(run["id"].(float64))
	read := followLive(t, a, id, 30*time.Second)
	var seen []json.RawMessage
	for len(seen) < 3 {
		if m := read(); m.Type == "sample" {
			seen = append(seen, m.Data)
		}
	}
	// Stored seconds so far: the first ones must survive unchanged.
	_, before := a.do("GET", fmt.Sprintf("/api/runs/%d/samples", id), "")
	kept := before["items"].([]any)
	if len(kept) < 2 {
		t.Fatalf("%d stored seconds before the disk filled", len(kept))
	}
	filled := time.Now()
	testutil.FillDisk(t, dir, "filler")

	var errMsg, summary *liveMsg
	for summary == nil {
		m := read()
		switch m.Type {
		case "error":
			if errMsg != nil {
				t.Error("two error messages")
			}
			errMsg = &m
		case "summary":
			summary = &m
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
	if summary.Run["status"] != "failed" || !strings.Contains(fmt.Sprint(summary.Run["error"]), "the disk is full") {
		t.Errorf("summary run: status %v, error %v; want failed, the disk is full", summary.Run["status"], summary.Run["error"])
	}
	// Bound 2 s, graceful stop 5 s at most, the end's write: well under 20 s.
	if ended > 20*time.Second {
		t.Errorf("the run ended %v after the disk filled", ended)
	}

	// History says so, and keeps what was stored.
	_, got := a.do("GET", fmt.Sprintf("/api/runs/%d", id), "")
	if got["status"] != "failed" || !strings.Contains(fmt.Sprint(got["error"]), "the disk is full") || got["ended_at"] == nil {
		t.Errorf("run after the fault: status %v, error %v, ended_at %v", got["status"], got["error"], got["ended_at"])
	}
	t.Logf("run error: %v", got["error"])
	_, after := a.do("GET", fmt.Sprintf("/api/runs/%d/samples", id), "")
	stored := after["items"].([]any)
	if len(stored) < len(kept) {
		t.Fatalf("%d stored seconds after the fault, %d before", len(stored), len(kept))
	}
	for i := range kept {
		if !reflect.DeepEqual(kept[i], stored[i]) {
			t.Errorf("second %d changed:\nbefore %v\nafter  %v", i+1, kept[i], stored[i])
		}
	}
	_, earlierAfter := a.do("GET", fmt.Sprintf("/api/runs/%d", earlier), "")
	_, earlierSamplesAfter := a.do("GET", fmt.Sprintf("/api/runs/%d/samples", earlier), "")
	if !reflect.DeepEqual(earlierRun, earlierAfter) || !reflect.DeepEqual(earlierSamples, earlierSamplesAfter) {
		t.Error("the earlier run changed")
	}

	// Space freed: the server takes a new run and stores it.
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	a.do("PUT", fmt.Sprintf("/api/plans/%d", pid), planJSON(tg.URL, 1, "2s"))
	code, again := a.do("POST", fmt.Sprintf("/api/plans/%d/runs", pid), "")
	if code != 201 {
		t.Fatalf("new run after freeing space: %d %v", code, again)
	}
	<-rn.Done(int64(again["id"].(float64)))
	if _, r := a.do("GET", fmt.Sprintf("/api/runs/%v", again["id"]), ""); r["status"] != "finished" {
		t.Errorf("run after freeing space: %v %v", r["status"], r["error"])
	}
}

// followLive opens the live stream of run id; read returns its next message, and fails the test
// when the stream ends or timeout passes from now.
func followLive(t *testing.T, a *app, id int64, timeout time.Duration) (read func() liveMsg) {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(a.url, "http")+fmt.Sprintf("/api/runs/%d/live", id), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	_ = ws.SetReadDeadline(time.Now().Add(timeout))
	return func() liveMsg {
		t.Helper()
		_, b, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("live: %v", err)
		}
		var m liveMsg
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
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
	s := newStack(t, stackConfig{db: path, bufferFor: 2 * time.Second})
	a, rn := s.app, s.rn
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	_, p := a.do("POST", "/api/plans", planJSON(tg.URL, 2, "1m"))
	_, run := a.do("POST", fmt.Sprintf("/api/plans/%d/runs", int(p["id"].(float64))), "")
	id := int64(run["id"].(float64))
	read := followLive(t, a, id, 60*time.Second)
	for n := 0; n < 2; {
		if read().Type == "sample" {
			n++
		}
	}
	_, before := a.do("GET", fmt.Sprintf("/api/runs/%d/samples", id), "")

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
	var m liveMsg
	for m = read(); m.Type == "sample"; m = read() {
	}
	if m.Type != "error" || !strings.Contains(string(m.Data), "the database is locked by another program") {
		t.Fatalf("after the lock: %s %s, want the error message", m.Type, m.Data)
	}
	t.Logf("viewer told %v after the lock was taken", time.Since(locked).Round(time.Millisecond))
	time.Sleep(6 * time.Second) // the end's first writes meet the lock too
	io.WriteString(stdin, "ROLLBACK;\n.quit\n")
	stdin.Close()
	_ = shell.Wait()

	for m = read(); m.Type != "summary"; m = read() {
	}
	if m.Run["status"] != "failed" {
		t.Errorf("summary status %v, want failed", m.Run["status"])
	}
	<-rn.Done(id)
	_, got := a.do("GET", fmt.Sprintf("/api/runs/%d", id), "")
	if got["status"] != "failed" || !strings.Contains(fmt.Sprint(got["error"]), "the database is locked by another program") {
		t.Errorf("stored run: status %v, error %v", got["status"], got["error"])
	}
	_, after := a.do("GET", fmt.Sprintf("/api/runs/%d/samples", id), "")
	kept, stored := before["items"].([]any), after["items"].([]any)
	if len(stored) < len(kept) || !reflect.DeepEqual(kept, stored[:len(kept)]) {
		t.Errorf("stored seconds changed: %d before, %d after", len(kept), len(stored))
	}
}
