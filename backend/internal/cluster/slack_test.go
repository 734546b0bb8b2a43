package cluster

import (
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// A part's histogram may hold a few more latencies than its requests (histSlack), the VUs among
// them; the VUs believed are at most the agent's share of the run's peak (10 VUs over two equal
// agents: 5 each), so an agent claiming an absurd active_vus is held to the honest bound
// (100 requests, 5 VUs: 100 + 5 + 25 + 64 = 194 latencies) — and a live change to more VUs
// raises the share (20 VUs: 10 each, 199).
func TestAbsurdActiveVUsBuyNoSlack(t *testing.T) {
	c := compile(t, `{"name":"s","requests":[{"name":"r","url":"http://127.0.0.1:1/"}],
		"load":{"executor":"constant-vus","vus":10,"duration":"10s"}}`)
	m := NewMerger(c, []string{"a", "b"}, []int{1, 1})
	lying := func(latencies int) *SecondPart {
		lat := make([]int64, latencies)
		for i := range lat {
			lat[i] = int64(100 + i)
		}
		p := part(t, 1, lat)
		p.Sample.Requests, p.Sample.Successes, p.Sample.ActiveVUs = 100, 100, metrics.PeerSecondCount
		return p
	}
	if err := m.CheckPart(1, lying(194)); err != nil {
		t.Errorf("194 latencies of 100 requests (the honest bound of 5 VUs): %v", err)
	}
	if err := m.CheckPart(1, lying(195)); err == nil {
		t.Error("195 latencies of 100 requests with active_vus 10⁹: accepted, want refused (5 VUs' bound 194)")
	}
	m.RaiseVUs(20)
	m.RaiseVUs(12) // a later, lower change lowers nothing: the run may still hold the 20's agents' seconds
	if err := m.CheckPart(1, lying(199)); err != nil {
		t.Errorf("199 latencies of 100 requests after a change to 20 VUs (10 each): %v", err)
	}
	if err := m.CheckPart(1, lying(200)); err == nil {
		t.Error("200 latencies after a change to 20 VUs: accepted, want refused (10 VUs' bound 199)")
	}
}

// A hostile agent's second whose figures agree with each other but are beyond any generator, or
// would overflow or turn infinite once added up (7·10¹⁸ requests, an interval of 10⁻³⁰⁰ s, an
// rps or CPU of 10³⁰⁸), or that names what no engine writes (a status code of "<script>", an
// unknown error kind, a request name not in the plan) is refused, naming the field; an honest
// second at the bounds is taken.
func TestHugeConsistentFiguresAreRefused(t *testing.T) {
	c := compile(t, `{"name":"s","requests":[{"name":"r","url":"http://127.0.0.1:1/"}],
		"load":{"executor":"constant-vus","vus":10,"duration":"10s"}}`)
	m := NewMerger(c, []string{"a", "b"}, []int{1, 1})
	honest := func() *SecondPart {
		p := part(t, 1, []int64{100, 200})
		p.Sample.IntervalS, p.Sample.RPS, p.Sample.T = 1.000213, 2, 1_800_000_000_000
		p.Sample.StatusCodes = map[string]int64{"200": 2}
		p.Sample.Client = metrics.ClientSample{CPUPercent: 180.5, RSSBytes: 200 << 30, Goroutines: 40}
		p.Sample.BytesIn = 40e9 // 320 Gbit/s
		return p
	}
	if err := m.CheckPart(0, honest()); err != nil {
		t.Fatalf("an honest second: %v", err)
	}
	for field, lie := range map[string]func(p *SecondPart){
		"sample.requests": func(p *SecondPart) {
			p.Sample.Requests, p.Sample.Successes, p.Sample.StatusCodes["200"] = 7e18, 7e18, 7e18
		},
		"sample.interval_s":         func(p *SecondPart) { p.Sample.IntervalS = 1e-300 },
		"sample.rps":                func(p *SecondPart) { p.Sample.RPS = 1e308 },
		"sample.client.cpu_percent": func(p *SecondPart) { p.Sample.Client.CPUPercent = 1e308 },
		"sample.bytes_out":          func(p *SecondPart) { p.Sample.BytesOut = 1 << 62 },
		"sample.status_codes":       func(p *SecondPart) { p.Sample.StatusCodes["<script>"] = 1 },
		"sample.error_kinds":        func(p *SecondPart) { p.Sample.ErrorKinds = map[string]int64{"made_up": 1} },
		"sample.by_name":            func(p *SecondPart) { p.Sample.ByName = map[string]metrics.NameSample{"not-in-plan": {}} },
		"latency_sum_us":            func(p *SecondPart) { p.LatencySumUs = 1 << 63 },
		"sample.t":                  func(p *SecondPart) { p.Sample.T = 1 << 62 },
		// within every bound one by one, impossible together
		"sample.status_codes: 900000000 responses of 2 requests": func(p *SecondPart) { p.Sample.StatusCodes["500"] = 900_000_000 - 2 },
		`sample.by_name."r".requests: 999999999 of 2`: func(p *SecondPart) {
			p.Sample.ByName = map[string]metrics.NameSample{"r": {Requests: 999_999_999}}
		},
		"2 successes and 2 errors of 2 requests": func(p *SecondPart) { p.Sample.Errors = 2 },
		// a billion requests in a millisecond
		"sample.requests: 1000000000 in 0.001 s, more than 1e+09 a second": func(p *SecondPart) {
			p.Sample.Requests, p.Sample.Successes, p.Sample.StatusCodes["200"], p.Sample.IntervalS = 1e9, 1e9, 1e9, 0.001
		},
		`sample.by_name."r".requests: 20 in 1e-08 s`: func(p *SecondPart) {
			p.Sample.ByName = map[string]metrics.NameSample{"r": {Requests: 20}}
			p.Sample.IntervalS = 1e-8
		},
	} {
		p := honest()
		lie(p)
		if err := m.CheckPart(0, p); err == nil || !strings.HasPrefix(err.Error(), field) {
			t.Errorf("%s: %v, want refused naming it", field, err)
		}
	}
}

// An agent's generator CPU is clamped to 100 × its cores (its hello's; MaxCores when not known),
// and a latency sum that would put the second's mean outside its histogram is dropped (the mean
// is then the buckets'): both within every bound, neither possible.
func TestCPUClampedAndUnfitSumDropped(t *testing.T) {
	c := compile(t, `{"name":"s","requests":[{"name":"r","url":"http://127.0.0.1:1/"}],
		"load":{"executor":"constant-vus","vus":10,"duration":"10s"}}`)
	m := NewMerger(c, []string{"a", "b"}, []int{1, 1})
	m.SetCores([]int{2, 0})
	lying := func(cpu float64, sum uint64) *SecondPart {
		p := part(t, 1, []int64{1000, 2000})
		p.Sample.IntervalS, p.Sample.Client.CPUPercent, p.LatencySumUs = 1, cpu, sum
		return p
	}
	for _, tc := range []struct {
		agent   int
		cpu     float64
		sum     uint64
		wantCPU float64
		wantSum uint64
	}{
		{0, 1e9, 3000, 200, 3000},               // two cores
		{1, 1e9, 3000, 100 * MaxCores, 3000},    // cores not known
		{0, 150, 1e12, 150, 0},                  // a mean of 500 s for latencies of 1 and 2 ms
		{0, 150, 1, 150, 0},                     // a mean of 0.5 µs
		{0, 150, 1000 + 2001, 150, 1000 + 2001}, // within the slots' values
	} {
		p := lying(tc.cpu, tc.sum)
		if err := m.CheckPart(tc.agent, p); err != nil {
			t.Fatal(err)
		}
		if p.Sample.Client.CPUPercent != tc.wantCPU || p.LatencySumUs != tc.wantSum {
			t.Errorf("%+v: cpu %v, sum %d", tc, p.Sample.Client.CPUPercent, p.LatencySumUs)
		}
	}
	a, b := lying(1e9, 1e12), lying(50, 3000)
	for j, p := range []*SecondPart{a, b} {
		if err := m.CheckPart(j, p); err != nil {
			t.Fatal(err)
		}
	}
	s := m.Second(1, []*SecondPart{a, b})
	if s.Client.CPUPercent != 250 || s.Agents["a"].CPUPercent != 200 || s.Latency.Mean != 1.5 || s.Latency.Max > 2.01 {
		t.Fatalf("merged %+v %+v", s.Client, s.Latency)
	}
}
