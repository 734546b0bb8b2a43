package engine

import (
	"math"
	"runtime"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/procstat"
)

// A second is generator-bound when the generator's CPU reaches boundFraction of its cores, or when
// open-model iterations started more than boundLag late (p99): its latencies may then describe
// the load generator's queueing rather than the target.
const (
	boundFraction = 0.9
	boundLag      = 5 * time.Millisecond // half the drop tolerance: lag capped by drops still shows
)

// collector turns the recorder's cumulative counters into one Sample per interval, on an absolute
// schedule (start + k·interval), and into the Summary at the end. It runs in its own goroutine;
// the VUs never wait for it.
type collector struct {
	e                  *Engine
	sampler            *procstat.Sampler
	cur, prev, delta   *metrics.Counts
	lastTick           time.Time
	lastActive         int64 // ActiveVUs of the previous sample
	k                  int
	cpuSum, cpuMax     float64
	rssMax             uint64
	seconds, boundSecs int
	boundCPU           float64
	levels             []levelAgg // a stepped executor's (concurrency-sweep) levels; nil for the others
	sweep              stepper    // nil for executors without levels
	nameCur, namePrev  []metrics.NameCount

	// reused every second: no per-second histogram allocation but the encoded string
	hist, lagHist *hdr.Histogram
	enc           metrics.HistEncoder
	soFar         *hdr.Histogram // the run so far, for Sample.P95SoFarMs

	names *nameStats   // per-name figures (byname.go), made on the first sample
	fails liveFailures // Sample.Failures (failures.go)

	target targetSide // the run's monitors (target.go)
	ws     wsHists    // the ws block's histograms (ws.go), made on the first sample of a run with WebSocket steps
}

// levelAgg accumulates the seconds of one concurrency-sweep level.
type levelAgg struct {
	hist             *hdr.Histogram
	requests, errors int64
	span             float64
	cpuSum           float64
	n                int
	rssMax           uint64
	bound            int
}

func newCollector(e *Engine) *collector {
	c := &collector{
		e: e, sampler: procstat.New(),
		cur: metrics.NewCounts(), prev: metrics.NewCounts(), delta: metrics.NewCounts(),
		lastTick: e.start,
		hist:     metrics.NewHist(), lagHist: metrics.NewHist(),
		soFar:    metrics.NewHist(),
		boundCPU: boundFraction * 100 * float64(runtime.GOMAXPROCS(0)),
	}
	c.sweep, _ = e.exec.(stepper)
	c.target = startTarget(e)
	return c
}

func (c *collector) loop(stop <-chan struct{}) {
	next := c.e.start.Add(c.e.opts.Interval)
	t := time.NewTimer(time.Until(next))
	defer t.Stop()
	// The tick that would fall at (or just before) the scheduled end is left to finish(), so the
	// last sample spans its full second plus the drain instead of a few milliseconds of drain
	// whose extrapolated rate would be meaningless.
	lastTick := c.e.end.Add(-c.e.opts.Interval / 4)
	for {
		if !next.Before(lastTick) {
			t.Stop()
			<-stop
			return
		}
		select {
		case <-stop:
			return
		case <-t.C:
			c.tick(time.Now(), false)
			next = next.Add(c.e.opts.Interval)
			for !next.After(time.Now()) { // a stalled collector skips, it never bunches
				next = next.Add(c.e.opts.Interval)
			}
			t.Reset(time.Until(next))
		}
	}
}

// activeVUs is the VUs running iterations (closed models) or the VUs allocated to the arrival
// schedule, busy or waiting for their next arrival (open models), as k6 reports them.
func (c *collector) activeVUs() int64 {
	if p, ok := c.e.exec.(vuPool); ok {
		return p.allocatedVUs()
	}
	return c.e.rec.ActiveVUs()
}

// tick reads the counters and emits the sample for (lastTick, now].
func (c *collector) tick(now time.Time, final bool) {
	testPoint("collector", c.k)
	// Failures before counts: a failure is counted in the recorder before its group
	// (vu.do), so the groups read here never hold more than the errors read next.
	c.e.fails.read(&c.fails.now)
	// Checks before counts too: a request is counted before its checks (vu.countChecks).
	c.nameStats().readChecks(c.e)
	c.e.rec.Read(c.cur)
	c.delta.Sub(c.cur, c.prev)
	c.prev, c.cur = c.cur, c.prev
	span := now.Sub(c.lastTick).Seconds()
	d := c.delta
	if final && span < 0.05 && d.Requests == 0 && d.Interrupted == 0 {
		return // nothing happened after the last full second
	}
	began := c.lastTick
	c.lastTick = now
	c.k++
	ps := c.sampler.Read()
	active := c.activeVUs()
	if final && active == 0 {
		// The VUs have stopped by the time the last sample is read; it covers their last second.
		active = c.lastActive
	}
	c.lastActive = active
	h := c.hist
	metrics.FillHist(h, d.Lat)
	metrics.FillHist(c.lagHist, d.Lag)
	lagP99 := metrics.Percentile(c.lagHist, 99)
	s := metrics.Sample{
		T:                 now.UnixMilli(),
		ElapsedS:          c.k,
		IntervalS:         round(span, 3),
		Requests:          d.Requests,
		Successes:         d.Successes,
		Errors:            d.Errors(),
		Interrupted:       d.Interrupted,
		Latency:           metrics.LatencyOf(h, d.LatSum),
		ActiveVUs:         active,
		DroppedIterations: d.Dropped,
		BytesIn:           d.BytesIn,
		BytesOut:          d.BytesOut,
		BodyBytesDecoded:  d.BodyBytesDecoded,
		StatusCodes:       d.StatusMap(),
		ErrorKinds:        d.KindMap(),
		Client: metrics.ClientSample{
			CPUPercent: round(ps.CPUPercent, 1),
			RSSBytes:   ps.RSSBytes,
			Goroutines: ps.Goroutines,
			OpenConns:  c.e.rec.OpenConns(),
			GCPauseMs:  round(float64(ps.GCPause)/1e6, 3),
		},
	}
	s.Client.ScheduleLagP99Ms = lagP99
	if span > 0 {
		s.RPS = round(float64(d.Requests)/span, 1)
	}
	s.GeneratorBound = ps.CPUPercent >= c.boundCPU || lagP99 > float64(boundLag/time.Millisecond)
	c.target.attach(&s, now)
	if c.sweep != nil {
		c.addToLevel(began, span, d, h, ps.CPUPercent, ps.RSSBytes, s.GeneratorBound)
	}
	s.Failures = c.fails.next(c.e.fails)
	s.Hist = c.enc.Encode(d.Lat)
	s.Events = c.e.takeEvents()
	if c.e.h2 != nil {
		s.Protocols = d.ProtocolMap()
	}
	// The run so far is the latest cumulative reading (c.prev): the sum of every second's counts.
	metrics.FillHist(c.soFar, c.prev.Lat)
	s.P95SoFarMs = metrics.Percentile(c.soFar, 95)
	c.sampleByName(&s, d, span)
	s.WS = c.wsStats(&d.WS, span)
	c.seconds++
	c.cpuSum += ps.CPUPercent
	c.cpuMax = math.Max(c.cpuMax, ps.CPUPercent)
	if ps.RSSBytes > c.rssMax {
		c.rssMax = ps.RSSBytes
	}
	if s.GeneratorBound {
		c.boundSecs++
	}
	if c.e.opts.OnSample != nil {
		c.e.opts.OnSample(s)
	}
	if !final {
		c.checkAbort(c.prev, now.Sub(c.e.start).Seconds())
	}
}

// finish emits the last (partial) second and builds the summary from the cumulative counters.
func (c *collector) finish(end, sendEnd time.Time) *metrics.Summary {
	c.tick(end, true)
	t := c.prev // the latest cumulative reading
	dur := end.Sub(c.e.start).Seconds()
	sendWindow := sendEnd.Sub(c.e.start).Seconds()
	lat := metrics.HistFromCounts(t.Lat)
	s := &metrics.Summary{
		Requests:              t.Requests,
		Successes:             t.Successes,
		Errors:                t.Errors(),
		Interrupted:           t.Interrupted,
		DroppedIterations:     t.Dropped,
		DurationS:             round(dur, 3),
		Latency:               metrics.LatencyOf(lat, t.LatSum),
		LatencySuccess:        metrics.LatencyOf(metrics.HistFromCounts(t.LatOK), t.LatOKSum),
		ServiceTime:           metrics.LatencyOf(metrics.HistFromCounts(t.Svc), t.SvcSum),
		ScheduleLag:           metrics.LatencyOf(metrics.HistFromCounts(t.Lag), t.LagSum),
		Executor:              c.e.p.Load.Executor,
		StatusCodes:           t.StatusMap(),
		ErrorKinds:            t.KindMap(),
		BytesIn:               t.BytesIn,
		BodyBytesIn:           t.BodyBytesIn,
		BytesOut:              t.BytesOut,
		BodyBytesDecoded:      t.BodyBytesDecoded,
		Seconds:               c.seconds,
		GeneratorBoundSeconds: c.boundSecs,
		Client:                metrics.ClientSummary{CPUPercentMax: round(c.cpuMax, 1), RSSBytesMax: c.rssMax},
		Thresholds:            []metrics.ThresholdResult{},
		ByName:                map[string]metrics.NameStats{},
	}
	if c.e.h2 != nil {
		s.Protocols = t.ProtocolMap()
	}
	if dur > 0 {
		s.RPS = round(float64(t.Requests)/dur, 1)
	}
	if sendWindow > 0 {
		s.SendRate = round(float64(t.Requests+t.Interrupted)/sendWindow, 1)
	}
	if t.Requests > 0 {
		s.ErrorRate = round(float64(s.Errors)/float64(t.Requests), 6)
	}
	if c.seconds > 0 {
		s.Client.CPUPercentAvg = round(c.cpuSum/float64(c.seconds), 1)
	}
	c.summaryByName(s)
	s.WS = c.wsStats(&t.WS, dur)
	s.Hist = c.enc.Encode(t.Lat)
	if c.levels != nil {
		s.Sweep = c.sweepRows()
		s.SweepLimitedBy = limitedBy(s.Sweep)
	}
	c.target.finish(s) // after the sweep rows: their server columns and note
	s.Thresholds = c.evaluate(t, lat, dur)
	s.Aborted = c.e.aborted
	s.Failures = c.e.fails.groups(&c.fails.now)
	s.Events = c.e.runEvents()
	s.Checks = make([]metrics.CheckResult, len(c.e.checks))
	for i, info := range c.e.checks {
		r := metrics.CheckResult{Request: info.request, Check: info.desc}
		for _, shard := range c.e.checkCounts {
			r.Passes += int64(shard[i].pass.Load())
			r.Fails += int64(shard[i].fail.Load())
		}
		s.Checks[i] = r
	}
	return s
}

// addToLevel adds one second to the sweep level that was running when the second began.
func (c *collector) addToLevel(began time.Time, span float64, d *metrics.Counts, h *hdr.Histogram, cpu float64, rss uint64, bound bool) {
	levels, step := c.sweep.steps()
	if c.levels == nil {
		c.levels = make([]levelAgg, len(levels))
	}
	i := int(began.Sub(c.e.start) / step)
	if i < 0 || i >= len(c.levels) {
		i = len(c.levels) - 1 // the drain after the last step
	}
	c.target.addLevel(i, len(c.levels))
	a := &c.levels[i]
	if a.hist == nil {
		a.hist = metrics.NewHist()
	}
	a.hist.Merge(h)
	a.requests += d.Requests
	a.errors += d.Errors()
	a.span += span
	a.cpuSum += cpu
	a.n++
	a.rssMax = max(a.rssMax, rss)
	if bound {
		a.bound++
	}
}

// kneeShare: the knee of a sweep is the lowest level that reaches this share of the sweep's best
// throughput — more concurrency beyond it buys (almost) no throughput, only latency.
const kneeShare = 0.95

// sweepRows builds the capacity table and marks the knee: the lowest level within 5% of the best
// throughput. No knee is marked when that is the last level (throughput still grew: the sweep did
// not saturate the target or the generator).
func (c *collector) sweepRows() []metrics.SweepRow {
	rows := make([]metrics.SweepRow, 0, len(c.levels))
	best := 0.0
	levels, _ := c.sweep.steps()
	for i, a := range c.levels {
		r := metrics.SweepRow{VUs: levels[i], DurationS: round(a.span, 3), Requests: a.requests}
		if a.hist != nil {
			r.P50 = metrics.Percentile(a.hist, 50)
			r.P90 = metrics.Percentile(a.hist, 90)
			r.P99 = metrics.Percentile(a.hist, 99)
		}
		if a.span > 0 {
			r.RPS = round(float64(a.requests)/a.span, 1)
		}
		if a.requests > 0 {
			r.ErrorRate = round(float64(a.errors)/float64(a.requests), 6)
		}
		if a.n > 0 {
			r.CPUPercent = round(a.cpuSum/float64(a.n), 1)
		}
		r.RSSBytes = a.rssMax
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

// limitedBy names what capped a sweep's throughput at its knee (or last level): the generator
// when any of that level's seconds found it saturated, else the target. Without a knee and with
// the generator never saturated, nothing was reached yet within the levels tried: "".
func limitedBy(rows []metrics.SweepRow) string {
	if len(rows) == 0 {
		return ""
	}
	at, knee := len(rows)-1, false
	for i, r := range rows {
		if r.Knee {
			at, knee = i, true
		}
	}
	switch {
	case rows[at].GeneratorBoundSeconds > 0:
		return "generator"
	case knee:
		return "target"
	}
	return ""
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
