package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
)

// startTwo starts run over agents a and b (weight 1 each) on testPlan (5 s + 1 s graceful stop:
// its last possible second is 7) and lets both take the start.
func startTwo(t *testing.T, run int64) (*env, *fakeAgent, *fakeAgent, *hooks, <-chan result) {
	t.Helper()
	e := newEnv(t)
	a, b := e.agent("a", 1, Ready{OK: true}), e.agent("b", 1, Ready{OK: true})
	h := newHooks()
	res := e.run(context.Background(), RunSpec{Run: run, Plan: testPlan(t), Agents: pickAll(t, e, 2)}, h)
	for _, ag := range []*fakeAgent{a, b} {
		<-ag.prepared
		ag.control()
	}
	return e, a, b, h, res
}

// mergedUpTo takes the merged seconds 1..n in order and fails on any other.
func (h *hooks) mergedUpTo(t *testing.T, n int) []int64 {
	t.Helper()
	var reqs []int64
	for s := 1; s <= n; s++ {
		m := h.next(t)
		if m.ElapsedS != s {
			t.Fatalf("merged second %d, want %d", m.ElapsedS, s)
		}
		reqs = append(reqs, m.Requests)
	}
	h.none(t)
	return reqs
}

// A final (or a second) naming a second past the plan's last one (7 for 5 s + 1 s graceful stop
// + 1) is ignored and logged once: the run merges no second past the plan, ends at its bound with
// the agent lost, instead of merging millions of empty seconds.
func TestFinalPastThePlanIsIgnored(t *testing.T) {
	e, a, b, h, res := startTwo(t, 21)
	a.second(21, 1, 3)
	a.second(21, 2, 3)
	a.final(21, 3_000_000, 0)
	a.second(21, 10, 1_000_000_000)
	e.took("a", "10")
	for s := 1; s <= 5; s++ {
		b.second(21, s, 4)
	}
	b.final(21, 6, 0)
	e.took("b", "final")
	e.to(MinStartDelay+6*time.Second+EndMargin, b) // the run's end: a never sent a usable final
	r := wait(t, res)
	if r.err != nil {
		t.Fatal(r.err)
	}
	reqs := h.mergedUpTo(t, 5)
	if reqs[0] != 7 || reqs[1] != 7 || reqs[2] != 4 {
		t.Fatalf("merged requests %v", reqs)
	}
	// b's final (10) and a's two delivered seconds (3 each)
	if !r.sum.Degraded || strings.Join(r.sum.LostAgents, ",") != "a" || r.sum.Requests != 16 {
		t.Fatalf("summary %+v", r.sum)
	}
	if n := e.logs.count("ignoring a snapshot past the plan's last second"); n != 1 {
		t.Fatalf("past-the-plan snapshots logged %d times", n)
	}
}

// to moves the clock to t0+d in steps of 3 s (the beating agents beat at each), then waits for the run's end.
func (e *env) to(d time.Duration, beating ...*fakeAgent) {
	e.t.Helper()
	for at := e.clk.Now().Sub(t0) + 3*time.Second; at < d; at += 3 * time.Second {
		e.at(at, beating...)
	}
	e.at(d, beating...)
}

// A final that cannot stand for the agent's share — no engine state, a second not after the
// agent's last delivered one, or a failed run — loses the agent at once: every later second
// carries its share as missing (not as an empty part), the run is degraded and names it.
func TestUnusableFinalLosesTheAgent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		final Snapshot
	}{
		{"no state", Snapshot{Second: 2, Final: &FinalPart{}}},
		{"not after its seconds", Snapshot{Second: 1, Final: &FinalPart{State: &engine.Final{Requests: 3, Successes: 3}}}},
		{"failed", Snapshot{Second: 2, Error: "boom", Final: &FinalPart{State: &engine.Final{Requests: 3, Successes: 3}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, a, b, h, res := startTwo(t, 22)
			a.second(22, 1, 3)
			e.took("a", "1")
			f := tc.final
			f.Run, f.Agent = 22, "a"
			a.publish(22, f, "")
			e.took("a", "final")
			a.second(22, 2, 1000) // after its final: ignored
			for s := 1; s <= 5; s++ {
				b.second(22, s, 4)
			}
			b.final(22, 6, 0)
			r := wait(t, res)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if m := h.next(t); m.ElapsedS != 1 || m.Requests != 7 || len(m.MissingAgents) != 0 {
				t.Fatalf("second 1: %+v", m)
			}
			for s := 2; s <= 5; s++ {
				if m := h.next(t); m.ElapsedS != s || m.Requests != 4 || m.MissingShare != 0.5 || strings.Join(m.MissingAgents, ",") != "a" {
					t.Fatalf("second %d: %+v", s, m)
				}
			}
			h.none(t)
			// b's final (10) and a's second 1 (3)
			if !r.sum.Degraded || strings.Join(r.sum.LostAgents, ",") != "a" || r.sum.Requests != 13 {
				t.Fatalf("summary %+v", r.sum)
			}
		})
	}
}

// An agent that delivers seconds 1–3 and disappears is in the summary with what it delivered:
// the summary's requests are the merged seconds' sum, and its latency histogram holds every
// latency of every agent's seconds (the lost agent's too).
func TestSummaryHasALostAgentsSeconds(t *testing.T) {
	e, a, b, h, res := startTwo(t, 23)
	var all []int64
	send := func(ag *fakeAgent, s int, lat []int64) {
		all = append(all, lat...)
		ag.publish(23, Snapshot{Run: 23, Agent: ag.id, Second: s, Part: part(t, s, lat)}, "")
	}
	for s := 1; s <= 3; s++ {
		send(a, s, []int64{int64(s) * 1000, int64(s)*1000 + 500})
	}
	var bLat []int64
	for s := 1; s <= 5; s++ {
		lat := []int64{300 * int64(s), 700 * int64(s), 900 * int64(s)}
		bLat = append(bLat, lat...)
		send(b, s, lat)
	}
	hist, sumUs := encode(bLat)
	n := int64(len(bLat))
	b.publish(23, Snapshot{Run: 23, Agent: "b", Second: 6, Final: &FinalPart{State: &engine.Final{DurationS: 5,
		Requests: n, Successes: n, StatusCodes: map[string]int64{"200": n}, ErrorKinds: map[string]int64{},
		Latency: engine.Hist{Counts: decodeCounts(t, hist), SumUs: sumUs}, Names: []engine.FinalName{{Name: "r", Successes: n}}}}}, "")
	e.took("b", "final")
	e.to(MinStartDelay+6*time.Second+EndMargin, b)
	r := wait(t, res)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var merged int64
	for _, q := range h.mergedUpTo(t, 5) {
		merged += q
	}
	if merged != int64(len(all)) || r.sum.Requests != merged || r.sum.StatusCodes["200"] != merged {
		t.Fatalf("merged seconds %d requests, summary %d (status 200: %d), sent %d", merged, r.sum.Requests, r.sum.StatusCodes["200"], len(all))
	}
	if strings.Join(r.sum.LostAgents, ",") != "a" || !r.sum.Degraded {
		t.Fatalf("summary %+v", r.sum)
	}
	want, _ := encode(all)
	if !slices.Equal(decodeCounts(t, r.sum.Hist), decodeCounts(t, want)) {
		t.Fatal("the summary's latency histogram is not every delivered latency's")
	}
}

// Seconds with impossible figures — more successes or errors than requests, a negative count, a
// histogram holding more latencies than requests or one that does not decode — are refused
// (logged once): their agent's share of that second is missing, nothing of them is merged or
// handed to OnAgentSecond.
func TestImpossibleSecondsAreRefused(t *testing.T) {
	e, a, b, h, res := startTwo(t, 24)
	good := part(t, 1, []int64{100, 200})
	many := make([]int64, 200)
	for i := range many {
		many[i] = int64(100 + i)
	}
	over := *part(t, 2, many)
	over.Sample.Requests, over.Sample.Successes, over.Sample.ActiveVUs = 1, 1, 0 // 200 latencies of one request (at most 1×1.25 + 64), no VU recording
	broken := *part(t, 3, []int64{100})
	broken.Hist = "SGVsbG8=" // base64, not a histogram
	bad := []*SecondPart{
		&over, &broken,
		NewSecondPart(metrics.Sample{ElapsedS: 4, Requests: 1_000_000_000, Successes: 2_000_000_000}),
		NewSecondPart(metrics.Sample{ElapsedS: 5, Requests: -5}),
	}
	a.publish(24, Snapshot{Run: 24, Agent: "a", Second: 1, Part: good}, "")
	for _, p := range bad {
		a.publish(24, Snapshot{Run: 24, Agent: "a", Second: p.Sample.ElapsedS, Part: p}, "")
	}
	a.final(24, 6, 0)
	e.took("a", "final")
	for s := 1; s <= 5; s++ {
		b.second(24, s, 4)
	}
	b.final(24, 6, 0)
	e.took("b", "final")
	e.to(MinStartDelay+5*time.Second+SecondGrace, a, b) // seconds 2–5 close without a's parts
	r := wait(t, res)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if m := h.next(t); m.ElapsedS != 1 || m.Requests != 6 || len(m.MissingAgents) != 0 {
		t.Fatalf("second 1: %+v", m)
	}
	for s := 2; s <= 5; s++ {
		if m := h.next(t); m.ElapsedS != s || m.Requests != 4 || m.MissingShare != 0.5 || strings.Join(m.MissingAgents, ",") != "a" {
			t.Fatalf("second %d: %+v", s, m)
		}
	}
	h.none(t)
	if got := h.ownCounts("a"); len(got) != 1 || got[1] != 1 {
		t.Fatalf("a's own seconds %v", got)
	}
	if n := e.logs.count("ignoring a second with impossible figures"); n != 1 {
		t.Fatalf("impossible seconds logged %d times", n)
	}
	if !r.sum.Degraded {
		t.Fatalf("summary %+v", r.sum)
	}
}

// A hello's weight must be 0–1000 and its cores 1–4096 (the refusal names the field); a
// presence's CPU is clamped to [0, 100 × cores] and its RSS to 1 TiB.
func TestHelloBoundsAndPresenceClamped(t *testing.T) {
	e := newEnv(t)
	e.reg.LogRefusals(slog.New(e.logs))
	nc, err := e.b.LocalAgent("x")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	for _, tc := range []struct {
		weight, cores int
		want          string
	}{{1001, 1, "weight 1001"}, {-1, 1, "weight -1"}, {1, 0, "cores 0"}, {1, 4097, "cores 4097"}} {
		h, _ := json.Marshal(bus.Hello{ID: "x", Protocol: bus.Protocol, Cores: tc.cores, Weight: tc.weight, Histogram: Geometry})
		m, err := nc.Request(bus.SubjectHello, h, 5*time.Second)
		var rep bus.HelloReply
		if err != nil || json.Unmarshal(m.Data, &rep) != nil || rep.OK || !strings.Contains(rep.Error, tc.want) {
			t.Fatalf("hello weight %d cores %d: %v %+v", tc.weight, tc.cores, err, rep)
		}
	}
	if n := e.logs.count("agent refused at hello"); n != 4 {
		t.Errorf("%d refused hellos logged, want 4", n)
	}
	a := e.agent("a", 1000, Ready{OK: true}) // 1 core
	for _, p := range []bus.Presence{{State: "idle", CPUPercent: 1e9, RSSBytes: 1 << 62}, {State: "idle", CPUPercent: -3}} {
		e.clk.Add(time.Millisecond)
		a.beatWith(p)
		ags := e.reg.List()
		want := bus.Presence{CPUPercent: min(max(p.CPUPercent, 0), 100), RSSBytes: min(p.RSSBytes, MaxRSSBytes)}
		if len(ags) != 1 || ags[0].CPUPercent != want.CPUPercent || ags[0].RSSBytes != want.RSSBytes || ags[0].Weight != 1000 {
			t.Fatalf("presence %+v listed as %+v", p, ags)
		}
	}
}

// FinalOfSeconds: counts and histograms of the seconds (each name's too) add; failure groups and
// checks are the latest second's; a gap in the seconds keeps the seconds aligned.
func TestFinalOfSecondsAddsTheSeconds(t *testing.T) {
	g := func(n int64) metrics.FailureGroup {
		return metrics.FailureGroup{Request: "r0", Kind: "timeout", Count: n}
	}
	parts := []*SecondPart{namedPart(t, 3, 2, []int64{500, 600, 700}, g(5)), namedPart(t, 1, 2, []int64{100, 200}, g(2))}
	like := &engine.Final{Names: []engine.FinalName{{Name: "r0"}, {Name: "r1"}}, Checks: []metrics.CheckResult{{Request: "r0", Check: "c"}}}
	f := FinalOfSeconds(parts, like)
	all := []int64{100, 200, 500, 600, 700}
	hist, sum := encode(all)
	r0, _ := encode([]int64{100, 500, 700})
	if f.Requests != 5 || f.Successes != 5 || f.StatusCodes["200"] != 5 || len(f.Seconds) != 3 || f.Seconds[1].SpanS != 0 ||
		f.DurationS != 2 || f.Latency.SumUs != sum || !slices.Equal(f.Latency.Counts, decodeCounts(t, hist)) ||
		!slices.Equal(f.Names[0].Latency.Counts, decodeCounts(t, r0)) || f.Names[0].Successes != 3 || f.Names[1].Successes != 2 ||
		len(f.Checks) != 1 || len(f.Failures) != 1 || f.Failures[0].Count != 5 {
		t.Fatalf("final of seconds %+v", f)
	}
	if _, err := engine.Summarize(compile(t, `{"name":"n","requests":[{"name":"r0","url":"http://127.0.0.1:9/"},{"name":"r1","url":"http://127.0.0.1:9/"}],"load":{"vus":1,"duration":"3s"}}`), f); err != nil {
		t.Fatal(err)
	}
}

// A final that does not decode (here its latency histogram is not HdrHistogram) loses its agent
// as soon as it comes, named as the agent's final, not at the run's end: the seconds after the
// agent's last one carry its share as missing, and the run ends with b's final.
func TestUnreadableFinalLosesTheAgentAtOnce(t *testing.T) {
	e, a, b, h, res := startTwo(t, 24)
	a.second(24, 1, 3)
	e.took("a", "1")
	a.raw(24, []byte(`{"run":24,"agent":"a","second":2,"final":{"state":{"requests":3,"successes":3,"latency":{"hist":"not a histogram"}}}}`), "bad-final")
	for s := 1; s <= 5; s++ {
		b.second(24, s, 4)
	}
	b.final(24, 6, 0)
	r := wait(t, res) // no clock move: the run ends without waiting for a's final
	if r.err != nil {
		t.Fatal(r.err)
	}
	if m := h.next(t); m.ElapsedS != 1 || m.Requests != 7 {
		t.Fatalf("second 1: %+v", m)
	}
	for s := 2; s <= 5; s++ {
		if m := h.next(t); m.ElapsedS != s || m.MissingShare != 0.5 || strings.Join(m.MissingAgents, ",") != "a" {
			t.Fatalf("second %d: %+v", s, m)
		}
	}
	if !r.sum.Degraded || strings.Join(r.sum.LostAgents, ",") != "a" || r.sum.Requests != 13 {
		t.Fatalf("summary %+v", r.sum)
	}
	if n := e.logs.count("agent lost; its share is missing from here on"); n != 1 {
		t.Fatalf("agent lost logged %d times", n)
	}
	if !e.logs.has("its final message cannot be read") || e.logs.count("ignoring a malformed snapshot") != 0 {
		t.Fatalf("logs %v", e.logs.all())
	}
}

// A start time far from the run's start instant (a broken clock, a lie: here before the epoch
// and at the end of int64's range) is left out of the start skew and logged once; the skew is
// that of the plausible starts.
func TestImplausibleStartsLeftOutOfTheSkew(t *testing.T) {
	for _, bad := range []int64{-9e18, math.MaxInt64} {
		t.Run(fmt.Sprint(bad), func(t *testing.T) {
			e, a, b, _, res := startTwo(t, 25)
			at := t0.Add(MinStartDelay)
			a.publish(25, Snapshot{Run: 25, Agent: "a", Second: 1, StartedUnixNano: bad,
				Part: NewSecondPart(metrics.Sample{ElapsedS: 1, Requests: 3, Successes: 3})}, "")
			b.publish(25, Snapshot{Run: 25, Agent: "b", Second: 1, StartedUnixNano: at.Add(2 * time.Millisecond).UnixNano(),
				Part: NewSecondPart(metrics.Sample{ElapsedS: 1, Requests: 3, Successes: 3})}, "")
			a.final(25, 2, bad)
			b.final(25, 2, at.Add(2*time.Millisecond).UnixNano())
			r := wait(t, res)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.sum.StartSkewMs == nil || *r.sum.StartSkewMs != 0 {
				t.Fatalf("start skew %v", skewMs(r.sum.StartSkewMs))
			}
			if n := e.logs.count("ignoring an agent's start time far from the run's start instant (its start skew is not known)"); n != 1 {
				t.Fatalf("logged %d times: %v", n, e.logs.all())
			}
		})
	}
}

// startPlausible: within StartSlack before the start instant, and up to the plan's seconds and
// StartSlack after it.
func TestStartPlausible(t *testing.T) {
	r := &run{startAt: t0, bound: 7}
	for _, tc := range []struct {
		d  time.Duration
		ok bool
	}{{0, true}, {-StartSlack, true}, {-StartSlack - 1, false}, {StartSlack + 7*time.Second, true}, {StartSlack + 7*time.Second + 1, false}} {
		if got := r.startPlausible(t0.Add(tc.d).UnixNano()); got != tc.ok {
			t.Errorf("start at %v: plausible %v, want %v", tc.d, got, tc.ok)
		}
	}
	r.started = []int64{0, t0.UnixNano() + 5e6, t0.UnixNano() - 1e6}
	if s := r.startSkewMs(); s == nil || *s != 6 {
		t.Fatalf("skew %v", skewMs(s))
	}
	r.started = []int64{0, 0}
	if s := r.startSkewMs(); s != nil {
		t.Fatalf("skew %v of no start", *s)
	}
}
