package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	seg "github.com/volley-load/volley/backend/internal/segment"
	"github.com/volley-load/volley/backend/internal/testutil"
)

func compile(t testing.TB, js string) *plan.Compiled {
	t.Helper()
	p, err := plan.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	c, err := plan.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// viaJSON sends v through JSON, as parts travel from agents.
func viaJSON[T any](t testing.TB, v *T) *T {
	b, err := json.Marshal(v)
	if err != nil {
		t.Error(err)
		return v
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Error(err)
		return v
	}
	return &out
}

// runParts runs c as the agents' engines at once (agent j with segment j of sq) and returns each
// agent's seconds and final, sent through JSON as they travel; a failed run fails t.
func runParts(t *testing.T, c *plan.Compiled, sq *seg.Sequence, agents []string) ([][]*SecondPart, []*FinalPart) {
	t.Helper()
	seconds := make([][]*SecondPart, len(agents))
	finals := make([]*FinalPart, len(agents))
	var wg sync.WaitGroup
	for j := range agents {
		e, err := engine.New(c, engine.Options{Segment: sq.Segment(j), OnSample: func(s metrics.Sample) {
			seconds[j] = append(seconds[j], viaJSON(t, NewSecondPart(s)))
		}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			sum, err := e.Run(context.Background())
			if err != nil {
				t.Errorf("agent %s: %v", agents[j], err)
				return
			}
			finals[j] = viaJSON(t, NewFinalPart(e, sum))
		})
	}
	wg.Wait()
	return seconds, finals
}

func decodeCounts(t *testing.T, s string) []int64 {
	t.Helper()
	c, err := metrics.DecodeHistCounts(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Must-hold 5 of issue 14: one plan run as three agents' engines (segments 1:1:1) against one
// loopback target, every latency the VUs record seen by a test hook. The merged summary's
// histogram is the histogram of all those raw latencies bucket for bucket, and its distribution
// (p50/p90/p99/p99.9/max, and the mean from exact sums) equals theirs; the merged seconds'
// histograms add up to the same histogram, the last merged second's p95 so far is the raw p95,
// and each request name's percentiles so far at the last second are the summary's.
func TestMergeIsExact(t *testing.T) {
	var mu sync.Mutex
	var raw []int64
	var outcomes int64
	defer engine.SetOutcomeHookForTest(func(o metrics.Outcome) {
		mu.Lock()
		defer mu.Unlock()
		outcomes++
		if o.Status > 0 { // latencies are recorded for requests with a response
			raw = append(raw, o.LatencyUs)
		}
	})()
	var n sync.Mutex
	k := 0
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		n.Lock()
		k++
		d := time.Duration(k%9) * 400 * time.Microsecond // a spread of latencies over many buckets
		n.Unlock()
		time.Sleep(d)
		if r.URL.Path == "/bad" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	c := compile(t, fmt.Sprintf(`{"name":"exact","requests":[
		{"name":"ok","url":"%s/ok","weight":3,"checks":[{"type":"status","op":"eq","value":200}]},{"name":"bad","url":"%s/bad"}],
		"load":{"executor":"constant-vus","vus":6,"duration":"2s"},"http":{"timeout":"2s"},
		"thresholds":[{"expr":"p(99)<2000ms"}]}`, tg.URL, tg.URL))
	agents := []string{"a", "b", "c"}
	sq, err := seg.New(1, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	seconds, finals := runParts(t, c, sq, agents)
	if t.Failed() {
		return
	}
	checkPeerBounds(t, c, agents, seconds, finals)
	h := metrics.NewHist()
	var rawSum uint64
	for _, v := range raw {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
		rawSum += uint64(max(v, 0))
	}
	want := h.Export().Counts

	m := NewMerger(c, agents, []int{1, 1, 1})
	sum, err := m.Summary(finals)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests != outcomes || sum.Errors == 0 || int64(len(raw)) != h.TotalCount() {
		t.Fatalf("merged %d requests (%d errors), the VUs recorded %d", sum.Requests, sum.Errors, outcomes)
	}
	var agentsReqs int64
	for _, f := range finals {
		agentsReqs += f.Summary.Requests
	}
	if sum.Requests != agentsReqs {
		t.Errorf("merged %d requests, the agents' own summaries %d", sum.Requests, agentsReqs)
	}
	got := decodeCounts(t, sum.Hist)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("bucket %d: merged %d, raw %d", i, got[i], want[i])
		}
	}
	if wl := metrics.LatencyOf(h, rawSum); sum.Latency != wl {
		t.Errorf("merged latency %+v, raw %+v", sum.Latency, wl)
	}
	fb, _ := json.Marshal(finals[0])
	t.Logf("%d latencies from %d buckets: %+v; one agent's final part: %d bytes", len(raw), nonZero(want), sum.Latency, len(fb))
	var failed int64
	for _, g := range sum.Failures {
		failed += g.Count
	}
	if failed != sum.Errors || len(sum.Thresholds) != 1 || !sum.Thresholds[0].OK {
		t.Errorf("failure groups count %d of %d errors; thresholds %+v", failed, sum.Errors, sum.Thresholds)
	}

	// the seconds
	last := 0
	for _, s := range seconds {
		last = max(last, len(s))
	}
	perSecond := make([]int64, metrics.CountsLen)
	liveFails := map[string]int64{}
	var merged metrics.Sample
	var requests int64
	for sec := 1; sec <= last; sec++ {
		parts := make([]*SecondPart, len(agents))
		for j, s := range seconds {
			for _, p := range s {
				if p.Sample.ElapsedS == sec {
					parts[j] = p
				}
			}
		}
		merged = m.Second(sec, parts)
		requests += merged.Requests
		for i, v := range decodeCounts(t, merged.Hist) {
			perSecond[i] += v
		}
		for _, g := range merged.Failures {
			liveFails[g.Request+g.Message] = g.Count
		}
		if merged.ElapsedS != sec || len(merged.Agents) != 3 {
			t.Errorf("second %d: merged as %d with %d agents' figures", sec, merged.ElapsedS, len(merged.Agents))
		}
	}
	for i := range want {
		if perSecond[i] != want[i] {
			t.Fatalf("bucket %d: the merged seconds hold %d, raw %d", i, perSecond[i], want[i])
		}
	}
	if p95 := metrics.Percentile(h, 95); merged.P95SoFarMs != p95 || requests != sum.Requests {
		t.Errorf("last second: p95 so far %g (raw %g), %d requests over the seconds (%d)", merged.P95SoFarMs, p95, requests, sum.Requests)
	}
	for name, ns := range merged.ByName {
		l := sum.ByName[name].Latency
		if ns.P50 != l.P50 || ns.P95 != l.P95 || ns.P99 != l.P99 {
			t.Errorf("%s so far at the last second: %g/%g/%g, summary %g/%g/%g", name, ns.P50, ns.P95, ns.P99, l.P50, l.P95, l.P99)
		}
	}
	for _, g := range sum.Failures {
		if liveFails[g.Request+g.Message] != g.Count {
			t.Errorf("group %s %q: %d in the seconds, %d in the summary", g.Request, g.Message, liveFails[g.Request+g.Message], g.Count)
		}
	}
}

func nonZero(c []int64) int {
	n := 0
	for _, v := range c {
		if v != 0 {
			n++
		}
	}
	return n
}

// part makes a synthetic agent second of the given latencies (µs), of request name "r".
func part(t testing.TB, elapsed int, lat []int64, fails ...metrics.FailureGroup) *SecondPart {
	return namedPart(t, elapsed, 1, lat, fails...)
}

// encode returns the histogram of lat (µs), encoded, and the exact sum.
func encode(lat []int64) (string, uint64) {
	h := metrics.NewHist()
	var sum uint64
	for _, v := range lat {
		_ = h.RecordValue(v)
		sum += uint64(v)
	}
	var enc metrics.HistEncoder
	return enc.Encode(h.Export().Counts), sum
}

// namedPart is part over names request names ("r" for one; else "r0"…, the latencies dealt out in
// turn, each name's histogram in NameHists).
func namedPart(t testing.TB, elapsed, names int, lat []int64, fails ...metrics.FailureGroup) *SecondPart {
	s := metrics.Sample{T: int64(1000 * elapsed), ElapsedS: elapsed, IntervalS: 1, Requests: int64(len(lat)),
		Successes: int64(len(lat)), StatusCodes: map[string]int64{"200": int64(len(lat))}, ActiveVUs: 2,
		Client: metrics.ClientSample{CPUPercent: 50, RSSBytes: 100}, Failures: fails,
		ByName: map[string]metrics.NameSample{}}
	s.Hist, s.LatencySumUs = encode(lat)
	if names == 1 {
		s.ByName["r"] = metrics.NameSample{Requests: int64(len(lat))}
	} else {
		s.NameHists = map[string]string{}
		for k := range names {
			var own []int64
			for i := k; i < len(lat); i += names {
				own = append(own, lat[i])
			}
			name := fmt.Sprint("r", k)
			s.ByName[name] = metrics.NameSample{Requests: int64(len(own))}
			s.NameHists[name], _ = encode(own)
		}
	}
	return viaJSON(t, NewSecondPart(s))
}

// A missing part's weight share is the second's MissingShare; failure groups, whose counts are
// since each agent's start, add the agents' latest counts; a group's sample is sent once.
func TestSecondMissingShareAndFailures(t *testing.T) {
	c := compile(t, `{"name":"m","requests":[{"name":"r","url":"http://127.0.0.1:1/"}],
		"load":{"executor":"constant-vus","vus":4,"duration":"2s"}}`)
	m := NewMerger(c, []string{"a", "b", "c"}, []int{2, 1, 1})
	g := func(n int64, sample bool) metrics.FailureGroup {
		f := metrics.FailureGroup{Request: "r", Kind: "status_5xx", Status: 503, Message: "HTTP 503 Service Unavailable", Count: n}
		if sample {
			f.Sample = &metrics.FailureSample{Status: 503, Headers: [][2]string{}}
		}
		return f
	}
	s := m.Second(1, []*SecondPart{part(t, 1, []int64{1000, 2000}, g(3, true)), nil, part(t, 1, []int64{3000}, g(2, true))})
	if s.MissingShare != 0.25 || len(s.MissingAgents) != 1 || s.MissingAgents[0] != "b" {
		t.Errorf("missing share %g of %v, want 0.25 of [b]", s.MissingShare, s.MissingAgents)
	}
	if s.Requests != 3 || s.RPS != 3 || s.ActiveVUs != 4 || s.Latency.Max != 3.001 || s.Latency.Mean != 2 ||
		s.Client.CPUPercent != 100 || s.Client.RSSBytes != 200 || len(s.Agents) != 2 || s.StatusCodes["200"] != 3 {
		t.Errorf("second 1: %+v", s)
	}
	if len(s.Failures) != 1 || s.Failures[0].Count != 5 || s.Failures[0].Sample == nil {
		t.Errorf("second 1's failures %+v, want the group × 5 with its sample", s.Failures)
	}
	// second 2: a's count grows to 4, c's (2) stays: 6; b is back; no second sample
	s = m.Second(2, []*SecondPart{part(t, 2, []int64{1000}, g(4, true)), part(t, 2, []int64{1000}), part(t, 2, nil)})
	if s.MissingShare != 0 || s.MissingAgents != nil {
		t.Errorf("second 2: missing %g %v", s.MissingShare, s.MissingAgents)
	}
	if len(s.Failures) != 1 || s.Failures[0].Count != 6 || s.Failures[0].Sample != nil {
		t.Errorf("second 2's failures %+v, want the group × 6 without its sample", s.Failures)
	}
	// the run so far: 1, 2, 3, 1, 1 ms
	if s.P95SoFarMs != 3.001 || s.ByName["r"].P50 != 1 || s.ByName["r"].Requests != 2 {
		t.Errorf("second 2: p95 so far %g, name row %+v", s.P95SoFarMs, s.ByName["r"])
	}
}

// BenchmarkMergeSecond100Agents checks (CheckPart: checked=true) and merges one second of 100 agents, each 10 000 requests with a
// log-normal spread of latencies (median ≈ 5 ms, p99 ≈ 50 ms), for a plan of one request name and
// one of ten; it reports the process CPU time per merged second (cpu-ms/op) and the encoded size
// of one agent's SecondPart (JSON) at 100 000 requests in its second (part_bytes@100k_rps).
func BenchmarkMergeSecond100Agents(b *testing.B) {
	for _, names := range []int{1, 10} {
		for _, checked := range []bool{true, false} {
			b.Run(fmt.Sprint("names=", names, "/checked=", checked), func(b *testing.B) { benchMerge(b, names, checked) })
		}
	}
}

// benchMerge merges, checking each part first as the coordinator does (CheckPart) when checked.
func benchMerge(b *testing.B, names int, checked bool) {
	checks := 0
	if checked {
		checks = 1
	}
	reqs := []string{`{"name":"r","url":"http://127.0.0.1:1/"}`} // namedPart's one name
	if names > 1 {
		reqs = nil
		for k := range names {
			reqs = append(reqs, fmt.Sprintf(`{"name":"r%d","url":"http://127.0.0.1:1/"}`, k))
		}
	}
	c := compile(b, `{"name":"bench","requests":[`+strings.Join(reqs, ",")+`],
		"load":{"executor":"constant-vus","vus":100,"duration":"10s"}}`)
	const agents = 100
	ids := make([]string, agents)
	weights := make([]int, agents)
	parts := make([]*SecondPart, agents)
	rng := rand.New(rand.NewPCG(1, 2))
	spread := func(n int) []int64 {
		lat := make([]int64, n)
		for i := range lat {
			lat[i] = int64(5000 * math.Exp(rng.NormFloat64()))
		}
		return lat
	}
	for j := range parts {
		ids[j], weights[j] = fmt.Sprint("agent-", j), 1
		parts[j] = namedPart(b, 1, names, spread(10_000))
	}
	big, err := json.Marshal(namedPart(b, 1, names, spread(100_000)))
	if err != nil {
		b.Fatal(err)
	}
	m := NewMerger(c, ids, weights)
	sec := 0
	cpu := testutil.ProcessCPU()
	for b.Loop() {
		sec++
		for j, p := range parts[:agents*checks] { // as the coordinator checks each part it takes
			if err := m.CheckPart(j, p); err != nil {
				b.Fatal(err)
			}
		}
		m.Second(sec, parts)
	}
	// CPU time rather than wall time: the figure that holds on a shared machine
	b.ReportMetric(float64(testutil.ProcessCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(len(big)), "part_bytes@100k_rps")
}

// BenchmarkOneAgentSecond is what a single-machine run pays each second for going through its
// in-process agent (issue 14, one code path): one second of 5 000 requests (log-normal latencies,
// as BenchmarkMergeSecond100Agents) made into the agent's SecondPart and merged by the controller
// alone (its histogram decoded, merged, its percentiles read). cpu-µs/op is the CPU this costs per
// second of run, to set against the ≈ 300 ms of CPU that a second at 5 000 requests/s costs the
// process (bench/onepath.sh).
func BenchmarkOneAgentSecond(b *testing.B) {
	c := compile(b, `{"name":"bench","requests":[{"name":"r","url":"http://127.0.0.1:1/"}],
		"load":{"executor":"constant-arrival-rate","rate":5000,"duration":"10s","pre_allocated_vus":50}}`)
	rng := rand.New(rand.NewPCG(1, 2))
	lat := make([]int64, 5000)
	for i := range lat {
		lat[i] = int64(5000 * math.Exp(rng.NormFloat64()))
	}
	s := metrics.Sample{T: 1000, ElapsedS: 1, IntervalS: 1, Requests: int64(len(lat)), Successes: int64(len(lat)),
		StatusCodes: map[string]int64{"200": int64(len(lat))}, ActiveVUs: 50, StartedIterations: int64(len(lat)),
		ByName: map[string]metrics.NameSample{"r": {Requests: int64(len(lat))}}}
	s.Hist, s.LatencySumUs = encode(lat)
	m := NewMerger(c, []string{"local"}, []int{1})
	sec := 0
	cpu := testutil.ProcessCPU()
	for b.Loop() {
		sec++
		s.ElapsedS, s.T = sec, int64(1000*sec)
		m.Second(sec, []*SecondPart{NewSecondPart(s)})
	}
	b.ReportMetric(float64(testutil.ProcessCPU()-cpu)/float64(b.N)/1e3, "cpu-µs/op")
}

// An agent whose collector stalled sends the seconds it passed empty (interval_s 0) and then its
// reading spanning them: the merged rate is the parts' rates added — the stalled agent's average
// over its stall plus the others' second — not all the requests over the longest interval.
func TestSecondRateAfterAStalledAgent(t *testing.T) {
	c := compile(t, `{"name":"m","requests":[{"name":"r","url":"http://127.0.0.1:1/"}],
		"load":{"executor":"constant-vus","vus":4,"duration":"4s"}}`)
	m := NewMerger(c, []string{"a", "b"}, []int{1, 1})
	lat := func(n int) []int64 { return slices.Repeat([]int64{1000}, n) }
	empty := func(elapsed int) *SecondPart {
		return viaJSON(t, NewSecondPart(metrics.Sample{T: int64(1000 * elapsed), ElapsedS: elapsed,
			StatusCodes: map[string]int64{}, ErrorKinds: map[string]int64{}}))
	}
	stalled := part(t, 3, lat(300))
	stalled.Sample.IntervalS = 3 // seconds 1 and 2 were empty: its reading spans 0 … 3 s
	for sec, parts := range [][]*SecondPart{
		{empty(1), part(t, 1, lat(100))},
		{empty(2), part(t, 2, lat(100))},
		{stalled, part(t, 3, lat(100))},
	} {
		s := m.Second(sec+1, parts)
		want := []float64{100, 100, 200}[sec] // b's 100/s, plus a's 300 over 3 s in the third
		if s.RPS != want || s.ByName["r"].RPS != want {
			t.Errorf("second %d: %d requests over %.0f s: rps %v (name %v), want %v", sec+1, s.Requests, s.IntervalS, s.RPS, s.ByName["r"].RPS, want)
		}
	}
}

// checkPeerBounds: every real agent second and final (two request names, 503s: failure groups)
// is within the peer bounds; a final with figures beyond them — or naming what no engine writes —
// is refused, naming the field.
func checkPeerBounds(t *testing.T, c *plan.Compiled, agents []string, seconds [][]*SecondPart, finals []*FinalPart) {
	t.Helper()
	m := NewMerger(c, agents, []int{1, 1, 1})
	for j := range agents {
		for _, p := range seconds[j] {
			if err := m.CheckPart(j, p); err != nil {
				t.Errorf("agent %s second %d: %v", agents[j], p.Sample.ElapsedS, err)
			}
		}
		if err := m.CheckFinal(j, finals[j]); err != nil {
			t.Errorf("agent %s final: %v", agents[j], err)
		}
	}
	for field, lie := range map[string]func(f *engine.Final){
		"state.requests":        func(f *engine.Final) { f.Requests, f.Successes = 7e18, 7e18 },
		"state.duration_s":      func(f *engine.Final) { f.DurationS = 1e-300 },
		"state.bytes_in":        func(f *engine.Final) { f.BytesIn = 1 << 62 },
		"state.latency.SumUs":   func(f *engine.Final) { f.Latency.SumUs = 1 << 63 },
		"state.latency.Counts[": func(f *engine.Final) { f.Latency.Counts[3] = 1 << 62 },
		"state.status_codes":    func(f *engine.Final) { f.StatusCodes["<script>"] = 1 },
		"state.error_kinds":     func(f *engine.Final) { f.ErrorKinds["made_up"] = 1 },
		"state.names":           func(f *engine.Final) { f.Names[0].Name = "not-in-plan" },
		"state.latency: its sum_us 1 puts the mean outside": func(f *engine.Final) { f.Latency.SumUs = 1 },
		// each within bounds, impossible together (a hostile agent's "10¹² requests, all fine")
		"state.latency_success: 0 latencies of": func(f *engine.Final) {
			f.Requests, f.Successes, f.LatencySuccess, f.ErrorKinds = 1e9, 1e9, engine.Hist{}, map[string]int64{}
		},
		"state.requests: ":                  func(f *engine.Final) { f.Requests += 1000 },
		"state.latency: ":                   func(f *engine.Final) { f.StatusCodes["200"] += 1000 },
		"state.names: ":                     func(f *engine.Final) { f.Names[0].Successes += 1000 },
		"state.successes: ":                 func(f *engine.Final) { f.Successes = f.Requests + 1 },
		"state.requests: 10000000000000 in": func(f *engine.Final) { f.Requests, f.Successes, f.ErrorKinds = 1e13, 1e13, map[string]int64{} },
		// a shape engine.Merge could not add to the others' (it failed the whole run's summary)
		"state.checks: 0 checks, the plan has":         func(f *engine.Final) { f.Checks = nil },
		"state.checks[0]: ":                            func(f *engine.Final) { f.Checks[0].Check = "made up" },
		"state.names: 1 request names, the plan has 2": func(f *engine.Final) { f.Names = f.Names[:1] },
		"state.names[0]: ":                             func(f *engine.Final) { f.Names[0], f.Names[1] = f.Names[1], f.Names[0] },
		"state.names[0].latency: its sum_us":           func(f *engine.Final) { f.Names[0].Latency.SumUs = 1 << 50 },
	} {
		f := viaJSON(t, finals[0])
		lie(f.State)
		if err := m.CheckFinal(0, f); err == nil || !strings.HasPrefix(err.Error(), field) {
			t.Errorf("%s: %v, want refused naming it", field, err)
		}
	}
}
