package engine

import (
	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volley-load/volley/backend/internal/metrics"
	seg "github.com/volley-load/volley/backend/internal/segment"
)

// Per-request-name figures (Sample.ByName every second, Summary.ByName at the end), for every plan:
// a plan with one request name has one row, the run's own figures.
//
// Cost: each second the collector reads, for each name, its cumulative latency histogram
// (metrics.CountsLen counters in each of the name set's shards) and its phase histograms, and
// computes three percentiles and the four phases' distributions, into buffers it reuses — except
// for a name with no request finished in two seconds, whose figures cannot have changed. With
// metrics.MaxNames names all busy this costs about 15 ms of CPU per second, 1.5 % of a core
// (BenchmarkCollectorByName).
type nameStats struct {
	checkName []int // the name index of each check (e.checks)
	passes    []int64
	fails     []int64
	lat       []int64 // a name's cumulative latency counts (reused)
	hist      *hdr.Histogram
	phases    metrics.PhaseCounts  // one name's, or the run's (reused)
	total     metrics.PhaseCounts  // the names' phases summed, for the run's Timing (summary)
	last      []metrics.NameSample // each name's previous row
	quiet     []int                // each name's seconds in a row without a finished request
	// prevLat is each name's cumulative latency counts as last read, for Sample.NameHists (the
	// name's second: the reading less the previous one); nil for a run on one machine, which
	// needs no merge (made for an engine running a segment of a plan with several names).
	prevLat [][]int64
	second  []int64 // a name's second (reused)
}

func (c *collector) nameStats() *nameStats {
	if c.names != nil {
		return c.names
	}
	e := c.e
	n := 1
	if e.names != nil {
		n = len(e.names.Names)
	}
	ns := &nameStats{checkName: make([]int, len(e.checks)), passes: make([]int64, n), fails: make([]int64, n)}
	index := map[string]int{}
	for i := range e.reqs {
		if e.names != nil {
			index[e.reqs[i].r.Name] = e.reqs[i].name
		}
	}
	for i, info := range e.checks {
		ns.checkName[i] = index[info.request] // 0 with one name
	}
	if e.names != nil {
		ns.last, ns.quiet = make([]metrics.NameSample, n), make([]int, n)
		ns.lat = make([]int64, metrics.CountsLen)
		ns.hist = metrics.NewHist()
		if e.opts.Segment != seg.Whole {
			ns.prevLat, ns.second = make([][]int64, n), make([]int64, metrics.CountsLen)
		}
	}
	c.names = ns
	return ns
}

// readChecks sums the checks' cumulative outcomes by request name.
func (ns *nameStats) readChecks(e *Engine) {
	clear(ns.passes)
	clear(ns.fails)
	for _, shard := range e.checkCounts {
		for i := range shard {
			j := ns.checkName[i]
			ns.passes[j] += int64(shard[i].pass.Load())
			ns.fails[j] += int64(shard[i].fail.Load())
		}
	}
}

// sampleByName fills s.ByName for the second just read (d) of span seconds; c.soFar holds the run
// so far.
func (c *collector) sampleByName(s *metrics.Sample, d *metrics.Counts, span float64) {
	e := c.e
	st := c.nameStats() // its checks read by tick, before the counts
	set := e.names
	if set == nil {
		e.rec.ReadPhases(&st.phases)
		s.ByName = map[string]metrics.NameSample{e.reqs[0].r.Name: {
			Requests: d.Requests, Errors: d.Errors(), RPS: s.RPS,
			P50: metrics.Percentile(c.soFar, 50), P95: s.P95SoFarMs, P99: metrics.Percentile(c.soFar, 99),
			ChecksPassed: st.passes[0], ChecksFailed: st.fails[0],
			Timing: st.phases.Timing(),
		}}
		return
	}
	if c.nameCur == nil {
		c.nameCur, c.namePrev = make([]metrics.NameCount, len(set.Names)), make([]metrics.NameCount, len(set.Names))
	}
	s.ByName = make(map[string]metrics.NameSample, len(set.Names))
	for j, name := range set.Names {
		testPoint("names", j)
		// A name's count and its latencies are read together, one right after the other: read
		// apart (all counts first, each name's histogram after the names before it were done),
		// a busy second's histogram held more latencies than its requests, and a run over agents
		// refused the agent's second as impossible (cluster.Merger.CheckPart).
		c.nameCur[j] = set.ReadName(j)
		cur, prev := c.nameCur[j], c.namePrev[j]
		n := metrics.NameSample{
			Requests:     cur.Successes + cur.Errors - prev.Successes - prev.Errors,
			Errors:       cur.Errors - prev.Errors,
			ChecksPassed: st.passes[j], ChecksFailed: st.fails[j],
		}
		if span > 0 {
			n.RPS = round(float64(n.Requests)/span, 1)
		}
		if st.quiet[j] = st.quiet[j] + 1; n.Requests != 0 {
			st.quiet[j] = 0
		}
		if l := &st.last[j]; st.quiet[j] >= 2 {
			// No request of this name finished in this second or the one before (whose reading
			// a request then finishing might have straddled): its histograms are as last read.
			n.P50, n.P95, n.P99, n.Timing = l.P50, l.P95, l.P99, l.Timing
		} else {
			set.LatencyCounts(j, st.lat)
			metrics.FillHist(st.hist, st.lat)
			n.P50, n.P95, n.P99 = metrics.Percentile(st.hist, 50), metrics.Percentile(st.hist, 95), metrics.Percentile(st.hist, 99)
			if st.prevLat != nil {
				c.nameSecond(s, j, name)
			}
			set.ReadPhases(j, &st.phases)
			n.Timing = st.phases.Timing()
		}
		st.last[j] = n
		s.ByName[name] = n
	}
	c.nameCur, c.namePrev = c.namePrev, c.nameCur
}

// nameSecond puts name j's latency histogram of this second into s.NameHists: the cumulative
// counts just read (st.lat) less those of its previous reading. A name whose counts did not change
// has none.
func (c *collector) nameSecond(s *metrics.Sample, j int, name string) {
	st := c.names
	prev := st.prevLat[j]
	if prev == nil {
		prev = make([]int64, metrics.CountsLen)
		st.prevLat[j] = prev
	}
	changed := false
	for i, v := range st.lat {
		d := v - prev[i]
		st.second[i] = d
		changed = changed || d != 0
	}
	if !changed {
		return
	}
	copy(prev, st.lat)
	if s.NameHists == nil {
		s.NameHists = make(map[string]string)
	}
	s.NameHists[name] = c.enc.Encode(st.second)
}

// finalNames fills f.Names from the cumulative counters (the checks read by the last tick).
func (c *collector) finalNames(f *Final) {
	e := c.e
	st := c.nameStats()
	set := e.names
	if set == nil {
		n := FinalName{Name: e.reqs[0].r.Name, Successes: f.Successes, Errors: f.Requests - f.Successes,
			ChecksPassed: st.passes[0], ChecksFailed: st.fails[0]}
		e.rec.ReadPhases(&n.Phases.PhaseCounts)
		f.Names = []FinalName{n}
		return
	}
	counts := make([]metrics.NameCount, len(set.Names))
	set.Read(counts)
	lat := make([]int64, metrics.CountsLen)
	f.Names = make([]FinalName, len(set.Names))
	for j, name := range set.Names {
		n := &f.Names[j]
		*n = FinalName{Name: name, Successes: counts[j].Successes, Errors: counts[j].Errors,
			ChecksPassed: st.passes[j], ChecksFailed: st.fails[j]}
		n.Latency = copyHist(lat, set.LatencyCounts(j, lat))
		set.ReadPhases(j, &n.Phases.PhaseCounts)
	}
}
