package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// volley serve runs a single-machine run through its in-process agent (one code path, issue 14):
// the coordinator's log names the agent "local"; live control asked right after the start
// changes its VUs; the run ends
// finished with every request the target saw, its summary in a single machine's shape (no agents
// count) with the change once. With --direct-engine the same run goes to the engine directly
// (no coordinator) with the same answers, but for a refused change's wording: the local engine
// (through the agent) or the engine's own.
func TestServeLocalRunsGoThroughTheLocalAgent(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(fmt.Sprintf("direct-engine=%v", direct), func(t *testing.T) {
			tg := testutil.NewTarget(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
			opts := defaultServeOpts()
			opts.directEngine = direct
			logs := &lockedBuffer{}
			opts.log = slog.New(slog.NewTextHandler(logs, nil))
			base := "http://" + startServe(t, filepath.Join(t.TempDir(), "volley.db"), opts)
			call := func(method, path, body string) (int, map[string]any) {
				t.Helper()
				return jsonCall(t, method, base+path, body)
			}
			st, p := call("POST", "/api/plans", fmt.Sprintf(`{"name":"p","think_time":"50ms","requests":[{"url":%q}],
				"load":{"executor":"constant-vus","vus":2,"duration":"3s","graceful_stop":"2s"}}`, tg.URL))
			if st != 201 {
				t.Fatalf("create plan: %d %v", st, p)
			}
			st, r := call("POST", fmt.Sprintf("/api/plans/%v/runs", p["id"]), "")
			if st != 201 {
				t.Fatalf("start: %d %v", st, r)
			}
			id := r["id"]
			// Asked at once: both paths wait (≤ 1 s) for the run that is starting to take it
			// (engine.SetVUs; runner.DriveStartWait for the agent's).
			st, ev := call("POST", fmt.Sprintf("/api/runs/%v/control", id), `{"vus":3}`)
			if st != 200 || ev["kind"] != "vus" || ev["from"] != 2.0 || ev["to"] != 3.0 {
				t.Fatalf("control: %d %v", st, ev)
			}
			var run map[string]any
			for deadline := time.Now().Add(30 * time.Second); ; {
				_, run = call("GET", fmt.Sprintf("/api/runs/%v", id), "")
				if run["status"] != "running" || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			sum, _ := run["summary"].(map[string]any)
			events, _ := sum["events"].([]any)
			if run["status"] != "finished" || sum == nil || sum["requests"] != float64(tg.Requests()) || len(events) != 1 {
				t.Fatalf("run %v (the target saw %d requests)", run, tg.Requests())
			}
			if _, ok := sum["agents"]; ok {
				t.Errorf("summary has agents: %v", sum["agents"])
			}
			if over := strings.Contains(logs.String(), `msg="run started over agents" run=1 agents=[local]`); over == direct {
				t.Errorf("run through the local agent: %v, want %v", over, !direct)
			}

			// A change the run's engine refuses: the local agent's refusal speaks of the local
			// engine, not of an agent "local" as if it were a remote machine.
			_, p = call("POST", "/api/plans", fmt.Sprintf(`{"name":"iter","think_time":"50ms","requests":[{"url":%q}],
				"load":{"executor":"per-vu-iterations","vus":1,"iterations":100000,"max_duration":"30s"}}`, tg.URL))
			_, r = call("POST", fmt.Sprintf("/api/plans/%v/runs", p["id"]), "")
			st, res := call("POST", fmt.Sprintf("/api/runs/%v/control", r["id"]), `{"vus":3}`)
			e, _ := res["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if local := strings.HasPrefix(msg, "the local engine did not apply the change: "); st != 409 || e["code"] != "not_controllable" ||
				!strings.Contains(msg, "per-vu-iterations") || strings.Contains(msg, "agent") || local == direct {
				t.Errorf("vus of per-vu-iterations: %d %v, want 409 not_controllable naming the executor (and the local engine: %v), no agent", st, e, !direct)
			}
			call("POST", fmt.Sprintf("/api/runs/%v/stop", r["id"]), "")
			for deadline := time.Now().Add(30 * time.Second); ; {
				if _, run = call("GET", fmt.Sprintf("/api/runs/%v", r["id"]), ""); run["status"] != "running" || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// jsonCall makes a request with a JSON body (Content-Type application/json) and the headers hdr
// (name, value, …) and returns its status and decoded JSON answer (nil when it is none); a
// request that fails ends the test.
func jsonCall(t *testing.T, method, url, body string, hdr ...string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m
}
