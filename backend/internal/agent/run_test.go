package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/segment"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// runCtl is a test controller for runs: a controller connection that answers clock probes and
// owns the snapshot stream, as helper coord's coordinator will.
type runCtl struct {
	*controller
	nc *nats.Conn
	js jetstream.JetStream
}

func startRunCtl(t *testing.T) *runCtl {
	t.Helper()
	c := startController(t)
	nc, err := c.b.Controller("test-coordinator")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if _, err := nc.Subscribe(bus.SubjectTime, func(m *nats.Msg) {
		b, _ := json.Marshal(cluster.TimeReply{UnixNano: time.Now().UnixNano()})
		_ = m.Respond(b)
	}); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: cluster.SnapshotStream, Subjects: []string{"volley.run.*.snap.*"},
		Storage: jetstream.MemoryStorage, Duplicates: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	return &runCtl{controller: c, nc: nc, js: js}
}

const testController = "ctl-test"

// prepare sends Prepare for run to agent id and returns its Ready.
func (r *runCtl) prepare(t *testing.T, id string, run int64, planJSON string, w segment.Wire, fenceAfter time.Duration) cluster.Ready {
	t.Helper()
	return r.prepareFrom(t, testController, id, run, planJSON, w, fenceAfter)
}

// prepareFrom is prepare with the Prepare's controller id.
func (r *runCtl) prepareFrom(t *testing.T, controller, id string, run int64, planJSON string, w segment.Wire, fenceAfter time.Duration) cluster.Ready {
	t.Helper()
	b, _ := json.Marshal(cluster.Prepare{Run: run, Controller: controller, Plan: json.RawMessage(planJSON), Segment: w,
		Agents: []string{id}, FenceAfterMs: fenceAfter.Milliseconds(), MsgKey: cluster.NewMsgKey()})
	var m *nats.Msg
	var err error
	for range 50 { // the agent subscribes its prepare subject just after joining
		if m, err = r.nc.Request(cluster.PrepareSubject(id), b, 10*time.Second); err != nats.ErrNoResponders {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	var ready cluster.Ready
	if err := json.Unmarshal(m.Data, &ready); err != nil {
		t.Fatal(err)
	}
	return ready
}

// mustPrepare prepares run on agent id with the whole segment, failing the test (with what)
// unless the agent is ready.
func (r *runCtl) mustPrepare(t *testing.T, id string, run int64, planJSON string, fenceAfter time.Duration, what string) {
	t.Helper()
	if ready := r.prepare(t, id, run, planJSON, segment.Wire{Weights: []int{1}}, fenceAfter); !ready.OK {
		t.Fatalf(what, ready)
	}
}

// startAndWait starts run now and waits (≤ 15 s) until its first n seconds are stored.
func (r *runCtl) startAndWait(t *testing.T, run int64, n int) {
	t.Helper()
	r.control(t, cluster.Control{Kind: cluster.ControlStart, Run: run, StartAtUnixNano: time.Now().UnixNano()})
	deadline := time.Now().Add(15 * time.Second)
	for len(r.stored(t, run).seconds) < n {
		if time.Now().After(deadline) {
			t.Fatalf("run %d: fewer than %d seconds stored within 15 s", run, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *runCtl) control(t *testing.T, c cluster.Control) {
	t.Helper()
	c.Controller = testController
	b, _ := json.Marshal(c)
	if err := r.nc.Publish(cluster.RunControlSubject(c.Run), b); err != nil {
		t.Fatal(err)
	}
}

// stored is a run's snapshots in the stream, with how many stream messages each msg id has.
type stored struct {
	byID    map[string]int
	seconds map[int]cluster.Snapshot
	final   *cluster.Snapshot
}

func (r *runCtl) stored(t *testing.T, run int64) stored {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := r.js.Stream(ctx, cluster.SnapshotStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := stored{byID: map[string]int{}, seconds: map[int]cluster.Snapshot{}}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		var snap cluster.Snapshot
		if err := json.Unmarshal(m.Data, &snap); err != nil {
			t.Fatal(err)
		}
		if snap.Run != run {
			continue
		}
		out.byID[m.Header.Get(jetstream.MsgIDHeader)]++
		if snap.Final != nil {
			out.final = &snap
		} else {
			out.seconds[snap.Second] = snap
		}
	}
	return out
}

// waitFinal waits (≤ within) until run's final snapshot is in the stream.
func (r *runCtl) waitFinal(t *testing.T, run int64, within time.Duration) stored {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := r.stored(t, run)
		if s.final != nil {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("no final snapshot of run %d within %s (stored %v)", run, within, s.byID)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkStored asserts each second 1..final-1 and the final are stored exactly once, under their
// message ids.
func checkStored(t *testing.T, s stored, run int64, id string) {
	t.Helper()
	last := s.final.Second - 1
	if last < 1 {
		t.Fatalf("final at second %d: no second stored", s.final.Second)
	}
	// every id begins with the run's key for this agent (Prepare.MsgKey: 32 hex digits), one key
	byID := map[string]int{}
	keys := map[string]bool{}
	for mid, n := range s.byID {
		key, rest, _ := strings.Cut(mid, ".")
		if len(key) != 32 || !cluster.ValidMsgKey(key) {
			t.Errorf("message id %q does not begin with a msg key", mid)
		}
		keys[key] = true
		byID[rest] += n
	}
	if len(keys) != 1 {
		t.Errorf("message ids of %d keys, want one (the run's for this agent)", len(keys))
	}
	for sec := 1; sec <= last; sec++ {
		mid := cluster.SnapshotMsgID("", run, id, sec, false)
		if n := byID[mid]; n != 1 {
			t.Errorf("second %d (msg id %s) stored %d times", sec, mid, n)
		}
		if snap, ok := s.seconds[sec]; !ok || snap.Agent != id || snap.Part == nil {
			t.Errorf("second %d: %+v", sec, snap)
		}
	}
	if n := byID[cluster.SnapshotMsgID("", run, id, 0, true)]; n != 1 {
		t.Errorf("final stored %d times", n)
	}
	if len(s.byID) != last+1 {
		t.Errorf("stored msg ids %v, want seconds 1..%d and the final", s.byID, last)
	}
}

// countingTarget is a loopback target that records when it last saw a request.
type countingTarget struct {
	*testutil.Target
	last atomic.Int64 // unix ns
}

func newCountingTarget(t *testing.T) *countingTarget {
	ct := &countingTarget{}
	ct.Target = testutil.NewTarget(t, func(w http.ResponseWriter, _ *http.Request) {
		ct.last.Store(time.Now().UnixNano())
		_, _ = io.WriteString(w, "ok")
	})
	return ct
}

func closedPlan(url string, vus int, d time.Duration) string {
	return fmt.Sprintf(`{"name":"agent-run","requests":[{"url":%q}],"think_time":"50ms",
		"load":{"executor":"constant-vus","vus":%d,"duration":%q,"graceful_stop":"1s"},"http":{"timeout":"2s"}}`, url, vus, d.String())
}

// A prepared agent starts at the start instant, publishes every second of its share with its
// message id (the first and the final carrying its start on the controller's clock), shows
// "running" with the run meanwhile, and is idle again after its final.
func TestPrepareStartSnapshots(t *testing.T) {
	r := startRunCtl(t)
	tg := newCountingTarget(t)
	runAgent(t, Config{URL: r.url, Token: r.tok, ID: "gen-1", Version: "1.2.3"})
	waitList(t, r.controller, "agent listed", func(l []cluster.Agent) bool { return len(l) == 1 })

	// Part 0 of a 2:1 split of 3 VUs: this agent runs 2 of them.
	ready := r.prepare(t, "gen-1", 7, closedPlan(tg.URL, 3, 3*time.Second), segment.Wire{Weights: []int{2, 1}, Part: 0}, 5*time.Second)
	if !ready.OK || ready.VUs != 2 || ready.RTTMs <= 0 || ready.RTTMs > 1000 {
		t.Fatalf("ready %+v", ready)
	}
	if ready.ClockOffsetMs < -1000 || ready.ClockOffsetMs > 1000 { // one machine, one clock
		t.Fatalf("clock offset %v ms", ready.ClockOffsetMs)
	}
	waitList(t, r.controller, "running with its run", func(l []cluster.Agent) bool {
		return len(l) == 1 && l[0].State == "running" && l[0].Run == 7
	})
	// Another controller's Prepare meanwhile is refused: the agent is busy.
	if busy := r.prepareFrom(t, "ctl-other", "gen-1", 8, closedPlan(tg.URL, 1, time.Second), segment.Wire{Weights: []int{1}}, 0); busy.OK || !strings.Contains(busy.Error, "busy with run 7") {
		t.Fatalf("second prepare: %+v", busy)
	}
	startAt := time.Now().Add(500 * time.Millisecond).UnixNano()
	r.control(t, cluster.Control{Kind: cluster.ControlStart, Run: 7, StartAtUnixNano: startAt})
	s := r.waitFinal(t, 7, 20*time.Second)
	checkStored(t, s, 7, "gen-1")
	if s.final.Second < 3 {
		t.Errorf("final after second %d of a 3 s run", s.final.Second-1)
	}
	if first := s.seconds[1]; first.StartedUnixNano < startAt || first.StartedUnixNano > startAt+int64(time.Second) {
		t.Errorf("first second's start %d, the start instant %d", first.StartedUnixNano, startAt)
	}
	if s.final.StartedUnixNano != s.seconds[1].StartedUnixNano || s.final.Fenced || s.final.Error != "" {
		t.Errorf("final %+v", *s.final)
	}
	var sent int64
	for _, snap := range s.seconds {
		sent += snap.Part.Sample.Requests
	}
	if sent == 0 || tg.Requests() < sent {
		t.Errorf("the seconds count %d requests, the target saw %d", sent, tg.Requests())
	}
	waitList(t, r.controller, "idle again", func(l []cluster.Agent) bool { return len(l) == 1 && l[0].State == "idle" && l[0].Run == 0 })
}

// Another agent holding the join token publishes, on its own snapshot subject, every message id
// this agent's seconds and final of run 9 would have without a key ("9.gen-1.1"…, the stream
// dedupes ids across subjects for its whole window); and a Prepare whose key is not hex is
// refused. The run's seconds and final are still stored, each once: the agent's ids begin with
// its Prepare's secret key.
func TestForgedMessageIDsDropNothing(t *testing.T) {
	r := startRunCtl(t)
	tg := newCountingTarget(t)
	runAgent(t, Config{URL: r.url, Token: r.tok, ID: "gen-1"})
	waitList(t, r.controller, "agent listed", func(l []cluster.Agent) bool { return len(l) == 1 })
	evil, err := r.b.LocalAgent("evil-2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(evil.Close)
	js, err := jetstream.New(evil)
	if err != nil {
		t.Fatal(err)
	}
	for sec := 0; sec <= 10; sec++ {
		mid := cluster.SnapshotMsgID("", 9, "gen-1", sec, sec == 0)
		ack, err := js.Publish(t.Context(), cluster.SnapshotSubject(9, "evil-2"), []byte(`{}`), jetstream.WithMsgID(mid))
		if err != nil || ack.Duplicate {
			t.Fatalf("forged %s: %v %+v", mid, err, ack)
		}
	}
	b, _ := json.Marshal(cluster.Prepare{Run: 9, Controller: testController, Plan: json.RawMessage(closedPlan(tg.URL, 1, time.Second)),
		Segment: segment.Wire{Weights: []int{1}}, Agents: []string{"gen-1"}, MsgKey: "9.gen-1"})
	m, err := r.nc.Request(cluster.PrepareSubject("gen-1"), b, 10*time.Second)
	var ready cluster.Ready
	if err != nil || json.Unmarshal(m.Data, &ready) != nil || ready.OK || !strings.Contains(ready.Error, `msg_key "9.gen-1" is not 1–64 hex digits`) {
		t.Fatalf("a Prepare with a key that is not hex: %v %+v", err, ready)
	}
	r.mustPrepare(t, "gen-1", 9, closedPlan(tg.URL, 1, 2*time.Second), 5*time.Second, "prepare: %+v")
	r.control(t, cluster.Control{Kind: cluster.ControlStart, Run: 9, StartAtUnixNano: time.Now().UnixNano()})
	s := r.waitFinal(t, 9, 20*time.Second)
	checkStored(t, s, 9, "gen-1")
}

// A stop control ends a running run at once (the plan's graceful stop applies); its final comes.
func TestStopControlEndsRun(t *testing.T) {
	r := startRunCtl(t)
	tg := newCountingTarget(t)
	runAgent(t, Config{URL: r.url, Token: r.tok, ID: "gen-1"})
	r.mustPrepare(t, "gen-1", 9, closedPlan(tg.URL, 2, time.Minute), 5*time.Second, "ready %+v")
	// Control messages of another controller or run are ignored.
	b, _ := json.Marshal(cluster.Control{Kind: cluster.ControlStart, Run: 9, Controller: "someone-else", StartAtUnixNano: time.Now().UnixNano()})
	_ = r.nc.Publish(cluster.RunControlSubject(9), b)
	time.Sleep(300 * time.Millisecond)
	if tg.Requests() != 0 {
		t.Fatal("another controller's start was taken")
	}
	r.control(t, cluster.Control{Kind: cluster.ControlStart, Run: 9, StartAtUnixNano: time.Now().UnixNano()})
	for tg.Requests() < 5 {
		time.Sleep(20 * time.Millisecond)
	}
	stopped := time.Now()
	r.control(t, cluster.Control{Kind: cluster.ControlStop, Run: 9, Reason: "test"})
	s := r.waitFinal(t, 9, 15*time.Second)
	if took := time.Since(stopped); took > 10*time.Second {
		t.Errorf("final %s after the stop", took)
	}
	checkStored(t, s, 9, "gen-1")
	if s.final.Fenced || s.final.Error != "" {
		t.Errorf("final %+v", *s.final)
	}
	if last := time.Unix(0, tg.last.Load()); last.Sub(stopped) > 2*time.Second {
		t.Errorf("the target saw a request %s after the stop", last.Sub(stopped))
	}
}

// --allow-target refuses a plan aimed at another host, naming the host and the list, whether the
// host is a request URL's (http or ws) or an http.hosts rotation's; an allowed plan is ready.
func TestAllowTargetRefusesOtherHosts(t *testing.T) {
	r := startRunCtl(t)
	tg := newCountingTarget(t)
	port := tg.Listener.Addr().(*net.TCPAddr).Port
	allow := []string{fmt.Sprintf("127.0.0.1:%d", port), "api.test"}
	runAgent(t, Config{URL: r.url, Token: r.tok, ID: "gen-1", AllowTargets: allow})
	for _, c := range []struct{ plan, field, host string }{
		{closedPlan("http://10.9.8.7:8080/", 1, time.Second), "requests[0].url", "10.9.8.7:8080"},
		{closedPlan("http://127.0.0.1:1/", 1, time.Second), "requests[0].url", "127.0.0.1:1"},
		{`{"name":"ws","requests":[{"url":"ws://evil.test/socket","ws":{"messages":[{"send":"x"}]}}],"load":{"executor":"per-vu-iterations","vus":1,"iterations":1}}`, "requests[0].url", "evil.test"},
		{`{"name":"rot","requests":[{"url":"http://api.test/"}],"http":{"hosts":{"api.test":"127.0.0.1:` + fmt.Sprint(port) + `,10.0.0.9:80"}},"load":{"executor":"per-vu-iterations","vus":1,"iterations":1}}`, "http.hosts", "10.0.0.9:80"},
	} {
		ready := r.prepare(t, "gen-1", 11, c.plan, segment.Wire{Weights: []int{1}}, 0)
		if ready.OK {
			t.Fatalf("%s: a plan aimed at %s was accepted", c.field, c.host)
		}
		want := c.host + " is not in this agent's --allow-target list (" + strings.Join(allow, ", ") + ")"
		if !strings.Contains(ready.Error, "agent gen-1") || !strings.Contains(ready.Error, want) || !strings.Contains(ready.Fields[c.field], want) {
			t.Errorf("refusal %q fields %v, want %q on %s", ready.Error, ready.Fields, want, c.field)
		}
	}
	if tg.Requests() != 0 {
		t.Fatal("a refused plan sent load")
	}
	r.mustPrepare(t, "gen-1", 12, closedPlan(tg.URL, 1, time.Second), 0, "an allowed plan was refused: %+v")
}

// The --allow-target matching rule (Targets).
func TestTargetsMatching(t *testing.T) {
	tl, err := ParseTargets([]string{"127.0.0.1:8080", "10.1.0.0/16", "*.internal", "api.test", "[::1]:9000"})
	if err != nil {
		t.Fatal(err)
	}
	for host, ok := range map[string]bool{
		"127.0.0.1:8080": true, "127.0.0.1:8081": false, "127.0.0.1": false, "2130706433:8080": true,
		"10.1.2.3": true, "10.1.2.3:443": true, "10.2.0.1": false,
		"db.internal:5432": true, "internal": false, "API.test.:80": true, "api.test.evil": false,
		"[::1]:9000": true, "[::1]:9001": false, "::1": false,
	} {
		if err := tl.CheckHost(host); (err == nil) != ok {
			t.Errorf("%s: %v, want allowed %v", host, err, ok)
		}
	}
	for _, bad := range []string{"127.0.0.1:0", "127.0.0.1:http", "a b", "*"} {
		if _, err := ParseTargets([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if tl, err := ParseTargets(nil); tl != nil || err != nil {
		t.Fatalf("empty list: %v %v", tl, err)
	}
}

// gate is a TCP proxy between an agent and the broker that the test can block (bytes held in
// both directions, connections kept: a network partition) and open again.
type gate struct {
	ln     net.Listener
	to     string
	mu     sync.Mutex
	cond   *sync.Cond
	closed bool
	held   bool // bytes are held in both directions
	cut    bool // connections are closed and new ones refused
	conns  []net.Conn
}

func newGate(t *testing.T, to string) *gate {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, to: to}
	g.cond = sync.NewCond(&g.mu)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.mu.Lock()
			cut := g.cut
			g.mu.Unlock()
			if cut {
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			g.mu.Lock()
			g.conns = append(g.conns, c, u)
			g.mu.Unlock()
			go g.pipe(c, u)
			go g.pipe(u, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		g.mu.Lock()
		g.closed = true
		for _, c := range g.conns {
			c.Close()
		}
		g.cond.Broadcast()
		g.mu.Unlock()
	})
	return g
}

func (g *gate) pipe(from, to net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			g.mu.Lock()
			for g.held && !g.closed {
				g.cond.Wait()
			}
			g.mu.Unlock()
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			to.Close()
			return
		}
	}
}

func (g *gate) hold(on bool) {
	g.mu.Lock()
	g.held = on
	g.cond.Broadcast()
	g.mu.Unlock()
}

// sever closes every connection and refuses new ones (on), or accepts them again (off).
func (g *gate) sever(on bool) {
	g.mu.Lock()
	g.cut = on
	if on {
		for _, c := range g.conns {
			c.Close()
		}
		g.conns = nil
	}
	g.mu.Unlock()
}

// An agent cut off from the broker for longer than fence_after stops its load (the target sees
// its last request within fence_after + 2 s of the cut); once the link is back, its spooled
// seconds and its fenced final reach the stream, no second stored twice. Cut off two ways: a
// partition that holds the bytes (the connection stays up) and a severed link (the agent
// reconnects after it).
func TestFencedWhenCutOff(t *testing.T) {
	t.Run("held", func(t *testing.T) { testFenced(t, func(g *gate, on bool) { g.hold(on) }) })
	t.Run("severed", func(t *testing.T) { testFenced(t, func(g *gate, on bool) { g.sever(on) }) })
}

func testFenced(t *testing.T, cutOff func(g *gate, on bool)) {
	const fenceAfter = 2 * time.Second
	r := startRunCtl(t)
	tg := newCountingTarget(t)
	g := newGate(t, r.b.AgentsAddr())
	runAgent(t, Config{URL: "nats://" + g.ln.Addr().String(), Token: r.tok, ID: "gen-1"})
	r.mustPrepare(t, "gen-1", 21, closedPlan(tg.URL, 2, time.Minute), fenceAfter, "ready %+v")
	r.startAndWait(t, 21, 2)
	probe := testutil.StartSchedProbe(t)
	cut := time.Now()
	cutOff(g, true)
	// Wait until the target has been quiet for a second past the bound, then judge.
	bound := fenceAfter + 2*time.Second
	for time.Since(cut) < bound+time.Second || time.Since(time.Unix(0, tg.last.Load())) < time.Second {
		if time.Since(cut) > bound+10*time.Second {
			t.Fatalf("the agent still sends load %s after the cut", time.Since(cut))
		}
		time.Sleep(50 * time.Millisecond)
	}
	sched := probe.Stop()
	if last := time.Unix(0, tg.last.Load()).Sub(cut); last > bound+sched.Slack(testutil.StopChain) {
		t.Errorf("last request %s after the cut, bound %s (%s)", last, bound, sched)
	}
	t.Logf("fence_after %s: the target's last request came %s after the cut (%s)", fenceAfter,
		time.Unix(0, tg.last.Load()).Sub(cut).Round(time.Millisecond), sched)
	quiet := tg.Requests()
	cutOff(g, false)
	s := r.waitFinal(t, 21, 20*time.Second)
	checkStored(t, s, 21, "gen-1")
	if !s.final.Fenced {
		t.Errorf("final not fenced: %+v", *s.final)
	}
	if tg.Requests() != quiet {
		t.Errorf("a fenced agent sent %d requests after the link came back", tg.Requests()-quiet)
	}
}

// A panic in a run fails that run with the error in its final; the agent lives on and takes the
// next run.
func TestPanicFailsRunNotAgent(t *testing.T) {
	r := startRunCtl(t)
	tg := newCountingTarget(t)
	testPoint = func(where string, run int64) {
		if where == "run" && run == 31 {
			panic("boom")
		}
	}
	t.Cleanup(func() { testPoint = func(string, int64) {} })
	runAgent(t, Config{URL: r.url, Token: r.tok, ID: "gen-1"})
	r.mustPrepare(t, "gen-1", 31, closedPlan(tg.URL, 1, time.Second), 0, "ready %+v")
	r.control(t, cluster.Control{Kind: cluster.ControlStart, Run: 31, StartAtUnixNano: time.Now().UnixNano()})
	s := r.waitFinal(t, 31, 10*time.Second)
	if !strings.Contains(s.final.Error, "internal error in agent gen-1") || !strings.Contains(s.final.Error, "boom") {
		t.Fatalf("final %+v", *s.final)
	}
	waitList(t, r.controller, "idle again", func(l []cluster.Agent) bool { return len(l) == 1 && l[0].State == "idle" })
	r.mustPrepare(t, "gen-1", 32, closedPlan(tg.URL, 1, time.Second), 0, "the agent did not take the next run: %+v")
}

// An acknowledgement after a gap longer than fence_after (a process stopped and resumed late)
// fences the watched run instead of renewing its lease; within fence_after it does not.
func TestLateAckFences(t *testing.T) {
	w := &worker{id: "gen-1", log: quiet(), base: time.Now().Add(-time.Minute)}
	rs := &runState{id: 1, fenceAfter: time.Second}
	rs.ctx, rs.cancel = context.WithCancel(context.Background())
	w.watch.Store(rs)
	w.ackNs.Store(int64(time.Since(w.base) - 500*time.Millisecond))
	w.acked()
	if rs.fenced.Load() || rs.ctx.Err() != nil {
		t.Fatal("an ack 0.5 s after the previous one fenced a run with fence_after 1 s")
	}
	w.ackNs.Store(int64(time.Since(w.base) - 3*time.Second))
	w.acked()
	if !rs.fenced.Load() || rs.ctx.Err() == nil {
		t.Fatal("an ack 3 s after the previous one renewed the lease of a run with fence_after 1 s")
	}
}

// A prepared run that gets no start within PrepareTTL is dropped: the agent is idle, a late start
// is ignored, and it takes the next Prepare — another controller's, refused as busy until then (its
// own controller's next run would replace it at once: TestStopWhilePreparingFreesTheAgent).
func TestPreparedRunDropped(t *testing.T) {
	PrepareTTL = time.Second // before the agent starts; restored after it ends
	t.Cleanup(func() { PrepareTTL = 30 * time.Second })
	r := startRunCtl(t)
	tg := newCountingTarget(t)
	runAgent(t, Config{URL: r.url, Token: r.tok, ID: "gen-1"})
	prepared := time.Now()
	r.mustPrepare(t, "gen-1", 41, closedPlan(tg.URL, 1, time.Second), 0, "ready %+v")
	plan42 := closedPlan(tg.URL, 1, time.Second)
	if ready := r.prepareFrom(t, "ctl-other", "gen-1", 42, plan42, segment.Wire{Weights: []int{1}}, 0); ready.OK {
		t.Fatal("a second run was prepared beside the first")
	}
	for {
		ready := r.prepareFrom(t, "ctl-other", "gen-1", 42, plan42, segment.Wire{Weights: []int{1}}, 0)
		if ready.OK {
			break
		}
		if time.Since(prepared) > PrepareTTL+5*time.Second {
			t.Fatalf("the unstarted run was not dropped: %+v", ready)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if took := time.Since(prepared); took < PrepareTTL {
		t.Fatalf("dropped after %s, before PrepareTTL", took)
	}
	r.control(t, cluster.Control{Kind: cluster.ControlStart, Run: 41, StartAtUnixNano: time.Now().UnixNano()})
	time.Sleep(300 * time.Millisecond)
	if n := tg.Requests(); n != 0 {
		t.Fatalf("a dropped run sent %d requests", n)
	}
}

// A prepared run stopped before its start (another agent refused) is dropped at once.
func TestStopBeforeStartDrops(t *testing.T) {
	r := startRunCtl(t)
	tg := newCountingTarget(t)
	runAgent(t, Config{URL: r.url, Token: r.tok, ID: "gen-1"})
	r.mustPrepare(t, "gen-1", 51, closedPlan(tg.URL, 1, time.Second), 0, "ready %+v")
	waitList(t, r.controller, "running", func(l []cluster.Agent) bool { return len(l) == 1 && l[0].State == "running" })
	r.control(t, cluster.Control{Kind: cluster.ControlStop, Run: 51, Reason: "another agent refused"})
	waitList(t, r.controller, "idle", func(l []cluster.Agent) bool { return len(l) == 1 && l[0].State == "idle" })
	r.mustPrepare(t, "gen-1", 52, closedPlan(tg.URL, 1, time.Second), 0, "after a stop before the start: %+v")
	if n := tg.Requests(); n != 0 {
		t.Fatalf("a run never started sent %d requests", n)
	}
}

// A run stopped after its start message but before its start instant sends nothing; its final
// (empty, no error) still comes.
func TestStopBeforeStartInstant(t *testing.T) {
	r := startRunCtl(t)
	tg := newCountingTarget(t)
	runAgent(t, Config{URL: r.url, Token: r.tok, ID: "gen-1"})
	r.mustPrepare(t, "gen-1", 71, closedPlan(tg.URL, 1, time.Second), 0, "ready %+v")
	r.control(t, cluster.Control{Kind: cluster.ControlStart, Run: 71, StartAtUnixNano: time.Now().Add(30 * time.Second).UnixNano()})
	r.control(t, cluster.Control{Kind: cluster.ControlStop, Run: 71, Reason: "user"})
	s := r.waitFinal(t, 71, 10*time.Second)
	if s.final.Second != 1 || s.final.Error != "" || s.final.Fenced || s.final.StartedUnixNano != 0 || len(s.seconds) != 0 {
		t.Fatalf("final %+v, seconds %v", *s.final, s.byID)
	}
	if n := tg.Requests(); n != 0 {
		t.Fatalf("%d requests", n)
	}
}
