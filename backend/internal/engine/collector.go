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
	e                 *Engine
	sampler           *procstat.Sampler
	cur, prev, delta  *metrics.Counts
	lastTick          time.Time
	lastActive        int64 // ActiveVUs of the previous sample
	k                 int
	secs              []FinalSecond // the seconds so far (final.go)
	boundCPU          float64
	levels            []FinalLevel // a stepped executor's (concurrency-sweep) levels; nil for the others
	sweep             stepper      // nil for executors without levels
	due               dueCloser    // nil for closed models
	closed            int64        // the last second by due time taken (takeDue)
	nameCur, namePrev []metrics.NameCount

	// reused every second: no per-second histogram allocation but the encoded string
	hist, lagHist *hdr.Histogram
	enc           metrics.HistEncoder
	soFar         *hdr.Histogram // the run so far, for Sample.P95SoFarMs

	names *nameStats   // per-name figures (byname.go), made on the first sample
	fails liveFailures // Sample.Failures (failures.go)

	target targetSide // the run's monitors (target.go)
	ws     wsHists    // the ws block's histograms (ws.go), made on the first sample of a run with WebSocket steps
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
	c.due, _ = e.exec.(dueCloser)
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
	var started, dropped int64
	if c.due != nil {
		started, dropped = c.takeDue(now, final)
	}
	if final && span < 0.05 && d.Requests == 0 && d.Interrupted == 0 && started == 0 && dropped == 0 {
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
		DroppedIterations: dropped,
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
	s.StartedIterations = started
	if span > 0 {
		s.RPS = round(float64(d.Requests)/span, 1)
	}
	s.GeneratorBound = ps.CPUPercent >= c.boundCPU || lagP99 > float64(boundLag/time.Millisecond)
	c.target.attach(&s, now)
	level := 0
	if c.sweep != nil {
		level = c.addToLevel(began, d)
	}
	s.Failures = c.fails.next(c.e.fails)
	s.Hist = c.enc.Encode(d.Lat)
	s.LatencySumUs = d.LatSum
	s.Events = c.e.takeEvents()
	if c.e.h2 != nil {
		s.Protocols = d.ProtocolMap()
	}
	// The run so far is the latest cumulative reading (c.prev): the sum of every second's counts.
	metrics.FillHist(c.soFar, c.prev.Lat)
	s.P95SoFarMs = metrics.Percentile(c.soFar, 95)
	c.sampleByName(&s, d, span)
	s.WS = c.wsStats(&d.WS, span)
	c.secs = append(c.secs, FinalSecond{SpanS: round(span, 6), CPUPercent: round(ps.CPUPercent, 3), RSSBytes: ps.RSSBytes,
		Bound: s.GeneratorBound, Level: level})
	if c.e.opts.OnSample != nil {
		c.e.opts.OnSample(s)
	}
	if !final {
		c.checkAbort(c.prev, now.Sub(c.e.start).Seconds())
	}
}

// takeDue closes the seconds by due time that this sample covers and returns their started and
// dropped iterations (open models). A tick's sample (at now) covers the seconds up to its own
// (ElapsedS) — and, after skipped ticks, up to the last that ended dropTolerance before now: it
// waits until dropTolerance after the last one's end, when an iteration due in it that is still
// unclaimed can only be dropped, and closes them (arrival.closeBefore). The last sample covers
// the rest, up to the cut, which the executor's finish closed (arrival.reconcile).
func (c *collector) takeDue(now time.Time, final bool) (started, dropped int64) {
	e := c.e
	iv := e.opts.Interval
	var to int64
	if final {
		to = max(int64(c.due.cut()/iv)+1, c.closed) + metrics.DueSlots // every slot, whatever raced
	} else {
		to = max(int64(c.k)+1, int64((now.Sub(e.start)-dropTolerance)/iv))
		if wait := time.Duration(to)*iv + dropTolerance - e.now(); wait > 0 {
			time.Sleep(wait)
		}
		c.due.closeBefore(time.Duration(to) * iv)
	}
	started, dropped = e.rec.TakeDue(c.closed+1, to)
	c.closed = to
	return started, dropped
}

// finish emits the last (partial) second and builds the summary from the run's cumulative state
// (final.go: the same code summarises the agents' states of a run over agents).
func (c *collector) finish(end, sendEnd time.Time) *metrics.Summary {
	c.tick(end, true)
	f := c.final(end, sendEnd)
	c.e.final = f
	return summarize(c.e.p, c.e.thresholds, f)
}

// final returns the run's cumulative state from the latest cumulative reading.
func (c *collector) final(end, sendEnd time.Time) *Final {
	t := c.prev // the latest cumulative reading
	e := c.e
	f := &Final{
		DurationS:        end.Sub(e.start).Seconds(),
		SendWindowS:      sendEnd.Sub(e.start).Seconds(),
		Requests:         t.Requests,
		Successes:        t.Successes,
		Interrupted:      t.Interrupted,
		Dropped:          t.Dropped,
		BytesIn:          t.BytesIn,
		BodyBytesIn:      t.BodyBytesIn,
		BytesOut:         t.BytesOut,
		BodyBytesDecoded: t.BodyBytesDecoded,
		H2:               t.H2,
		StatusCodes:      t.StatusMap(),
		ErrorKinds:       t.KindMap(),
		Latency:          copyHist(t.Lat, t.LatSum),
		LatencySuccess:   copyHist(t.LatOK, t.LatOKSum),
		ServiceTime:      copyHist(t.Svc, t.SvcSum),
		ScheduleLag:      copyHist(t.Lag, t.LagSum),
		Checks:           make([]metrics.CheckResult, len(e.checks)),
		Levels:           c.levels,
		Seconds:          c.secs,
		Aborted:          e.aborted,
		Failures:         e.fails.groups(&c.fails.now),
		Events:           e.runEvents(),
		Monitors:         c.target.final(),
	}
	if w := &t.WS; w.On {
		f.WS = &FinalWS{Sessions: w.Sessions, Failed: w.Failed, Sent: w.Sent, Received: w.Received,
			Connect: copyHist(w.Connect, w.ConnectSum), RoundTrip: copyHist(w.RTT, w.RTTSum)}
	}
	c.finalNames(f)
	for i, info := range e.checks {
		r := metrics.CheckResult{Request: info.request, Check: info.desc}
		for _, shard := range e.checkCounts {
			r.Passes += int64(shard[i].pass.Load())
			r.Fails += int64(shard[i].fail.Load())
		}
		f.Checks[i] = r
	}
	return f
}

// addToLevel adds one second's latencies and counts to the sweep level that was running when the
// second began, and returns the level's index.
func (c *collector) addToLevel(began time.Time, d *metrics.Counts) int {
	levels, step := c.sweep.steps()
	if c.levels == nil {
		c.levels = make([]FinalLevel, len(levels))
	}
	i := int(began.Sub(c.e.start) / step)
	if i < 0 || i >= len(c.levels) {
		i = len(c.levels) - 1 // the drain after the last step
	}
	c.target.addLevel(i, len(c.levels))
	a := &c.levels[i]
	a.Latency.add(Hist{Counts: d.Lat})
	a.Requests += d.Requests
	a.Errors += d.Errors()
	return i
}

// kneeShare: the knee of a sweep is the lowest level that reaches this share of the sweep's best
// throughput — more concurrency beyond it buys (almost) no throughput, only latency.
const kneeShare = 0.95

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
