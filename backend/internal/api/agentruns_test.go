package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/api"
	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/store"
)

// fakeCluster has two idle agents (zone eu) and runs a plan on them deterministically: three
// seconds, gen-b delivering nothing in the third (its share missing), gen-a's second 2 handed
// twice (a replayed spool, the copy different), then it waits for its ctx (the stop) and returns
// a degraded summary of two agents.
type fakeCluster struct {
	mu      sync.Mutex
	spec    cluster.RunSpec
	handed  chan struct{}
	stopped chan struct{}
	resumed cluster.Started // Resume's arguments
	from    int
	// abandoned is each Abandon's "run controller" (a run it cannot take over).
	abandoned []string
	// fail, when set, is Run's error with no summary (an agent refused Prepare), once failAfter
	// (when set) is closed.
	fail      error
	failAfter chan struct{}
}

func (f *fakeCluster) Abandon(run int64, controller, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.abandoned = append(f.abandoned, fmt.Sprint(run, " ", controller))
}

var fakeIdle = []cluster.Agent{{ID: "gen-a", Weight: 1, Labels: map[string]string{"zone": "eu"}}, {ID: "gen-b", Weight: 1, Labels: map[string]string{"zone": "eu"}}}

func (f *fakeCluster) Pick(n int, labels map[string]string) ([]cluster.Agent, error) {
	var out []cluster.Agent
	for _, a := range fakeIdle {
		ok := true
		for k, v := range labels {
			ok = ok && a.Labels[k] == v
		}
		if ok {
			out = append(out, a)
		}
	}
	if n > len(out) || len(out) == 0 {
		return nil, &cluster.PickError{Want: n, Labels: labels, Available: len(out)}
	}
	if n > 0 {
		out = out[:n]
	}
	return out, nil
}

// fakeStarted is what fakeCluster's runs keep to be resumed (RunHooks.OnStart).
var fakeStarted = cluster.Started{Controller: "ctl-1", Agents: []cluster.StartedAgent{{ID: "gen-a", Weight: 1}, {ID: "gen-b", Weight: 1}},
	StartAtUnixNano: 1_800_000_000_000_000_000, FenceAfterMs: 10_000}

func (f *fakeCluster) Run(ctx context.Context, spec cluster.RunSpec, hooks cluster.RunHooks) (*metrics.Summary, error) {
	f.mu.Lock()
	f.spec = spec
	f.mu.Unlock()
	if f.fail != nil {
		if f.failAfter != nil {
			<-f.failAfter
		}
		return nil, f.fail
	}
	if err := hooks.OnStart(fakeStarted); err != nil {
		return nil, err
	}
	own := func(agent string, s int, cpu float64) metrics.Sample {
		return metrics.Sample{ElapsedS: s, IntervalS: 1, Requests: 50, RPS: 50, Hist: "HISTOGRAM", Client: metrics.ClientSample{CPUPercent: cpu, RSSBytes: 1 << 20}}
	}
	for s := 1; s <= 3; s++ {
		merged := metrics.Sample{ElapsedS: s, T: int64(1_800_000_000_000 + s*1000), IntervalS: 1, Requests: 100, RPS: 100,
			Agents: map[string]metrics.ClientSample{"gen-a": {CPUPercent: 10}, "gen-b": {CPUPercent: 20}}}
		hooks.OnAgentSecond("gen-a", own("gen-a", s, 10))
		if s < 3 {
			hooks.OnAgentSecond("gen-b", own("gen-b", s, 20))
		} else {
			merged.Requests, merged.RPS, merged.MissingShare, merged.MissingAgents = 50, 50, 0.5, []string{"gen-b"}
			delete(merged.Agents, "gen-b")
		}
		if s == 2 {
			hooks.OnAgentSecond("gen-a", own("gen-a", s, 99)) // the replay: not stored again
		}
		hooks.OnSecond(merged)
	}
	close(f.handed)
	<-ctx.Done()
	close(f.stopped)
	return &metrics.Summary{Requests: 250, DurationS: 3, RPS: 83.3, Seconds: 3, Agents: 2, Degraded: true, LostAgents: []string{"gen-b"}}, nil
}

// Resume takes over a run from second from: it records its arguments and hands seconds from and
// from+1 (each agent's own too), then ends the run.
func (f *fakeCluster) Resume(ctx context.Context, spec cluster.RunSpec, st cluster.Started, from int, hooks cluster.RunHooks) (*metrics.Summary, error) {
	f.mu.Lock()
	f.spec, f.resumed, f.from = spec, st, from
	f.mu.Unlock()
	for s := from; s <= from+1; s++ {
		hooks.OnAgentSecond("gen-a", metrics.Sample{ElapsedS: s, IntervalS: 1, Requests: 50})
		hooks.OnAgentSecond("gen-b", metrics.Sample{ElapsedS: s, IntervalS: 1, Requests: 50})
		hooks.OnSecond(metrics.Sample{ElapsedS: s, T: int64(1_800_000_000_000 + s*1000), IntervalS: 1, Requests: 100, RPS: 100})
	}
	return &metrics.Summary{Requests: int64(100 * (from + 1)), DurationS: float64(from + 1), Seconds: from + 1, Agents: 2}, nil
}

// POST /api/plans/:id/runs with {"agents": N} or {"agent_labels": …} runs the plan through the
// cluster: 400 for a bad body (the field named; every invalid value: TestRunAgentsInvalidValues),
// 409 agents_unavailable when too few agents match,
// control 409 control_unsupported; the merged seconds are the run's (one with its missing share),
// each agent's own seconds are stored once (GET /api/runs/:id/agents), the run ends with agents
// and degraded, and deleting it deletes its agents' seconds.
func TestRunOverAgents(t *testing.T) {
	fc := &fakeCluster{handed: make(chan struct{}), stopped: make(chan struct{})}
	s := newStack(t, stackConfig{opts: []api.Option{api.WithCluster(fc)}})
	a, st := s.app, s.st
	planID := mustPlanID(t, st, "agents")
	runs := fmt.Sprintf("/api/plans/%d/runs", planID)
	runCases(t, a, []apiCase{
		{"an array", "POST", runs, `[]`, 400, []string{"must be a JSON object with", "not a JSON array"}},
		{"both", "POST", runs, `{"agents":1,"agent_labels":{"zone":"eu"}}`, 400, []string{`"agents":"give agents or agent_labels, not both"`, `"agent_labels":`}},
		{"unknown field", "POST", runs, `{"agentz":1}`, 400, []string{`"agentz":"unknown field"`}},
		{"too few agents", "POST", runs, `{"agents":3}`, 409, []string{`"agents_unavailable"`, "not enough idle agents"}},
		{"no agent with the labels", "POST", runs, `{"agent_labels":{"zone":"us"}}`, 409, []string{`"agents_unavailable"`}},
	})
	if n := count(t, st, "SELECT count(*) FROM runs"); n != 0 {
		t.Fatalf("%d runs created by refused starts", n)
	}

	status, got := a.do("POST", runs, `{"agent_labels":{"zone":"eu"}}`)
	if status != 201 || got["agents"] != 2.0 {
		t.Fatalf("start: %d %v (want agents 2 from the start)", status, got)
	}
	id := int64(got["id"].(float64))
	<-fc.handed
	fc.mu.Lock()
	if fc.spec.Run != id || len(fc.spec.Agents) != 2 || fc.spec.Plan == nil || fc.spec.Plan.Plan.Name != "api test" {
		t.Errorf("RunSpec: run %d, %d agents, plan %v", fc.spec.Run, len(fc.spec.Agents), fc.spec.Plan)
	}
	fc.mu.Unlock()
	if status, m := a.do("POST", fmt.Sprintf("/api/runs/%d/control", id), `{"vus":3}`); status != 409 || errCode(m) != "control_unsupported" {
		t.Errorf("control: %d %v", status, m)
	}
	if status, m := a.do("POST", runs, `{"agents":1}`); status != 409 || errCode(m) != "run_in_progress" {
		t.Errorf("second start: %d %v", status, m)
	}
	if status, m := a.do("POST", fmt.Sprintf("/api/runs/%d/stop", id), ""); status != 202 {
		t.Fatalf("stop: %d %v", status, m)
	}
	<-fc.stopped
	<-s.rn.Done(id)
	var kept []byte
	if err := st.DB().Raw("SELECT cluster FROM runs WHERE id = ?", id).Row().Scan(&kept); err != nil {
		t.Fatal(err)
	}
	var keptStart cluster.Started
	if err := json.Unmarshal(kept, &keptStart); err != nil || fmt.Sprint(keptStart) != fmt.Sprint(fakeStarted) {
		t.Errorf("runs.cluster %s (%v), want the run's Started %+v", kept, err, fakeStarted)
	}

	_, run := a.do("GET", fmt.Sprintf("/api/runs/%d", id), "")
	if run["status"] != "stopped" || run["agents"] != 2.0 || run["degraded"] != true || run["requests"] != 250.0 {
		t.Errorf("run: %v", run)
	}
	_, list := a.do("GET", "/api/runs", "")
	if it := list["items"].([]any)[0].(map[string]any); it["agents"] != 2.0 || it["degraded"] != true {
		t.Errorf("listed: %v", it)
	}
	stored, err := st.Samples(t.Context(), id)
	if err != nil || len(stored) != 3 {
		t.Fatalf("%d merged seconds stored (%v), want 3", len(stored), err)
	}
	third := stored[2].Data
	var smp metrics.Sample
	if err := json.Unmarshal(third, &smp); err != nil || smp.MissingShare != 0.5 || fmt.Sprint(smp.MissingAgents) != "[gen-b]" || len(smp.Agents) != 1 {
		t.Errorf("stored second 3: %s (%v)", third, err)
	}

	_, ag := a.do("GET", fmt.Sprintf("/api/runs/%d/agents", id), "")
	var rows []string
	for _, r := range ag["seconds"].([]any) {
		r := r.(map[string]any)
		smp := r["sample"].(map[string]any)
		if _, ok := smp["hist"]; ok {
			t.Errorf("agent second stored with its histogram: %v", smp)
		}
		rows = append(rows, fmt.Sprintf("%v/%v/%v", r["second"], r["agent"], smp["client"].(map[string]any)["cpu_percent"]))
	}
	if want := "[1/gen-a/10 1/gen-b/20 2/gen-a/10 2/gen-b/20 3/gen-a/10]"; fmt.Sprint(rows) != want || ag["next_from"] != nil {
		t.Errorf("agent seconds %v next %v, want %s (the replayed second stored once, its first copy)", rows, ag["next_from"], want)
	}
	runCases(t, a, []apiCase{
		{"agents page from 3", "GET", fmt.Sprintf("/api/runs/%d/agents?from=3", id), "", 200, []string{`"second":3`, `"next_from":null`}},
		{"bad limit", "GET", fmt.Sprintf("/api/runs/%d/agents?limit=5", id), "", 400, []string{"limit must be an integer from 1000 to 10000"}},
		{"missing run", "GET", "/api/runs/999/agents", "", 404, []string{`"not_found"`}},
		{"delete", "DELETE", fmt.Sprintf("/api/runs/%d", id), "", 204, nil},
	})
	if n := count(t, st, "SELECT count(*) FROM run_agent_seconds"); n != 0 {
		t.Errorf("%d agent seconds left after the run was deleted", n)
	}
}

// A run over agents that fails without a summary (an agent refused Prepare: its --allow-target)
// keeps the number of agents it was started on — in GET /api/runs/:id and the list — whether it
// fails at once or after the start's answer.
func TestFailedRunOverAgentsKeepsItsAgents(t *testing.T) {
	for _, after := range []bool{false, true} {
		fc := &fakeCluster{fail: errors.New("agent gen-b refused the plan: it aims outside this agent's --allow-target list")}
		if after {
			fc.failAfter = make(chan struct{})
		}
		s := newStack(t, stackConfig{opts: []api.Option{api.WithCluster(fc)}})
		a, st := s.app, s.st
		status, got := a.do("POST", fmt.Sprintf("/api/plans/%d/runs", mustPlanID(t, st, "agents")), `{"agents":2}`)
		if status != 201 || got["agents"] != 2.0 {
			t.Fatalf("start (failing after the answer: %v): %d %v", after, status, got)
		}
		id := int64(got["id"].(float64))
		if after {
			close(fc.failAfter)
		}
		<-s.rn.Done(id)
		_, run := a.do("GET", fmt.Sprintf("/api/runs/%d", id), "")
		if run["status"] != "failed" || run["agents"] != 2.0 || !strings.Contains(fmt.Sprint(run["error"]), "--allow-target") {
			t.Errorf("failing after the answer: %v: run %v, want failed with agents 2", after, run)
		}
		_, list := a.do("GET", "/api/runs", "")
		if it := list["items"].([]any)[0].(map[string]any); it["agents"] != 2.0 {
			t.Errorf("failing after the answer: %v: listed %v", after, it)
		}
	}
}

// Every invalid agents value — of another JSON type, not written as a whole number (as a plan's
// whole-number fields: 2.0 and 1e3 are not), out of 1–1000, past any integer — is one answer:
// 400 invalid_value, the field "agents" and its bound, in its fields and its message. So is every
// agent_labels value that is not an object of 1–20 string values; a label out of an agent's own
// bounds is invalid_value too, naming that bound. No run is created.
func TestRunAgentsInvalidValues(t *testing.T) {
	s := newStack(t, stackConfig{opts: []api.Option{api.WithCluster(&fakeCluster{})}})
	runs := fmt.Sprintf("/api/plans/%d/runs", mustPlanID(t, s.st, "agents"))
	const (
		agents = "must be a whole number of agents from 1 to 1000"
		shape  = "must be an object of 1 to 20 labels, each value a string"
	)
	check := func(body, field, msg, message string) {
		t.Helper()
		status, m := s.app.do("POST", runs, body)
		e, _ := m["error"].(map[string]any)
		fields, _ := e["fields"].(map[string]any)
		if status != 400 || e["code"] != "invalid_value" || len(fields) != 1 || fields[field] != msg || e["message"] != message {
			t.Errorf("%.80s: %d %v, want 400 invalid_value with %s %q", body, status, m, field, msg)
		}
	}
	for _, v := range []string{"0", "-1", "-0", "1001", "2.0", "2.5", "1e3", "1e308", "-1e308", "1e400", "99999999999999999999999",
		`"2"`, "true", "[2]", `{"n":2}`} {
		check(`{"agents":`+v+`}`, "agents", agents, "agents "+agents)
		check(`{"Agents":`+v+`}`, "agents", agents, "agents "+agents) // encoding/json's case-insensitive key
	}
	for _, v := range []string{"{}", `"zone=eu"`, `["zone"]`, "1", "true", `{"zone":1}`, `{"zone":null}`, `{"zone":{"x":"y"}}`, `{"a":"b","zone":["eu"]}`} {
		check(`{"agent_labels":`+v+`}`, "agent_labels", shape, "agent_labels "+shape)
	}
	for v, msg := range map[string]string{
		`{"":"x"}`:                                    "a label with an empty key: a key is 1–63 bytes",
		`{"k":"v"` + labelsJSON(20) + `}`:             "21 labels: at most 20",
		`{"zone":"` + strings.Repeat("v", 254) + `"}`: `label "zone": its value is 254 bytes, at most 253`,
	} {
		check(`{"agent_labels":`+v+`}`, "agent_labels", msg, "agent_labels: "+msg)
	}
	if n := count(t, s.st, "SELECT count(*) FROM runs"); n != 0 {
		t.Fatalf("%d runs created by refused starts", n)
	}
}

// Without an agents listener a run over agents is a 409 agents_listener_off; an empty object, a
// null body and null fields are the local run as before.
func TestRunOverAgentsWithoutListener(t *testing.T) {
	s := newStack(t, stackConfig{})
	planID := mustPlanID(t, s.st, "local")
	runs := fmt.Sprintf("/api/plans/%d/runs", planID)
	runCases(t, s.app, []apiCase{
		{"agents", "POST", runs, `{"agents":1}`, 409, []string{`"agents_listener_off"`, "--agents-listen"}},
		{"labels", "POST", runs, `{"agent_labels":{"zone":"eu"}}`, 409, []string{`"agents_listener_off"`}},
	})
	// null is absent (docs/api.md): a null body or null fields start the local run too.
	for _, body := range []string{`{}`, `null`, `{"agents":null}`, `{"agent_labels":null}`} {
		status, got := s.do("POST", runs, body)
		if status != 201 || got["agents"] != 0.0 || got["degraded"] != false {
			t.Fatalf("local start with %s: %d %v", body, status, got)
		}
		id := int64(got["id"].(float64))
		if err := s.rn.Stop(id); err != nil {
			t.Fatal(err)
		}
		<-s.rn.Done(id)
	}
}

// count runs a counting query on the stack's SQLite file.
func count(t *testing.T, st *store.Store, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := st.DB().Raw(query, args...).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// At start-up ResumeRuns takes over the runs over agents a previous process left running: the
// first (3 seconds stored) goes on through the cluster's Resume from second 4 with its stored
// Started and its plan snapshot, and ends finished with seconds 1-5 and its agents' seconds 4-5;
// one whose stored Started cannot be read is marked interrupted at its last stored second and its
// agents told to stop (Abandon, from the controller id it still names).
// Without a cluster every such run is marked interrupted.
func TestResumeRunsAtStartUp(t *testing.T) {
	for _, withCluster := range []bool{true, false} {
		fc := &fakeCluster{}
		var srv *api.Server
		cfg := stackConfig{handler: func(s *api.Server, _ *store.Store) http.Handler { srv = s; return s.Handler() }}
		if withCluster {
			cfg.opts = []api.Option{api.WithCluster(fc)}
		}
		s := newStack(t, cfg)
		ctx, st := t.Context(), s.st
		p, err := st.GetPlan(ctx, mustPlanID(t, st, "agents"))
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
		left := func(started string) int64 {
			r, err := st.CreateRun(ctx, p.ID, p.Name, p.Spec, t0)
			if err != nil {
				t.Fatal(err)
			}
			for sec := 1; sec <= 3; sec++ {
				data := fmt.Appendf(nil, `{"elapsed_s":%d,"t":%d,"requests":100,"errors":0}`, sec, t0.Add(time.Duration(sec)*time.Second).UnixMilli())
				if err := st.AppendSample(ctx, r.ID, store.Sample{Second: sec, TMs: t0.Add(time.Duration(sec) * time.Second).UnixMilli(), Data: data},
					store.Progress{DurationS: float64(sec), Requests: int64(100 * sec)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.SetRunCluster(ctx, r.ID, []byte(started)); err != nil {
				t.Fatal(err)
			}
			return r.ID
		}
		good, _ := json.Marshal(fakeStarted)
		ok, unreadable := left(string(good)), left(`{"controller":"ctl-9","agents":"gen-a"}`)
		rs, err := st.ResumableRuns(ctx)
		if err != nil || len(rs) != 2 {
			t.Fatalf("resumable: %+v, %v", rs, err)
		}

		resumed := srv.ResumeRuns(ctx, rs)
		interrupted := []int64{unreadable}
		if withCluster {
			if fmt.Sprint(resumed) != fmt.Sprint([]int64{ok}) {
				t.Fatalf("resumed %v, want [%d]", resumed, ok)
			}
			<-s.rn.Done(ok)
		} else {
			if len(resumed) != 0 {
				t.Fatalf("resumed %v without a cluster", resumed)
			}
			interrupted = []int64{ok, unreadable}
		}
		for _, id := range interrupted {
			if r, _ := st.GetRun(ctx, id); r.Status != store.StatusInterrupted || r.EndedAt == nil || !r.EndedAt.Equal(t0.Add(3*time.Second)) {
				t.Errorf("cluster %v: run %d %s ended %v, want interrupted at its third second", withCluster, id, r.Status, r.EndedAt)
			}
		}
		if !withCluster {
			continue
		}
		fc.mu.Lock()
		// The agents of the run that cannot be taken over are told to stop, from the controller
		// its unreadable start still names: they would load their target to its end unattended.
		if want := fmt.Sprint(unreadable, " ctl-9"); fmt.Sprint(fc.abandoned) != "["+want+"]" {
			t.Errorf("abandoned %v, want [%s]", fc.abandoned, want)
		}
		if fc.spec.Run != ok || fc.spec.Plan == nil || fc.spec.Plan.Plan.Name != "api test" || len(fc.spec.Agents) != 0 ||
			fc.from != 4 || fmt.Sprint(fc.resumed) != fmt.Sprint(fakeStarted) {
			t.Errorf("Resume got run %d plan %v agents %v from %d started %+v; want run %d from 4 with %+v",
				fc.spec.Run, fc.spec.Plan, fc.spec.Agents, fc.from, fc.resumed, ok, fakeStarted)
		}
		fc.mu.Unlock()
		r, _ := st.GetRun(ctx, ok)
		smps, _ := st.Samples(ctx, ok)
		if r.Status != store.StatusFinished || r.Requests != 500 || r.Agents != 2 || len(smps) != 5 || smps[4].Second != 5 {
			t.Errorf("resumed run: %s, %d requests, %d agents, %d seconds stored", r.Status, r.Requests, r.Agents, len(smps))
		}
		if n := count(t, st, "SELECT count(*) FROM run_agent_seconds WHERE run_id = ? AND second IN (4, 5)", ok); n != 4 {
			t.Errorf("%d agent seconds stored by the resumed run, want 4", n)
		}
	}
}

// On a server whose runner steers runs over agents (runner.SetDriveControl: volley serve with
// agents), POST /api/runs/:id/control of such a run answers the event the coordinator recorded,
// a value out of range never reaches the agents, and an agent that did not apply the change is 409 agents_refused
// with the coordinator's sentence; the agents' engines' errors keep their codes.
func TestControlOfARunOverAgents(t *testing.T) {
	fc := &fakeCluster{handed: make(chan struct{}), stopped: make(chan struct{})}
	s := newStack(t, stackConfig{opts: []api.Option{api.WithCluster(fc)}})
	answers := make(chan error, 3)
	s.rn.SetDriveControl(func(id int64, ch runner.Change) (metrics.RunEvent, error) {
		if err := <-answers; err != nil {
			return metrics.RunEvent{}, err
		}
		return metrics.RunEvent{T: 1_800_000_001_500, ElapsedS: 1.5, Kind: "vus", From: 2, To: float64(*ch.VUs), By: ch.By}, nil
	})
	id := startOverAgents(t, s, fc)
	control := fmt.Sprintf("/api/runs/%d/control", id)
	answers <- nil
	answers <- &cluster.ControlError{Agent: "gen-b", Reason: "agent gen-b: it did not answer within 5s", Applied: []string{"gen-a"}}
	answers <- fmt.Errorf("agent %q did not apply the change: %w", "gen-a", engine.ErrNotControllable)
	runCases(t, s.app, []apiCase{
		{"applied", "POST", control, `{"vus":4}`, 200, []string{`"kind":"vus"`, `"from":2`, `"to":4`, `"elapsed_s":1.5`}},
		{"out of range", "POST", control, `{"vus":100001}`, 400, []string{`"vus":`}},
		{"an agent did not", "POST", control, `{"vus":4}`, 409, []string{`"agents_refused"`, `agent \"gen-b\" did not apply the change: agent gen-b: it did not answer within 5s (applied by gen-a`}},
		{"not controllable", "POST", control, `{"vus":4}`, 409, []string{`"not_controllable"`, `agent \"gen-a\" did not apply`}},
	})
	if len(answers) != 0 {
		t.Errorf("%d answers left: a change reached the agents that should not have", len(answers))
	}
	if status, m := s.app.do("POST", fmt.Sprintf("/api/runs/%d/stop", id), ""); status != 202 {
		t.Fatalf("stop: %d %v", status, m)
	}
	<-fc.stopped
	<-s.rn.Done(id)
}

// labelsJSON is n more labels ",\"l0\":\"v\",…" for a JSON object.
func labelsJSON(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,"l%d":"v"`, i)
	}
	return b.String()
}
