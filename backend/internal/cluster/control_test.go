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

	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// changer is a fake agent's side of live control: it records each change it is asked and
// answers as the test set (nil: no answer at all).
type changer struct {
	asked  chan Control
	mu     sync.Mutex
	answer func(Control) *ControlReply
}

func (a *fakeAgent) changes() *changer {
	a.e.t.Helper()
	c := &changer{asked: make(chan Control, 8)}
	if _, err := a.nc.Subscribe(ChangeSubject(a.id), func(m *nats.Msg) {
		var ctl Control
		_ = json.Unmarshal(m.Data, &ctl)
		c.asked <- ctl
		c.mu.Lock()
		f := c.answer
		c.mu.Unlock()
		if r := f(ctl); r != nil {
			b, _ := json.Marshal(r)
			_ = m.Respond(b)
		}
	}); err != nil {
		a.e.t.Fatal(err)
	}
	if err := a.nc.Flush(); err != nil {
		a.e.t.Fatal(err)
	}
	return c
}

// will sets the answer to the next changes: OK from from, or err's refusal (ChangeReply), or none
// when silent.
func (c *changer) will(id string, from float64, err error, silent bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answer = func(Control) *ControlReply {
		if silent {
			return nil
		}
		r := ChangeReply(id, from, err)
		return &r
	}
}

// got is the change the agent was asked last (it must have been asked one).
func (c *changer) got(t *testing.T) Control {
	t.Helper()
	select {
	case ctl := <-c.asked:
		return ctl
	default:
		t.Fatal("the agent was not asked")
	}
	return Control{}
}

// Live control over the bus: the run's agents are each asked on their own change subject with the
// run-wide value and who asked; the change is recorded once — one event in the merged second it
// happened in (the agents' own copies in their seconds and finals are not added up) and in the
// summary — and the caller gets it, or, when an agent did not apply it, an error naming that agent
// (refused, or no answer within the timeout) and those that did. A run not started, or ended, is
// not running.
func TestLiveControlOverTheBus(t *testing.T) {
	e := newEnv(t)
	e.co.ctlTimeout = 300 * time.Millisecond
	a, b := e.agent("a", 1, Ready{OK: true}), e.agent("b", 1, Ready{OK: true})
	ca, cb := a.changes(), b.changes()
	vus, rate := 5, 40.0
	ctx := context.Background()
	if _, err := e.co.Control(ctx, 7, Change{VUs: &vus, By: "ann"}); !errors.Is(err, engine.ErrNotRunning) {
		t.Fatalf("before the run: %v, want ErrNotRunning", err)
	}

	h := newHooks()
	res := e.run(ctx, RunSpec{Run: 7, Plan: testPlan(t), Agents: pickAll(t, e, 2)}, h)
	var controller string
	for _, ag := range []*fakeAgent{a, b} {
		controller = (<-ag.prepared).Controller
		ag.control() // start, at t0 + 1 s
	}
	a.second(7, 1, 10)
	b.second(7, 1, 10)
	if s := h.next(t); s.ElapsedS != 1 || len(s.Events) != 0 {
		t.Fatalf("second 1: %+v", s)
	}

	// Both apply it: the event is the controller's, at its clock (1.5 s after start_at).
	e.at(2500*time.Millisecond, a, b)
	ca.will("a", 2, nil, false)
	cb.will("b", 2, nil, false)
	ev1, err := e.co.Control(ctx, 7, Change{VUs: &vus, By: "ann"})
	want1 := metrics.RunEvent{T: t0.Add(2500 * time.Millisecond).UnixMilli(), ElapsedS: 1.5, Kind: "vus", From: 2, To: 5, By: "ann"}
	if err != nil || ev1 != want1 {
		t.Fatalf("Control: %+v %v, want %+v", ev1, err, want1)
	}
	for _, c := range []*changer{ca, cb} {
		if got := c.got(t); got.Kind != ControlSetVUs || got.Run != 7 || got.Controller != controller || got.VUs == nil || *got.VUs != 5 || got.Rate != nil || got.By != "ann" {
			t.Errorf("asked %+v", got)
		}
	}
	// Each agent's own second 2 holds its engine's copy of the change.
	own := func(ag *fakeAgent, s int, evs ...metrics.RunEvent) {
		ag.publish(7, Snapshot{Run: 7, Agent: ag.id, Second: s,
			Part: NewSecondPart(metrics.Sample{ElapsedS: s, Requests: 10, Successes: 10, Events: evs})}, "")
	}
	own(a, 2, want1)
	own(b, 2, want1)
	if s := h.next(t); s.ElapsedS != 2 || !reflect.DeepEqual(s.Events, []metrics.RunEvent{want1}) {
		t.Fatalf("second 2 events %+v, want the change once", s.Events)
	}

	// b refuses a rate change that a applied: the change is recorded, the error names b and a (and
	// is not "not controllable": the run's load did change).
	e.at(3500*time.Millisecond, a, b)
	cb.will("b", 0, engine.ErrNotControllable, false)
	ev2, err := e.co.Control(ctx, 7, Change{Rate: &rate, By: "bob"})
	var ce *ControlError
	if !errors.As(err, &ce) || ce.Agent != "b" || !reflect.DeepEqual(ce.Applied, []string{"a"}) || errors.Is(err, engine.ErrNotControllable) ||
		!strings.Contains(err.Error(), `agent "b" did not apply the change: agent b: the run's load cannot be changed this way`) {
		t.Fatalf("a change b refused: %v", err)
	}
	want2 := metrics.RunEvent{T: t0.Add(3500 * time.Millisecond).UnixMilli(), ElapsedS: 2.5, Kind: "rate", From: 2, To: 40, By: "bob"}
	if ev2 != want2 {
		t.Errorf("event %+v, want %+v", ev2, want2)
	}
	if got := cb.got(t); got.Kind != ControlSetRate || got.Rate == nil || *got.Rate != 40 || got.VUs != nil {
		t.Errorf("asked %+v", got)
	}
	ca.got(t)

	// Every agent refuses a value out of range: the agents' field error, nothing recorded.
	ca.will("a", 0, &plan.ValidationError{Fields: map[string]string{"vus": "must be between 0 and 100000 VUs"}}, false)
	cb.will("b", 0, &plan.ValidationError{Fields: map[string]string{"vus": "must be between 0 and 100000 VUs"}}, false)
	var ve *plan.ValidationError
	if _, err := e.co.Control(ctx, 7, Change{VUs: &vus}); !errors.As(err, &ve) || ve.Fields["vus"] == "" {
		t.Errorf("a value every agent refuses: %v", err)
	}
	// a does not answer, b refuses: the error names a (first in part order) and the timeout.
	ca.will("a", 0, nil, true)
	began := time.Now()
	_, err = e.co.Control(ctx, 7, Change{VUs: &vus})
	if !errors.As(err, &ce) || ce.Agent != "a" || len(ce.Applied) != 0 || !strings.Contains(err.Error(), "did not answer within 300ms") {
		t.Errorf("a silent agent: %v", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("a silent agent held the change %s", d)
	}
	for _, c := range []*changer{ca, cb} {
		c.got(t)
		c.got(t)
	}

	own(a, 3, want2)
	own(b, 3) // b never applied it
	if s := h.next(t); s.ElapsedS != 3 || !reflect.DeepEqual(s.Events, []metrics.RunEvent{want2}) {
		t.Fatalf("second 3 events %+v, want the rate change once", s.Events)
	}
	a.second(7, 4, 10)
	b.second(7, 4, 10)
	for _, ag := range []*fakeAgent{a, b} {
		evs := []metrics.RunEvent{want1, want2}
		if ag == b {
			evs = evs[:1]
		}
		ag.publish(7, Snapshot{Run: 7, Agent: ag.id, Second: 5, StartedUnixNano: t0.Add(time.Second).UnixNano(),
			Final: &FinalPart{State: &engine.Final{DurationS: 4, Requests: 40, Successes: 40, Events: evs}}}, "")
	}
	r := wait(t, res)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if s := h.next(t); s.ElapsedS != 4 || len(s.Events) != 0 {
		t.Errorf("second 4: %+v", s)
	}
	if !reflect.DeepEqual(r.sum.Events, []metrics.RunEvent{want1, want2}) {
		t.Errorf("summary events %+v, want each change once", r.sum.Events)
	}
	if _, err := e.co.Control(ctx, 7, Change{VUs: &vus}); !errors.Is(err, engine.ErrNotRunning) {
		t.Errorf("after the run: %v, want ErrNotRunning", err)
	}
}
