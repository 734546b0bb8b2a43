package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// resume resumes run spec (started as st) from second from on the env's coordinator.
func (e *env) resume(ctx context.Context, spec RunSpec, st Started, from int, h *hooks) <-chan result {
	return e.start(func() (*metrics.Summary, error) { return e.co.Resume(ctx, spec, st, from, h.RunHooks()) })
}

// publisher is agent id's connection that only publishes snapshots: it never says hello, so the
// registry does not know it (an agent gone while the controller was down).
func (e *env) publisher(id string) *fakeAgent {
	e.t.Helper()
	nc, err := e.b.LocalAgent(id)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(nc.Close)
	a := &fakeAgent{e: e, id: id, nc: nc}
	if a.js, err = nc.JetStream(); err != nil {
		e.t.Fatal(err)
	}
	return a
}

// noControl fails if agent a has been sent a control message (its connection flushed first, so
// that one on its way has arrived).
func (a *fakeAgent) noControl() {
	a.e.t.Helper()
	if err := a.nc.Flush(); err != nil {
		a.e.t.Fatal(err)
	}
	select {
	case c := <-a.ctl:
		a.e.t.Fatalf("%s got %+v", a.id, c)
	default:
	}
}

// Issue 14 must-hold 9, the coordinator's part: the controller dies mid-run without a word to the
// agents (its loop halted after merging seconds 1–3, with a's and b's second 4 in and c's not),
// the embedded broker is shut down and started again on the same store dir, the agents join
// again, and a new coordinator resumes the run from second 4 (the first the dead one did not hand
// to OnSecond) with the Started that OnStart got. Seconds 1–5 reach OnSecond exactly once across
// the two coordinators, complete; the resumed one prepares and starts nothing, hands every agent
// second to OnAgentSecond once (the replayed ones again), rebuilds the run so far (second 5's p95
// so far is the whole run's, not seconds 4–5's), and its summary's requests are the agents'
// finals' sum and the merged seconds' sum. The stream's duplicate window survived the restart.
func TestResumeAfterControllerCrash(t *testing.T) {
	const run = 41
	dir := t.TempDir()
	clk := testutil.NewClock(t0)
	e1 := newEnvOn(t, dir, clk)
	e1.co.halt = make(chan struct{})
	ids := []string{"a", "b", "c"}
	weights := []int{1, 2, 1}
	var ags []*fakeAgent
	for i, id := range ids {
		ags = append(ags, e1.agent(id, weights[i], Ready{OK: true}))
	}
	pl := testPlan(t) // 5 s
	// Each agent's second: 2 × its weight requests, slow in seconds 1–3, fast in 4–5.
	parts := map[[2]int]*SecondPart{}
	partOf := func(i, s int) *SecondPart {
		if p := parts[[2]int{i, s}]; p != nil {
			return p
		}
		lat := make([]int64, 2*weights[i])
		for k := range lat {
			lat[k] = int64(1000 + 10*k + i)
			if s <= 3 {
				lat[k] += 40_000
			}
		}
		parts[[2]int{i, s}] = part(t, s, lat)
		return parts[[2]int{i, s}]
	}
	send := func(ag *fakeAgent, i, s int) {
		ag.publish(run, Snapshot{Run: run, Agent: ag.id, Second: s, Part: partOf(i, s)}, "")
	}
	var want int64 // every request of the run
	for i := range ids {
		for s := 1; s <= 5; s++ {
			want += partOf(i, s).Sample.Requests
		}
	}

	started := make(chan Started, 1)
	h1 := newHooks()
	h1.onStart = func(st Started) error { started <- st; return nil }
	res1 := e1.run(context.Background(), RunSpec{Run: run, Plan: pl, Agents: pickAll(t, e1, 3)}, h1)
	var st Started
	for i, ag := range ags {
		p := <-ag.prepared
		c := ag.control()
		if i == 0 {
			select {
			case st = <-started: // called before the start went out
			default:
				t.Fatal("the start went out before OnStart")
			}
		}
		if p.Controller != e1.co.id || c.Kind != ControlStart || c.Controller != e1.co.id || c.StartAtUnixNano != st.StartAtUnixNano {
			t.Fatalf("%s prepared with %+v, control %+v", ag.id, p, c)
		}
	}
	wantSt := Started{Controller: e1.co.id, StartAtUnixNano: t0.Add(MinStartDelay).UnixNano(),
		FenceAfterMs: DefaultFenceAfter.Milliseconds(), Agents: []StartedAgent{{"a", 1}, {"b", 2}, {"c", 1}}}
	if !reflect.DeepEqual(st, wantSt) {
		t.Fatalf("OnStart got %+v, want %+v", st, wantSt)
	}
	if b, _ := json.Marshal(st); !strings.Contains(string(b), `"agents":[{"id":"a","weight":1}`) {
		t.Fatalf("Started as JSON: %s", b)
	}

	for s := 1; s <= 3; s++ {
		for i, ag := range ags {
			send(ag, i, s)
		}
	}
	var merged int64
	for _, n := range h1.mergedUpTo(t, 3) {
		merged += n
	}
	send(ags[0], 0, 4)
	send(ags[1], 1, 4)
	e1.took("a", "4")
	e1.took("b", "4")
	e1.at(3*time.Second, ags...)
	e1.at(5500*time.Millisecond, ags...) // second 4 waits for c until t0 + 7 s
	h1.none(t)
	close(e1.co.halt) // killed: no stop, no second 4
	if r := wait(t, res1); !errors.Is(r.err, errHalted) {
		t.Fatalf("first coordinator: %+v", r)
	}
	for _, ag := range ags {
		ag.noControl()
	}

	// The broker goes down with the controller and comes back on its store dir 4.5 s later.
	e1.reg.Stop()
	e1.co.Close()
	e1.b.Close()
	clk.Add(4500 * time.Millisecond)
	e2 := newEnvOn(t, dir, clk)
	if info, err := e2.co.js.StreamInfo(SnapshotStream); err != nil || info.Config.Storage != nats.FileStorage || info.State.Msgs != 11 {
		t.Fatalf("the stream after the restart: %v %+v", err, info)
	}
	var ags2 []*fakeAgent
	for i, id := range ids {
		ags2 = append(ags2, e2.agent(id, weights[i], Ready{OK: true}))
	}
	h2 := newHooks()
	h2.onStart = func(Started) error { t.Error("OnStart called by Resume"); return nil }
	res2 := e2.resume(context.Background(), RunSpec{Run: run, Plan: pl}, st, 4, h2)

	// a republishes its second 4 (its spool, unacknowledged when the broker died): a duplicate.
	b, _ := json.Marshal(Snapshot{Run: run, Agent: "a", Second: 4, Part: partOf(0, 4)})
	if ack, err := ags2[0].js.Publish(SnapshotSubject(run, "a"), b, nats.MsgId(SnapshotMsgID("", run, "a", 4, false))); err != nil || !ack.Duplicate {
		t.Fatalf("republished second 4: %v %+v", err, ack)
	}
	send(ags2[2], 2, 4)
	for i, ag := range ags2 {
		send(ag, i, 5)
	}
	for i, ag := range ags2 {
		ag.finalN(run, 6, 0, 5*partOf(i, 1).Sample.Requests)
	}
	r := wait(t, res2)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var last metrics.Sample
	for s := 4; s <= 5; s++ {
		last = h2.next(t)
		if last.ElapsedS != s || last.Requests != 8 || last.MissingShare != 0 || len(last.MissingAgents) != 0 {
			t.Fatalf("resumed second %d: %+v", s, last)
		}
		merged += last.Requests
	}
	h2.none(t)
	if r.sum.Requests != want || merged != want || r.sum.Degraded || len(r.sum.LostAgents) != 0 || r.sum.Agents != 3 {
		t.Fatalf("summary %+v (requests %d, merged %d, want %d)", r.sum, r.sum.Requests, merged, want)
	}

	// The run so far was rebuilt: second 5's p95 so far is that of seconds 1–5 merged in one go.
	whole, fresh := NewMerger(pl, ids, weights), NewMerger(pl, ids, weights)
	var p95, p95Fresh float64
	for s := 1; s <= 5; s++ {
		ps := []*SecondPart{partOf(0, s), partOf(1, s), partOf(2, s)}
		p95 = whole.Second(s, ps).P95SoFarMs
		if s >= 4 {
			p95Fresh = fresh.Second(s, ps).P95SoFarMs
		}
	}
	if last.P95SoFarMs != p95 || p95Fresh == p95 {
		t.Fatalf("second 5's p95 so far %v, the whole run's %v (seconds 4–5 alone: %v)", last.P95SoFarMs, p95, p95Fresh)
	}

	for i, ag := range ags2 {
		if got := h2.ownCounts(ag.id); !reflect.DeepEqual(got, map[int]int{1: 1, 2: 1, 3: 1, 4: 1, 5: 1}) {
			t.Fatalf("%s's seconds given by the resumed run %v", ag.id, got)
		}
		if got := h1.ownCounts(ag.id); len(got) != 4-i/2 {
			t.Fatalf("%s's seconds given by the first run %v", ag.id, got)
		}
		if len(ag.prepared) != 0 {
			t.Fatalf("%s prepared again", ag.id)
		}
		ag.noControl()
	}
}

// Resume of a run whose agents are gone (the registry has not seen them): nothing is lost and no
// second closes with a share missing before resume + ResumeGrace; at that instant the unseen
// agents are lost and the run ends with what they delivered (degraded). An agent whose final the
// stream held counts as finished. With no final at all the run's summary is the seconds its
// lost agents delivered (degraded, both lost), not a failure that keeps nothing.
func TestResumeWithAgentsGone(t *testing.T) {
	for _, tc := range []struct {
		name   string
		aFinal bool
	}{{"one finished", true}, {"none finished", false}} {
		t.Run(tc.name, func(t *testing.T) {
			const run = 43
			e := newEnv(t)
			a, b := e.publisher("a"), e.publisher("b")
			for s := 1; s <= 3; s++ {
				a.second(run, s, 3)
				b.second(run, s, 4)
			}
			if tc.aFinal {
				a.final(run, 4, 0)
			}
			resumeAt := 6 * time.Second
			e.clk.Add(resumeAt)
			st := Started{Controller: "dead", StartAtUnixNano: t0.Add(MinStartDelay).UnixNano(),
				FenceAfterMs: 10_000, Agents: []StartedAgent{{"a", 1}, {"b", 1}}}
			h := newHooks()
			res := e.resume(context.Background(), RunSpec{Run: run, Plan: testPlan(t)}, st, 3, h)
			if m := h.next(t); m.ElapsedS != 3 || m.Requests != 7 || m.MissingShare != 0 {
				t.Fatalf("second 3: %+v", m)
			}
			if tc.aFinal {
				e.took("a", "final") // replayed before the grace ends (a slow machine: not yet at second 3's merge)
			}
			e.at(resumeAt + ResumeGrace - time.Millisecond)
			h.none(t)
			select {
			case r := <-res:
				t.Fatalf("the run ended before its agents' grace: %+v", r)
			default:
			}
			if n := e.logs.count("agent lost; its share is missing from here on"); n != 0 {
				t.Fatalf("%d agents lost before the grace ended", n)
			}
			e.at(resumeAt + ResumeGrace)
			r := wait(t, res)
			h.none(t)
			if !tc.aFinal {
				// a's and b's seconds 1–3 (9 + 12)
				if r.err != nil || !r.sum.Degraded || strings.Join(r.sum.LostAgents, ",") != "a,b" || r.sum.Requests != 21 ||
					len(r.sum.ByName) != 1 || r.sum.ByName["r"].Requests != 21 {
					t.Fatalf("%v %+v", r.err, r.sum)
				}
				if !e.logs.has("every agent of the run was lost: its summary is the seconds they delivered (partial)") {
					t.Fatalf("logs %v", e.logs.all())
				}
				return
			}
			// a's final (10) and lost b's seconds 1–3 (12)
			if r.err != nil || !r.sum.Degraded || strings.Join(r.sum.LostAgents, ",") != "b" || r.sum.Requests != 22 {
				t.Fatalf("%v %+v\n%v", r.err, r.sum, e.logs.all())
			}
		})
	}
}

// A resumed run takes the seconds its agents ran while the controller was down, however far they
// are past the second it is merging again (here second 2, which b never delivered, waits until
// the replay has caught up with the stream; seconds up to 45 wait behind it), and hands those
// from `from` on to OnSecond in order, complete. The replayed second missing b's share makes the
// run degraded, as it made the first controller's.
func TestResumeTakesTheSecondsRunWhileDown(t *testing.T) {
	const run = 46
	e := newEnv(t)
	pl := compile(t, `{"name":"r","requests":[{"name":"r","url":"http://127.0.0.1:9/"}],"load":{"vus":2,"duration":"60s","graceful_stop":"1s"}}`)
	a, b := e.publisher("a"), e.publisher("b")
	for s := 1; s <= 45; s++ {
		a.second(run, s, 1)
		if s != 2 {
			b.second(run, s, 1)
		}
	}
	a.final(run, 46, 0)
	b.final(run, 46, 0)
	e.clk.Add(50 * time.Second)
	st := Started{Controller: "dead", StartAtUnixNano: t0.Add(MinStartDelay).UnixNano(), Agents: []StartedAgent{{"a", 1}, {"b", 1}}}
	h := newHooks()
	r := wait(t, e.resume(context.Background(), RunSpec{Run: run, Plan: pl}, st, 3, h))
	if r.err != nil {
		t.Fatal(r.err)
	}
	for s := 3; s <= 45; s++ {
		if m := h.next(t); m.ElapsedS != s || m.Requests != 2 || m.MissingShare != 0 {
			t.Fatalf("second %d: %+v", s, m)
		}
	}
	h.none(t)
	if n := e.logs.count("ignoring a snapshot for a second far ahead"); n != 0 {
		t.Fatalf("seconds ignored as far ahead (%d logged)", n)
	}
	if r.sum.Requests != 20 || !r.sum.Degraded || len(r.sum.LostAgents) != 0 {
		t.Fatalf("summary %+v", r.sum)
	}
}

// A resumed run prepares and starts nothing; stopping it broadcasts stop from the controller id
// the agents were prepared with (Started.Controller), and its seconds from `from` on reach
// OnSecond.
func TestResumedRunStopsAsItsController(t *testing.T) {
	const run = 44
	e := newEnv(t)
	a := e.agent("a", 1, Ready{OK: true})
	a.second(run, 1, 5)
	st := Started{Controller: "dead", StartAtUnixNano: t0.Add(MinStartDelay).UnixNano(), Agents: []StartedAgent{{"a", 1}}}
	h := newHooks()
	ctx, cancel := context.WithCancel(context.Background())
	res := e.resume(ctx, RunSpec{Run: run, Plan: testPlan(t)}, st, 1, h)
	if m := h.next(t); m.ElapsedS != 1 || m.Requests != 5 {
		t.Fatalf("second 1: %+v", m)
	}
	cancel()
	if c := a.control(); c.Kind != ControlStop || c.Run != run || c.Controller != "dead" {
		t.Fatalf("control %+v", c)
	}
	a.final(run, 2, 0)
	r := wait(t, res)
	if r.err != nil || r.sum.Requests != 10 || r.sum.Degraded {
		t.Fatalf("%v %+v", r.err, r.sum)
	}
	if len(a.prepared) != 0 {
		t.Fatal("prepared on resume")
	}
	a.noControl()
	for _, bad := range []struct {
		st   Started
		from int
	}{{Started{}, 1}, {st, 0}, {Started{Controller: "x", StartAtUnixNano: 1, Agents: []StartedAgent{{"a", 0}}}, 1}} {
		if _, err := e.co.Resume(context.Background(), RunSpec{Run: run, Plan: testPlan(t)}, bad.st, bad.from, RunHooks{}); err == nil {
			t.Fatalf("resumed %+v from %d", bad.st, bad.from)
		}
	}
}

// OnStart comes once every agent is ready, before the start: its error fails the run and the
// agents are told to stop (from spec.Controller, which they were prepared with), never started.
func TestOnStartErrorStopsTheAgents(t *testing.T) {
	e := newEnv(t)
	a := e.agent("a", 1, Ready{OK: true})
	h := newHooks()
	h.onStart = func(Started) error { return errors.New("disk full") }
	r := wait(t, e.run(context.Background(), RunSpec{Run: 45, Plan: testPlan(t), Agents: pickAll(t, e, 1), Controller: "ctl-x"}, h))
	if r.err == nil || !strings.Contains(r.err.Error(), "disk full") {
		t.Fatalf("%+v", r)
	}
	if p := <-a.prepared; p.Controller != "ctl-x" {
		t.Fatalf("prepared %+v", p)
	}
	if c := a.control(); c.Kind != ControlStop || c.Controller != "ctl-x" || !strings.Contains(c.Reason, "disk full") {
		t.Fatalf("control %+v", c)
	}
	a.noControl()
	h.none(t)
}

// A run a restarted controller cannot take over must not go on loading its target unattended
// (its agents reconnect to the restarted broker, so they never fence): a Resume that cannot
// begin — here a weight segment.New refuses — tells the run's agents to stop, from the controller
// id they were prepared with, and so does Abandon; both again every StopRepeat, so an agent that
// reconnects after the first broadcast (here: every agent) gets it; without a controller id
// nothing is sent.
func TestUnresumableRunStopsItsAgents(t *testing.T) {
	e := newEnv(t)
	st := Started{Controller: "dead", StartAtUnixNano: t0.UnixNano(), Agents: []StartedAgent{{"a", 0}}}
	if _, err := e.co.Resume(context.Background(), RunSpec{Run: 46, Plan: testPlan(t)}, st, 1, RunHooks{}); err == nil {
		t.Fatal("resumed a run with a zero weight")
	}
	e.co.Abandon(47, "dead", "its plan is not readable")
	e.co.Abandon(48, "", "no controller known")
	a := e.agent("a", 1, Ready{OK: true}) // back after both first broadcasts
	got := map[int64]Control{}
	for len(got) < 2 {
		c := a.control()
		got[c.Run] = c
	}
	if c := got[46]; c.Kind != ControlStop || c.Controller != "dead" || !strings.Contains(c.Reason, "splitting") {
		t.Fatalf("run 46: control %+v", c)
	}
	if c := got[47]; c.Kind != ControlStop || c.Controller != "dead" || c.Reason != "its plan is not readable" {
		t.Fatalf("run 47: control %+v", c) // (a stop for run 48 would have left 46's or 47's out)
	}
}

// A stop is a plain publish: an agent not connected when its run is stopped — a resumed run's
// agents reconnect to the restarted broker some time after it serves, and its user may stop it
// at once — would miss it and load its target to the plan's end. The stop is broadcast again
// every StopRepeat while an agent's final is missing, and no more once every final is in.
func TestStopIsRepeatedUntilTheFinals(t *testing.T) {
	const run = 49
	e := newEnv(t)
	st := Started{Controller: "dead", StartAtUnixNano: t0.Add(-4 * time.Second).UnixNano(), FenceAfterMs: 10_000,
		Agents: []StartedAgent{{"a", 1}}}
	ctx, cancel := context.WithCancel(context.Background())
	res := e.resume(ctx, RunSpec{Run: run, Plan: testPlan(t)}, st, 1, newHooks())
	cancel()
	for deadline := time.Now().Add(10 * time.Second); e.logs.count("run stopped; waiting for the agents' final messages") == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the resumed run was not stopped")
		}
		time.Sleep(time.Millisecond)
	}
	a := e.agent("a", 1, Ready{OK: true}) // back after the stop was broadcast
	e.at(StopRepeat - time.Millisecond)
	a.noControl()
	e.at(StopRepeat)
	if c := a.control(); c.Kind != ControlStop || c.Run != run || c.Controller != "dead" || c.Reason != "stopped" {
		t.Fatalf("control %+v", c)
	}
	a.final(run, 5, t0.Add(-4*time.Second).UnixNano())
	e.took("a", "final")
	e.at(2 * StopRepeat)
	a.noControl()
	e.at(ResumeGrace + EndMargin)
	r := wait(t, res)
	if r.err != nil || r.sum.Requests != 10 {
		t.Fatalf("%v %+v", r.err, r.sum)
	}
}

// A run that ended without one agent's final (lost: it was reconnecting to a restarted broker
// past ResumeGrace) repeats its stop no more; that agent, back and still loading the target,
// says so in its presence beats: the coordinator tells it to stop, as the run's controller,
// once per StopRepeat — not for a beat within endedGrace of the end (sent before it), not for
// another run, not once the run is forgotten past endedMax ended runs.
func TestLateAgentOfAnEndedRunIsStopped(t *testing.T) {
	const run = 50
	e := newEnv(t)
	st := Started{Controller: "dead", StartAtUnixNano: t0.Add(-4 * time.Second).UnixNano(), FenceAfterMs: 10_000,
		Agents: []StartedAgent{{"a", 1}}}
	res := e.resume(context.Background(), RunSpec{Run: run, Plan: testPlan(t)}, st, 1, newHooks())
	for deadline := time.Now().Add(10 * time.Second); e.logs.count("resuming a run over agents") == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the run was not resumed")
		}
		time.Sleep(time.Millisecond)
	}
	e.at(ResumeGrace + EndMargin)
	if r := wait(t, res); r.err == nil || !strings.Contains(r.err.Error(), "lost: a") {
		t.Fatalf("%+v", r)
	}
	a := e.agent("a", 1, Ready{OK: true}) // back after the run's end
	beat := func(p bus.Presence) {
		b, _ := json.Marshal(p)
		e.co.onPresence(&nats.Msg{Subject: bus.PresenceSubject("a"), Data: b})
		if err := e.co.conn.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	running := bus.Presence{State: "running", Run: run, Cores: 1}
	beat(running) // within endedGrace of the end
	e.clk.Add(endedGrace)
	beat(bus.Presence{State: "idle", Cores: 1})
	beat(bus.Presence{State: "running", Run: run + 1, Cores: 1})
	a.noControl()
	want := Control{Kind: ControlStop, Run: run, Controller: "dead", Reason: endedReason}
	beat(running)
	if c := a.control(); c != want {
		t.Fatalf("control %+v", c)
	}
	beat(running)
	e.clk.Add(StopRepeat - time.Millisecond)
	beat(running)
	a.noControl()
	e.clk.Add(time.Millisecond)
	beat(running)
	if c := a.control(); c != want {
		t.Fatalf("again: control %+v", c)
	}
	if n := e.logs.count("an agent still runs a run that has ended; telling it to stop"); n != 1 {
		t.Fatalf("logged %d times", n)
	}
	for i := range endedMax {
		e.co.ended(int64(1000+i), "other")
	}
	e.clk.Add(StopRepeat)
	beat(running)
	a.noControl()
}

// A restarted controller knows the runs that ended before it from its lookup (the server's
// store): an agent beating that it runs one is told to stop from the id it was prepared with;
// a run the lookup says is not ended is asked about again only after lookupEvery.
func TestAgentOfARunEndedBeforeARestartIsStopped(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	asked := map[int64]int{}
	e.co.SetEndedLookup(func(run int64) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		asked[run]++
		return "old-ctl", run == 60
	})
	a := e.agent("a", 1, Ready{OK: true})
	beat := func(run int64) {
		b, _ := json.Marshal(bus.Presence{State: "running", Run: run, Cores: 1})
		e.co.onPresence(&nats.Msg{Subject: bus.PresenceSubject("a"), Data: b})
		if err := e.co.conn.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	beat(61)
	beat(61)
	a.noControl()
	beat(60)
	if c := a.control(); c != (Control{Kind: ControlStop, Run: 60, Controller: "old-ctl", Reason: endedReason}) {
		t.Fatalf("control %+v", c)
	}
	e.clk.Add(lookupEvery)
	beat(61)
	beat(60) // lookupEvery after the last stop: told again
	if c := a.control(); c.Run != 60 {
		t.Fatalf("control %+v", c)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked[61] != 2 || asked[60] != 1 {
		t.Errorf("looked up %v, want run 61 twice (once per lookupEvery) and 60 once (then known)", asked)
	}
}
