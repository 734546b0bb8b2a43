package api_test

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// startRun saves plan js and starts it; it returns the run's id.
func (a *app) startRun(js string) int {
	a.t.Helper()
	st, p := a.do("POST", "/api/plans", js)
	if st != 201 {
		a.t.Fatalf("save plan: %d %v", st, p)
	}
	st, run := a.do("POST", fmt.Sprintf("/api/plans/%d/runs", int(p["id"].(float64))), "")
	if st != 201 {
		a.t.Fatalf("start run: %d %v", st, run)
	}
	return int(run["id"].(float64))
}

// waitUntil polls cond every millisecond for up to limit; it returns how long cond took to hold.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

// stopAndWait stops run id and waits for its summary; it returns the run.
func (a *app) stopAndWait(id int) map[string]any {
	a.t.Helper()
	a.do("POST", fmt.Sprintf("/api/runs/%d/stop", id), "")
	var run map[string]any
	waitUntil(a.t, 15*time.Second, "run ended", func() bool {
		_, run = a.do("GET", fmt.Sprintf("/api/runs/%d", id), "")
		return run["status"] != "running"
	})
	return run
}

// What must hold (issue 12): a constant-vus run's VUs changed from 10 to 50 through the API are
// at the target — its own count of open connections, one keep-alive connection per VU — within
// 1 s of the API's answer, and the change is an event of the run's samples and summary.
func TestLiveControlVUsReachTheTargetWithinASecond(t *testing.T) {
	probe := testutil.StartSchedProbe(t)
	a := newApp(t)
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(3 * time.Millisecond) // a service time: each VU holds its connection busy
		w.Write([]byte("ok"))
	})
	id := a.startRun(planJSON(tg.URL, 10, "30s"))
	waitUntil(t, 10*time.Second, "10 connections open", func() bool { return tg.OpenConns() == 10 })
	time.Sleep(300 * time.Millisecond) // the run holds 10: no connection beyond them
	if n := tg.OpenConns(); n != 10 {
		t.Fatalf("%d connections open before the change, want 10", n)
	}
	sent := time.Now()
	st, ev := a.do("POST", fmt.Sprintf("/api/runs/%d/control", id), `{"vus":50}`)
	answered := time.Now()
	if st != 200 {
		t.Fatalf("control: %d %v", st, ev)
	}
	if ev["kind"] != "vus" || ev["from"] != 10.0 || ev["to"] != 50.0 || ev["by"] != "local" {
		t.Errorf("event = %v, want vus 10 → 50 by local", ev)
	}
	var reached time.Time
	waitUntil(t, 5*time.Second, "50 connections open", func() bool {
		reached = time.Now()
		return tg.OpenConns() >= 50
	})
	took := reached.Sub(answered)
	d := probe.Stop()
	t.Logf("target had 50 open connections %v after the API answered, %v after the request was sent (the answer took %v; %v)",
		took, reached.Sub(sent), answered.Sub(sent), d)
	if took > time.Second {
		t.Errorf("50 connections after %v, want within 1 s of the API's answer", took)
	}
	if n := tg.OpenConns(); n != 50 {
		t.Errorf("%d connections open, want 50", n)
	}
	time.Sleep(1100 * time.Millisecond) // the second of the change is stored
	run := a.stopAndWait(id)
	events := run["summary"].(map[string]any)["events"].([]any)
	if len(events) != 1 || events[0].(map[string]any)["to"] != 50.0 {
		t.Fatalf("summary events = %v, want the change to 50", events)
	}
	_, secs := a.do("GET", fmt.Sprintf("/api/runs/%d/samples", id), "")
	found := 0
	for _, s := range secs["items"].([]any) {
		if evs, ok := s.(map[string]any)["events"].([]any); ok {
			found += len(evs)
		}
	}
	if found != 1 {
		t.Errorf("the stored seconds hold %d events, want 1", found)
	}
}

// A constant-arrival-rate run's rate changed from 50/s to 200/s: the target's request rate follows,
// and every stored second after the change offers 200 arrivals a second.
func TestLiveControlRateReachesTheTarget(t *testing.T) {
	a := newApp(t)
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	id := a.startRun(fmt.Sprintf(`{"name":"rate","requests":[{"url":%q}],"load":{"executor":"constant-arrival-rate",
		"rate":50,"duration":"30s","pre_allocated_vus":5,"max_vus":50},"http":{"timeout":"2s"}}`, tg.URL))
	rate := func() float64 { // the target's own request rate over one second
		n0, t0 := tg.Requests(), time.Now()
		time.Sleep(time.Second)
		return float64(tg.Requests()-n0) / time.Since(t0).Seconds()
	}
	waitUntil(t, 10*time.Second, "first request", func() bool { return tg.Requests() > 0 })
	probe := testutil.StartSchedProbe(t)
	before := rate()
	st, ev := a.do("POST", fmt.Sprintf("/api/runs/%d/control", id), `{"rate":200}`)
	if st != 200 || ev["from"] != 50.0 || ev["to"] != 200.0 {
		t.Fatalf("control: %d %v", st, ev)
	}
	after := rate()
	// The arrivals the run offered in each whole second after the change: requests, and iterations
	// a machine too busy to hand to a VU within 10 ms dropped (counted, never sent late). Three
	// such seconds stored, however late a busy machine stores them.
	type second struct{ offered, interval float64 }
	stored := func() (secs []second) {
		_, res := a.do("GET", fmt.Sprintf("/api/runs/%d/samples", id), "")
		for _, raw := range res["items"].([]any) {
			s := raw.(map[string]any)
			if s["elapsed_s"].(float64)-1 >= ev["elapsed_s"].(float64) {
				secs = append(secs, second{s["requests"].(float64) + s["dropped_iterations"].(float64), s["interval_s"].(float64)})
			}
		}
		return secs
	}
	waitUntil(t, 30*time.Second, "three stored seconds after the change", func() bool { return len(stored()) >= 3 })
	d := probe.Stop()
	run := a.stopAndWait(id)
	if events := run["summary"].(map[string]any)["events"].([]any); len(events) != 1 {
		t.Errorf("summary events = %v", events)
	}
	secs := stored()[:3] // whole seconds, before the stop cut the last one
	var offered, span float64
	for _, s := range secs {
		offered += s.offered
		span += s.interval
	}
	t.Logf("target rate: %.0f/s before, %.0f/s in the second after the change to 200/s; offered after it: %v (%v)",
		before, after, secs, d)
	// A second's arrivals are counted when the scheduler issues or drops them, so a scheduler woken
	// late moves some into the next second: over three seconds the shift is at most its delay.
	if slack := 200 * (0.05 + d.Max.Seconds()); offered < 200*span-slack || offered > 200*span+slack {
		t.Errorf("the three seconds after the change offered %.0f arrivals in %.2f s, want 200/s ± %.0f", offered, span, slack)
	}
	if before < 40 || before > 60 || after <= before || after > 230 {
		t.Errorf("target rate %.0f/s → %.0f/s, want about 50 → 200", before, after)
	}
	// On a machine that hands iterations to VUs in time (nothing dropped) the target sees them all.
	if d.P99 < 5*time.Millisecond && after < 2*before {
		t.Errorf("target rate %.0f/s → %.0f/s on a quiet machine, want about 50 → 200", before, after)
	}
}

// Refusals: an executor without the control (409), a value beyond the server's cap or out of
// range (400, naming the limit), a malformed body (400), an unknown run (404), a finished run (409).
func TestLiveControlRefusals(t *testing.T) {
	a := newStack(t, stackConfig{caps: plan.Caps{MaxVUs: 20}}).app
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond)
		w.Write([]byte("ok"))
	})
	ctl := func(id int, body string) (int, map[string]any) {
		t.Helper()
		st, m := a.do("POST", fmt.Sprintf("/api/runs/%d/control", id), body)
		if st != 200 {
			return st, m["error"].(map[string]any)
		}
		return st, m
	}

	iter := a.startRun(fmt.Sprintf(`{"name":"iter","requests":[{"url":%q}],"load":{"executor":"per-vu-iterations",
		"vus":1,"iterations":100000,"max_duration":"30s"}}`, tg.URL))
	if st, e := ctl(iter, `{"vus":2}`); st != 409 || e["code"] != "not_controllable" || !strings.Contains(e["message"].(string), "per-vu-iterations") {
		t.Errorf("vus of per-vu-iterations: %d %v, want 409 not_controllable naming the executor", st, e)
	}
	a.stopAndWait(iter)

	id := a.startRun(planJSON(tg.URL, 2, "30s"))
	waitUntil(t, 10*time.Second, "first request", func() bool { return tg.Requests() > 0 })
	for body, field := range map[string]string{`{"vus":50}`: "--max-vus", `{"vus":-1}`: "between 0", `{"vus":2.5}`: "whole number"} {
		st, e := ctl(id, body)
		if msg, _ := e["fields"].(map[string]any)["vus"].(string); st != 400 || !strings.Contains(msg, field) {
			t.Errorf("%s: %d %v, want 400 with vus naming %q", body, st, e, field)
		}
	}
	for _, body := range []string{`{}`, `{"vus":3,"rate":3}`, `{"users":3}`, `[]`} {
		if st, e := ctl(id, body); st != 400 {
			t.Errorf("%s: %d %v, want 400", body, st, e)
		}
	}
	// a value that is not a number: the field and what it must be, in words (not Go's types)
	for body, want := range map[string][2]string{`{"rate":"abc"}`: {"rate", "must be a number"}, `{"vus":"3"}`: {"vus", "must be a number"}} {
		st, e := ctl(id, body)
		if msg, _ := e["fields"].(map[string]any)[want[0]].(string); st != 400 || msg != want[1] || e["message"] != want[0]+": "+want[1] {
			t.Errorf("%s: %d %v, want 400 %q", body, st, e, want[0]+": "+want[1])
		}
	}
	if st, e := ctl(id, `{"rate":10}`); st != 409 || e["code"] != "not_controllable" {
		t.Errorf("rate of constant-vus: %d %v, want 409", st, e)
	}
	if st, e := ctl(id, `{"vus":20}`); st != 200 || e["to"] != 20.0 {
		t.Errorf("vus 20 (at the cap): %d %v, want 200", st, e)
	}
	if st, e := ctl(id, `{"vus":-0}`); st != 200 || e["to"] != 0.0 || math.Signbit(e["to"].(float64)) {
		t.Errorf("vus -0: %d %v, want 200 to 0", st, e)
	}
	if st, _ := ctl(999999, `{"vus":3}`); st != 404 {
		t.Errorf("unknown run: %d, want 404", st)
	}
	a.stopAndWait(id)
	if st, e := ctl(id, `{"vus":3}`); st != 409 || e["code"] != "not_running" {
		t.Errorf("finished run: %d %v, want 409 not_running", st, e)
	}
}

// Live control is a tester's (a viewer is refused), names who made the change — the user, or the
// API token's label — and is audited as run.control. A change right after the start waits for the
// run to have launched its VUs.
func TestLiveControlRoleByAndAudit(t *testing.T) {
	a := newAuthApp(t, false, true)
	ann, tom, vic := a.login("ann", annPW), a.login("tom", tomPW), a.login("vic", vicPW)
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	p := a.must(tom, 201, "POST", "/api/plans", planJSON(tg.URL, 1, "30s"))
	run := a.must(tom, 201, "POST", fmt.Sprintf("/api/plans/%d/runs", int(p["id"].(float64))), "")
	rid := int(run["id"].(float64))
	path := fmt.Sprintf("/api/runs/%d/control", rid)
	if ev := a.must(tom, 200, "POST", path, `{"vus":3}`); ev["by"] != "tom" || ev["to"] != 3.0 {
		t.Errorf("tom's change: %v", ev)
	}
	a.must(vic, 403, "POST", path, `{"vus":4}`)
	tok := a.must(ann, 201, "POST", "/api/tokens", `{"label":"ci","user":"tom"}`)["token"].(string)
	if ev := a.must(cred{bearer: tok}, 200, "POST", path, `{"vus":2}`); ev["by"] != "api token ci" || ev["from"] != 3.0 {
		t.Errorf("the token's change: %v", ev)
	}
	a.must(tom, 202, "POST", fmt.Sprintf("/api/runs/%d/stop", rid), "")
	auditWaitRun(t, a, tom, rid)
	var got []string
	for _, e := range auditEntries(a, ann) {
		if e["action"] == "run.control" {
			d := e["detail"].(map[string]any)
			got = append(got, fmt.Sprintf("%v %v %v→%v %v", e["actor"], e["target"], d["from"], d["to"], d["kind"]))
		}
	}
	want := []string{fmt.Sprintf("tom run %d 1→3 vus", rid), fmt.Sprintf("tom run %d 3→2 vus", rid)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("run.control entries %v, want %v", got, want)
	}
}

// A rate of -0 (JSON's negative zero) is the rate 0: accepted as 0 is, and recorded and answered
// as 0, never "-0".
func TestLiveControlRateMinusZeroIsZero(t *testing.T) {
	a := newApp(t)
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	id := a.startRun(fmt.Sprintf(`{"name":"rate","requests":[{"url":%q}],"load":{"executor":"constant-arrival-rate",
		"rate":20,"duration":"30s","pre_allocated_vus":2,"max_vus":5},"http":{"timeout":"2s"}}`, tg.URL))
	waitUntil(t, 10*time.Second, "first request", func() bool { return tg.Requests() > 0 })
	st, ev := a.do("POST", fmt.Sprintf("/api/runs/%d/control", id), `{"rate":-0}`)
	if to, _ := ev["to"].(float64); st != 200 || ev["from"] != 20.0 || to != 0 || math.Signbit(to) {
		t.Fatalf("rate -0: %d %v, want 200 from 20 to 0", st, ev)
	}
	run := a.stopAndWait(id)
	events := run["summary"].(map[string]any)["events"].([]any)
	if to, _ := events[0].(map[string]any)["to"].(float64); len(events) != 1 || math.Signbit(to) {
		t.Errorf("summary events = %v, want one to 0", events)
	}
}
