package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/volley-load/volley/backend/internal/hub"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/runs"
	"github.com/volley-load/volley/backend/internal/store"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// rig is the pieces wired as `volley serve` wires them (runs.Wire): a SQLite file, the runner
// with its sinks, the hub, and a websocket route /live/{id} served as the api serves it.
type rig struct {
	t   *testing.T
	st  *store.Store
	svc *runs.Service
	rn  *runner.Runner
	hub *hub.Hub
	url string
}

type rigConfig struct {
	db        string        // "": volley.db in a temporary directory
	bufferFor time.Duration // StoreSink.BufferFor
	// writer wraps the store as the StoreSink's SampleWriter (nil: the store itself).
	writer func(*store.Store) runs.SampleWriter
}

func newRig(t *testing.T, c rigConfig) *rig {
	t.Helper()
	if c.db == "" {
		c.db = filepath.Join(t.TempDir(), "volley.db")
	}
	st, err := store.OpenWith(c.db, store.Options{SlowLog: testutil.LogWriter(t, "store: ")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() }) // after the runner and the server
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := hub.New(nil)
	cfgStore := struct {
		runs.Store
		runs.SampleWriter
	}{st, st}
	if c.writer != nil {
		cfgStore.SampleWriter = c.writer(st)
	}
	svc, rn := runs.Wire(runs.Config{Store: cfgStore, Hub: h, Log: log, BufferFor: c.bufferFor})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, "/live/"), 10, 64)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		_ = h.Serve(w, r, id, func() ([][]byte, error) { return svc.Stream(r.Context(), id) })
	}))
	t.Cleanup(func() {
		_ = rn.Shutdown(context.Background())
		srv.Close()
	})
	return &rig{t: t, st: st, svc: svc, rn: rn, hub: h, url: srv.URL}
}

// plan stores a plan and returns its id.
func (r *rig) plan(spec string) int64 {
	r.t.Helper()
	p, err := r.st.CreatePlan(r.t.Context(), "runs test", []byte(spec))
	if err != nil {
		r.t.Fatal(err)
	}
	return p.ID
}

func (r *rig) run(id int64) *store.Run {
	r.t.Helper()
	got, err := r.st.GetRun(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return got
}

type liveMsg struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
	Run  map[string]any  `json:"run"`
}

// follow opens the live stream of run id; read returns its next message (nil once the stream
// has ended normally), and fails the test when timeout passes from now.
func (r *rig) follow(id int64, timeout time.Duration) (read func() *liveMsg) {
	r.t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(r.url, "http")+fmt.Sprintf("/live/%d", id), nil)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { ws.Close() })
	_ = ws.SetReadDeadline(time.Now().Add(timeout))
	return func() *liveMsg {
		r.t.Helper()
		_, b, err := ws.ReadMessage()
		if websocket.IsCloseError(err, websocket.CloseNormalClosure) {
			return nil
		}
		if err != nil {
			r.t.Fatalf("live: %v", err)
		}
		var m liveMsg
		if err := json.Unmarshal(b, &m); err != nil {
			r.t.Fatal(err)
		}
		return &m
	}
}

// readAll reads the stream to its end.
func readAll(read func() *liveMsg) []liveMsg {
	var msgs []liveMsg
	for m := read(); m != nil; m = read() {
		msgs = append(msgs, *m)
	}
	return msgs
}

// progressWriter records the list columns the StoreSink writes with every second.
type progressWriter struct {
	*store.Store
	mu   sync.Mutex
	smps []store.Sample
	prog []store.Progress
}

func (w *progressWriter) AppendSample(ctx context.Context, runID int64, smp store.Sample, p store.Progress) error {
	w.mu.Lock()
	w.smps, w.prog = append(w.smps, smp), append(w.prog, p)
	w.mu.Unlock()
	return w.Store.AppendSample(ctx, runID, smp, p)
}

// A run's life through the service against a loopback target: the live topic exists when Start
// returns and carries every stored second, then the summary with the stored run; the list
// columns written each second hold the run's p95 so far, exactly the p95 of the seconds'
// histograms merged (handed over by the collector, decoded nowhere); the ended run streams the
// same messages from storage; it cannot be stopped any more, and is deleted with its seconds.
func TestServiceRunsAPlanFromStartToDelete(t *testing.T) {
	var pw *progressWriter
	r := newRig(t, rigConfig{writer: func(st *store.Store) runs.SampleWriter { pw = &progressWriter{Store: st}; return pw }})
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, req *http.Request) {
		time.Sleep(time.Duration(len(req.URL.Path)%3) * time.Millisecond) // latencies that differ
	})
	pid := r.plan(planJSON(tg.URL, 2, "3s"))

	id, sp, err := r.svc.Start(t.Context(), pid, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.hub.Active(id) {
		t.Fatal("no live topic when Start returned")
	}
	if sp.ID != pid || r.run(id).Status != store.StatusRunning {
		t.Fatalf("started plan %d, run status %q", sp.ID, r.run(id).Status)
	}
	if got, ok := r.svc.Active(); !ok || got != id {
		t.Errorf("Active() = %d %v, want %d", got, ok, id)
	}
	var active *runs.ActiveError
	if _, err := r.svc.Delete(t.Context(), id); !errors.As(err, &active) || active.RunID != id {
		t.Errorf("deleting the active run: %v", err)
	}
	live := readAll(r.follow(id, 20*time.Second))
	<-r.rn.Done(id)
	if r.hub.Active(id) {
		t.Error("the live topic is still open after the run")
	}

	ended := r.run(id)
	if ended.Status != store.StatusFinished || ended.Requests == 0 {
		t.Fatalf("stored run: %q, %d requests", ended.Status, ended.Requests)
	}
	smps, err := r.st.Samples(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != len(smps)+1 || live[len(live)-1].Type != "summary" {
		t.Fatalf("live stream: %d messages for %d stored seconds", len(live), len(smps))
	}
	for i, smp := range smps {
		if live[i].Type != "sample" || string(live[i].Data) != string(smp.Data) {
			t.Errorf("live message %d: %s %s; stored %s", i, live[i].Type, live[i].Data, smp.Data)
		}
	}
	if sum := live[len(live)-1]; sum.Run["status"] != "finished" || sum.Run["requests"] != float64(ended.Requests) ||
		sum.Run["plan_id"] != float64(pid) || sum.Run["plan_name"] != sp.Name {
		t.Errorf("summary run %v; stored %q, %d requests, plan %d %q", sum.Run, ended.Status, ended.Requests, pid, sp.Name)
	}

	merged := metrics.NewHist()
	pw.mu.Lock()
	for i, smp := range pw.smps {
		h, err := metrics.DecodeHist(string(smp.Hist))
		if err != nil {
			t.Fatalf("second %d: %v", smp.Second, err)
		}
		merged.Merge(h)
		if want := metrics.Percentile(merged, 95); pw.prog[i].P95Ms != want || want == 0 {
			t.Errorf("second %d: p95 so far %v, merged seconds give %v", smp.Second, pw.prog[i].P95Ms, want)
		}
	}
	pw.mu.Unlock()
	if ended.P95Ms != metrics.Percentile(merged, 95) {
		t.Errorf("run p95 %v, merged seconds %v", ended.P95Ms, metrics.Percentile(merged, 95))
	}

	stored := readAll(r.follow(id, 10*time.Second))
	if len(stored) != len(live) {
		t.Fatalf("stored stream: %d messages, live %d", len(stored), len(live))
	}
	for i := range live {
		if stored[i].Type != live[i].Type || string(stored[i].Data) != string(live[i].Data) {
			t.Errorf("stored stream message %d differs:\n%s %s\n%s %s", i, stored[i].Type, stored[i].Data, live[i].Type, live[i].Data)
		}
	}

	if _, err := r.svc.Stop(t.Context(), id); !errors.Is(err, runner.ErrNotRunning) {
		t.Errorf("stopping the ended run: %v", err)
	}
	was, err := r.svc.Delete(t.Context(), id)
	if err != nil || was.ID != id || was.Status != store.StatusFinished {
		t.Fatalf("delete: %+v %v", was, err)
	}
	if _, err := r.st.GetRun(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("run after delete: %v", err)
	}
	if _, err := r.svc.Delete(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting it again: %v", err)
	}
}

// Start refuses, before any run row exists: an unknown plan; a plan the server's limits (check)
// refuse; a plan whose secrets are not in the store; a start while another run is active. Stop
// ends the active run as stopped.
func TestServiceStartRefusalsAndStop(t *testing.T) {
	r := newRig(t, rigConfig{})
	tg := testutil.NewTarget(t, func(http.ResponseWriter, *http.Request) {})
	pid := r.plan(planJSON(tg.URL, 1, "1m"))
	countRuns := func() int64 {
		_, n, err := r.st.ListRuns(t.Context(), store.RunFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	if _, _, err := r.svc.Start(t.Context(), pid+100, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown plan: %v", err)
	}
	refused := &plan.ValidationError{Fields: map[string]string{"load.vus": "above the cap"}}
	var checked *plan.Plan
	if _, _, err := r.svc.Start(t.Context(), pid, func(p *plan.Plan) error { checked = p; return refused }); !errors.Is(err, refused) {
		t.Errorf("refused by check: %v", err)
	}
	if checked == nil || checked.Load.VUs != 1 {
		t.Errorf("check was given %+v, want the stored plan parsed", checked)
	}
	withSecret := r.plan(strings.Replace(planJSON(tg.URL, 1, "1m"), `"name":"home",`, `"name":"home","headers":{"Authorization":"Bearer {{secret.TOKEN}}"},`, 1))
	var ve *plan.ValidationError
	if _, _, err := r.svc.Start(t.Context(), withSecret, nil); !errors.As(err, &ve) || !strings.Contains(fmt.Sprint(ve.Fields), "TOKEN") {
		t.Errorf("missing secret: %v", err)
	}
	if n := countRuns(); n != 0 {
		t.Fatalf("%d runs stored after refused starts", n)
	}

	id, _, err := r.svc.Start(t.Context(), pid, nil)
	if err != nil {
		t.Fatal(err)
	}
	var busy *runner.BusyError
	if _, _, err := r.svc.Start(t.Context(), pid, nil); !errors.As(err, &busy) || busy.RunID != id {
		t.Errorf("second start: %v", err)
	}
	was, err := r.svc.Stop(t.Context(), id)
	if err != nil || was.ID != id {
		t.Fatalf("stop: %+v %v", was, err)
	}
	<-r.rn.Done(id)
	if got := r.run(id); got.Status != store.StatusStopped {
		t.Errorf("status after stop %q", got.Status)
	}
	if n := countRuns(); n != 1 {
		t.Errorf("%d runs stored, want 1", n)
	}
}
