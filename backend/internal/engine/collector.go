package engine

import (
	"math"
	"runtime"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/procstat"
)

// boundFraction of the generator's cores busy flags a second as generator-bound: its latencies
// may describe the load generator's queueing rather than the target.
const boundFraction = 0.9

// collector turns the recorder's cumulative counters into one Sample per interval, on an absolute
// schedule (start + k·interval), and into the Summary at the end. It runs in its own goroutine;
// the VUs never wait for it.
type collector struct {
	e                  *Engine
	sampler            *procstat.Sampler
	cur, prev, delta   *metrics.Counts
	lastTick           time.Time
	k                  int
	cpuSum, cpuMax     float64
	rssMax             uint64
	seconds, boundSecs int
	boundCPU           float64
}

func newCollector(e *Engine) *collector {
	return &collector{
		e: e, sampler: procstat.New(),
		cur: metrics.NewCounts(), prev: metrics.NewCounts(), delta: metrics.NewCounts(),
		lastTick: e.start,
		boundCPU: boundFraction * 100 * float64(runtime.GOMAXPROCS(0)),
	}
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

// tick reads the counters and emits the sample for (lastTick, now].
func (c *collector) tick(now time.Time, final bool) {
	c.e.rec.Read(c.cur)
	c.delta.Sub(c.cur, c.prev)
	c.prev, c.cur = c.cur, c.prev
	span := now.Sub(c.lastTick).Seconds()
	d := c.delta
	if final && span < 0.05 && d.Requests == 0 && d.Interrupted == 0 {
		return // nothing happened after the last full second
	}
	c.lastTick = now
	c.k++
	ps := c.sampler.Read()
	h := metrics.HistFromCounts(d.Lat)
	s := metrics.Sample{
		T:                 now.UnixMilli(),
		ElapsedS:          c.k,
		IntervalS:         round(span, 3),
		Requests:          d.Requests,
		Successes:         d.Successes,
		Errors:            d.Errors(),
		Interrupted:       d.Interrupted,
		Latency:           metrics.LatencyOf(h, d.LatSum),
		ActiveVUs:         c.e.rec.ActiveVUs(),
		DroppedIterations: d.Dropped,
		BytesIn:           d.BytesIn,
		BytesOut:          d.BytesOut,
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
	if span > 0 {
		s.RPS = round(float64(d.Requests)/span, 1)
	}
	s.GeneratorBound = ps.CPUPercent >= c.boundCPU
	if enc, err := metrics.EncodeHist(h); err == nil {
		s.Hist = enc
	}
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
		StatusCodes:           t.StatusMap(),
		ErrorKinds:            t.KindMap(),
		BytesIn:               t.BytesIn,
		BodyBytesIn:           t.BodyBytesIn,
		BytesOut:              t.BytesOut,
		Seconds:               c.seconds,
		GeneratorBoundSeconds: c.boundSecs,
		Client:                metrics.ClientSummary{CPUPercentMax: round(c.cpuMax, 1), RSSBytesMax: c.rssMax},
		Thresholds:            []metrics.ThresholdResult{},
		ByName:                map[string]metrics.NameStats{},
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
	if len(c.e.reqs) == 1 {
		// Per-name statistics for several request names need per-name recorders (not yet built);
		// with one request the run's figures are that name's figures.
		s.ByName[c.e.reqs[0].r.Name] = metrics.NameStats{Requests: s.Requests, Errors: s.Errors, Latency: s.Latency}
	}
	if enc, err := metrics.EncodeHist(lat); err == nil {
		s.Hist = enc
	}
	for _, th := range c.e.thresholds {
		v := thresholdValue(th.Metric, th.Percentile, s, lat)
		s.Thresholds = append(s.Thresholds, metrics.ThresholdResult{Expr: th.Expr, Value: v, OK: th.Pass(v)})
	}
	return s
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
