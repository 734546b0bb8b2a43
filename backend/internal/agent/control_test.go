package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// Live control of a run over two real agents in this process (the embedded broker with no
// listener, in-process connections), each running its engine against a loopback target: a change
// to 5 VUs asked of the coordinator while the run sends load is applied by both engines (3 + 2
// VUs: each its segment's share, engine.SetVUs) and recorded once — the event the caller gets, once
// in the merged seconds and once in the summary, although each agent's own seconds hold its
// engine's copy; a rate change (the wrong kind for constant-vus) is refused by the agents' engines
// with an error naming the first agent; a negative count is the engines' field error.
func TestLiveControlOverAgents(t *testing.T) {
	b, err := bus.Start(bus.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	nc, err := b.Controller("controller")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	reg, err := cluster.Start(nc, "1.2.3", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	co, err := cluster.NewCoordinator(nc, reg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(co.Close)
	tg := newCountingTarget(t)
	for _, id := range []string{"a", "b"} {
		runAgent(t, Config{ID: id, Version: "1.2.3", Weight: 1,
			Connect: func(o ...nats.Option) (*nats.Conn, error) { return b.LocalAgent(id, o...) }})
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(reg.List()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("agents listed: %+v", reg.List())
		}
		time.Sleep(20 * time.Millisecond)
	}
	agents, err := reg.Pick(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := plan.ParseCompiled([]byte(closedPlan(tg.URL, 2, 5*time.Second)))
	if err != nil {
		t.Fatal(err)
	}

	merged := make(chan metrics.Sample, 64)
	var mu sync.Mutex
	own := map[string]int{} // each agent's events in its own seconds
	type result struct {
		sum *metrics.Summary
		err error
	}
	done := make(chan result, 1)
	ctx := context.Background()
	go func() {
		sum, err := co.Run(ctx, cluster.RunSpec{Run: 3, Plan: c, Agents: agents}, cluster.RunHooks{
			OnSecond: func(s metrics.Sample) { merged <- s },
			OnAgentSecond: func(agent string, s metrics.Sample) {
				mu.Lock()
				own[agent] += len(s.Events)
				mu.Unlock()
			},
		})
		done <- result{sum, err}
	}()
	next := func() metrics.Sample {
		t.Helper()
		select {
		case s := <-merged:
			return s
		case <-time.After(20 * time.Second):
			t.Fatal("no merged second")
		}
		return metrics.Sample{}
	}
	seconds := []metrics.Sample{next()} // the run sends load
	for seconds[len(seconds)-1].MissingShare > 0 { // a loaded machine delivered it after SecondGrace
		seconds = append(seconds, next())
	}
	if s := seconds[len(seconds)-1]; s.ActiveVUs != 2 {
		t.Fatalf("second %d: %d active VUs, want 2", s.ElapsedS, s.ActiveVUs)
	}

	vus := 5
	ev, err := co.Control(ctx, 3, cluster.Change{VUs: &vus, By: "ann"})
	if err != nil || ev.Kind != "vus" || ev.From != 2 || ev.To != 5 || ev.By != "ann" || ev.ElapsedS < 1 || ev.ElapsedS > 5 {
		t.Fatalf("Control: %+v %v", ev, err)
	}
	rate := 10.0
	_, err = co.Control(ctx, 3, cluster.Change{Rate: &rate, By: "ann"})
	var ce *cluster.ControlError
	if !errors.As(err, &ce) || ce.Agent != "a" || len(ce.Applied) != 0 || !errors.Is(err, engine.ErrNotControllable) ||
		!strings.Contains(err.Error(), "agent a: the run's load cannot be changed this way: constant-vus has no arrival rate to change") {
		t.Errorf("a rate change of constant-vus: %v", err)
	}
	neg := -1
	var ve *plan.ValidationError
	if _, err := co.Control(ctx, 3, cluster.Change{VUs: &neg}); !errors.As(err, &ve) || ve.Fields["vus"] == "" {
		t.Errorf("-1 VUs: %v", err)
	}

	var r result
	for r.sum == nil && r.err == nil {
		select {
		case s := <-merged:
			seconds = append(seconds, s)
		case r = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the run did not end")
		}
	}
	for len(merged) > 0 {
		seconds = append(seconds, <-merged)
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	events, peak := 0, int64(0)
	for _, s := range seconds {
		events += len(s.Events)
		if len(s.Events) == 1 && s.Events[0] != ev {
			t.Errorf("second %d holds %+v, want %+v", s.ElapsedS, s.Events[0], ev)
		}
		peak = max(peak, s.ActiveVUs)
	}
	if events != 1 || peak != 5 {
		t.Errorf("merged seconds: %d events (want the change once), at most %d active VUs (want 5)", events, peak)
	}
	mu.Lock()
	if own["a"] != 1 || own["b"] != 1 {
		t.Errorf("the agents' own seconds hold %v events, want each its engine's copy", own)
	}
	mu.Unlock()
	if len(r.sum.Events) != 1 || r.sum.Events[0] != ev {
		t.Errorf("summary events %+v, want [%+v]", r.sum.Events, ev)
	}
	if r.sum.Requests == 0 || tg.Requests() < r.sum.Requests {
		t.Errorf("summary requests %d, the target saw %d", r.sum.Requests, tg.Requests())
	}
}
