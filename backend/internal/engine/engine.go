// Package engine is Volley's load library: it runs a validated plan with goroutine VUs over
// fasthttp, records every outcome into a lock-free metrics.Recorder, and emits one metrics.Sample
// per second and a metrics.Summary at the end.
//
// The engine knows nothing of HTTP APIs, databases or websockets: a CLI, the server, a test or a
// remote agent drive it alike. It may import only plan, metrics, procstat and fasthttp (a test
// enforces this).
//
// Hot path (per request): no lock shared between VUs, no heap allocation, no channel operation.
// Each VU owns its fasthttp.HostClient (one connection, so VU i holds exactly one keep-alive
// connection, as in wrk and k6), its prepared requests and one response object.
package engine

import (
	"context"
	"fmt"
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
	// ConnectTimeout caps TCP connects (default: the request timeout).
	ConnectTimeout time.Duration
	// Interval is the sample period (default 1s).
	Interval time.Duration
}

// Engine runs one plan once.
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
}

type reqSpec struct {
	r      plan.Request
	addr   string
	tls    bool
	checks []plan.Check
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
	for _, r := range p.Requests {
		u, err := url.Parse(r.URL)
		if err != nil {
			return nil, fmt.Errorf("request %q: %w", r.Name, err)
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		e.reqs = append(e.reqs, reqSpec{r: r, addr: joinHostPort(u.Hostname(), port), tls: u.Scheme == "https", checks: r.Checks})
		sum += r.Weight
		e.weights = append(e.weights, sum)
	}
	return e, nil
}

func joinHostPort(host, port string) string {
	for i := 0; i < len(host); i++ {
		if host[i] == ':' {
			return "[" + host + "]:" + port
		}
	}
	return host + ":" + port
}

// Run executes the plan until its load model ends or ctx is cancelled, then waits a bounded grace
// for requests in flight (those still open after it are counted as interrupted) and returns the
// summary. Errors are returned only for a run that could not start; target failures are data.
func (e *Engine) Run(ctx context.Context) (*metrics.Summary, error) {
	l := e.p.Load
	grace := l.GracefulStop.D()
	e.start = time.Now()
	switch l.Executor {
	case plan.PerVUIterations:
		e.end = e.start.Add(l.MaxDuration.D())
	default:
		e.end = e.start.Add(l.Duration.D())
	}
	e.hardStop = e.end.Add(grace)

	col := newCollector(e)
	colDone := make(chan struct{})
	colStop := make(chan struct{})
	go func() { defer close(colDone); col.loop(colStop) }()

	vus := make([]*vu, l.VUs)
	var wg sync.WaitGroup
	for i := range vus {
		vus[i] = newVU(e, i)
	}
	wg.Add(len(vus))
	for _, v := range vus {
		go func() { defer wg.Done(); v.run() }()
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()

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
		for _, v := range vus {
			v.abandon()
		}
	}
	endTime := time.Now()
	close(colStop)
	<-colDone
	return col.finish(endTime, sendEnd), nil
}

// Recorder exposes the run's counters (for tests and benchmarks).
func (e *Engine) Recorder() *metrics.Recorder { return e.rec }
