package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// env is a real embedded broker with the registry and a coordinator on a fake clock the test
// moves; ticks signals each time a run has looked at the clock.
type env struct {
	t     *testing.T
	b     *bus.Bus
	reg   *Registry
	clk   *testutil.Clock
	co    *Coordinator
	ticks chan struct{}
	ended chan struct{} // closed when the run returns
	logs  *recLog

	mu    sync.Mutex
	taken map[string]bool // "agent/second" and "agent/final" the run has taken in
}

// took waits until the run has taken in agent's snapshot of second ("final" for its final): the
// clock may then move past a deadline without racing the consumer.
func (e *env) took(agent string, second string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.mu.Lock()
		ok := e.taken[agent+"/"+second]
		e.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the run never took %s's %s", agent, second)
		}
		time.Sleep(time.Millisecond)
	}
}

var t0 = time.Unix(1_800_000_000, 0)

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, "", testutil.NewClock(t0))
}

// newEnvOn is newEnv on a broker with JetStream's file store in storeDir ("": in memory) and the
// clock clk.
func newEnvOn(t *testing.T, storeDir string, clk *testutil.Clock) *env {
	t.Helper()
	b, err := bus.Start(bus.Config{StoreDir: storeDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	e := &env{t: t, b: b, clk: clk, ticks: make(chan struct{}, 1), logs: &recLog{}}
	ctl, err := StartController(b, "1.2.3", e.clk.Now, slog.New(e.logs), FileStore(storeDir != ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctl.Close)
	e.reg, e.co = ctl.Registry, ctl.Coordinator
	e.taken = map[string]bool{}
	e.co.takeHook = func(agent string, s *Snapshot) {
		k := fmt.Sprint(s.Second)
		if s.Final != nil {
			k = "final"
		}
		e.mu.Lock()
		e.taken[agent+"/"+k] = true
		e.mu.Unlock()
	}
	e.co.tick = 5 * time.Millisecond
	e.co.tickHook = func() {
		select {
		case e.ticks <- struct{}{}:
		default:
		}
	}
	return e
}

// at moves the clock to t0+d and waits until the run has looked at it (two ticks: the second
// began after the first ended, so after the move).
func (e *env) at(d time.Duration, beating ...*fakeAgent) {
	e.t.Helper()
	e.clk.Add(t0.Add(d).Sub(e.clk.Now()))
	for _, a := range beating {
		a.beat()
	}
	for range 2 {
		select {
		case <-e.ticks:
		case <-e.ended:
			return
		case <-time.After(10 * time.Second):
			e.t.Fatal("the run stopped looking at its clock")
		}
	}
}

// recLog records log messages (expected warnings stay out of the test log).
type recLog struct {
	mu    sync.Mutex
	msgs  []string
	lines []string // each message with its attributes ("msg k=v k=v")
}

func (l *recLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *recLog) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	l.mu.Lock()
	l.msgs = append(l.msgs, r.Message)
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	return nil
}

// has says whether a line (message and attributes) holds s.
func (l *recLog) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.lines, func(line string) bool { return strings.Contains(line, s) })
}

// all is every line so far.
func (l *recLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}
func (l *recLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *recLog) WithGroup(string) slog.Handler      { return l }
func (l *recLog) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

// fakeAgent is an agent's side of the protocol played by the test on a real agent connection
// (the agents' permissions apply): it joins, answers Prepare with ready, records the run's
// control messages and publishes the snapshots the test gives it over JetStream.
type fakeAgent struct {
	e        *env
	id       string
	nc       *nats.Conn
	js       nats.JetStreamContext
	prepared chan Prepare
	ctl      chan Control
}

func (e *env) agent(id string, weight int, ready Ready) *fakeAgent {
	t := e.t
	t.Helper()
	nc, err := e.b.LocalAgent(id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	a := &fakeAgent{e: e, id: id, nc: nc, prepared: make(chan Prepare, 1), ctl: make(chan Control, 8)}
	if a.js, err = nc.JetStream(); err != nil {
		t.Fatal(err)
	}
	h, _ := json.Marshal(bus.Hello{ID: id, Protocol: bus.Protocol, Cores: 1, Weight: weight, Histogram: Geometry})
	m, err := nc.Request(bus.SubjectHello, h, 5*time.Second)
	if err != nil || !strings.Contains(string(m.Data), `"ok":true`) {
		t.Fatalf("hello: %v %s", err, m.Data)
	}
	if _, err := nc.Subscribe(PrepareSubject(id), func(m *nats.Msg) {
		var p Prepare
		_ = json.Unmarshal(m.Data, &p)
		a.prepared <- p
		b, _ := json.Marshal(ready)
		_ = m.Respond(b)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe("volley.run.*.ctl", func(m *nats.Msg) {
		var c Control
		_ = json.Unmarshal(m.Data, &c)
		a.ctl <- c
	}); err != nil {
		t.Fatal(err)
	}
	a.beat()
	return a
}

// beat publishes a presence and waits until the registry has it at the clock's time.
func (a *fakeAgent) beat() {
	a.e.t.Helper()
	a.beatWith(bus.Presence{State: "idle", Cores: 1})
}

// beatWith is beat with presence p.
func (a *fakeAgent) beatWith(p bus.Presence) {
	t := a.e.t
	t.Helper()
	b, _ := json.Marshal(p)
	if err := a.nc.Publish(bus.PresenceSubject(a.id), b); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		listed := slices.ContainsFunc(a.e.reg.List(), func(l Agent) bool { return l.ID == a.id })
		if s, ok := a.e.reg.Seen(a.id); ok && s.Equal(a.e.clk.Now()) && listed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("presence of %s not registered", a.id)
		}
		time.Sleep(time.Millisecond)
	}
}

// publish sends snapshot s of run with message id msgID ("": its SnapshotMsgID).
func (a *fakeAgent) publish(run int64, s Snapshot, msgID string) {
	a.e.t.Helper()
	b, _ := json.Marshal(s)
	a.raw(run, b, cmpOr(msgID, SnapshotMsgID("", run, a.id, s.Second, s.Final != nil)))
}

func (a *fakeAgent) raw(run int64, b []byte, msgID string) {
	a.e.t.Helper()
	if _, err := a.js.Publish(SnapshotSubject(run, a.id), b, nats.MsgId(msgID)); err != nil {
		a.e.t.Fatalf("%s publishing: %v", a.id, err)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// second is agent a's second s of run with n requests.
func (a *fakeAgent) second(run int64, s int, n int64) {
	a.e.t.Helper()
	a.publish(run, Snapshot{Run: run, Agent: a.id, Second: s,
		Part: NewSecondPart(metrics.Sample{ElapsedS: s, Requests: n, Successes: n})}, "")
}

func (a *fakeAgent) final(run int64, s int, started int64) {
	a.e.t.Helper()
	a.finalN(run, s, started, 10)
}

// finalN is agent a's final message of run at second s with n requests (all successes).
func (a *fakeAgent) finalN(run int64, s int, started, n int64) {
	a.e.t.Helper()
	a.publish(run, Snapshot{Run: run, Agent: a.id, Second: s, StartedUnixNano: started,
		Final: &FinalPart{State: &engine.Final{DurationS: float64(s - 1), Requests: n, Successes: n,
			Names: []engine.FinalName{{Name: "r", Successes: n}}}}}, "")
}

// control waits for the agent's next control message.
func (a *fakeAgent) control() Control {
	a.e.t.Helper()
	select {
	case c := <-a.ctl:
		return c
	case <-time.After(15 * time.Second):
		a.e.t.Fatalf("%s got no control message", a.id)
	}
	return Control{}
}

// hooks collects a run's merged and per-agent seconds.
type hooks struct {
	merged  chan metrics.Sample
	mu      sync.Mutex
	own     map[string]map[int]int // agent → second → times given
	onStart func(Started) error    // RunHooks.OnStart (nil: none)
}

func newHooks() *hooks {
	return &hooks{merged: make(chan metrics.Sample, 100), own: map[string]map[int]int{}}
}

func (h *hooks) RunHooks() RunHooks {
	return RunHooks{
		OnStart:  h.onStart,
		OnSecond: func(s metrics.Sample) { h.merged <- s },
		OnAgentSecond: func(agent string, s metrics.Sample) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.own[agent] == nil {
				h.own[agent] = map[int]int{}
			}
			h.own[agent][s.ElapsedS]++
		},
	}
}

func (h *hooks) next(t *testing.T) metrics.Sample {
	t.Helper()
	select {
	case s := <-h.merged:
		return s
	case <-time.After(15 * time.Second):
		t.Fatal("no merged second")
	}
	return metrics.Sample{}
}

func (h *hooks) none(t *testing.T) {
	t.Helper()
	select {
	case s := <-h.merged:
		t.Fatalf("second %d merged early: %+v", s.ElapsedS, s)
	default:
	}
}

func (h *hooks) ownCounts(agent string) map[int]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[int]int{}
	for k, v := range h.own[agent] {
		out[k] = v
	}
	return out
}

func testPlan(t *testing.T) *plan.Compiled {
	t.Helper()
	c, err := plan.ParseCompiled([]byte(`{"name":"r","requests":[{"name":"r","url":"http://127.0.0.1:9/"}],"load":{"vus":2,"duration":"5s","graceful_stop":"1s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type result struct {
	sum *metrics.Summary
	err error
}

func (e *env) run(ctx context.Context, spec RunSpec, h *hooks) <-chan result {
	return e.start(func() (*metrics.Summary, error) { return e.co.Run(ctx, spec, h.RunHooks()) })
}

// start runs f (the coordinator's Run or Resume) and returns its result once it ends.
func (e *env) start(f func() (*metrics.Summary, error)) <-chan result {
	out := make(chan result, 1)
	e.ended = make(chan struct{})
	go func() {
		s, err := f()
		out <- result{s, err}
		close(e.ended)
	}()
	return out
}

func wait(t *testing.T, res <-chan result) result {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end")
	}
	return result{}
}

func pickAll(t *testing.T, e *env, n int) []Agent {
	t.Helper()
	ags, err := e.reg.Pick(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ags
}

// Second s closes when every live agent delivered it, or exactly at start_at + s + 2 s with the
// missing agent's share missing; once that agent's presence expires it is lost, every later
// second carries its share as missing, earlier seconds stay complete and the run is degraded.
func TestSecondsCloseOnTimeWithAMissingAgent(t *testing.T) {
	e := newEnv(t)
	a, b := e.agent("a", 1, Ready{OK: true, RTTMs: 0.5}), e.agent("b", 1, Ready{OK: true, RTTMs: 0.4})
	h := newHooks()
	res := e.run(context.Background(), RunSpec{Run: 7, Plan: testPlan(t), Agents: pickAll(t, e, 2)}, h)

	for i, ag := range []*fakeAgent{a, b} {
		p := <-ag.prepared
		if p.Run != 7 || p.Segment.Part != i || len(p.Segment.Weights) != 2 || strings.Join(p.Agents, ",") != "a,b" || p.FenceAfterMs != DefaultFenceAfter.Milliseconds() {
			t.Fatalf("%s prepared with %+v", ag.id, p)
		}
		var pl plan.Plan
		if err := json.Unmarshal(p.Plan, &pl); err != nil || pl.Load.VUs != 2 {
			t.Fatalf("plan %s: %v", p.Plan, err)
		}
		c := ag.control()
		if c.Kind != ControlStart || c.Run != 7 || c.StartAtUnixNano != t0.Add(MinStartDelay).UnixNano() {
			t.Fatalf("%s control %+v, want a start at t0 + 1 s", ag.id, c)
		}
	}
	start := MinStartDelay
	a.publish(7, Snapshot{Run: 7, Agent: "a", Second: 1, StartedUnixNano: t0.Add(start + time.Millisecond).UnixNano(),
		Part: NewSecondPart(metrics.Sample{ElapsedS: 1, Requests: 10, Successes: 10})}, "")
	b.publish(7, Snapshot{Run: 7, Agent: "b", Second: 1, StartedUnixNano: t0.Add(start + 4*time.Millisecond).UnixNano(),
		Part: NewSecondPart(metrics.Sample{ElapsedS: 1, Requests: 10, Successes: 10})}, "")
	a.second(7, 2, 10)
	b.second(7, 2, 10)
	for s := 1; s <= 2; s++ { // complete: merged at once, before any deadline
		if m := h.next(t); m.ElapsedS != s || m.Requests != 20 || m.MissingShare != 0 || len(m.MissingAgents) != 0 {
			t.Fatalf("second %d: %+v", s, m)
		}
	}
	for s := 3; s <= 5; s++ {
		a.second(7, s, 10)
	}
	a.final(7, 6, t0.Add(start+time.Millisecond).UnixNano())
	e.took("a", "5")
	e.took("a", "final")

	e.at(4*time.Second, a, b)
	e.at(start+3*time.Second+SecondGrace-time.Millisecond, a, b)
	h.none(t) // second 3 waits for b until its grace ends…
	e.at(start + 3*time.Second + SecondGrace)
	m := h.next(t) // …and not a moment longer
	if m.ElapsedS != 3 || m.MissingShare != 0.5 || strings.Join(m.MissingAgents, ",") != "b" {
		t.Fatalf("second 3: %+v", m)
	}
	h.none(t) // seconds 4 and 5 are not due yet

	// b stops beating: past the presence TTL it is lost; the rest merges without it.
	e.at(8500*time.Millisecond, a) // seconds 4 and 5 due, 6 (if b had it) not yet
	e.at(11500*time.Millisecond, a)
	for s := 4; s <= 5; s++ {
		if m := h.next(t); m.ElapsedS != s || m.MissingShare != 0.5 || strings.Join(m.MissingAgents, ",") != "b" {
			t.Fatalf("second %d: %+v", s, m)
		}
	}
	r := wait(t, res)
	if r.err != nil {
		t.Fatal(r.err)
	}
	// a's final (10) and the 20 requests of lost b's seconds 1–2
	if !r.sum.Degraded || strings.Join(r.sum.LostAgents, ",") != "b" || r.sum.Agents != 2 || r.sum.Requests != 30 ||
		r.sum.StartSkewMs == nil || *r.sum.StartSkewMs != 3 {
		t.Fatalf("summary %+v", r.sum)
	}
	h.none(t)
	if got := h.ownCounts("a"); len(got) != 5 || got[5] != 1 {
		t.Fatalf("a's own seconds %v", got)
	}
	if got := h.ownCounts("b"); len(got) != 2 || got[1] != 1 || got[2] != 1 {
		t.Fatalf("b's own seconds %v", got)
	}
}

// A second published twice (same message id: the stream drops it; another id: the coordinator
// does) reaches OnAgentSecond once; a late second goes to OnAgentSecond but is not merged again;
// malformed snapshots, another run's and ones past the plan's last second are ignored and logged once.
func TestSnapshotsDedupedLateAndHostile(t *testing.T) {
	e := newEnv(t)
	a, b := e.agent("a", 2, Ready{OK: true}), e.agent("b", 1, Ready{OK: true})
	h := newHooks()
	res := e.run(context.Background(), RunSpec{Run: 9, Plan: testPlan(t), Agents: pickAll(t, e, 2)}, h)
	for _, ag := range []*fakeAgent{a, b} {
		<-ag.prepared
		ag.control()
	}
	a.second(9, 1, 5)
	a.second(9, 1, 5)
	a.publish(9, Snapshot{Run: 9, Agent: "a", Second: 1, Part: NewSecondPart(metrics.Sample{ElapsedS: 1, Requests: 5})}, "again")
	a.raw(9, []byte(`{"run":9,"agent":"a","second":`), "junk-1")
	a.raw(9, []byte(`null`), "junk-2")
	a.publish(9, Snapshot{Run: 8, Agent: "a", Second: 2, Part: NewSecondPart(metrics.Sample{})}, "other-run")
	a.publish(9, Snapshot{Run: 9, Agent: "b", Second: 2, Part: NewSecondPart(metrics.Sample{})}, "other-agent")
	for _, s := range []int{1 << 30, 1 << 30, 1000} {
		a.second(9, s, 1)
	}
	e.took("a", "1000")

	e.at(MinStartDelay+time.Second+SecondGrace, a, b) // second 1 closes without b
	m := h.next(t)
	if m.ElapsedS != 1 || m.Requests != 5 || strings.Join(m.MissingAgents, ",") != "b" || m.MissingShare < 0.33 || m.MissingShare > 0.34 {
		t.Fatalf("second 1: %+v", m)
	}
	b.second(9, 1, 5) // late: stored, not merged again
	b.second(9, 2, 5)
	a.second(9, 2, 5)
	a.final(9, 3, 0)
	b.final(9, 3, 0)
	if m := h.next(t); m.ElapsedS != 2 || m.Requests != 10 || m.MissingShare != 0 {
		t.Fatalf("second 2: %+v", m)
	}
	r := wait(t, res)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !r.sum.Degraded || len(r.sum.LostAgents) != 0 || r.sum.StartSkewMs != nil || r.sum.Requests != 20 || r.sum.Agents != 2 {
		t.Fatalf("summary %+v", r.sum)
	}
	h.none(t)
	for _, id := range []string{"a", "b"} {
		if got := h.ownCounts(id); len(got) != 2 || got[1] != 1 || got[2] != 1 {
			t.Fatalf("%s's own seconds %v", id, got)
		}
	}
	if n := e.logs.count("ignoring a snapshot past the plan's last second"); n != 1 {
		t.Fatalf("past-the-plan snapshots logged %d times", n)
	}
	if n := e.logs.count("ignoring a malformed snapshot"); n != 1 {
		t.Fatalf("malformed snapshots logged %d times", n)
	}
}

// An agent refusing Prepare fails the run with an error naming it and its reason; the agents
// that said ready are told to stop.
func TestPrepareRefusalNamesTheAgent(t *testing.T) {
	e := newEnv(t)
	const why = `the plan sends to "example.com", which is not in this agent's --allow-target list (127.0.0.1)`
	// (an agent names itself first in its refusals; the error says its name once)
	a, _ := e.agent("a", 1, Ready{OK: true}), e.agent("b", 1, Ready{Error: "agent b: " + why})
	h := newHooks()
	r := wait(t, e.run(context.Background(), RunSpec{Run: 3, Plan: testPlan(t), Agents: pickAll(t, e, 2)}, h))
	var ref *RefusedError
	if !errors.As(r.err, &ref) || ref.Agent != "b" || r.err.Error() != `agent "b" refused the run: `+why {
		t.Fatalf("err %v", r.err)
	}
	if n := e.logs.count("the run could not start over its agents"); n != 1 {
		t.Fatalf("the refusal logged %d times", n)
	}
	if c := a.control(); c.Kind != ControlStop || c.Run != 3 || !strings.Contains(c.Reason, why) {
		t.Fatalf("a got %+v, want a stop", c)
	}
	h.none(t)
	// The agents are free for the next run.
	if err := e.co.claim(4, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
}

// Pick takes n idle agents, or every idle agent with the labels, by id; too few is a *PickError
// saying what was asked and what is there.
func TestPick(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{"c", "a", "b"} {
		e.agent(id, 1, Ready{OK: true})
	}
	ags, err := e.reg.Pick(2, nil)
	if err != nil || len(ags) != 2 || ags[0].ID != "a" || ags[1].ID != "b" {
		t.Fatalf("%+v %v", ags, err)
	}
	e.reg.mu.Lock()
	e.reg.agents["b"].Labels = map[string]string{"zone": "x"}
	e.reg.agents["c"].Labels = map[string]string{"zone": "x"}
	e.reg.agents["c"].State = "running"
	e.reg.mu.Unlock()
	if ags, err := e.reg.Pick(0, map[string]string{"zone": "x"}); err != nil || len(ags) != 1 || ags[0].ID != "b" {
		t.Fatalf("%+v %v", ags, err)
	}
	_, err = e.reg.Pick(3, nil)
	var pe *PickError
	if !errors.As(err, &pe) || pe.Available != 2 || err.Error() != "not enough idle agents: 3 asked for, 2 idle" {
		t.Fatalf("%v", err)
	}
	_, err = e.reg.Pick(0, map[string]string{"zone": "y"})
	if err == nil || err.Error() != "not enough idle agents: at least one asked for with labels zone=y, 0 idle" {
		t.Fatalf("%v", err)
	}
}

// A hook that panics fails the run (not the server) and the agents are told to stop.
func TestPanickingHookStopsTheRun(t *testing.T) {
	e := newEnv(t)
	a := e.agent("a", 1, Ready{OK: true})
	res := make(chan error, 1)
	go func() {
		_, err := e.co.Run(context.Background(), RunSpec{Run: 5, Plan: testPlan(t), Agents: pickAll(t, e, 1)},
			RunHooks{OnAgentSecond: func(string, metrics.Sample) { panic("sink broke") }})
		res <- err
	}()
	<-a.prepared
	if c := a.control(); c.Kind != ControlStart {
		t.Fatalf("%+v", c)
	}
	a.second(5, 1, 1)
	select {
	case err := <-res:
		if err == nil || !strings.Contains(err.Error(), "sink broke") {
			t.Fatalf("err %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the run went on")
	}
	if c := a.control(); c.Kind != ControlStop || !strings.Contains(c.Reason, "sink broke") {
		t.Fatalf("%+v", c)
	}
}

// Cancelling the run's context broadcasts stop; the run then waits for the finals at most the
// graceful stop + EndMargin: an agent still beating but silent by then is lost.
func TestStopWaitsForFinalsBounded(t *testing.T) {
	e := newEnv(t)
	a, b := e.agent("a", 1, Ready{OK: true}), e.agent("b", 1, Ready{OK: true})
	h := newHooks()
	ctx, cancel := context.WithCancel(context.Background())
	res := e.run(ctx, RunSpec{Run: 11, Plan: testPlan(t), Agents: pickAll(t, e, 2)}, h)
	for _, ag := range []*fakeAgent{a, b} {
		<-ag.prepared
		ag.control()
	}
	a.second(11, 1, 3)
	b.second(11, 1, 4)
	if m := h.next(t); m.ElapsedS != 1 || m.Requests != 7 {
		t.Fatalf("second 1: %+v", m)
	}
	e.at(1500*time.Millisecond, a, b)
	cancel()
	for _, ag := range []*fakeAgent{a, b} {
		if c := ag.control(); c.Kind != ControlStop || c.Run != 11 {
			t.Fatalf("%s got %+v, want a stop", ag.id, c)
		}
	}
	a.final(11, 2, 0)
	e.took("a", "final")
	grace := time.Second // testPlan's graceful_stop
	e.at(4*time.Second, a, b)
	e.at(1500*time.Millisecond+grace+EndMargin-time.Millisecond, a, b)
	select {
	case r := <-res:
		t.Fatalf("the run ended before its bound: %+v", r)
	default:
	}
	// Seconds 2 and 3 (b's, if it had them: the stop 0.5 s in + 1 s of graceful stop) merged at
	// their deadlines without b; none after.
	for s := 2; s <= 3; s++ {
		if m := h.next(t); m.ElapsedS != s || strings.Join(m.MissingAgents, ",") != "b" {
			t.Fatalf("second %d: %+v", s, m)
		}
	}
	h.none(t)
	e.at(1500*time.Millisecond+grace+EndMargin, a, b)
	r := wait(t, res)
	if r.err != nil {
		t.Fatal(r.err)
	}
	// a's final (10) and lost b's second 1 (4)
	if !r.sum.Degraded || strings.Join(r.sum.LostAgents, ",") != "b" || r.sum.Requests != 14 {
		t.Fatalf("summary %+v", r.sum)
	}
	h.none(t)
}
