package localagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/agent"
	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// A single-machine run stopped at once through the local agent ends as the engine's run stopped
// at once does: a summary and no error (the runner stores it "stopped", not "failed"), every
// request it sent counted once (the target's count, the seconds', the summary's) — stopped
// before the run began (before Prepare), as its start goes out (between the start broadcast and
// the start instant, InProcessStartDelay), and a few milliseconds in. After each, the agent
// takes the next run at once (it is not left prepared or busy). One stopped before any request
// has the outcome "stopped", not "failed".
func TestLocalRunStoppedAtOnce(t *testing.T) {
	tg, l := okTarget(t), startLocal(t)
	c := compiled(t, fmt.Sprintf(`{"name":"stop","think_time":"10ms","requests":[{"url":%q}],
		"load":{"executor":"constant-vus","vus":2,"duration":"10s","graceful_stop":"1s"}}`, tg.URL))

	check := func(name string, sum *metrics.Summary, err error, seconds []metrics.Sample, sent int64) {
		t.Helper()
		var n int64
		for _, s := range seconds {
			n += s.Requests
		}
		if err != nil || sum == nil {
			t.Errorf("%s: %+v %v, want a summary", name, sum, err)
			return
		}
		if sum.Requests != sent || n != sent || sum.Agents != 0 {
			t.Errorf("%s: the target saw %d requests, the seconds count %d, the summary %d (agents %d)", name, sent, n, sum.Requests, sum.Agents)
		}
		// stopped before any request: the user stopped it, nothing failed
		if o := sum.Outcome("stopped"); sum.Requests == 0 && o != metrics.OutcomeStopped {
			t.Errorf("%s: outcome %q with no request, want %q", name, o, metrics.OutcomeStopped)
		}
	}
	collect := func(mu *sync.Mutex, into *[]metrics.Sample) func(metrics.Sample) {
		return func(s metrics.Sample) {
			mu.Lock()
			*into = append(*into, s)
			mu.Unlock()
		}
	}

	var mu sync.Mutex
	var seconds []metrics.Sample
	n0 := tg.Requests()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sum, err := l.Run(ctx, 1, c, collect(&mu, &seconds))
	check("stopped before it began", sum, err, seconds, tg.Requests()-n0)

	// As its start goes out: the coordinator's OnStart (Local.Run's own call, with the hook).
	seconds, n0 = nil, tg.Requests()
	ctx, cancel = context.WithCancel(context.Background())
	sum, err = l.co.Run(ctx, cluster.RunSpec{Run: 2, Plan: c, Agents: []cluster.Agent{l.agent}, InProcess: true, Handoff: l.hand},
		cluster.RunHooks{OnStart: func(cluster.Started) error { cancel(); return nil }, OnSecond: collect(&mu, &seconds)})
	if sum != nil {
		sum.Agents = 0
	}
	check("stopped as its start went out", sum, err, seconds, tg.Requests()-n0)

	for i, after := range []time.Duration{5 * time.Millisecond, 30 * time.Millisecond, 300 * time.Millisecond} {
		seconds, n0 = nil, tg.Requests()
		ctx, cancel = context.WithCancel(context.Background())
		stop := time.AfterFunc(after, cancel)
		sum, err = l.Run(ctx, int64(3+i), c, collect(&mu, &seconds))
		stop.Stop()
		cancel()
		check(fmt.Sprintf("stopped %s in", after), sum, err, seconds, tg.Requests()-n0)
	}

	// The agent is idle again: a whole run goes through.
	seconds, n0 = nil, tg.Requests()
	sum, err = l.Run(context.Background(), 9, iterations(t, tg, 3), collect(&mu, &seconds))
	check("a whole run after them", sum, err, seconds, tg.Requests()-n0)
	if sum != nil && sum.Requests != 3 {
		t.Errorf("the whole run: %d requests, want 3", sum.Requests)
	}
}

// The local agent is prepared never to fence itself (fence_after NoFence, which the agent's
// nanosecond arithmetic holds): it cannot be cut off from the broker in its own process, and a
// stall of the whole server longer than cluster.DefaultFenceAfter (SIGSTOP, a paused VM) must not
// stop a single-machine run, as it does not stop the engine's run directly.
func TestLocalAgentNeverFences(t *testing.T) {
	tg, l := okTarget(t), startLocal(t)
	c := iterations(t, tg, 1)
	prepared := make(chan cluster.Prepare, 1)
	sub, err := l.ctl.Conn.Subscribe(cluster.PrepareSubject(ID), func(m *nats.Msg) { // a copy of the request
		var p cluster.Prepare
		_ = json.Unmarshal(m.Data, &p)
		prepared <- p
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := l.ctl.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	if sum, err := l.Run(context.Background(), 1, c, func(metrics.Sample) {}); err != nil || sum.Requests != 1 {
		t.Fatalf("run: %+v %v", sum, err)
	}
	p := <-prepared
	if after := time.Duration(p.FenceAfterMs) * time.Millisecond; after < 50*365*24*time.Hour || after <= 0 {
		t.Errorf("the local agent fences after %s (%d ms)", after, p.FenceAfterMs)
	}
}

// okTarget is a loopback target that answers "ok".
func okTarget(t testing.TB) *testutil.Target {
	return testutil.NewTarget(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
}

// startLocal starts a local agent, closed at the test's (or benchmark's) end.
func startLocal(t testing.TB) *Local {
	t.Helper()
	l, err := Start(Config{Version: "1.2.3", Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// compiled is plan js compiled.
func compiled(t testing.TB, js string) *plan.Compiled {
	t.Helper()
	c, err := plan.ParseCompiled([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// iterations is a plan of one VU sending n requests to tg.
func iterations(t testing.TB, tg *testutil.Target, n int) *plan.Compiled {
	return compiled(t, fmt.Sprintf(`{"name":"one","requests":[{"url":%q}],
		"load":{"executor":"per-vu-iterations","vus":1,"iterations":%d}}`, tg.URL, n))
}

// Closing the local agent (volley serve's shutdown) logs no warning: its connection closed on
// purpose is not "lost the controller; reconnecting".
func TestCloseLogsNoWarning(t *testing.T) {
	closed := make(chan struct{})
	testOptions = []nats.Option{nats.ClosedHandler(func(*nats.Conn) { close(closed) })} // after the disconnect handler
	defer func() { testOptions = nil }()
	log, logged := lockedLog(slog.LevelWarn)
	l, err := Start(Config{Version: "1.2.3", Log: log})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	<-closed // nats.go calls the connection's handlers in order on a goroutine of its own
	if s := logged(); s != "" {
		t.Errorf("warnings at Close: %s", s)
	}
}

// lockedLog is a logger of the records at level or above and a function returning what it has
// logged so far (safe while the agent's goroutines log).
func lockedLog(level slog.Level) (*slog.Logger, func() string) {
	var mu sync.Mutex
	var buf bytes.Buffer
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A panic in the local agent's own loop does not end the process (volley serve): Start says the
// agent stopped, naming the panic (serve then runs single-machine runs on the engine directly).
func TestAgentPanicIsNotTheServersEnd(t *testing.T) {
	runAgent = func(context.Context, agent.Config) error { panic("boom") }
	defer func() { runAgent = agent.Run }()
	log, logged := lockedLog(slog.LevelInfo)
	l, err := Start(Config{Version: "1.2.3", Log: log})
	if err == nil || !strings.Contains(err.Error(), "the local agent stopped: internal error in the local agent: boom") {
		t.Errorf("Start: %v, want the agent's panic", err)
	}
	if l != nil {
		l.Close()
	}
	if s := logged(); !strings.Contains(s, "the local agent stopped: panic") {
		t.Errorf("log: %s", s)
	}
}
