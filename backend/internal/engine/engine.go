// Package engine is Volley's load library: it runs a validated plan with goroutine VUs over
// fasthttp, records every outcome into a lock-free metrics.Recorder, and emits one metrics.Sample
// per second and a metrics.Summary at the end.
//
// The engine knows nothing of HTTP APIs, databases or websockets: a CLI, the server, a test or a
// remote agent drive it alike. It may import only plan, metrics, procstat, fasthttp and
// hdrhistogram-go (a test enforces this).
//
// Hot path (per request): no lock shared between VUs, no heap allocation, no channel operation.
// Each VU owns its fasthttp.HostClient (one connection, so VU i holds exactly one keep-alive
// connection, as in wrk and k6), its prepared requests and one response object. Executors are in
// executors.go (closed models) and arrival.go (open models).
package engine

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// Options tune a run. The zero value is fine.
type Options struct {
	// OnSample receives each per-second sample from the collector goroutine. It must not block:
	// the runner hands samples on through buffers that drop rather than wait.
	OnSample func(metrics.Sample)
	// Shards is the number of recorder shards (default 4 × GOMAXPROCS).
	Shards int
	// Interval is the sample period (default 1s).
	Interval time.Duration
}

// Engine runs one plan once. Create it with New; Run may be called once.
type Engine struct {
	p          *plan.Plan
	opts       Options
	rec        *metrics.Recorder
	thresholds []plan.Threshold
	reqs       []reqSpec
	weights    []int // cumulative
	stop       atomic.Bool
	start      time.Time
	end        time.Time // VUs start no iteration after this
	hardStop   time.Time // requests in flight are cut off here

	wg    sync.WaitGroup
	vusMu sync.Mutex
	vus   []*vu

	// closed models with a VU profile (ramping-vus, concurrency-sweep)
	prof profile
	// shared-iterations: iterations claimed so far; arrival-rate: next iteration index
	next atomic.Int64
	// arrival-rate executors
	sched   schedule
	pool    atomic.Int64 // VUs spawned
	waiting atomic.Int64 // VUs holding a claimed, not yet due iteration
	maxVUs  int64

	names *metrics.NameSet // per-name statistics; nil when the plan has one request name
}

type reqSpec struct {
	r      plan.Request
	addr   string // where to connect (after the hosts override)
	host   string // the URL's host name, for SNI
	tls    bool
	checks []plan.Check
	name   int // index into names
}

// New prepares an engine for p, which must have passed plan.Parse or Validate.
func New(p *plan.Plan, opts Options) (*Engine, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if opts.Shards <= 0 {
		opts.Shards = 4 * runtime.GOMAXPROCS(0)
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	e := &Engine{p: p, opts: opts, rec: metrics.NewRecorder(opts.Shards)}
	for _, t := range p.Thresholds {
		th, err := plan.ParseThreshold(t)
		if err != nil {
			return nil, err
		}
		e.thresholds = append(e.thresholds, th)
	}
	sum := 0
	var names []string
	index := map[string]int{}
	for _, r := range p.Requests {
		s, err := e.spec(r)
		if err != nil {
			return nil, err
		}
		j, ok := index[r.Name]
		if !ok {
			if len(names) == metrics.MaxNames-1 {
				if j, ok = index[metrics.OtherName]; !ok {
					j = len(names)
					index[metrics.OtherName] = j
					names = append(names, metrics.OtherName)
				}
			} else {
				j = len(names)
				index[r.Name] = j
				names = append(names, r.Name)
			}
		}
		s.name = j
		e.reqs = append(e.reqs, s)
		sum += r.Weight
		e.weights = append(e.weights, sum)
	}
	if len(names) > 1 {
		e.names = metrics.NewNameSet(names, min(opts.Shards, 4))
	}
	return e, nil
}

func (e *Engine) spec(r plan.Request) (reqSpec, error) {
	u, err := url.Parse(r.URL)
	if err != nil {
		return reqSpec{}, fmt.Errorf("request %q: %w", r.Name, err)
	}
	addr := e.addrFor(u.Scheme, u.Host)
	return reqSpec{r: r, addr: addr, host: u.Hostname(), tls: u.Scheme == "https", checks: r.Checks}, nil
}

// addrFor maps a URL host (with optional port) to the address to dial, applying http.hosts.
func (e *Engine) addrFor(scheme, hostport string) string {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	if len(host) > 1 && host[0] == '[' {
		host = host[1 : len(host)-1]
	}
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	if to, ok := e.p.HTTP.Hosts[host]; ok {
		if _, _, err := net.SplitHostPort(to); err == nil {
			return to
		}
		host = to
	}
	return net.JoinHostPort(host, port)
}

// Run executes the plan until its load model ends or ctx is cancelled, then waits a bounded grace
// for requests in flight (those still open after it are counted as interrupted) and returns the
// summary. Errors are returned only for a run that could not start; target failures are data.
func (e *Engine) Run(ctx context.Context) (*metrics.Summary, error) {
	l := e.p.Load
	grace := l.GracefulStop.D()
	e.start = time.Now()
	e.end = e.start.Add(l.Length())
	e.hardStop = e.end.Add(grace)

	col := newCollector(e)
	colDone := make(chan struct{})
	colStop := make(chan struct{})
	go func() { defer close(colDone); col.loop(colStop) }()

	e.launch()
	allDone := make(chan struct{})
	go func() { e.wg.Wait(); close(allDone) }()

	timer := time.NewTimer(time.Until(e.end))
	defer timer.Stop()
	select {
	case <-allDone:
	case <-timer.C:
	case <-ctx.Done():
	}
	e.stop.Store(true)
	sendEnd := time.Now()
	graceEnd := sendEnd.Add(grace)
	if graceEnd.After(e.hardStop) && sendEnd.Before(e.hardStop) {
		graceEnd = e.hardStop
	}
	gt := time.NewTimer(time.Until(graceEnd))
	defer gt.Stop()
	select {
	case <-allDone:
	case <-gt.C:
		e.vusMu.Lock()
		for _, v := range e.vus {
			v.abandon()
		}
		e.vusMu.Unlock()
	}
	endTime := time.Now()
	close(colStop)
	<-colDone
	return col.finish(endTime, sendEnd), nil
}

// launch starts the executor's first VUs.
func (e *Engine) launch() {
	l := e.p.Load
	switch l.Executor {
	case plan.ConstantVUs, plan.PerVUIterations, plan.SharedIterations:
		for i := 0; i < l.VUs; i++ {
			e.spawn((*vu).closedLoop)
		}
	case plan.RampingVUs, plan.ConcurrencySweep:
		if l.Executor == plan.RampingVUs {
			e.prof = rampProfile(l.StartVUs, l.Stages)
		} else {
			e.prof = stepProfile(l.Levels, l.StepDuration.D())
		}
		for i := 0; i < e.prof.peak(); i++ {
			e.spawn((*vu).profileLoop)
		}
	case plan.ConstantArrivalRate, plan.RampingArrivalRate:
		stages := l.Stages
		start := l.StartRate
		if l.Executor == plan.ConstantArrivalRate {
			stages = []plan.Stage{{Duration: l.Duration, Target: l.Rate}}
			start = l.Rate
		}
		e.sched = newSchedule(float64(start), stages, l.TimeUnit.D())
		e.maxVUs = int64(max(l.MaxVUs, l.PreAllocatedVUs))
		for i := 0; i < l.PreAllocatedVUs; i++ {
			e.pool.Add(1)
			e.spawn((*vu).openLoop)
		}
	}
}

// spawn creates VU number len(vus) and starts its loop. Spawning from a running VU is safe (the
// wait group's count is above zero then).
func (e *Engine) spawn(loop func(*vu)) {
	e.vusMu.Lock()
	v := newVU(e, len(e.vus))
	e.vus = append(e.vus, v)
	e.vusMu.Unlock()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer v.closeConns()
		loop(v)
	}()
}

// Recorder exposes the run's counters (for tests and benchmarks).
func (e *Engine) Recorder() *metrics.Recorder { return e.rec }
