package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gorilla/websocket"

	"github.com/volley-load/volley/backend/internal/api"
	"github.com/volley-load/volley/backend/internal/hub"
	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/runs"
	"github.com/volley-load/volley/backend/internal/store"
	"github.com/volley-load/volley/backend/internal/testutil"
)

type app struct {
	t   *testing.T
	url string
}

// testUI is the web UI every test server serves: the page and one asset.
var testUI = fstest.MapFS{"index.html": {Data: []byte("<!doctype html><title>Volley</title>")}, "assets/app.js": {Data: []byte("x")}}

// stackConfig is what a test changes in the stack newStack wires; the zero value is newApp's.
type stackConfig struct {
	store     *store.Store      // a store another stack opened (and closes); nil: open db
	db        string            // the SQLite file; "": volley.db in a temporary directory
	log       *slog.Logger      // nil: discarded
	bufferFor time.Duration     // runs.StoreSink.BufferFor; 0: the default
	guard     *api.Guard        // guards the handler and the websocket upgrader; nil: the default guard
	caps      plan.Caps         // the server's caps
	policy    *netpolicy.Policy // the target policy of the server and the runner; nil: the default
	// handler serves the server; nil: s.Handler().
	handler func(s *api.Server, st *store.Store) http.Handler
	opts    []api.Option // more options of api.New
}

// stack is the real pieces wired as volley serve wires them: a SQLite file, the runner with its
// sinks, the hub, the handlers, behind an httptest server.
type stack struct {
	*app
	st *store.Store
	rn *runner.Runner
}

func newStack(t *testing.T, c stackConfig) *stack {
	t.Helper()
	st := c.store
	if st == nil {
		db := c.db
		if db == "" {
			db = filepath.Join(t.TempDir(), "volley.db")
		}
		var err error
		if st, err = store.OpenWith(db, store.Options{SlowLog: testutil.LogWriter(t, "store: ")}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() }) // after the server and the runner
	}
	log := c.log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var opts []api.Option
	var checkOrigin func(*http.Request) bool // the hub's default
	if c.guard != nil {
		opts = append(opts, api.WithGuard(c.guard))
		checkOrigin = c.guard.CheckOrigin
	}
	opts = append(opts, c.opts...)
	h := hub.New(checkOrigin)
	svc, rn := runs.Wire(runs.Config{Store: st, Hub: h, Log: log, Policy: c.policy, BufferFor: c.bufferFor})
	s := api.New(st, svc, h, testUI, log, opts...)
	s.SetCaps(c.caps)
	s.SetTargetPolicy(c.policy)
	var handler http.Handler
	if c.handler != nil {
		handler = c.handler(s, st)
	} else {
		handler = s.Handler()
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(func() {
		_ = rn.Shutdown(t.Context())
		srv.Close()
	})
	return &stack{app: &app{t: t, url: srv.URL}, st: st, rn: rn}
}

// newApp wires the real pieces: a SQLite file, the runner with its sinks, the hub, the handlers.
func newApp(t *testing.T) *app {
	t.Helper()
	return newStack(t, stackConfig{}).app
}

// newReq is a CLI-style request: no Origin, Content-Type: application/json on every state change
// (the guard's rule, body or not).
func newReq(method, url, body string) *http.Request {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if method != http.MethodGet && method != http.MethodHead {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

func (a *app) do(method, path, body string) (int, map[string]any) {
	a.t.Helper()
	req := newReq(method, a.url+path, body)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var m map[string]any
	if len(b) > 0 && b[0] == '{' {
		if err := json.Unmarshal(b, &m); err != nil {
			a.t.Fatalf("%s %s: bad JSON %q", method, path, b)
		}
	}
	return res.StatusCode, m
}

func planJSON(url string, vus int, dur string) string {
	return fmt.Sprintf(`{"name":"api test","requests":[{"name":"home","url":%q}],"load":{"executor":"constant-vus","vus":%d,"duration":%q},"http":{"timeout":"2s"}}`, url, vus, dur)
}

func TestPlanEndpoints(t *testing.T) {
	a := newApp(t)
	valid := planJSON("http://127.0.0.1:9/", 2, "1s")
	runCases(t, a, []apiCase{
		{"invalid plan names every field", "POST", "/api/plans",
			`{"name":"","requests":[{"url":"ftp://x"}],"load":{"vus":0,"duration":"1s","vuz":1}}`, 400,
			[]string{`"code":"invalid_plan"`, `"load.vuz":"unknown field"`}},
		{"invalid values", "POST", "/api/plans",
			`{"name":"","requests":[{"url":"ftp://x"}],"load":{"vus":0,"duration":"1s"}}`, 400,
			[]string{`"name":"is required"`, `"requests[0].url"`, `"load.vus":"must be at least 1`}},
		{"not JSON", "POST", "/api/plans", `{"name":`, 400, []string{`"invalid_plan"`, "not valid JSON"}},
		{"create", "POST", "/api/plans", valid, 201, []string{`"id":1`, `"graceful_stop":"5s"`, `"keep_alive":true`}},
		{"get", "GET", "/api/plans/1", "", 200, []string{`"name":"api test"`}},
		{"list", "GET", "/api/plans", "", 200, []string{`"total":1`}},
		{"update", "PUT", "/api/plans/1", strings.Replace(valid, "api test", "renamed", 1), 200, []string{`"name":"renamed"`}},
		{"update invalid", "PUT", "/api/plans/1", `{"name":"x"}`, 400, []string{`"requests"`}},
		{"missing", "GET", "/api/plans/99", "", 404, []string{`"not_found"`}},
		{"bad id", "GET", "/api/plans/abc", "", 400, []string{`"bad_request"`}},
		{"unknown api route", "GET", "/api/nope", "", 404, []string{`"not_found"`}},
		{"wrong method", "PATCH", "/api/plans/1", "{}", 405, []string{`"method_not_allowed"`}},
		{"missing run", "GET", "/api/runs/42", "", 404, []string{`"not_found"`}},
		{"stop missing run", "POST", "/api/runs/42/stop", "", 404, []string{`"not_found"`}},
		{"bad paging", "GET", "/api/runs?limit=x", "", 400, []string{"limit"}},
		{"delete", "DELETE", "/api/plans/1", "", 204, nil},
		{"deleted", "GET", "/api/plans/1", "", 404, nil},
	})
}

func TestSPAFallback(t *testing.T) {
	a := newApp(t)
	for _, p := range []string{"/", "/runs/3", "/plans/new"} {
		res, err := http.Get(a.url + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !bytes.Contains(b, []byte("<title>Volley</title>")) {
			t.Errorf("%s: %d %s", p, res.StatusCode, b)
		}
	}
	res, _ := http.Get(a.url + "/assets/app.js")
	if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Cache-Control"), "immutable") {
		t.Errorf("asset: %d %v", res.StatusCode, res.Header)
	}
	res.Body.Close()
}

type liveMsg struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
	Run  map[string]any  `json:"run"`
}

func readLive(t *testing.T, url string) []liveMsg { t.Helper(); return readLiveUntil(t, url, nil) }

// readLiveUntil is readLive that closes sample (if not nil) on the first sample message.
func readLiveUntil(t *testing.T, url string, sample chan<- struct{}) []liveMsg {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var msgs []liveMsg
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		_, b, err := c.ReadMessage()
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				t.Fatalf("live: %v after %d messages", err, len(msgs))
			}
			return msgs
		}
		var m liveMsg
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m.Type == "sample" && sample != nil {
			close(sample)
			sample = nil
		}
		msgs = append(msgs, m)
	}
}

func checkStream(t *testing.T, who string, msgs []liveMsg) (samples int, summary map[string]any) {
	t.Helper()
	for i, m := range msgs {
		switch m.Type {
		case "sample":
			var s struct {
				ElapsedS int `json:"elapsed_s"`
			}
			_ = json.Unmarshal(m.Data, &s)
			if s.ElapsedS != i+1 {
				t.Errorf("%s: message %d has elapsed_s %d (gap or repeat)", who, i, s.ElapsedS)
			}
			samples++
		case "summary":
			if i != len(msgs)-1 {
				t.Errorf("%s: summary is not last", who)
			}
			_ = json.Unmarshal(m.Data, &summary)
		}
	}
	if summary == nil {
		t.Errorf("%s: no summary in %d messages", who, len(msgs))
	}
	return samples, summary
}

func TestRunLifecycleLiveAndConflict(t *testing.T) {
	a := newApp(t)
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello")) })
	_, p := a.do("POST", "/api/plans", strings.Replace(planJSON(tg.URL, 2, "3s"), `"http":`, `"thresholds":["p(99)<0.001ms"],"http":`, 1))
	pid := int(p["id"].(float64))

	st, run := a.do("POST", fmt.Sprintf("/api/plans/%d/runs", pid), "")
	if st != 201 || run["status"] != "running" {
		t.Fatalf("start: %d %v", st, run)
	}
	id := int(run["id"].(float64))
	if st, body := a.do("POST", fmt.Sprintf("/api/plans/%d/runs", pid), ""); st != 409 || body["error"].(map[string]any)["code"] != "run_in_progress" {
		t.Fatalf("second start: %d %v", st, body)
	}
	if st, _ := a.do("DELETE", fmt.Sprintf("/api/runs/%d", id), ""); st != 409 {
		t.Errorf("deleting a running run: %d", st)
	}
	ws := "ws" + strings.TrimPrefix(a.url, "http") + fmt.Sprintf("/api/runs/%d/live", id)
	early := make(chan []liveMsg)
	seenOne := make(chan struct{}) // the early viewer has a sample: a second has passed
	go func() { early <- readLiveUntil(t, ws, seenOne) }()
	var first []liveMsg
	select { // join late, but while the run goes on (its 3 s end no sooner than 1 s from now)
	case <-seenOne:
	case first = <-early:
		t.Fatalf("the early viewer got no sample: %v", first)
	case <-time.After(30 * time.Second):
		t.Fatal("the early viewer got no sample in 30 s")
	}
	late := readLive(t, ws)
	first = <-early

	n1, sum1 := checkStream(t, "early", first)
	n2, sum2 := checkStream(t, "late", late)
	// A 3 s run has 3 seconds; a collector tick delayed past the next one on a busy machine folds
	// two seconds into one sample (counted once, never lost), so ≥ 2 — and both viewers, early and
	// late, see exactly the same seconds.
	if n1 < 2 || n1 != n2 {
		t.Errorf("samples: early %d, late %d", n1, n2)
	}
	if sum1["requests"] != sum2["requests"] || sum1["requests"].(float64) <= 0 {
		t.Errorf("summaries differ or empty: %v / %v", sum1["requests"], sum2["requests"])
	}

	_, got := a.do("GET", fmt.Sprintf("/api/runs/%d", id), "")
	if got["status"] != "finished" || got["summary"] == nil || got["ended_at"] == nil {
		t.Fatalf("run after end: %v", got)
	}
	if got["thresholds_ok"] != false { // the plan's p(99)<0.001ms cannot pass
		t.Errorf("thresholds_ok = %v, want false", got["thresholds_ok"])
	}
	summary := got["summary"].(map[string]any)
	if int64(summary["requests"].(float64))+int64(summary["interrupted"].(float64)) != tg.Requests() {
		t.Errorf("summary requests %v, target saw %d", summary["requests"], tg.Requests())
	}
	_, smp := a.do("GET", fmt.Sprintf("/api/runs/%d/samples", id), "")
	items := smp["items"].([]any)
	if len(items) != n1 {
		t.Errorf("stored samples %d, streamed %d", len(items), n1)
	}
	var total float64
	for _, it := range items {
		total += it.(map[string]any)["requests"].(float64)
	}
	if total != summary["requests"].(float64) {
		t.Errorf("stored seconds add to %v, summary %v", total, summary["requests"])
	}
	// A finished run streams from storage, identically.
	n3, sum3 := checkStream(t, "after", readLive(t, ws))
	if n3 != n1 || sum3["requests"] != sum1["requests"] {
		t.Errorf("stored stream: %d samples, requests %v", n3, sum3["requests"])
	}

	_, list := a.do("GET", fmt.Sprintf("/api/runs?plan_id=%d", pid), "")
	if list["total"].(float64) != 1 || list["items"].([]any)[0].(map[string]any)["thresholds_ok"] != false {
		t.Errorf("list: %v", list)
	}
	if st, _ := a.do("DELETE", fmt.Sprintf("/api/runs/%d", id), ""); st != 204 {
		t.Errorf("delete: %d", st)
	}
}

func TestStopRun(t *testing.T) {
	a := newApp(t)
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	_, p := a.do("POST", "/api/plans", planJSON(tg.URL, 2, "1m"))
	_, run := a.do("POST", fmt.Sprintf("/api/plans/%d/runs", int(p["id"].(float64))), "")
	id := int(run["id"].(float64))
	time.Sleep(1200 * time.Millisecond)
	if st, body := a.do("POST", fmt.Sprintf("/api/runs/%d/stop", id), ""); st != 202 {
		t.Fatalf("stop: %d %v", st, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, got := a.do("GET", fmt.Sprintf("/api/runs/%d", id), "")
		if got["status"] == "stopped" {
			if got["summary"] == nil {
				t.Fatal("stopped run has no summary")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run not stopped: %v", got["status"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st, _ := a.do("POST", fmt.Sprintf("/api/runs/%d/stop", id), ""); st != 409 {
		t.Errorf("stopping a stopped run: %d", st)
	}
}
