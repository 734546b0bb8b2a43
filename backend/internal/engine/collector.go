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
// the VUs never wait for it. Samples are numbered by wall clock (ElapsedS k ends the k-th interval
// after the start), one per interval with none skipped or repeated: a tick late by whole intervals
// emits the seconds it missed (tick).
type collector struct {
	e                 *Engine
	sampler           *procstat.Sampler
	cur, prev, delta  *metrics.Counts
	lastTick          time.Time
	lastActive        int64 // ActiveVUs of the previous sample
	k                 int   // the last second emitted (its Sample.ElapsedS)
	planned           int   // the final sample's second on schedule: the loop ticks 1 … planned−1
	p95SoFar          float64
	secs              []FinalSecond // the seconds so far (final.go)
	boundCPU          float64
	levels            []FinalLevel // a stepped executor's (concurrency-sweep) levels; nil for the others
	sweep             stepper      // nil for executors without levels
	due               dueCloser    // nil for closed models
	closed            int64        // the last second by due time taken (takeDue)
	dues              [][2]int64   // started and dropped of each second of a tick (takeDue), reused
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
	iv := e.opts.Interval
	c.planned = int(max(0, (e.endAt-iv/4+iv-1)/iv))
	return c
}

func (c *collector) loop(stop <-chan struct{}) {
	iv := c.e.opts.Interval
	next := c.e.start.Add(iv)
	t := time.NewTimer(time.Until(next))
	defer t.Stop()
	// The tick that would fall at (or just before) the scheduled end is left to finish(), so the
	// last sample spans its full second plus the drain instead of a few milliseconds of drain
	// whose extrapolated rate would be meaningless (c.planned is that sample's second).
	lastTick := c.e.end.Add(-iv / 4)
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
			c.tick(time.Time{}, false)
			// The next tick ends the second after the last one emitted: a stalled collector has
			// emitted the seconds it missed in one go (tick), and it never bunches.
			next = c.e.start.Add(time.Duration(c.k+1) * iv)
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

// tick reads the counters and emits the samples of the seconds from the one after the last
// emitted (c.k+1) to the one the reading ends in (secondOf), in order: one when the tick is on
// time, one for each second it covers when it comes late by whole intervals (a stalled
// collector). Each carries its own second's iterations by due time (open models: exact per
// second). The counts read, which cover (lastTick, now], go in the last of them, whose IntervalS
// spans them all, so that its rates are the counts over the time they took; the seconds before
// it measured nothing of their own (emptySecond). now is the final sample's end (finish); a loop
// tick's reading ends when the counters have been read, so a slow read is in its own span.
func (c *collector) tick(now time.Time, final bool) {
	testPoint("collector", c.k)
	// Failures before counts: a failure is counted in the recorder before its group
	// (vu.do), so the groups read here never hold more than the errors read next.
	c.e.fails.read(&c.fails.now)
	// Checks before counts too: a request is counted before its checks (vu.countChecks).
	c.nameStats().readChecks(c.e)
	c.e.rec.Read(c.cur)
	if !final {
		now = time.Now()
	}
	if now.Before(c.lastTick) {
		now = c.lastTick // the final sample read before a late loop tick that ended after it
	}
	c.delta.Sub(c.cur, c.prev)
	c.prev, c.cur = c.cur, c.prev
	span := now.Sub(c.lastTick).Seconds()
	d := c.delta
	first, last := c.k+1, c.secondOf(now, final)
	var started, dropped int64
	if c.due != nil {
		c.takeDue(first, last, final)
		for _, n := range c.dues {
			started, dropped = started+n[0], dropped+n[1]
		}
	}
	if final && span < 0.05 && d.Requests == 0 && d.Interrupted == 0 && started == 0 && dropped == 0 {
		return // nothing happened after the last full second
	}
	began := c.lastTick
	c.lastTick = now
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
	client := metrics.ClientSample{
		CPUPercent: round(ps.CPUPercent, 1),
		RSSBytes:   ps.RSSBytes,
		Goroutines: ps.Goroutines,
		OpenConns:  c.e.rec.OpenConns(),
	}
	bound := ps.CPUPercent >= c.boundCPU || lagP99 > float64(boundLag/time.Millisecond)
	second := FinalSecond{CPUPercent: round(ps.CPUPercent, 3), RSSBytes: ps.RSSBytes, Bound: bound}
	for sec := first; sec < last; sec++ {
		c.emptySecond(sec, sec-first, second, client, active)
	}
	c.k = last
	s := metrics.Sample{
		T:                now.UnixMilli(),
		ElapsedS:         last,
		IntervalS:        round(span, 3),
		Requests:         d.Requests,
		Successes:        d.Successes,
		Errors:           d.Errors(),
		Interrupted:      d.Interrupted,
		Latency:          metrics.LatencyOf(h, d.LatSum),
		ActiveVUs:        active,
		BytesIn:          d.BytesIn,
		BytesOut:         d.BytesOut,
		BodyBytesDecoded: d.BodyBytesDecoded,
		StatusCodes:      d.StatusMap(),
		ErrorKinds:       d.KindMap(),
		Client:           client,
	}
	s.Client.GCPauseMs = round(float64(ps.GCPause)/1e6, 3)
	s.Client.ScheduleLagP99Ms = lagP99
	s.StartedIterations, s.DroppedIterations = c.dueOf(last - first)
	if span > 0 {
		s.RPS = round(float64(d.Requests)/span, 1)
	}
	s.GeneratorBound = bound
	c.target.attach(&s, now)
	second.SpanS, second.Level = round(span, 6), 0
	if c.sweep != nil {
		second.Level = c.addToLevel(began, d)
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
	c.p95SoFar = s.P95SoFarMs
	c.sampleByName(&s, d, span)
	s.WS = c.wsStats(&d.WS, span)
	c.secs = append(c.secs, second)
	if c.e.opts.OnSample != nil {
		c.e.opts.OnSample(s)
	}
	if !final {
		c.checkAbort(c.prev, now.Sub(c.e.start).Seconds())
	}
}

// emptySecond emits second sec, the i-th of a late tick's seconds, before the one that holds the
// tick's reading: it measured nothing of its own, so it has no requests, latencies, failures,
// events, names or monitor values, and IntervalS 0 (its time is in the next sample's IntervalS,
// which holds the counts); T is the second's end. It does carry what is known of it: its
// iterations by due time (open models), the active VUs and the generator's figures read by the
// tick (CPU averaged over the tick's span, RSS, goroutines, connections, generator-bound),
// and the run so far as of the sample before (P95SoFarMs). Its FinalSecond has span 0 and the
// sweep level running at the second's start.
func (c *collector) emptySecond(sec, i int, second FinalSecond, client metrics.ClientSample, active int64) {
	iv := c.e.opts.Interval
	s := metrics.Sample{
		T:           c.e.start.Add(time.Duration(sec) * iv).UnixMilli(),
		ElapsedS:    sec,
		ActiveVUs:   active,
		StatusCodes: map[string]int64{},
		ErrorKinds:  map[string]int64{},
		Client:      client,
		P95SoFarMs:  c.p95SoFar,
	}
	s.StartedIterations, s.DroppedIterations = c.dueOf(i)
	s.GeneratorBound = second.Bound
	if c.sweep != nil {
		second.Level = c.levelAt(c.e.start.Add(time.Duration(sec-1) * iv))
	}
	c.secs = append(c.secs, second)
	if c.e.opts.OnSample != nil {
		c.e.opts.OnSample(s)
	}
}

// secondOf is the last second a reading that ends at now closes. A loop tick fires a moment
// after its second's end: the interval now falls in (rounded down), but at most the last second
// the loop ticks (the rest is the final sample's). The final sample closes the interval its end
// falls in (rounded up), but at most the planned last second (the drain after it is in it). At
// least the second after the last emitted.
func (c *collector) secondOf(now time.Time, final bool) int {
	iv := c.e.opts.Interval
	at := now.Sub(c.e.start)
	n := min(int(at/iv), c.planned-1)
	if final {
		n = min(int((at+iv-1)/iv), c.planned)
	}
	return max(n, c.k+1)
}

// dueOf is the started and dropped iterations by due time of the i-th second of the tick (takeDue);
// none for closed models.
func (c *collector) dueOf(i int) (started, dropped int64) {
	if i < len(c.dues) {
		return c.dues[i][0], c.dues[i][1]
	}
	return 0, 0
}

// takeDue closes the seconds by due time first … last that a tick's samples cover and sets
// c.dues to each one's started and dropped iterations (open models). A loop tick waits until
// dropTolerance after the last one's end, when an iteration due in it that is still unclaimed can
// only be dropped, and closes them (arrival.closeBefore). The final sample's seconds were closed
// up to the cut by the executor's finish (arrival.reconcile); its last second takes the rest of
// the slots too. Each second's counts are exactly its own, but for counts that came too late for
// their slot (a collector stalled longer than metrics.DueSlots seconds), which the first second
// taken next holds (Recorder.TakeDue): the totals stay exact.
func (c *collector) takeDue(first, last int, final bool) {
	e := c.e
	iv := e.opts.Interval
	to := int64(last)
	if final {
		to = max(int64(c.due.cut()/iv)+1, c.closed, to) + metrics.DueSlots // every slot, whatever raced
	} else {
		if wait := time.Duration(to)*iv + dropTolerance - e.now(); wait > 0 {
			time.Sleep(wait)
		}
		c.due.closeBefore(time.Duration(to) * iv)
	}
	c.dues = c.dues[:0]
	from := c.closed + 1
	for sec := int64(first); sec <= int64(last); sec++ {
		hi := sec
		if sec == int64(last) {
			hi = to
		}
		started, dropped := e.rec.TakeDue(min(from, sec), hi)
		c.dues = append(c.dues, [2]int64{started, dropped})
		from = hi + 1
	}
	c.closed = to
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
	i := c.levelAt(began)
	c.target.addLevel(i, len(c.levels))
	a := &c.levels[i]
	a.Latency.add(Hist{Counts: d.Lat})
	a.Requests += d.Requests
	a.Errors += d.Errors()
	return i
}

// levelAt returns the index of the sweep level running at t (the last one in the drain after it).
func (c *collector) levelAt(t time.Time) int {
	levels, step := c.sweep.steps()
	if c.levels == nil {
		c.levels = make([]FinalLevel, len(levels))
	}
	i := int(t.Sub(c.e.start) / step)
	if i < 0 || i >= len(c.levels) {
		i = len(c.levels) - 1 // the drain after the last step
	}
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
