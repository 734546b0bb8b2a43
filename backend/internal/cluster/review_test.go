package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/plan"
)

// A run stopped before its agents sent anything ends with an empty summary (no request, no
// second, the agents count), as an engine stopped at once does — not an error that makes it a
// failed run: stopped before Prepare was answered (the agents are told to stop), and stopped
// between the start broadcast and the start instant (each agent's final has no engine state).
func TestStoppedBeforeTheStartIsAnEmptyRun(t *testing.T) {
	e := newEnv(t)
	a, b := e.agent("a", 1, Ready{OK: true}), e.agent("b", 1, Ready{OK: true})

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stopped before the run began: Prepare is never answered
	h := newHooks()
	r := wait(t, e.run(ctx, RunSpec{Run: 5, Plan: testPlan(t), Agents: pickAll(t, e, 2)}, h))
	<-e.ended // before the next run makes its own
	if r.err != nil || r.sum == nil || r.sum.Requests != 0 || r.sum.Seconds != 0 || r.sum.Agents != 2 || r.sum.Events == nil {
		t.Fatalf("stopped while preparing: %+v %v, want an empty summary", r.sum, r.err)
	}
	for _, ag := range []*fakeAgent{a, b} {
		if c := ag.control(); c.Kind != ControlStop || c.Run != 5 {
			t.Errorf("%s got %+v, want the stop", ag.id, c)
		}
	}
	h.none(t)

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	h = newHooks()
	h.onStart = func(Started) error { cancel(); return nil } // stopped as the start goes out
	res := e.run(ctx, RunSpec{Run: 6, Plan: testPlan(t), Agents: pickAll(t, e, 2)}, h)
	for _, ag := range []*fakeAgent{a, b} {
		<-ag.prepared
		if c := ag.control(); c.Kind != ControlStart {
			t.Fatalf("%s got %+v, want the start", ag.id, c)
		}
		if c := ag.control(); c.Kind != ControlStop {
			t.Fatalf("%s got %+v, want the stop", ag.id, c)
		}
		// Stopped before its start instant: nothing sent, a final without engine state.
		ag.publish(6, Snapshot{Run: 6, Agent: ag.id, Second: 1, Final: &FinalPart{}}, "")
	}
	r = wait(t, res)
	if r.err != nil || r.sum == nil || r.sum.Requests != 0 || r.sum.Seconds != 0 || r.sum.Agents != 2 || r.sum.Degraded {
		t.Fatalf("stopped before the start instant: %+v %v, want an empty summary", r.sum, r.err)
	}
	if _, err := json.Marshal(r.sum); err != nil {
		t.Error(err)
	}
	h.none(t)
}

// A hostile agent cannot put a value JSON cannot hold into the recorded change (the run's
// summary could not be stored): a From that overflows when rounded to the millisecond (1e306 ×
// 1000 is +Inf) is not the event's From. Nor can its refusal carry up to 8 MiB to the API's answer
// and the log: its sentence and field errors are cut to maxReason, fields other than vus and rate
// dropped.
func TestLiveControlHostileAnswers(t *testing.T) {
	e := newEnv(t)
	e.co.ctlTimeout = 5 * time.Second
	a := e.agent("a", 1, Ready{OK: true})
	ca := a.changes()
	h := newHooks()
	ctx := context.Background()
	res := e.run(ctx, RunSpec{Run: 8, Plan: testPlan(t), Agents: pickAll(t, e, 1)}, h)
	<-a.prepared
	a.control() // start
	a.second(8, 1, 10)
	h.next(t) // the run is being merged: live control reaches it

	ca.will("a", 1e306, nil, false)
	vus := 3
	ev, err := e.co.Control(ctx, 8, Change{VUs: &vus, By: "mallory"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(ev); err != nil || math.IsInf(ev.From, 0) || math.IsNaN(ev.From) {
		t.Errorf("event %+v: %v", ev, err)
	}
	ca.got(t)

	huge := strings.Repeat("é", 1<<15) // 64 KiB: far more than maxReason
	ca.will("a", 0, errors.New(huge), false)
	_, err = e.co.Control(ctx, 8, Change{VUs: &vus})
	var ce *ControlError
	if !errors.As(err, &ce) || len(err.Error()) > 2*maxReason || !utf8.ValidString(err.Error()) || !strings.Contains(err.Error(), "éé…") {
		t.Errorf("a 64 KiB refusal: %d bytes: %.200s", len(err.Error()), err)
	}
	ca.got(t)
	ca.will("a", 0, &plan.ValidationError{Fields: map[string]string{"vus": huge, "x": huge}}, false)
	_, err = e.co.Control(ctx, 8, Change{VUs: &vus})
	var ve *plan.ValidationError
	if !errors.As(err, &ve) {
		t.Errorf("64 KiB field errors: %.200v", err)
	} else if len(ve.Fields) != 1 || len(ve.Fields["vus"]) > 2*maxReason {
		t.Errorf("64 KiB field errors: %d fields, vus %d bytes", len(ve.Fields), len(ve.Fields["vus"]))
	}
	ca.got(t)

	a.publish(8, Snapshot{Run: 8, Agent: "a", Second: 2, StartedUnixNano: t0.Add(time.Second).UnixNano(),
		Final: &FinalPart{State: &engine.Final{DurationS: 1, Requests: 10, Successes: 10}}}, "")
	r := wait(t, res)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if _, err := json.Marshal(r.sum); err != nil || len(r.sum.Events) != 1 {
		t.Errorf("summary events %+v: %v", r.sum.Events, err)
	}
}
