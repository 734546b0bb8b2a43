package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// Live control of a run over two real agents in this process (the embedded broker with no
// listener, in-process connections), each running its engine against a loopback target: a change
// to 5 VUs asked of the coordinator while the run sends load is applied by both engines (3 + 2
// VUs: each its segment's share, engine.SetVUs) and recorded once — the event the caller gets, once
// in the merged seconds and once in the summary, although each agent's own seconds hold its
// engine's copy; a rate change (the wrong kind for constant-vus) is refused by the agents' engines
// with an error naming the first agent; a negative count is the engines' field error.
//
// Nothing here waits on the coordinator's wall-clock deadlines: the run is a minute long with a
// 30 s graceful stop and the test stops it once a complete second shows the 5 VUs, so a starved
// process (the agents' seconds later than SecondGrace, their finals later than EndMargin past a
// 5 s plan's end: the agents lost, no second merged) still sees every step; a run that ends
// early fails at once with its error.
func TestLiveControlOverAgents(t *testing.T) {
	tg := newCountingTarget(t)
	co, agents := coordinated(t, "a", "b")
	c, err := plan.ParseCompiled([]byte(fmt.Sprintf(`{"name":"agent-control","requests":[{"url":%q}],"think_time":"50ms",
		"load":{"executor":"constant-vus","vus":2,"duration":"1m","graceful_stop":"30s"},"http":{"timeout":"2s"}}`, tg.URL)))
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
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
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
	var seconds []metrics.Sample
	// until returns once a merged second with both agents' shares satisfies ok.
	until := func(what string, ok func(metrics.Sample) bool) metrics.Sample {
		t.Helper()
		for {
			select {
			case s := <-merged:
				seconds = append(seconds, s)
				if s.MissingShare == 0 && ok(s) { // a loaded machine merges some after SecondGrace
					return s
				}
			case r := <-done:
				var ms []string
				for _, x := range seconds {
					ms = append(ms, fmt.Sprintf("%d: missing %.2f", x.ElapsedS, x.MissingShare))
				}
				t.Fatalf("waiting for %s, the run ended: %v (summary %v; seconds %v)", what, r.err, r.sum != nil, ms)
			case <-time.After(30 * time.Second):
				t.Fatalf("no merged second with %s", what)
			}
		}
	}
	if s := until("the run sending load", func(metrics.Sample) bool { return true }); s.ActiveVUs != 2 {
		t.Fatalf("second %d: %d active VUs, want 2", s.ElapsedS, s.ActiveVUs)
	}

	vus := 5
	ev, err := co.Control(ctx, 3, cluster.Change{VUs: &vus, By: "ann"})
	if err != nil || ev.Kind != "vus" || ev.From != 2 || ev.To != 5 || ev.By != "ann" || ev.ElapsedS < 1 || ev.ElapsedS > 60 {
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

	until("the 5 VUs", func(s metrics.Sample) bool { return s.ActiveVUs == 5 })
	stop()

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
	if events != 1 || peak > 5 {
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

// coordinated starts the embedded broker (no listener), a registry and coordinator on a
// controller connection, and an agent per id on in-process connections (weight 1 each), and
// returns the coordinator and the agents once all are listed (≤ 10 s), in ids' order.
func coordinated(t *testing.T, ids ...string) (*cluster.Coordinator, []cluster.Agent) {
	t.Helper()
	_, co, agents := coordinatedLog(t, nil, ids...)
	return co, agents
}

// coordinatedLog is coordinated with the agents logging on log (nil: nowhere), and the broker.
func coordinatedLog(t *testing.T, log *slog.Logger, ids ...string) (*bus.Bus, *cluster.Coordinator, []cluster.Agent) {
	t.Helper()
	b, err := bus.Start(bus.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	ctl, err := cluster.StartController(b, "1.2.3", nil, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctl.Close)
	co, reg := ctl.Coordinator, ctl.Registry
	for _, id := range ids {
		runAgent(t, Config{ID: id, Version: "1.2.3", Weight: 1, Log: log,
			Connect: func(o ...nats.Option) (*nats.Conn, error) { return b.LocalAgent(id, o...) }})
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(reg.List()) < len(ids) {
		if time.Now().After(deadline) {
			t.Fatalf("agents listed: %+v", reg.List())
		}
		time.Sleep(20 * time.Millisecond)
	}
	agents, err := reg.Pick(len(ids), nil)
	if err != nil {
		t.Fatal(err)
	}
	return b, co, agents
}

// A run stopped while its agent is still preparing it (the coordinator's stop broadcast before
// the agent follows the run's control subject, so it misses it): the agent ends up prepared for
// a run nobody will start, yet the same controller's next run on it starts at once — its Prepare
// replaces the abandoned one — instead of being refused as busy until PrepareTTL.
func TestStopWhilePreparingFreesTheAgent(t *testing.T) {
	reached, release := make(chan struct{}), make(chan struct{})
	testPoint = func(where string, run int64) {
		if where == "prepare" && run == 1 {
			close(reached)
			<-release
		}
	}
	t.Cleanup(func() { testPoint = func(string, int64) {} })
	tg := newCountingTarget(t)
	co, agents := coordinated(t, "a")
	c, err := plan.ParseCompiled([]byte(closedPlan(tg.URL, 1, time.Second)))
	if err != nil {
		t.Fatal(err)
	}

	ctx, stop := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		sum, err := co.Run(ctx, cluster.RunSpec{Run: 1, Plan: c, Agents: agents}, cluster.RunHooks{})
		if err == nil && sum.Requests != 0 {
			err = fmt.Errorf("%d requests", sum.Requests)
		}
		first <- err
	}()
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not get the Prepare")
	}
	stop()
	if err := <-first; err != nil {
		t.Fatalf("the run stopped while preparing: %v", err)
	}
	close(release) // the agent ends its Prepare of run 1 now, after the stop went out

	// The agent takes Prepares one at a time: run 2's comes after run 1 is prepared.
	sum, err := co.Run(context.Background(), cluster.RunSpec{Run: 2, Plan: c, Agents: agents}, cluster.RunHooks{})
	if err != nil {
		t.Fatalf("the next run on the agent: %v", err)
	}
	if sum.Requests == 0 || tg.Requests() != sum.Requests {
		t.Errorf("the next run sent %d requests, the target saw %d", sum.Requests, tg.Requests())
	}
}

// A stopped run's stop reaches its agent several times — the coordinator broadcasts it again every
// cluster.StopRepeat while a final is missing, for an agent that missed it, and a plan's graceful
// stop lets an iteration in flight finish first — and the agent logs it once: here the target
// holds the run's one request until the agent has been told to stop three times.
func TestStopIsLoggedOnce(t *testing.T) {
	release := make(chan struct{})
	var inFlight atomic.Int64
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		inFlight.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		_, _ = io.WriteString(w, "ok")
	})
	logs := &syncBuf{}
	b, co, agents := coordinatedLog(t, slog.New(slog.NewTextHandler(logs, nil)), "a")
	c, err := plan.ParseCompiled([]byte(fmt.Sprintf(`{"name":"stop-once","requests":[{"url":%q}],
		"load":{"executor":"constant-vus","vus":1,"duration":"1m","graceful_stop":"1m"},"http":{"timeout":"1m"}}`, tg.URL)))
	if err != nil {
		t.Fatal(err)
	}
	watch, err := b.Controller("watch")
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	stops := make(chan struct{}, 64)
	if _, err := watch.Subscribe(cluster.RunControlSubject(5), func(m *nats.Msg) {
		var ctl cluster.Control
		if json.Unmarshal(m.Data, &ctl) == nil && ctl.Kind == cluster.ControlStop {
			stops <- struct{}{}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}

	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := co.Run(ctx, cluster.RunSpec{Run: 5, Plan: c, Agents: agents}, cluster.RunHooks{})
		done <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); inFlight.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run's first request did not come")
		}
	}
	stop()
	for i := range 3 {
		select {
		case <-stops:
		case <-time.After(30 * time.Second):
			t.Fatalf("the stop was broadcast %d times, not 3, while the agent's final was held back", i)
		}
	}
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end")
	}
	if n := strings.Count(logs.String(), "msg=stop "); n != 1 {
		t.Errorf("the agent logged its stop %d times, want once:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), `msg="run ended"`); n != 1 {
		t.Errorf("the agent logged its run's end %d times, want once:\n%s", n, logs.String())
	}
}
