package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// The run's summary is a function of the engine's cumulative state at its end, a Final: a run on
// one machine summarises its one Final (collector.finish), a run over agents the sum of the
// agents' Finals (cluster.Merger.Summary), with the same code (Summarize). Every figure merges
// exactly: counts add, histograms add bucket for bucket, a failure group's counts add, and the
// seconds' generator figures add second by second. Final is JSON-serialisable: its histograms
// travel as HdrHistogram V2 (base64), its phase histograms as their non-zero slots.

// Final is an engine's cumulative state after its run (Engine.Final).
type Final struct {
	// DurationS is start → end of the run and SendWindowS start → the stop of sending, in
	// seconds (unrounded).
	DurationS        float64          `json:"duration_s"`
	SendWindowS      float64          `json:"send_window_s"`
	Requests         int64            `json:"requests"`
	Successes        int64            `json:"successes"`
	Interrupted      int64            `json:"interrupted"`
	Dropped          int64            `json:"dropped_iterations"`
	BytesIn          int64            `json:"bytes_in"`
	BodyBytesIn      int64            `json:"body_bytes_in"`
	BytesOut         int64            `json:"bytes_out"`
	BodyBytesDecoded int64            `json:"body_bytes_decoded"`
	H2               int64            `json:"h2_responses"` // responses over HTTP/2
	StatusCodes      map[string]int64 `json:"status_codes"`
	ErrorKinds       map[string]int64 `json:"error_kinds"`
	Latency          Hist             `json:"latency"`
	LatencySuccess   Hist             `json:"latency_success"`
	ServiceTime      Hist             `json:"service_time"`
	ScheduleLag      Hist             `json:"schedule_lag"`
	WS               *FinalWS         `json:"ws,omitempty"` // runs with WebSocket steps
	// Names has each request name's figures in the engine's name order (the plan's: the same on
	// every agent). A plan with one name has one entry whose Latency is empty: its latency is
	// the run's.
	Names    []FinalName            `json:"names"`
	Checks   []metrics.CheckResult  `json:"checks"`
	Failures []metrics.FailureGroup `json:"failures"`
	// Levels are a concurrency sweep's levels (nil for other executors).
	Levels []FinalLevel `json:"levels,omitempty"`
	// Seconds are the run's seconds (one per Sample), with the generator's figures.
	Seconds  []FinalSecond      `json:"seconds"`
	Aborted  string             `json:"aborted,omitempty"`
	Events   []metrics.RunEvent `json:"events"`
	Monitors *FinalMonitors     `json:"monitors,omitempty"` // runs with monitors
	// Mallocs is the process's heap allocations during the run (runtime.MemStats.Mallocs).
	Mallocs uint64 `json:"mallocs"`
}

// Hist is a cumulative histogram in metrics' geometry: Counts (len metrics.CountsLen; nil when
// empty) and the exact sum of its values in µs (0 when not kept: the mean is then the buckets').
// In JSON: {"hist": HdrHistogram V2 base64, "sum_us": n}.
type Hist struct {
	Counts []int64
	SumUs  uint64
}

type histJSON struct {
	Hist  string `json:"hist"`
	SumUs uint64 `json:"sum_us,omitempty"`
}

// histEncoders reuses encoders across the histograms a Final encodes: each holds a zlib writer
// (~600 KB), which an encoder per histogram allocated anew (an agent's final: ~6 MB of garbage).
var histEncoders = sync.Pool{New: func() any { return new(metrics.HistEncoder) }}

// MarshalJSON encodes the counts as HdrHistogram V2 (metrics.HistEncoder).
func (h Hist) MarshalJSON() ([]byte, error) {
	e := histEncoders.Get().(*metrics.HistEncoder)
	defer histEncoders.Put(e)
	return json.Marshal(histJSON{Hist: e.Encode(h.Counts), SumUs: h.SumUs})
}

// UnmarshalJSON decodes with metrics.DecodeHistCounts's limits.
func (h *Hist) UnmarshalJSON(b []byte) error {
	var j histJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*h = Hist{SumUs: j.SumUs}
	if j.Hist == "" {
		return nil
	}
	c, err := metrics.DecodeHistCounts(j.Hist)
	h.Counts = c
	return err
}

// add adds o into h.
func (h *Hist) add(o Hist) {
	if o.Counts != nil {
		if h.Counts == nil {
			h.Counts = make([]int64, metrics.CountsLen)
		}
		for i, c := range o.Counts {
			h.Counts[i] += c
		}
	}
	h.SumUs += o.SumUs
}

func (h Hist) hist() *hdr.Histogram {
	if h.Counts == nil {
		return metrics.NewHist()
	}
	return metrics.HistFromCounts(h.Counts)
}

func (h Hist) latency() metrics.Latency { return metrics.LatencyOf(h.hist(), h.SumUs) }

// copyHist returns a copy of counts (nil when all zero).
func copyHist(counts []int64, sum uint64) Hist {
	if !slices.ContainsFunc(counts, func(c int64) bool { return c != 0 }) {
		return Hist{SumUs: sum}
	}
	return Hist{Counts: slices.Clone(counts), SumUs: sum}
}

// FinalWS is the WebSocket totals of a run with WebSocket steps.
type FinalWS struct {
	Sessions  int64 `json:"sessions"`
	Failed    int64 `json:"sessions_failed"`
	Sent      int64 `json:"messages_sent"`
	Received  int64 `json:"messages_received"`
	Connect   Hist  `json:"connect"`
	RoundTrip Hist  `json:"round_trip"`
}

// FinalName is one request name's cumulative figures.
type FinalName struct {
	Name         string `json:"name"`
	Successes    int64  `json:"successes"`
	Errors       int64  `json:"errors"`
	Latency      Hist   `json:"latency"`
	Phases       Phases `json:"phases"`
	ChecksPassed int64  `json:"checks_passed"`
	ChecksFailed int64  `json:"checks_failed"`
}

// Phases are phase histograms (metrics.PhaseCounts); in JSON the non-zero slots, each
// [phase, slot, count].
type Phases struct{ metrics.PhaseCounts }

// MarshalJSON writes the non-zero slots.
func (p Phases) MarshalJSON() ([]byte, error) {
	out := [][3]int64{}
	for k := range p.PhaseCounts {
		for i, c := range p.PhaseCounts[k] {
			if c != 0 {
				out = append(out, [3]int64{int64(k), int64(i), c})
			}
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads the non-zero slots; a phase or slot out of range is an error.
func (p *Phases) UnmarshalJSON(b []byte) error {
	var in [][3]int64
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	p.PhaseCounts = metrics.PhaseCounts{}
	for _, s := range in {
		if s[0] < 0 || s[0] >= int64(len(p.PhaseCounts)) || s[1] < 0 || s[1] >= metrics.PhaseSlots || s[2] < 0 {
			return fmt.Errorf("phase slot %v out of range", s)
		}
		p.PhaseCounts[s[0]][s[1]] += s[2]
	}
	return nil
}

// FinalLevel is one concurrency-sweep level's latency and counts.
type FinalLevel struct {
	Latency  Hist  `json:"latency"`
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
}

// FinalSecond is one second of the run: its length (s, to the µs), the generator's CPU (% of one
// core, to 0.001) and RSS, whether it was generator-bound, and the sweep level it counted in (0
// for other executors). In JSON an array [span, cpu, rss, bound (0/1), level] (≈ 30 bytes a
// second: a day's run is ≈ 2.6 MB).
type FinalSecond struct {
	SpanS      float64
	CPUPercent float64
	RSSBytes   uint64
	Bound      bool
	Level      int
}

// MarshalJSON writes the array form.
func (s FinalSecond) MarshalJSON() ([]byte, error) {
	b := 0
	if s.Bound {
		b = 1
	}
	return json.Marshal([5]any{s.SpanS, s.CPUPercent, s.RSSBytes, b, s.Level})
}

// UnmarshalJSON reads the array form.
func (s *FinalSecond) UnmarshalJSON(data []byte) error {
	var a struct {
		span, cpu float64
		rss       uint64
		bound     int
		level     int
	}
	if err := json.Unmarshal(data, &[]any{&a.span, &a.cpu, &a.rss, &a.bound, &a.level}); err != nil {
		return fmt.Errorf("a second of the final state: %w", err)
	}
	*s = FinalSecond{SpanS: a.span, CPUPercent: a.cpu, RSSBytes: a.rss, Bound: a.bound != 0, Level: a.level}
	return nil
}

// FinalMonitors is what the run's monitors saw: their summary, and the server columns of the
// sweep's levels (ServerLevels, when a server monitor exists).
type FinalMonitors struct {
	Series       []metrics.MonitorSeries `json:"series"`
	Target       []metrics.TargetStat    `json:"target"`
	Errors       []metrics.MonitorError  `json:"errors"`
	Server       bool                    `json:"server,omitempty"` // a monitor gives the sweep's server columns
	ServerLevels []ServerLevel           `json:"server_levels,omitempty"`
}

// ServerLevel sums a sweep level's server figures over its seconds with a value.
type ServerLevel struct {
	CPU   float64 `json:"cpu"`
	Mem   float64 `json:"mem"`
	Cores float64 `json:"cores"`
	NCPU  int     `json:"n_cpu"`
	NMem  int     `json:"n_mem"`
}

// Final returns the engine's cumulative state after Run returned (nil before, or when the
// collector failed).
func (e *Engine) Final() *Final { return e.final }

// Summarize computes the run's summary from the cumulative states of the engines that ran c, each
// on its segment (one state: a run on one machine, whose summary it is): the parts are added
// (Merge) and the summary computed from the sum, thresholds judged on it. An error when there is
// no part or the parts do not fit each other or c (another plan's names or checks).
func Summarize(c *plan.Compiled, parts ...*Final) (*metrics.Summary, error) {
	f, err := Merge(parts...)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(f.Names))
	for i, n := range f.Names {
		names[i] = n.Name
	}
	return summarize(c.Plan, thresholdRules(c, names), f), nil
}

// Merge adds the parts' cumulative states: counts and histograms add; the duration and send
// window are the longest part's; the seconds add second by second (the n-th second of each part:
// the parts start together), the longest span, CPU and RSS summed, generator-bound when any part
// was; the failure groups add by request, kind, status and message (a group's sample is the
// first part's that has one) and are cut to metrics.MaxFailureGroups again (the least frequent
// folded into the "(other)" group); events are put in time order; the run was aborted when a part
// was (the first part's reason); monitors are the first part's that has them (every part watches
// the same target). One part is returned as it is.
func Merge(parts ...*Final) (*Final, error) {
	parts = slices.DeleteFunc(slices.Clone(parts), func(f *Final) bool { return f == nil })
	if len(parts) == 0 {
		return nil, errors.New("engine: no final state to summarise")
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	m := &Final{StatusCodes: map[string]int64{}, ErrorKinds: map[string]int64{}, Events: []metrics.RunEvent{}}
	first := parts[0]
	m.Names = make([]FinalName, len(first.Names))
	for i, n := range first.Names {
		m.Names[i] = FinalName{Name: n.Name}
	}
	m.Checks = make([]metrics.CheckResult, len(first.Checks))
	for i, c := range first.Checks {
		m.Checks[i] = metrics.CheckResult{Request: c.Request, Check: c.Check}
	}
	var failures []metrics.FailureGroup
	for j, p := range parts {
		if len(p.Names) != len(m.Names) || len(p.Checks) != len(m.Checks) {
			return nil, fmt.Errorf("engine: part %d has %d request names and %d checks, part 0 %d and %d",
				j, len(p.Names), len(p.Checks), len(m.Names), len(m.Checks))
		}
		m.DurationS = max(m.DurationS, p.DurationS)
		m.SendWindowS = max(m.SendWindowS, p.SendWindowS)
		m.Requests += p.Requests
		m.Successes += p.Successes
		m.Interrupted += p.Interrupted
		m.Dropped += p.Dropped
		m.BytesIn += p.BytesIn
		m.BodyBytesIn += p.BodyBytesIn
		m.BytesOut += p.BytesOut
		m.BodyBytesDecoded += p.BodyBytesDecoded
		m.H2 += p.H2
		metrics.AddCounts(m.StatusCodes, p.StatusCodes)
		metrics.AddCounts(m.ErrorKinds, p.ErrorKinds)
		m.Latency.add(p.Latency)
		m.LatencySuccess.add(p.LatencySuccess)
		m.ServiceTime.add(p.ServiceTime)
		m.ScheduleLag.add(p.ScheduleLag)
		if p.WS != nil {
			if m.WS == nil {
				m.WS = &FinalWS{}
			}
			m.WS.Sessions += p.WS.Sessions
			m.WS.Failed += p.WS.Failed
			m.WS.Sent += p.WS.Sent
			m.WS.Received += p.WS.Received
			m.WS.Connect.add(p.WS.Connect)
			m.WS.RoundTrip.add(p.WS.RoundTrip)
		}
		for i, n := range p.Names {
			if n.Name != m.Names[i].Name {
				return nil, fmt.Errorf("engine: part %d's request name %d is %q, part 0's %q", j, i, n.Name, m.Names[i].Name)
			}
			a := &m.Names[i]
			a.Successes += n.Successes
			a.Errors += n.Errors
			a.Latency.add(n.Latency)
			a.Phases.Add(&n.Phases.PhaseCounts)
			a.ChecksPassed += n.ChecksPassed
			a.ChecksFailed += n.ChecksFailed
		}
		for i, c := range p.Checks {
			m.Checks[i].Passes += c.Passes
			m.Checks[i].Fails += c.Fails
		}
		failures = append(failures, p.Failures...)
		for i, l := range p.Levels {
			if i == len(m.Levels) {
				m.Levels = append(m.Levels, FinalLevel{})
			}
			m.Levels[i].Latency.add(l.Latency)
			m.Levels[i].Requests += l.Requests
			m.Levels[i].Errors += l.Errors
		}
		for i, s := range p.Seconds {
			if i == len(m.Seconds) {
				m.Seconds = append(m.Seconds, FinalSecond{Level: s.Level})
			}
			a := &m.Seconds[i]
			a.SpanS = max(a.SpanS, s.SpanS)
			a.CPUPercent += s.CPUPercent
			a.RSSBytes += s.RSSBytes
			a.Bound = a.Bound || s.Bound
		}
		if m.Aborted == "" {
			m.Aborted = p.Aborted
		}
		m.Events = append(m.Events, p.Events...)
		if m.Monitors == nil {
			m.Monitors = p.Monitors
		}
		m.Mallocs += p.Mallocs
	}
	m.Failures = MergeFailures(failures)
	slices.SortStableFunc(m.Events, func(a, b metrics.RunEvent) int { return int(a.T - b.T) })
	return m, nil
}

// MergeFailures adds failure groups of several generators (each a group's count since the run's
// start, at most one entry per group and generator) by request, kind, status and message: counts
// summed, the first sample kept. More than metrics.MaxFailureGroups groups (beside "(other)")
// keep the most frequent; the rest are counted in the "(other)" group. Most frequent first.
func MergeFailures(in []metrics.FailureGroup) []metrics.FailureGroup {
	type key struct {
		req, kind, msg string
		status         int
	}
	at := map[key]int{}
	out := []metrics.FailureGroup{}
	for _, g := range in {
		k := key{g.Request, g.Kind, g.Message, g.Status}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, metrics.FailureGroup{Request: g.Request, Kind: g.Kind, Status: g.Status, Message: g.Message})
		}
		out[i].Count += g.Count
		if out[i].Sample == nil {
			out[i].Sample = g.Sample
		}
	}
	metrics.SortFailures(out)
	var other *metrics.FailureGroup
	kept := out[:0:0]
	for i := range out {
		g := out[i]
		switch {
		case g.Message == metrics.OtherFailures && g.Kind == "":
			other = mergeOther(other, g)
		case len(kept) < metrics.MaxFailureGroups:
			kept = append(kept, g)
		default:
			other = mergeOther(other, metrics.FailureGroup{Message: metrics.OtherFailures, Count: g.Count, Sample: g.Sample})
		}
	}
	if other != nil {
		kept = append(kept, *other)
		metrics.SortFailures(kept)
	}
	return kept
}

func mergeOther(o *metrics.FailureGroup, g metrics.FailureGroup) *metrics.FailureGroup {
	if o == nil {
		return &metrics.FailureGroup{Message: metrics.OtherFailures, Count: g.Count, Sample: g.Sample}
	}
	o.Count += g.Count
	if o.Sample == nil {
		o.Sample = g.Sample
	}
	return o
}

// summarize computes the summary of cumulative state f of a run of p.
func summarize(p *plan.Plan, rules []thresholdRule, f *Final) *metrics.Summary {
	lat := f.Latency.hist()
	s := &metrics.Summary{
		Requests:          f.Requests,
		Successes:         f.Successes,
		Errors:            f.Requests - f.Successes,
		Interrupted:       f.Interrupted,
		DroppedIterations: f.Dropped,
		DurationS:         round(f.DurationS, 3),
		Latency:           metrics.LatencyOf(lat, f.Latency.SumUs),
		LatencySuccess:    f.LatencySuccess.latency(),
		ServiceTime:       f.ServiceTime.latency(),
		ScheduleLag:       f.ScheduleLag.latency(),
		Executor:          p.Load.Executor,
		StatusCodes:       maps.Clone(f.StatusCodes),
		ErrorKinds:        maps.Clone(f.ErrorKinds),
		BytesIn:           f.BytesIn,
		BodyBytesIn:       f.BodyBytesIn,
		BytesOut:          f.BytesOut,
		BodyBytesDecoded:  f.BodyBytesDecoded,
		Seconds:           len(f.Seconds),
		Thresholds:        []metrics.ThresholdResult{},
		ByName:            map[string]metrics.NameStats{},
	}
	if s.StatusCodes == nil {
		s.StatusCodes = map[string]int64{}
	}
	if s.ErrorKinds == nil {
		s.ErrorKinds = map[string]int64{}
	}
	var cpuSum, cpuMax float64
	for _, sec := range f.Seconds {
		cpuSum += sec.CPUPercent
		cpuMax = max(cpuMax, sec.CPUPercent)
		s.Client.RSSBytesMax = max(s.Client.RSSBytesMax, sec.RSSBytes)
		if sec.Bound {
			s.GeneratorBoundSeconds++
		}
	}
	s.Client.CPUPercentMax = round(cpuMax, 1)
	if len(f.Seconds) > 0 {
		s.Client.CPUPercentAvg = round(cpuSum/float64(len(f.Seconds)), 1)
	}
	s.Client.HeapAllocsPerRequest = heapAllocsPerRequest(f.Mallocs, f.Requests)
	if p.HTTP.H2() {
		var responses int64
		for _, n := range f.StatusCodes {
			responses += n
		}
		s.Protocols = metrics.ProtocolsOf(responses, f.H2)
	}
	if f.DurationS > 0 {
		s.RPS = round(float64(f.Requests)/f.DurationS, 1)
	}
	if f.SendWindowS > 0 {
		s.SendRate = round(float64(f.Requests+f.Interrupted)/f.SendWindowS, 1)
	}
	if f.Requests > 0 {
		s.ErrorRate = round(float64(s.Errors)/float64(f.Requests), 6)
	}
	summaryByName(s, f)
	if w := f.WS; w != nil {
		wc := metrics.WSCounts{On: true, Sessions: w.Sessions, Failed: w.Failed, Sent: w.Sent, Received: w.Received,
			Connect: w.Connect.Counts, RTT: w.RoundTrip.Counts, ConnectSum: w.Connect.SumUs, RTTSum: w.RoundTrip.SumUs}
		if wc.Connect == nil {
			wc.Connect = make([]int64, metrics.CountsLen)
		}
		if wc.RTT == nil {
			wc.RTT = make([]int64, metrics.CountsLen)
		}
		s.WS = wc.Stats(f.DurationS, metrics.NewHist(), metrics.NewHist())
	}
	var enc metrics.HistEncoder
	s.Hist = enc.Encode(f.Latency.Counts)
	if f.Levels != nil {
		s.Sweep = sweepRows(p.Load.Levels, f)
		s.SweepLimitedBy = limitedBy(s.Sweep)
	}
	applyMonitors(s, f.Monitors) // after the sweep rows: their server columns and note
	s.Thresholds = evaluate(rules, f, lat)
	s.Aborted = f.Aborted
	s.Failures = f.Failures
	if s.Failures == nil {
		s.Failures = []metrics.FailureGroup{}
	}
	s.Events = f.Events
	if s.Events == nil {
		s.Events = []metrics.RunEvent{}
	}
	s.Checks = slices.Clone(f.Checks)
	if s.Checks == nil {
		s.Checks = []metrics.CheckResult{}
	}
	return s
}

// heapAllocsPerRequest is allocations per request, rounded to 4 places (0 without requests).
func heapAllocsPerRequest(mallocs uint64, requests int64) float64 {
	if requests <= 0 {
		return 0
	}
	return round(float64(mallocs)/float64(requests), 4)
}

// summaryByName fills s.ByName and s.Timing; s's run figures are set. A plan with one request
// name has one row: the run's figures.
func summaryByName(s *metrics.Summary, f *Final) {
	var total metrics.PhaseCounts
	for _, n := range f.Names {
		total.Add(&n.Phases.PhaseCounts)
	}
	s.Timing = total.Timing()
	if len(f.Names) == 1 {
		n := f.Names[0]
		s.ByName[n.Name] = metrics.NameStats{Requests: s.Requests, Errors: s.Errors, Latency: s.Latency,
			Timing: s.Timing, ChecksPassed: n.ChecksPassed, ChecksFailed: n.ChecksFailed, RPS: s.RPS}
		return
	}
	for _, n := range f.Names {
		st := metrics.NameStats{Requests: n.Successes + n.Errors, Errors: n.Errors,
			Latency: n.Latency.latency(), Timing: n.Phases.Timing(), ChecksPassed: n.ChecksPassed, ChecksFailed: n.ChecksFailed}
		if s.DurationS > 0 {
			st.RPS = round(float64(st.Requests)/s.DurationS, 1)
		}
		s.ByName[n.Name] = st
	}
}

// sweepRows builds the capacity table and marks the knee: the lowest level within 5% of the best
// throughput. No knee is marked when that is the last level (throughput still grew: the sweep did
// not saturate the target or the generator). A level's duration, CPU (average over its seconds),
// RSS (maximum) and generator-bound seconds come from the seconds counted in it.
func sweepRows(levels []int, f *Final) []metrics.SweepRow {
	rows := make([]metrics.SweepRow, 0, len(f.Levels))
	type secs struct {
		span, cpu float64
		n, bound  int
		rss       uint64
	}
	per := make([]secs, len(f.Levels))
	for _, s := range f.Seconds {
		if s.Level < 0 || s.Level >= len(per) {
			continue
		}
		a := &per[s.Level]
		a.span += s.SpanS
		a.cpu += s.CPUPercent
		a.n++
		a.rss = max(a.rss, s.RSSBytes)
		if s.Bound {
			a.bound++
		}
	}
	best := 0.0
	for i, l := range f.Levels {
		a := per[i]
		r := metrics.SweepRow{DurationS: round(a.span, 3), Requests: l.Requests}
		if i < len(levels) {
			r.VUs = levels[i]
		}
		if l.Latency.Counts != nil {
			h := l.Latency.hist()
			r.P50 = metrics.Percentile(h, 50)
			r.P90 = metrics.Percentile(h, 90)
			r.P99 = metrics.Percentile(h, 99)
		}
		if a.span > 0 {
			r.RPS = round(float64(l.Requests)/a.span, 1)
		}
		if l.Requests > 0 {
			r.ErrorRate = round(float64(l.Errors)/float64(l.Requests), 6)
		}
		if a.n > 0 {
			r.CPUPercent = round(a.cpu/float64(a.n), 1)
		}
		r.RSSBytes = a.rss
		r.GeneratorBoundSeconds = a.bound
		best = max(best, r.RPS)
		rows = append(rows, r)
	}
	for i := range rows {
		if best > 0 && rows[i].RPS >= kneeShare*best {
			if i < len(rows)-1 {
				rows[i].Knee = true
			}
			break
		}
	}
	return rows
}
