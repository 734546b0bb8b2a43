package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/segment"
)

// The exact merge of a run over agents (docs/scale-out.md, "Merging exactly"). Each agent's
// second travels as a SecondPart: its Sample with the encoded histograms the Sample's JSON leaves
// out. The controller's Merger adds the parts of one second: counts add, the latency histograms
// add bucket for bucket (so every percentile of a merged second is the percentile of all the
// agents' latencies of that second, not an average of percentiles), and each request name's
// histograms add into the run so far. At the end each agent's FinalPart carries its engine's
// cumulative state (engine.Final), and the run's summary is engine.Summarize of their sum: the
// same code that summarises a run on one machine.

// SecondPart is one agent's second as it travels to the controller: its sample with the encoded
// histograms an exact merge needs.
type SecondPart struct {
	Sample metrics.Sample `json:"sample"`
	Hist   string         `json:"hist"` // Sample.Hist (not in Sample's JSON)
	// LatencySumUs is Sample.LatencySumUs: the exact µs sum of the second's latencies.
	LatencySumUs uint64 `json:"latency_sum_us,omitempty"`
	// NameHists is Sample.NameHists: each request name's histogram of the second (plans with
	// several request names).
	NameHists map[string]string `json:"name_hists,omitempty"`
}

// NewSecondPart packs one of the agent engine's samples (from its OnSample).
func NewSecondPart(s metrics.Sample) *SecondPart {
	return &SecondPart{Sample: s, Hist: s.Hist, LatencySumUs: s.LatencySumUs, NameHists: s.NameHists}
}

// Full returns the part's sample with the fields its JSON leaves out (Hist, LatencySumUs,
// NameHists) restored: the agent's own second as its engine made it (for storage).
func (p *SecondPart) Full() metrics.Sample {
	s := p.Sample
	s.Hist, s.LatencySumUs, s.NameHists = p.Hist, p.LatencySumUs, p.NameHists
	return s
}

// FinalPart is one agent's whole share at its end: what Merger.Summary needs for an exact summary.
type FinalPart struct {
	// Summary is the agent's own summary (of its share of the run).
	Summary *metrics.Summary `json:"summary"`
	Hist    string           `json:"hist"` // Summary.Hist
	// State is the agent engine's cumulative state (engine.Final); nil when its collector failed.
	State *engine.Final `json:"state"`
}

// NewFinalPart packs an agent's finished engine and its summary (after e.Run returned sum).
func NewFinalPart(e *engine.Engine, sum *metrics.Summary) *FinalPart {
	p := &FinalPart{Summary: sum, State: e.Final()}
	if sum != nil {
		p.Hist = sum.Hist
	}
	return p
}

// finalWire is a FinalPart's JSON. Its check results travel once, as [request, check, passes,
// fails] rows whose names are indexes into CheckNames (each distinct name once), instead of in
// State.Checks and again in Summary.Checks, each naming its request: a plan's request name (up
// to 1000 bytes) is repeated for each of its checks (up to 50), and 326 requests × 50 checks of
// a 1 MiB plan made a 34 MB final, which the broker refuses (bus.MaxPayload, 8 MiB). Rows are
// 4 numbers, names at most the plan's own text. A final without rows (an older agent's) is read as it is.
type finalWire struct {
	Summary *metrics.Summary `json:"summary"`
	Hist    string           `json:"hist"`
	State   *engine.Final    `json:"state"`
	// Checks are State.Checks (and Summary.Checks, when they are the same list) as rows.
	Checks     [][4]int64 `json:"check_rows,omitempty"`
	CheckNames []string   `json:"check_names,omitempty"`
	// SummaryChecks says Summary.Checks are the rows too (else Summary carries its own).
	SummaryChecks bool `json:"summary_checks,omitempty"`
}

// MarshalJSON writes p with its check results as rows (finalWire).
func (p FinalPart) MarshalJSON() ([]byte, error) {
	w := finalWire{Summary: p.Summary, Hist: p.Hist, State: p.State}
	if p.State != nil && len(p.State.Checks) > 0 {
		index := map[string]int64{}
		name := func(s string) int64 {
			i, ok := index[s]
			if !ok {
				i = int64(len(w.CheckNames))
				index[s] = i
				w.CheckNames = append(w.CheckNames, s)
			}
			return i
		}
		w.Checks = make([][4]int64, len(p.State.Checks))
		for i, c := range p.State.Checks {
			w.Checks[i] = [4]int64{name(c.Request), name(c.Check), c.Passes, c.Fails}
		}
		st := *p.State
		st.Checks = nil
		w.State = &st
		if p.Summary != nil && slices.Equal(p.Summary.Checks, p.State.Checks) {
			sum := *p.Summary
			sum.Checks = nil
			w.Summary, w.SummaryChecks = &sum, true
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads finalWire. Errors: a row naming no name of CheckNames, rows without a
// state, or a state that has check results of its own beside rows.
func (p *FinalPart) UnmarshalJSON(data []byte) error {
	var w finalWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*p = FinalPart{Summary: w.Summary, Hist: w.Hist, State: w.State}
	if len(w.Checks) == 0 {
		return nil
	}
	if w.State == nil || len(w.State.Checks) > 0 {
		return errors.New("cluster: a final's check rows need a state without check results")
	}
	checks := make([]metrics.CheckResult, len(w.Checks))
	n := int64(len(w.CheckNames))
	for i, r := range w.Checks {
		if r[0] < 0 || r[0] >= n || r[1] < 0 || r[1] >= n {
			return fmt.Errorf("cluster: a final's check row %d names no name of its %d", i, n)
		}
		checks[i] = metrics.CheckResult{Request: w.CheckNames[r[0]], Check: w.CheckNames[r[1]], Passes: r[2], Fails: r[3]}
	}
	p.State.Checks = checks
	if w.SummaryChecks && p.Summary != nil {
		p.Summary.Checks = slices.Clone(checks)
	}
	return nil
}

// Merger merges a run's agents' seconds and summaries exactly: counts summed, histograms merged
// bucket for bucket. Not safe for concurrent use.
type Merger struct {
	c       *plan.Compiled
	agents  []string
	weights []int
	total   int             // the weights' sum
	single  bool            // the plan has one request name: its figures are the run's
	known   map[string]bool // the request names an agent's second may name (CheckPart)
	// shape is what an engine of the plan reports in its final state: its request names
	// (engine.RequestNames) and checks (engine.PlanChecks), in order (CheckFinal).
	shapeNames  []string
	shapeChecks []metrics.CheckResult
	// seq is the parts' split (nil: weights that do not split; no cap on the VUs CheckPart
	// believes); peakVUs the most VUs the whole run may hold at once: the plan's peak
	// (plan.Load.PeakVUs), raised by live changes (RaiseVUs; atomic: live control's goroutine).
	seq     *segment.Sequence
	peakVUs atomic.Int64
	cores   []int // each agent's cores, by part (SetCores; 0 or none: MaxCores)

	dec    metrics.HistDecoder
	enc    metrics.HistEncoder
	second []int64        // the second being merged (reused)
	soFar  []int64        // every merged second's latencies added
	hist   *hdr.Histogram // reused for percentiles
	names  map[string]*nameSoFar
	fails  map[failKey]*failSoFar
	nFails int // groups counted on their own (at most metrics.MaxFailureGroups)
	sec    int // calls of Second so far
}

// nameSoFar is one request name's run so far: its latencies, and each agent's latest
// cumulative figures (checks, timing; an agent's NameSample counts them since its start).
type nameSoFar struct {
	lat           []int64
	latest        []metrics.NameSample // by part; the agent's latest row of the name
	seen          []int64              // by part: the agent's requests of the name so far
	grew          bool                 // lat grew in this second
	p50, p95, p99 float64              // lat's, as last computed
}

type failKey struct {
	req, kind, msg string
	status         int
}

// failSoFar is one failure group: each agent's latest count since its start, and whether the
// merged seconds have carried its sample.
type failSoFar struct {
	group  metrics.FailureGroup // its identity
	counts []int64              // by part
	shown  bool
	other  bool // counted in the "(other)" group (beyond MaxFailureGroups)
	sec    int  // the last second in which an agent's count of it arrived
}

// NewMerger makes the merger of a run of c over agents (part order) with their weights.
func NewMerger(c *plan.Compiled, agents []string, weights []int) *Merger {
	m := &Merger{c: c, agents: agents, weights: weights, names: map[string]*nameSoFar{}, fails: map[failKey]*failSoFar{},
		second: make([]int64, metrics.CountsLen), soFar: make([]int64, metrics.CountsLen), hist: metrics.NewHist()}
	for _, w := range weights {
		m.total += w
	}
	distinct := map[string]bool{}
	for _, r := range c.Plan.Requests {
		distinct[r.Name] = true
	}
	m.single = len(distinct) <= 1
	distinct[metrics.OtherName] = true // past metrics.MaxNames names
	m.known = distinct
	m.shapeNames, _ = engine.RequestNames(c.Plan)
	m.shapeChecks = engine.PlanChecks(c)
	m.seq, _ = segment.New(weights...)
	m.peakVUs.Store(int64(c.Plan.Load.PeakVUs()))
	return m
}

// SetCores gives each agent's cores (its hello's), by part: CheckPart and CheckFinal clamp an
// agent's generator CPU to 100 × its cores (MaxCores when 0 or not given).
func (m *Merger) SetCores(cores []int) { m.cores = cores }

// maxCPU is the most generator CPU (% of one core) agent i can use: 100 × its cores.
func (m *Merger) maxCPU(i int) float64 {
	c := MaxCores
	if i >= 0 && i < len(m.cores) && m.cores[i] > 0 {
		c = min(m.cores[i], MaxCores)
	}
	return 100 * float64(c)
}

// RaiseVUs makes n VUs, run-wide, a count the run may hold (a live change to n VUs, asked of the
// agents): the peak CheckPart caps an agent's active VUs by becomes at least n. Safe to call
// from another goroutine than the merging one.
func (m *Merger) RaiseVUs(n int) {
	for v := int64(n); ; {
		old := m.peakVUs.Load()
		if v <= old || m.peakVUs.CompareAndSwap(old, v) {
			return
		}
	}
}

// Second merges second sec (1-based) from parts, one per agent in part order; a nil part is
// missing: its agent's weight share goes into MissingShare and its id into MissingAgents. Call it
// once per second, in order: the run so far (P95SoFarMs, the names' percentiles, the failure
// counts) is what the calls have added. A part's histogram that does not decode is left out of
// the latencies (its counts still add); the coordinator refuses such a part before (CheckPart).
//
// The merged sample: counts (requests, successes, errors, interrupted, started and dropped iterations,
// bytes, status codes, error kinds, protocols, WebSocket counts) and active VUs are the parts'
// sums; RPS (and each name's, and the WebSocket message rates) is the sum of the parts' rates,
// each part's count over its own interval (a part with interval 0, a second its collector passed
// late, has none; the part after it spans that time: the rate of an agent that stalled is its
// average over the stall, not its count over the others' second); the latency distribution and Hist
// come from the parts' histograms added bucket for bucket, the mean from their exact sums;
// P95SoFarMs and each name's P50/P95/P99 from every merged second so far added (exact);
// generator-bound when any part was. T and IntervalS are the latest part's end and the longest
// part's interval (the agents' seconds end within their start skew of each other; both 0 when
// every part is missing). Client is the
// agents' generator summed — CPU % (of one core: 300 = three cores busy), RSS, goroutines and
// open connections — with the longest GC pause and the highest schedule-lag p99; Agents holds
// each agent's own. Failure groups: each agent's latest count per group, summed; a group's sample
// is sent once. Approximate, as no histogram of theirs travels: each name's Timing, and the
// WebSocket connect and round-trip latencies, which are the agents' figures weighted by their
// counts (requests so far, sessions, messages received). Monitor values (Target, TargetErrors)
// are the first present part's; events are all parts'.
func (m *Merger) Second(sec int, parts []*SecondPart) metrics.Sample {
	m.sec++
	s := metrics.Sample{ElapsedS: sec, StatusCodes: map[string]int64{}, ErrorKinds: map[string]int64{}}
	clear(m.second)
	var sum uint64
	sumOK := true
	missing := 0
	var rps, sent, received float64 // the parts' rates (rate)
	for j, p := range parts {
		if p == nil {
			s.MissingAgents = append(s.MissingAgents, m.agent(j))
			missing += m.weight(j)
			continue
		}
		ps := &p.Sample
		s.T = max(s.T, ps.T)
		s.IntervalS = max(s.IntervalS, ps.IntervalS)
		rps += rate(ps.Requests, ps.IntervalS)
		if ps.WS != nil {
			sent += rate(ps.WS.MessagesSent, ps.IntervalS)
			received += rate(ps.WS.MessagesReceived, ps.IntervalS)
		}
		s.Requests += ps.Requests
		s.Successes += ps.Successes
		s.Errors += ps.Errors
		s.Interrupted += ps.Interrupted
		s.ActiveVUs += ps.ActiveVUs
		s.DroppedIterations += ps.DroppedIterations
		s.StartedIterations += ps.StartedIterations
		s.BytesIn += ps.BytesIn
		s.BytesOut += ps.BytesOut
		s.BodyBytesDecoded += ps.BodyBytesDecoded
		metrics.AddCounts(s.StatusCodes, ps.StatusCodes)
		metrics.AddCounts(s.ErrorKinds, ps.ErrorKinds)
		if ps.Protocols != nil {
			if s.Protocols == nil {
				s.Protocols = map[string]int64{}
			}
			metrics.AddCounts(s.Protocols, ps.Protocols)
		}
		s.GeneratorBound = s.GeneratorBound || ps.GeneratorBound
		addClient(&s.Client, ps.Client)
		if s.Agents == nil {
			s.Agents = make(map[string]metrics.ClientSample, len(parts))
		}
		s.Agents[m.agent(j)] = ps.Client
		n, err := m.dec.AddTo(m.second, p.Hist)
		if err != nil {
			sumOK = false // a part whose histogram is broken: its latencies are left out
		}
		if n > 0 && p.LatencySumUs == 0 {
			sumOK = false
		}
		sum += p.LatencySumUs
		if s.Target == nil && ps.Target != nil {
			s.Target, s.TargetErrors = ps.Target, ps.TargetErrors
		}
		s.Events = append(s.Events, ps.Events...)
		s.WS = addWS(s.WS, ps.WS)
	}
	if m.total > 0 {
		s.MissingShare = float64(missing) / float64(m.total)
	}
	s.RPS = round1(rps)
	if s.WS != nil {
		s.WS.MessagesSentRate, s.WS.MessagesReceivedRate = round1(sent), round1(received)
	}
	if !sumOK {
		sum = 0 // the mean from the buckets
	}
	metrics.FillHist(m.hist, m.second)
	s.Latency = metrics.LatencyOf(m.hist, sum)
	s.Hist = m.enc.Encode(m.second)
	s.LatencySumUs = sum
	for i, c := range m.second {
		m.soFar[i] += c
	}
	metrics.FillHist(m.hist, m.soFar)
	s.P95SoFarMs = metrics.Percentile(m.hist, 95)
	m.mergeNames(&s, parts)
	s.Failures = m.mergeFailures(parts)
	return s
}

func (m *Merger) agent(j int) string {
	if j < len(m.agents) {
		return m.agents[j]
	}
	return ""
}

func (m *Merger) weight(j int) int {
	if j < len(m.weights) {
		return m.weights[j]
	}
	return 0
}

// mergeNames fills s.ByName; m.hist holds the run so far.
func (m *Merger) mergeNames(s *metrics.Sample, parts []*SecondPart) {
	var p50, p95, p99 float64
	if m.single {
		p50, p95, p99 = metrics.Percentile(m.hist, 50), s.P95SoFarMs, metrics.Percentile(m.hist, 99)
	}
	for j, p := range parts {
		if p == nil {
			continue
		}
		for name, ns := range p.Sample.ByName {
			st := m.name(name, len(parts))
			if j < len(st.latest) {
				st.latest[j] = ns
				st.seen[j] += ns.Requests
			}
			if h, ok := p.NameHists[name]; ok && !m.single {
				_, _ = m.dec.AddTo(st.lat, h) // a broken histogram adds what it could
				st.grew = true
			}
		}
	}
	for _, p := range parts {
		if p == nil {
			continue
		}
		for name := range p.Sample.ByName {
			if s.ByName == nil {
				s.ByName = map[string]metrics.NameSample{}
			}
			if _, done := s.ByName[name]; done {
				continue
			}
			s.ByName[name] = m.nameRow(name, parts, p50, p95, p99)
		}
	}
}

func (m *Merger) name(name string, n int) *nameSoFar {
	st := m.names[name]
	if st == nil {
		n = max(n, len(m.agents))
		st = &nameSoFar{latest: make([]metrics.NameSample, n), seen: make([]int64, n)}
		if !m.single {
			st.lat = make([]int64, metrics.CountsLen)
		}
		m.names[name] = st
	}
	return st
}

// rate is n over interval seconds; 0 for an interval of 0 (a part with no reading of its own).
func rate(n int64, interval float64) float64 {
	if interval <= 0 {
		return 0
	}
	return float64(n) / interval
}

// nameRow is one name's merged row of this second.
func (m *Merger) nameRow(name string, parts []*SecondPart, p50, p95, p99 float64) metrics.NameSample {
	st := m.names[name]
	var row metrics.NameSample
	var rps float64
	for _, p := range parts {
		if p != nil {
			ns := p.Sample.ByName[name]
			row.Requests += ns.Requests
			row.Errors += ns.Errors
			rps += rate(ns.Requests, p.Sample.IntervalS)
		}
	}
	for _, l := range st.latest {
		row.ChecksPassed += l.ChecksPassed
		row.ChecksFailed += l.ChecksFailed
	}
	row.Timing = blendTiming(st.latest, st.seen)
	row.RPS = round1(rps)
	switch {
	case m.single:
		row.P50, row.P95, row.P99 = p50, p95, p99
	case len(parts) == 1:
		// one agent: its own figures so far are the run's (and need no histogram)
		l := st.latest[0]
		row.P50, row.P95, row.P99 = l.P50, l.P95, l.P99
	default:
		if st.grew {
			metrics.FillHist(m.hist, st.lat)
			st.p50, st.p95, st.p99 = metrics.Percentile(m.hist, 50), metrics.Percentile(m.hist, 95), metrics.Percentile(m.hist, 99)
			st.grew = false
		}
		row.P50, row.P95, row.P99 = st.p50, st.p95, st.p99
	}
	return row
}

// mergeFailures returns the groups that changed in this second, each with the sum of the agents'
// latest counts; a group's sample the first time one arrives. Groups beyond
// metrics.MaxFailureGroups are counted in the "(other)" group.
func (m *Merger) mergeFailures(parts []*SecondPart) []metrics.FailureGroup {
	var changed []*failSoFar
	other := false // the "(other)" group changed
	var otherSample *metrics.FailureSample
	for j, p := range parts {
		if p == nil {
			continue
		}
		for _, g := range p.Sample.Failures {
			k := failKey{g.Request, g.Kind, g.Message, g.Status}
			st := m.fails[k]
			if st == nil {
				st = &failSoFar{group: metrics.FailureGroup{Request: g.Request, Kind: g.Kind, Status: g.Status, Message: g.Message},
					counts: make([]int64, len(parts))}
				isOther := g.Kind == "" && g.Message == metrics.OtherFailures
				if !isOther {
					if m.nFails >= metrics.MaxFailureGroups {
						st.other = true
					} else {
						m.nFails++
					}
				}
				m.fails[k] = st
			}
			if j < len(st.counts) {
				st.counts[j] = g.Count
			}
			if st.other || (g.Kind == "" && g.Message == metrics.OtherFailures) {
				other = true
				if otherSample == nil && g.Sample != nil {
					otherSample = g.Sample
				}
				continue
			}
			if g.Sample != nil && !st.shown && st.group.Sample == nil {
				st.group.Sample = g.Sample
			}
			if st.sec != m.sec {
				st.sec = m.sec
				changed = append(changed, st)
			}
		}
	}
	var out []metrics.FailureGroup
	for _, st := range changed {
		g := st.group
		for _, c := range st.counts {
			g.Count += c
		}
		if st.shown {
			g.Sample = nil
		}
		st.shown = st.shown || g.Sample != nil
		st.group.Sample = nil
		out = append(out, g)
	}
	if other {
		g := metrics.FailureGroup{Message: metrics.OtherFailures, Sample: otherSample}
		for _, st := range m.fails {
			if st.other || (st.group.Kind == "" && st.group.Message == metrics.OtherFailures) {
				for _, c := range st.counts {
					g.Count += c
				}
			}
		}
		out = append(out, g)
	}
	metrics.SortFailures(out)
	return out
}

// Summary merges the agents' final parts (part order; nil: the agent never finished) into the
// run's summary, as the engine would have computed it for the whole run: engine.Summarize of the
// agents' cumulative states (engine.Merge says how each figure adds), thresholds judged on the
// sum. Agents is set to the number of agents; Degraded, LostAgents and StartSkewMs are the
// coordinator's. An error when no part has a state, or the states do not fit together.
func (m *Merger) Summary(parts []*FinalPart) (*metrics.Summary, error) {
	var states []*engine.Final
	for _, p := range parts {
		if p != nil && p.State != nil {
			states = append(states, p.State)
		}
	}
	if len(states) == 0 {
		return nil, errors.New("cluster: no agent delivered its final state")
	}
	sum, err := engine.Summarize(m.c, states...)
	if err != nil {
		return nil, err
	}
	sum.Agents = len(m.agents)
	return sum, nil
}

// CheckPart says why agent i's (part order) second cannot be merged (nil: it can): a figure out
// of metrics.CheckPeerSecond's bounds (a count above a billion, a float that would make a rate
// infinite, a status code that is not one…), a latency sum above metrics.PeerSecondSumUs, a
// request name the plan does not have, a negative count, more successes or errors than requests, or a histogram (the second's or a request
// name's) that does not decode or holds more latencies than histSlack allows for the requests it
// is of. Interrupted requests are not among the requests, so they are not compared. The VUs
// histSlack allows for are the part's active VUs, but at most agent i's share of the run's peak
// VUs (its segment's count of the plan's peak, or of a larger live change: RaiseVUs): a hostile
// agent's absurd active_vus buys it no slack. Counts coming faster than a billion a second over
// the part's interval are refused too (checkRates). It clamps the agent's generator CPU to 100 ×
// its cores (SetCores) and drops a latency sum that does not fit the histogram
// (metrics.SumFits: the second's mean is then its buckets').
func (m *Merger) CheckPart(i int, p *SecondPart) error {
	s := &p.Sample
	if err := metrics.CheckPeerSecond("sample", s); err != nil {
		return err
	}
	if p.LatencySumUs > metrics.PeerSecondSumUs {
		return fmt.Errorf("latency_sum_us: %d is out of range (0 to %g)", p.LatencySumUs, float64(metrics.PeerSecondSumUs))
	}
	for name := range s.ByName {
		if !m.known[name] {
			return fmt.Errorf("sample.by_name: %.80q is not a request name of the plan", name)
		}
	}
	for name := range p.NameHists {
		if !m.known[name] {
			return fmt.Errorf("name_hists: %.80q is not a request name of the plan", name)
		}
	}
	switch {
	case s.Requests < 0 || s.Successes < 0 || s.Errors < 0 || s.Interrupted < 0 || s.DroppedIterations < 0 ||
		s.StartedIterations < 0 || s.BytesIn < 0 || s.BytesOut < 0 || s.BodyBytesDecoded < 0 || s.ActiveVUs < 0:
		return errors.New("a negative count")
	case s.Successes+s.Errors != s.Requests: // (an engine's sample: errors = requests − successes)
		return fmt.Errorf("%d successes and %d errors of %d requests", s.Successes, s.Errors, s.Requests)
	}
	if err := checkRates(s); err != nil {
		return err
	}
	s.Client.CPUPercent = min(s.Client.CPUPercent, m.maxCPU(i))
	vus := s.ActiveVUs
	if m.seq != nil && i >= 0 && i < m.seq.Parts() {
		vus = min(vus, m.seq.Segment(i).Count(m.peakVUs.Load()))
	}
	// Counted beside the requests, read a moment apart from them: within histSlack of them.
	most := histSlack(s.Requests, vus)
	if n := sumCounts(s.StatusCodes); n > most {
		return fmt.Errorf("sample.status_codes: %d responses of %d requests", n, s.Requests)
	}
	var named int64
	for name, ns := range s.ByName {
		if ns.Requests < 0 || ns.Requests > most {
			return fmt.Errorf("sample.by_name.%.80q.requests: %d of %d requests", name, ns.Requests, s.Requests)
		}
		named += ns.Requests
	}
	if named > most {
		return fmt.Errorf("sample.by_name: %d requests in all, of %d", named, s.Requests)
	}
	st, err := m.checkHist(p.Hist, histSlack(s.Requests, vus))
	if err != nil {
		return err
	}
	if !st.SumFits(p.LatencySumUs) {
		p.LatencySumUs = 0 // the second's mean from the buckets (Second)
	}
	for name, h := range p.NameHists {
		if _, err := m.checkHist(h, histSlack(s.ByName[name].Requests, vus)); err != nil {
			return fmt.Errorf("request name %q: %w", name, err)
		}
	}
	return nil
}

// checkRates refuses counts that come faster than metrics.PeerSecondCount a second over the
// second's interval: the merged rates (a count over its interval) stay finite and bounded
// however short an interval an agent claims.
func checkRates(s *metrics.Sample) error {
	if s.IntervalS <= 0 {
		return nil // no rate of its own (rate: 0)
	}
	most := metrics.PeerSecondCount * s.IntervalS
	fast := func(what string, n int64) error {
		if float64(n) > most {
			return fmt.Errorf("%s: %d in %g s, more than %g a second", what, n, s.IntervalS, float64(metrics.PeerSecondCount))
		}
		return nil
	}
	if err := fast("sample.requests", s.Requests); err != nil {
		return err
	}
	for name, ns := range s.ByName {
		if err := fast(fmt.Sprintf("sample.by_name.%.80q.requests", name), ns.Requests); err != nil {
			return err
		}
	}
	if w := s.WS; w != nil {
		if err := fast("sample.ws.messages_sent", w.MessagesSent); err != nil {
			return err
		}
		return fast("sample.ws.messages_received", w.MessagesReceived)
	}
	return nil
}

// CheckFinal says why an agent's final state cannot be merged (nil: it can): a figure out of
// metrics.PeerTotal's bounds (its monitor readings: metrics.PeerMonitor), status codes, error
// kinds or failure groups out of metrics.CheckPeerCodes', or a request name the plan does not
// have, or a histogram whose µs sum does not fit its counts (checkSums). It clamps the agent's
// generator CPU of each second to 100 × its cores (SetCores). A final without a state is the
// caller's to judge.
func (m *Merger) CheckFinal(i int, p *FinalPart) error {
	if p == nil || p.State == nil {
		return nil
	}
	for j := range p.State.Seconds {
		sec := &p.State.Seconds[j]
		sec.CPUPercent = min(sec.CPUPercent, m.maxCPU(i))
	}
	f := *p.State
	monitors := f.Monitors
	f.Monitors = nil
	if err := metrics.PeerTotal.CheckBounds("state", &f); err != nil {
		return err
	}
	if err := metrics.PeerMonitor.CheckBounds("state.monitors", monitors); err != nil {
		return err
	}
	if err := metrics.CheckPeerCodes("state", f.StatusCodes, f.ErrorKinds, nil, f.Failures); err != nil {
		return err
	}
	for _, n := range f.Names {
		if !m.known[n.Name] {
			return fmt.Errorf("state.names: %.80q is not a request name of the plan", n.Name)
		}
	}
	if err := m.checkShape(&f); err != nil {
		return err
	}
	tol := int64(64)
	if m.seq != nil && i >= 0 && i < m.seq.Parts() {
		tol += m.seq.Segment(i).Count(m.peakVUs.Load())
	}
	if err := checkTotals(&f, tol); err != nil {
		return err
	}
	return checkSums(&f)
}

// checkShape refuses a final state whose request names or checks are not those an engine of
// the plan reports, in its order: engine.Merge could not add it to the others' (a hostile
// agent's final with its checks left out would fail the whole run's summary).
func (m *Merger) checkShape(f *engine.Final) error {
	if len(f.Names) != len(m.shapeNames) {
		return fmt.Errorf("state.names: %d request names, the plan has %d", len(f.Names), len(m.shapeNames))
	}
	for j, n := range f.Names {
		if n.Name != m.shapeNames[j] {
			return fmt.Errorf("state.names[%d]: %.80q, the plan's is %.80q", j, n.Name, m.shapeNames[j])
		}
	}
	if len(f.Checks) != len(m.shapeChecks) {
		return fmt.Errorf("state.checks: %d checks, the plan has %d", len(f.Checks), len(m.shapeChecks))
	}
	for j, c := range f.Checks {
		if w := m.shapeChecks[j]; c.Request != w.Request || c.Check != w.Check {
			return fmt.Errorf("state.checks[%d]: %.80q of %.80q, the plan's is %.80q of %.80q", j, c.Check, c.Request, w.Check, w.Request)
		}
	}
	return nil
}

// sumCounts is the sum of a map's counts (each bounded by the peer bounds: no overflow).
func sumCounts(m map[string]int64) int64 {
	var n int64
	for _, c := range m {
		n += c
	}
	return n
}

// checkTotals refuses a final state whose counts contradict each other. An engine's state is
// read after its VUs stop, and each of its outcomes is counted in all of these at once
// (metrics.Shard.Record): its successes are the success-latency histogram's values, its
// responses (a status code) the latency histogram's, its requests its successes and its error
// kinds; each request name's successes and errors add up to the requests. tol allows for
// outcomes being recorded while the state is read (an engine that did not wait for its VUs):
// the agent's share of the run's VUs and 64.
func checkTotals(f *engine.Final, tol int64) error {
	near := func(a, b int64) bool { return a-b <= tol && b-a <= tol }
	kinds := sumCounts(f.ErrorKinds)
	switch {
	case f.Successes > f.Requests:
		return fmt.Errorf("state.successes: %d of %d requests", f.Successes, f.Requests)
	case float64(f.Requests) > metrics.PeerSecondCount*max(f.DurationS, 1):
		// (a second is held to this rate too: checkRates)
		return fmt.Errorf("state.requests: %d in %g s, more than %g a second", f.Requests, f.DurationS, float64(metrics.PeerSecondCount))
	case !near(f.Requests, f.Successes+kinds):
		return fmt.Errorf("state.requests: %d, but %d successes and %d errors by kind", f.Requests, f.Successes, kinds)
	case !near(f.Successes, histCount(f.LatencySuccess)):
		return fmt.Errorf("state.latency_success: %d latencies of %d successes", histCount(f.LatencySuccess), f.Successes)
	case !near(sumCounts(f.StatusCodes), histCount(f.Latency)):
		return fmt.Errorf("state.latency: %d latencies of %d responses (status codes)", histCount(f.Latency), sumCounts(f.StatusCodes))
	case sumCounts(f.StatusCodes) > f.Requests+tol:
		return fmt.Errorf("state.status_codes: %d responses of %d requests", sumCounts(f.StatusCodes), f.Requests)
	}
	var named int64
	for _, n := range f.Names {
		named += n.Successes + n.Errors
	}
	if len(f.Names) > 0 && !near(named, f.Requests) {
		return fmt.Errorf("state.names: %d requests by name, %d in all", named, f.Requests)
	}
	return nil
}

// histCount is how many values h holds.
func histCount(h engine.Hist) int64 {
	var n int64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// checkSums refuses a final state's histogram whose µs sum does not fit its counts
// (metrics.SumFits): merged, it would put the run's mean outside its minimum and maximum. An
// agent's state is read after its VUs stop, so an honest one's sums fit exactly.
func checkSums(f *engine.Final) error {
	check := func(field string, h engine.Hist) error {
		if !metrics.SumFits(h.Counts, h.SumUs) {
			return fmt.Errorf("%s: its sum_us %d puts the mean outside the histogram's values", field, h.SumUs)
		}
		return nil
	}
	for _, h := range []struct {
		field string
		h     engine.Hist
	}{{"state.latency", f.Latency}, {"state.latency_success", f.LatencySuccess}, {"state.service_time", f.ServiceTime}, {"state.schedule_lag", f.ScheduleLag}} {
		if err := check(h.field, h.h); err != nil {
			return err
		}
	}
	for j, n := range f.Names {
		if err := check(fmt.Sprintf("state.names[%d].latency", j), n.Latency); err != nil {
			return err
		}
	}
	if w := f.WS; w != nil {
		if err := check("state.ws.connect", w.Connect); err != nil {
			return err
		}
		return check("state.ws.round_trip", w.RoundTrip)
	}
	return nil
}

// histSlack is the most latencies an honest second's histogram of requests requests may hold:
// requests + vus + requests/4 + 64. A histogram counts the requests with a complete response, at
// most all of them, but a second is read while VUs record: a latency is recorded a moment before
// its request's count (each VU may be one ahead), and the counters and the histogram's buckets are
// read one after the other, not at one instant, so the requests that finish during the read (up
// to a quarter second of them at the second's rate, a stalled reader on a busy machine) are in
// this second's histogram and the next second's count. vus is the agent's active VUs capped by
// its share of the run's peak (CheckPart), so a lie about them does not widen the bound. The bound refuses the impossible (a
// hostile agent's millions of latencies for a handful of requests), not the reading's skew; the
// run's totals are exact either way (the final is read after the VUs stop).
func histSlack(requests, vus int64) int64 { return requests + vus + requests/4 + 64 }

// checkHist says whether h decodes and holds at most most latencies, and what it read of it.
func (m *Merger) checkHist(h string, most int64) (metrics.HistStat, error) {
	st, err := m.dec.Stat(h)
	switch {
	case err != nil:
		return st, fmt.Errorf("its histogram: %w", err)
	case st.N > most:
		return st, fmt.Errorf("its histogram holds %d latencies, at most %d (requests + active VUs)", st.N, most)
	}
	return st, nil
}

// FinalOfSeconds rebuilds, as far as its seconds allow, the cumulative state of an agent that
// delivered seconds but no usable final (it was lost, or its final was refused), shaped like
// like (a usable final of the run: the same request names and checks, so engine.Merge takes it).
// From the seconds, exact: requests, successes, interrupted, dropped iterations, bytes in and out,
// decoded body bytes, status codes, error kinds, the latency histogram and its µs sum (the
// buckets' mean when a second with latencies has no sum), each name's successes, errors and
// (plans with several names) latency histogram, the WebSocket counts, events, and each second's
// span, CPU, RSS and generator-bound; each name's checks passed and failed and each failure
// group's count are the latest second's (the agents count them since their start). Not in the
// seconds, so missing for this agent (the summary is partial for it): the per-check results, the
// success-only latency, service time and schedule lag, the names' timing phases, the WebSocket
// connect and round-trip histograms, body bytes in, HTTP/2 responses, sweep levels, monitors.
// The duration and send window are the seconds' spans added. Parts are taken in second order.
func FinalOfSeconds(parts []*SecondPart, like *engine.Final) *engine.Final {
	parts = slices.SortedFunc(slices.Values(parts), func(a, b *SecondPart) int { return a.Sample.ElapsedS - b.Sample.ElapsedS })
	f := &engine.Final{StatusCodes: map[string]int64{}, ErrorKinds: map[string]int64{}, Events: []metrics.RunEvent{}}
	index := map[string]int{}
	f.Names = make([]engine.FinalName, len(like.Names))
	for i, n := range like.Names {
		f.Names[i].Name, index[n.Name] = n.Name, i
	}
	f.Checks = make([]metrics.CheckResult, len(like.Checks))
	for i, c := range like.Checks {
		f.Checks[i] = metrics.CheckResult{Request: c.Request, Check: c.Check}
	}
	var dec metrics.HistDecoder
	lat := make([]int64, metrics.CountsLen)
	nameLat := make([][]int64, len(f.Names))
	var sum uint64
	sumOK := true
	fails := map[failKey]metrics.FailureGroup{}
	var order []failKey
	for _, p := range parts {
		s := &p.Sample
		for len(f.Seconds) < s.ElapsedS-1 {
			f.Seconds = append(f.Seconds, engine.FinalSecond{})
		}
		f.Seconds = append(f.Seconds, engine.FinalSecond{SpanS: s.IntervalS, CPUPercent: s.Client.CPUPercent,
			RSSBytes: s.Client.RSSBytes, Bound: s.GeneratorBound})
		f.DurationS += s.IntervalS
		f.Requests += s.Requests
		f.Successes += s.Successes
		f.Interrupted += s.Interrupted
		f.Dropped += s.DroppedIterations
		f.BytesIn += s.BytesIn
		f.BytesOut += s.BytesOut
		f.BodyBytesDecoded += s.BodyBytesDecoded
		metrics.AddCounts(f.StatusCodes, s.StatusCodes)
		metrics.AddCounts(f.ErrorKinds, s.ErrorKinds)
		n, err := dec.AddTo(lat, p.Hist)
		if err != nil || (n > 0 && p.LatencySumUs == 0) {
			sumOK = false
		}
		sum = min(sum+p.LatencySumUs, metrics.PeerLatencySumUs) // (a day of checked seconds fits a uint64)
		for name, ns := range s.ByName {
			i, ok := index[name]
			if !ok {
				continue
			}
			fn := &f.Names[i]
			fn.Errors += ns.Errors
			fn.Successes += ns.Requests - ns.Errors
			fn.ChecksPassed, fn.ChecksFailed = ns.ChecksPassed, ns.ChecksFailed
			if h := p.NameHists[name]; h != "" && len(f.Names) > 1 {
				if nameLat[i] == nil {
					nameLat[i] = make([]int64, metrics.CountsLen)
				}
				_, _ = dec.AddTo(nameLat[i], h)
			}
		}
		for _, g := range s.Failures {
			k := failKey{g.Request, g.Kind, g.Message, g.Status}
			prev, ok := fails[k]
			if !ok {
				order = append(order, k)
			} else if g.Sample == nil {
				g.Sample = prev.Sample
			}
			fails[k] = g
		}
		f.Events = append(f.Events, s.Events...)
		if w := s.WS; w != nil {
			if f.WS == nil {
				f.WS = &engine.FinalWS{}
			}
			f.WS.Sessions += w.Sessions
			f.WS.Failed += w.SessionsFailed
			f.WS.Sent += w.MessagesSent
			f.WS.Received += w.MessagesReceived
		}
	}
	f.SendWindowS = f.DurationS
	if !sumOK {
		sum = 0
	}
	f.Latency = histOf(lat, sum)
	for i, c := range nameLat {
		if c != nil {
			f.Names[i].Latency = histOf(c, 0)
		}
	}
	for _, k := range order {
		f.Failures = append(f.Failures, fails[k])
	}
	f.Failures = engine.MergeFailures(f.Failures)
	return f
}

// histOf is counts as an engine.Hist (nil counts when all zero).
func histOf(counts []int64, sum uint64) engine.Hist {
	if !slices.ContainsFunc(counts, func(c int64) bool { return c != 0 }) {
		return engine.Hist{SumUs: sum}
	}
	return engine.Hist{Counts: counts, SumUs: sum}
}

// addClient adds an agent's generator figures: CPU, RSS, goroutines and connections summed, the
// longest GC pause and the highest schedule-lag p99.
func addClient(dst *metrics.ClientSample, c metrics.ClientSample) {
	dst.CPUPercent = round1(dst.CPUPercent + c.CPUPercent)
	dst.RSSBytes += c.RSSBytes
	dst.Goroutines += c.Goroutines
	dst.OpenConns += c.OpenConns
	dst.GCPauseMs = max(dst.GCPauseMs, c.GCPauseMs)
	dst.ScheduleLagP99Ms = max(dst.ScheduleLagP99Ms, c.ScheduleLagP99Ms)
}

// addWS adds a part's WebSocket second into w (nil until a part has one); the latencies are
// weighted by sessions (connect) and messages received (round trip).
func addWS(w, p *metrics.WSStats) *metrics.WSStats {
	if p == nil {
		return w
	}
	if w == nil {
		c := *p
		return &c
	}
	w.Connect = blend(w.Connect, w.Sessions, p.Connect, p.Sessions)
	w.RoundTrip = blend(w.RoundTrip, w.MessagesReceived, p.RoundTrip, p.MessagesReceived)
	w.Sessions += p.Sessions
	w.SessionsFailed += p.SessionsFailed
	w.MessagesSent += p.MessagesSent
	w.MessagesReceived += p.MessagesReceived
	return w
}

// blendTiming weights the agents' latest Timing of a name by their requests of it so far.
func blendTiming(rows []metrics.NameSample, seen []int64) metrics.Timing {
	var t metrics.Timing
	var n int64
	for j, r := range rows {
		w := seen[j]
		t.Connect = blend(t.Connect, n, r.Timing.Connect, w)
		t.TLS = blend(t.TLS, n, r.Timing.TLS, w)
		t.Wait = blend(t.Wait, n, r.Timing.Wait, w)
		t.Receive = blend(t.Receive, n, r.Timing.Receive, w)
		n += w
	}
	return t
}

// blend combines two distributions of na and nb values: the smaller minimum, the larger
// maximum, the other figures weighted by the counts (exact for the mean, an approximation for
// the percentiles).
func blend(a metrics.Latency, na int64, b metrics.Latency, nb int64) metrics.Latency {
	switch {
	case nb <= 0:
		return a
	case na <= 0:
		return b
	}
	wa, wb := float64(na)/float64(na+nb), float64(nb)/float64(na+nb)
	mix := func(x, y float64) float64 { return round3(x*wa + y*wb) }
	return metrics.Latency{Min: min(a.Min, b.Min), Max: max(a.Max, b.Max), Mean: mix(a.Mean, b.Mean),
		P50: mix(a.P50, b.P50), P75: mix(a.P75, b.P75), P90: mix(a.P90, b.P90), P95: mix(a.P95, b.P95),
		P99: mix(a.P99, b.P99), P99_9: mix(a.P99_9, b.P99_9)}
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
