package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/cluster"
)

// Issue 14, must-hold 9: a controller restart loses nothing. A 30 s run over three `volley agent`
// processes; 10 s in, `volley serve` is SIGKILLed (by its PID), 5 s later it is started again
// with the same arguments. The restarted server resumes the run (docs/scale-out.md, "A controller
// restart"): the run finishes, not degraded, with every agent's seconds 1..its last stored
// exactly once (agents × duration agent-seconds), its merged seconds 1..N without a gap or a
// missing share, and exactly the requests the target counted. With the embedded broker the agents
// spool their seconds while the broker is down (it dies with the server); on an external 3-node
// NATS cluster JetStream keeps them. In the first case the run page stays open in Chromium across
// the restart and resumes drawing (no reload).

// resumePlan is the load of both cases: closed model, 6 VUs over 3 agents for 30 s with a 50 ms
// think time (about 120 requests/s in all).
func resumePlan(url string) map[string]any {
	return map[string]any{
		"name":       "controller restart",
		"requests":   []map[string]any{{"name": "get", "method": "GET", "url": url}},
		"load":       map[string]any{"executor": "constant-vus", "vus": 6, "duration": "30s"},
		"think_time": "50ms",
	}
}

// Must-hold 9 with the embedded broker: `volley serve --agents-listen` on a fixed port with
// --agents-state (the join token and the JetStream store survive the restart) and
// --join-token-file (which the agents read), the run page open in a browser throughout.
func TestControllerRestartResumesRun(t *testing.T) {
	browser := browserUsable(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "join-token")
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	rc := restartCase{
		serveArgs: []string{"--agents-listen", listen, "--agents-state", filepath.Join(dir, "agents-state"), "--join-token-file", tokenFile},
		agent: func(t *testing.T, i int) *proc {
			id := fmt.Sprintf("gen-%d", i)
			return startProc(t, "agent-"+id, volleyBin, "agent", "--nats", "nats://"+listen, "--token-file", tokenFile,
				"--id", id, "--allow-target", "127.0.0.1")
		},
		browser: browser,
	}
	rc.run(t)
}

// Must-hold 9 on a real 3-node nats-server cluster (the sample configuration with its cluster
// block): volley serve --nats with all three seeds and the controller's NKey, each agent on
// another node. The snapshot stream is on disk with 3 replicas.
func TestControllerRestartResumesRunOnNATSCluster(t *testing.T) {
	env, seeds := nkeyUsers(t, "controller", "agent-1", "agent-2", "agent-3")
	urls, _ := startNATSCluster(t, env, 3)
	waitJetStream(t, urls[0], seeds["controller"], 60*time.Second)
	rc := restartCase{
		serveArgs: []string{"--nats", strings.Join(urls, ","), "--nats-nkey", seeds["controller"]},
		agent: func(t *testing.T, i int) *proc {
			id := fmt.Sprintf("agent-%d", i)
			return startProc(t, id, volleyBin, "agent", "--nats", urls[i-1], "--nkey", seeds[id], "--id", id,
				"--allow-target", "127.0.0.1")
		},
	}
	rc.run(t)

	// The snapshots the restarted controller replayed were on disk, replicated on the cluster.
	si, err := jetStreamAs(t, urls[1], seeds["controller"]).StreamInfo(cluster.SnapshotStream)
	if err != nil {
		t.Fatalf("stream %s: %v", cluster.SnapshotStream, err)
	}
	t.Logf("stream %s: %s storage, %d replicas, %d messages", cluster.SnapshotStream, si.Config.Storage, si.Config.Replicas, si.State.Msgs)
	if si.Config.Storage != nats.FileStorage || si.Config.Replicas != 3 {
		t.Errorf("stream %s: %s storage with %d replicas, want file storage with 3 on a 3-node cluster", cluster.SnapshotStream, si.Config.Storage, si.Config.Replicas)
	}
}

// browserUsable reports whether Chromium and the built UI are there for the browser part; like
// requireTool and requireUI, their absence fails the test under VOLLEY_E2E=1 and is otherwise
// logged (the rest of the test runs without the browser).
func browserUsable(t *testing.T) bool {
	t.Helper()
	usable := false
	if !t.Run("browser", func(t *testing.T) {
		requireUI(t)
		requireTool(t, chromiumPath)
		usable = true
	}) {
		t.FailNow()
	}
	if !usable {
		t.Log("the browser part is left out (Chromium or the built UI is missing)")
	}
	return usable
}

// restartCase is one controller set-up: volley serve's arguments beyond --addr, --db and
// --demo-target (the same at both starts) and how agent i (1–3) joins it.
type restartCase struct {
	serveArgs []string
	agent     func(t *testing.T, i int) *proc
	browser   bool // follow the run page in Chromium
}

// Wire types of this file: only the fields it reads.
type (
	resumedRun struct {
		runJSON
		Agents   int  `json:"agents"`
		Degraded bool `json:"degraded"`
	}
	mergedSecond struct {
		ElapsedS      int      `json:"elapsed_s"`
		Requests      int64    `json:"requests"`
		MissingShare  float64  `json:"missing_share"`
		MissingAgents []string `json:"missing_agents"`
	}
	agentSecondsPage struct {
		Seconds []struct {
			Agent  string `json:"agent"`
			Second int    `json:"second"`
			Sample struct {
				ElapsedS int   `json:"elapsed_s"`
				Requests int64 `json:"requests"`
			} `json:"sample"`
		} `json:"seconds"`
		NextFrom *int `json:"next_from"`
	}
)

// The page's figures the browser part reads.
const (
	jsPoints   = `Number(document.querySelector('[data-testid="chart-tps"]')?.getAttribute("data-points") ?? 0)`
	jsLost     = `document.querySelector('[data-testid="connection-lost"]') !== null`
	jsMark     = `window.__volleyRestartMark === 1`
	jsStatus   = `(document.querySelector('[data-testid="run-status"]')?.dataset.status ?? "")`
	jsBanners  = `[...document.querySelectorAll('[role="alert"], [data-testid="connection-lost"]')].map(b => b.textContent.trim()).join(" | ")`
	resumeWait = 60 * time.Second // bound on the restarted server's health and on the run's end
)

func (rc restartCase) run(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	args := append([]string{"serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "volley.db"), "--demo-target", ""}, rc.serveArgs...)
	base := "http://" + addr
	first := startProc(t, "volley-serve-1", volleyBin, args...)
	waitHealthy(t, &server{proc: first, base: base}, 30*time.Second)

	var ctx context.Context
	if rc.browser {
		ctx = newBrowser(t, 150*time.Second)
	}
	agents := map[string]*proc{}
	for i := 1; i <= 3; i++ {
		p := rc.agent(t, i)
		agents[p.name] = p
	}
	waitAgents(t, base, "three agents idle", 30*time.Second, func(l agentsJSON) bool {
		idle := 0
		for _, a := range l.Agents {
			if a.State == "idle" {
				idle++
			}
		}
		return idle == 3
	})

	ts, hits := countingTarget(t)
	planID := createPlan(t, base, resumePlan(ts.URL+"/"))
	var run runJSON
	if st := apiDo(t, "POST", fmt.Sprintf("%s/api/plans/%d/runs", base, planID), map[string]any{"agents": 3}, &run); st != http.StatusCreated {
		t.Fatalf("start the run over 3 agents: %d", st)
	}
	started := time.Now()
	if rc.browser {
		openSPA(t, ctx, fmt.Sprintf("%s/#/runs/%d", base, run.ID))
		waitJS(t, ctx, "the run page drawing live seconds", jsPoints+` >= 2 && !(`+jsLost+`)`, 30*time.Second)
		// A mark in the page's window: gone if anything reloads the page.
		evalString(t, ctx, `String(window.__volleyRestartMark = 1)`)
	}

	// Kill at 10 s: once merged second 10 is stored.
	stored := waitSecond(t, base, run.ID, 10, 45*time.Second)
	killedAt := time.Now()
	first.kill(t)
	t.Logf("SIGKILLed volley serve (pid %d) %s after POST …/runs, second %d stored", first.cmd.Process.Pid,
		killedAt.Sub(started).Round(time.Millisecond), stored)
	if rc.browser {
		waitJS(t, ctx, "the page showing the lost live stream", jsLost, 4*time.Second)
	}

	// Restart at 15 s: 5 s after the kill, the same arguments.
	time.Sleep(time.Until(killedAt.Add(5 * time.Second)))
	second := startProc(t, "volley-serve-2", volleyBin, args...)
	restartedAt := time.Now()
	waitHealthy(t, &server{proc: second, base: base}, resumeWait)
	healthyAt := time.Now()
	atHealthy := lastSecond(t, base, run.ID)
	next := waitSecond(t, base, run.ID, atHealthy+1, 30*time.Second)
	resumedAt := time.Now()
	t.Logf("restarted %s after the kill; healthy %s after its start (down %s); seconds 1..%d stored then, second %d stored %s later",
		restartedAt.Sub(killedAt).Round(time.Millisecond), healthyAt.Sub(restartedAt).Round(time.Millisecond),
		healthyAt.Sub(killedAt).Round(time.Millisecond), atHealthy, next, resumedAt.Sub(healthyAt).Round(time.Millisecond))
	if rc.browser {
		waitJS(t, ctx, "the open page live again past second 15", `!(`+jsLost+`) && `+jsPoints+` > 15`, 25*time.Second)
		pageAt := time.Now()
		var live runJSON
		apiDo(t, "GET", fmt.Sprintf("%s/api/runs/%d", base, run.ID), nil, &live)
		if live.Status != "running" {
			t.Errorf("the page showed seconds past 15 only after the run ended (status %q): not live", live.Status)
		}
		if evalString(t, ctx, `String(`+jsMark+`)`) != "true" {
			t.Fatal("the run page was reloaded")
		}
		t.Logf("the page drew second %s live %s after the restarted server was healthy",
			evalString(t, ctx, `String(`+jsPoints+`)`), pageAt.Sub(healthyAt).Round(time.Millisecond))
	}

	ended := waitRunEnded(t, base, run.ID, resumeWait)
	endedAt := time.Now()
	var r resumedRun
	if st := apiDo(t, "GET", fmt.Sprintf("%s/api/runs/%d", base, run.ID), nil, &r); st != http.StatusOK || r.Summary == nil {
		t.Fatalf("GET run %d: %d, summary %v", run.ID, st, r.Summary != nil)
	}
	t.Logf("run %d ended %s after its start: status %s, agents %d, degraded %v, %d requests (summary), %d at the target",
		run.ID, endedAt.Sub(started).Round(time.Millisecond), ended.Status, r.Agents, r.Degraded, r.Summary.Requests, hits.Load())
	if r.Status != "finished" || r.Error != "" || r.Degraded || r.Agents != 3 {
		t.Errorf("run: status %q error %q degraded %v agents %d; want finished, no error, not degraded, 3 agents", r.Status, r.Error, r.Degraded, r.Agents)
	}
	for name, p := range agents {
		if strings.Contains(tail(p.log, 1<<20), "(fenced)") {
			t.Errorf("%s fenced itself during the outage:\n%s", name, tail(p.log, 2000))
		}
	}

	// Each agent's seconds: 1..its last, each once; the three agree on the duration.
	own := agentSecondsOf(t, base, run.ID)
	var ids []string
	for id := range own {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	duration, total := 0, 0
	for _, id := range ids {
		secs := own[id]
		total += len(secs)
		for i, s := range secs {
			if s.second != i+1 {
				t.Errorf("agent %s: seconds %v, want 1..%d each once", id, secondsOf(secs), len(secs))
				break
			}
		}
		if duration == 0 {
			duration = len(secs)
		} else if len(secs) != duration {
			t.Errorf("agent %s ran %d seconds, %s %d", id, len(secs), ids[0], duration)
		}
	}
	t.Logf("agents %v: %d seconds each, %d agent-seconds stored", ids, duration, total)
	if len(ids) != 3 || duration < 30 || total != 3*duration {
		t.Fatalf("%d agents with %d agent-seconds over %d seconds; want 3 agents × ≥ 30 seconds", len(ids), total, duration)
	}

	// The merged seconds: 1..duration, none missing a share, each the sum of the agents' own.
	var merged []mergedSecond
	for _, raw := range getSamples(t, base, run.ID) {
		var s mergedSecond
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("sample %s: %v", truncate(string(raw), 200), err)
		}
		merged = append(merged, s)
	}
	var sum int64
	for i, s := range merged {
		sum += s.Requests
		var parts int64
		for _, id := range ids {
			if i < len(own[id]) {
				parts += own[id][i].requests
			}
		}
		switch {
		case s.ElapsedS != i+1:
			t.Fatalf("merged second %d at position %d: seconds are not 1..N without a gap or a repeat", s.ElapsedS, i+1)
		case s.MissingShare > 0 || len(s.MissingAgents) > 0:
			t.Errorf("merged second %d misses %.3f of the work (%v)", s.ElapsedS, s.MissingShare, s.MissingAgents)
		case s.Requests != parts:
			t.Errorf("merged second %d has %d requests, the agents' own seconds %d", s.ElapsedS, s.Requests, parts)
		}
	}
	t.Logf("%d merged seconds with %d requests; summary %d; target %d", len(merged), sum, r.Summary.Requests, hits.Load())
	if len(merged) != duration {
		t.Errorf("%d merged seconds, the agents ran %d", len(merged), duration)
	}
	if got := hits.Load(); r.Summary.Requests != got || got == 0 {
		t.Errorf("the summary counts %d requests, the target %d", r.Summary.Requests, got)
	}

	if rc.browser {
		waitJS(t, ctx, "the page showing the run finished", jsStatus+` === "finished"`, 20*time.Second)
		if b := evalString(t, ctx, jsBanners); b != "" {
			t.Errorf("banners left on the page: %s", b)
		}
		if got := evalString(t, ctx, `String(`+jsPoints+`)`); got != fmt.Sprint(len(merged)) {
			t.Errorf("the page drew %s seconds, the run has %d", got, len(merged))
		}
		if evalString(t, ctx, `String(`+jsMark+`)`) != "true" {
			t.Error("the run page was reloaded")
		}
		screenshot(t, ctx, "controller-restart-resumed.png")
	}
}

// agentSecond is one agent's stored second.
type agentSecond struct {
	second   int
	requests int64
}

func secondsOf(s []agentSecond) []int {
	var out []int
	for _, a := range s {
		out = append(out, a.second)
	}
	return out
}

// agentSecondsOf reads GET /api/runs/:id/agents page by page: each agent's seconds in order.
func agentSecondsOf(t *testing.T, base string, runID int64) map[string][]agentSecond {
	t.Helper()
	own := map[string][]agentSecond{}
	for from := 1; ; {
		var p agentSecondsPage
		if st := apiDo(t, "GET", fmt.Sprintf("%s/api/runs/%d/agents?from=%d&limit=1000", base, runID, from), nil, &p); st != http.StatusOK {
			t.Fatalf("GET agents' seconds of run %d from %d: %d", runID, from, st)
		}
		for _, s := range p.Seconds {
			if s.Sample.ElapsedS != s.Second {
				t.Errorf("agent %s second %d holds a sample of second %d", s.Agent, s.Second, s.Sample.ElapsedS)
			}
			own[s.Agent] = append(own[s.Agent], agentSecond{s.Second, s.Sample.Requests})
		}
		if p.NextFrom == nil {
			return own
		}
		if *p.NextFrom <= from {
			t.Fatalf("next_from %d after from %d", *p.NextFrom, from)
		}
		from = *p.NextFrom
	}
}
