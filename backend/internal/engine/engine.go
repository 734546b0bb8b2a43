// Package engine is Volley's load library: it runs a validated plan with goroutine VUs over
// fasthttp, records every outcome into a lock-free metrics.Recorder, and emits one metrics.Sample
// per second and a metrics.Summary at the end.
//
// The engine knows nothing of HTTP APIs, databases or websockets: a CLI, the server, a test or a
// remote agent drive it alike. It may import only plan, metrics, procstat, fasthttp,
// hdrhistogram-go and gjson (a test enforces this).
//
// Hot path (per request): no lock shared between VUs, no heap allocation, no channel operation.
// Each VU owns its connection per address (client.go: fasthttp's request writer and response
// parser, no pool), so VU i holds exactly one keep-alive connection, as in wrk and k6; also its
// prepared requests, one response object and one timeout timer (deadline.go).
//
// New takes a plan compiled by plan.Compile and neither validates nor parses it again. Each
// executor lives in one file, executor_NAME.go, whose init registers it with package plan (fields,
// defaults, validation, length, peak VUs, model: plan.RegisterExecutor) and with the engine (its
// run state and launch): importing this package is what makes plan.Parse know the built-in
// executors. What several executors share is in executors.go (closed models) and arrival.go (open
// models).
package engine

import (
	"context"
	"fmt"
	"maps"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/plan"
	seg "github.com/volley-load/volley/backend/internal/segment"
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
	// Policy is the server's target policy, checked at every connect (nil: netpolicy.Default,
	// the built-in denials). Plans cannot change it.
	Policy *netpolicy.Policy
	// Segment is this engine's share of the run's work when several agents run one plan (the
	// zero Segment, seg.Whole: all of it). Every executor splits by it exactly: the VU
	// indexes it runs, the arrival-rate iterations it starts (planned on the whole run's
	// schedule), shared iterations and CSV rows (docs/scale-out.md).
	Segment seg.Segment
}

// Engine runs one plan once. Create it with New; Run may be called once.
type Engine struct {
	p          *plan.Plan
	opts       Options
	rec        *metrics.Recorder
	thresholds []thresholdRule
	reqs       []reqSpec
	weights    []int // cumulative
	stop       atomic.Bool
	stopAt     atomic.Int64  // when stop was set, as a time since start (ns); 0 before
	start      time.Time     // with a monotonic reading: VUs keep time as durations since it (now)
	end        time.Time     // VUs start no iteration after this
	endAt      time.Duration // end - start
	hardStop   time.Duration // requests in flight are cut off here (since start)

	wg    sync.WaitGroup
	vusMu sync.Mutex
	vus   []*vu
	// live counts the VUs whose goroutine has not ended. It rises under vusMu (spawn, spawnLive)
	// and falls without it, so that a thousand VUs ending at once after a stop do not queue on
	// vusMu ahead of the stop's own steps (Go's mutex hands a contended lock over in FIFO order,
	// one scheduling delay per waiter).
	live atomic.Int64
	// listed is vus as of the latest VU started, for readers that must not queue on vusMu behind
	// a burst of spawns (arrival.closeBefore).
	listed atomic.Pointer[[]*vu]

	ctl control // live control: SetVUs, SetRate (control.go)

	exec executor // the load model's run (executors.go, executor_*.go)

	names *metrics.NameSet // per-name statistics; nil when the plan has one request name

	// scenario
	checks       []checkInfo
	checkCounts  [][]checkCount // [shard][check]
	rows         [][][]byte     // data table rows
	rowNext      atomic.Int64
	extractSlots int
	maxBody      int           // http.max_body: the largest body read into memory for checks and extractions
	maxHeader    int           // http.max_header: the largest response header (header.go)
	writeBuf     int           // fasthttp write buffer per connection (writeBufferSize)
	dialSlots    chan struct{} // bounds the VUs' concurrent first connects (conn.go)

	connectTimeout time.Duration
	policy         *netpolicy.Policy // checked at every dial (conn.go)

	abortCh   chan struct{}
	abortOnce sync.Once
	aborted   string

	failed failure // a panic in one of the run's goroutines (panic.go)

	fails *failTable // failure groups (failures.go)
	final *Final     // the cumulative state at the end (final.go), set by the collector's finish

	h2                     *h2Engine // http.version "2" or "h2c" (h2.go); nil for HTTP/1.1
	noJar, jarPerIteration bool      // http.cookies "off", "iteration" (cookies.go)
	proxy                  string    // http.proxy's host:port, "" for none (proxy.go)
}

type reqSpec struct {
	r        plan.Request
	scheme   string
	hostport string   // the URL's host[:port]; each VU maps it to an address with addrFor
	addrs    []string // addrFor for VU 0..n-1: VU i dials addrs[i mod n]
	host     string   // the URL's host name, for SNI
	tls      bool
	name     int // index into names

	urlT, bodyT tmpl // nil: static
	// wire is the whole request as sent, serialized once (serialize) when nothing in it is
	// templated; nil otherwise, and each VU renders its own fasthttp.Request per iteration.
	wire             []byte
	head, connClose  bool // wire is a HEAD request; it asks to close the connection
	hdrT             []hdrTmpl
	strip            []string // headers a redirect to another origin drops (vu.follow): secret ones
	checks           []check
	extracts         []extract
	keepBody         bool // a body check or an extraction from the body reads the response body
	thinkLo, thinkHi time.Duration

	// sessions and compression (cookies.go, decode.go: sessionSetup)
	acceptEncoding         string  // http.compression's Accept-Encoding; "" when none is added
	cookieHost, cookiePath []byte  // a static URL's host[:port] and path, for the jar
	planCookie             []byte  // the plan's own static Cookie header value
	cookieT                tmpl    // the plan's Cookie header, when templated
	ws                     *wsSpec // a WebSocket step's session (ws.go); nil for HTTP

	// an https:// request's Proxy-Authorization (static, or templated), sent on the CONNECT of
	// a tunnel through http.proxy, never through it (proxy.go: proxyAuthSetup)
	proxyAuth  []byte
	proxyAuthT tmpl
}

type hdrTmpl struct {
	name string
	t    tmpl
}

// PlanChecks is the check list an engine of c reports (Final.Checks, without counts), in its
// order: each request's checks in plan order, followed by its WebSocket messages' expectations
// (named by wsCheckDesc).
func PlanChecks(c *plan.Compiled) []metrics.CheckResult {
	var out []metrics.CheckResult
	for i, r := range c.Plan.Requests {
		cr := &c.Requests[i]
		for _, k := range cr.Checks {
			out = append(out, metrics.CheckResult{Request: r.Name, Check: k.Desc})
		}
		if cw := cr.WS; cw != nil {
			for j, m := range cw.Messages {
				for _, k := range m.Expect {
					out = append(out, metrics.CheckResult{Request: r.Name, Check: wsCheckDesc(j, k.Desc)})
				}
			}
		}
	}
	return out
}

// wsCheckDesc names the check desc of WebSocket message i's expectations.
func wsCheckDesc(i int, desc string) string { return fmt.Sprintf("ws messages[%d] %s", i, desc) }

// RequestNames are the request names of p as an engine counts them (Final.Names, a sample's
// ByName): each distinct name in plan order, and past metrics.MaxNames−1 of them the rest
// together as metrics.OtherName (the last); index is each name's place (the folded names are
// not in it: they count under OtherName).
func RequestNames(p *plan.Plan) (names []string, index map[string]int) {
	index = map[string]int{}
	for _, r := range p.Requests {
		if _, ok := index[r.Name]; ok {
			continue
		}
		if len(names) < metrics.MaxNames-1 {
			index[r.Name] = len(names)
			names = append(names, r.Name)
		} else if _, ok := index[metrics.OtherName]; !ok { // the last slot is the shared "(other)"
			index[metrics.OtherName] = len(names)
			names = append(names, metrics.OtherName)
		}
	}
	return names, index
}

// New prepares an engine for a compiled plan (plan.Compile), taken as it is: nothing is validated
// or parsed again. It binds the plan's {{secret.NAME}} references to c.Plan.Secrets: a missing
// value is a *plan.ValidationError naming the field (CheckSecrets).
func New(c *plan.Compiled, opts Options) (*Engine, error) {
	p := c.Plan
	if err := p.CheckSecrets("the plan's secret values"); err != nil {
		return nil, err
	}
	if opts.Shards <= 0 {
		opts.Shards = 4 * runtime.GOMAXPROCS(0)
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Policy == nil {
		opts.Policy = netpolicy.Default()
	}
	e := &Engine{p: p, opts: opts, rec: metrics.NewRecorder(opts.Shards), abortCh: make(chan struct{}), ctl: newControl(),
		dialSlots: make(chan struct{}, firstDials), failed: failure{ch: make(chan struct{})},
		rows: c.Rows, extractSlots: c.ExtractSlots}
	sum := 0
	names, index := RequestNames(p)
	for i, r := range p.Requests {
		s := e.spec(r, &c.Requests[i])
		j, ok := index[r.Name]
		if !ok {
			j = index[metrics.OtherName]
		}
		s.name = j
		if err := e.bindScenario(&s, r, &c.Requests[i]); err != nil {
			return nil, fmt.Errorf("request %q: %w", r.Name, err)
		}
		if cw := c.Requests[i].WS; cw != nil {
			var err error
			if s.ws, err = e.bindWS(r, cw); err != nil {
				return nil, fmt.Errorf("request %q: %w", r.Name, err)
			}
			e.rec.EnableWS()
		}
		e.reqs = append(e.reqs, s)
		sum += r.Weight
		e.weights = append(e.weights, sum)
	}
	if len(names) > 1 {
		e.names = metrics.NewNameSet(names, min(opts.Shards, 4))
	}
	e.fails = newFailTable(names, p)
	e.noJar, e.jarPerIteration = p.HTTP.CookieMode() == plan.CookiesOff, p.HTTP.CookieMode() == plan.CookiesIteration
	for i := range e.reqs {
		if e.reqs[i].urlT == nil {
			e.reqs[i].r.URL = browserURL(e.reqs[i].r.URL) // url.go
		}
		if p.HTTP.Proxy != "" {
			e.reqs[i].proxyAuthSetup() // proxy.go
		}
		e.reqs[i].sessionSetup(p.HTTP.AcceptEncoding())
		e.reqs[i].serialize(p.HTTP.KeepAliveOn())
	}
	e.writeBuf = writeBufferSize(e.reqs, p.HTTP.KeepAliveOn())
	e.policy = opts.Policy
	e.h2 = newH2(p)
	e.maxBody = p.HTTP.MaxBodyOrDefault()
	e.maxHeader = p.HTTP.MaxHeaderOrDefault()
	if p.HTTP.Proxy != "" {
		e.proxy, _ = plan.ProxyAddr(p.HTTP.Proxy) // validated by the plan
	}
	e.connectTimeout = p.HTTP.ConnectTimeout.D()
	if e.connectTimeout <= 0 {
		e.connectTimeout = p.HTTP.Timeout.D()
	}
	e.checkCounts = make([][]checkCount, opts.Shards)
	for i := range e.checkCounts {
		e.checkCounts[i] = make([]checkCount, len(e.checks))
	}
	e.thresholds = thresholdRules(c, names)
	e.exec = builders[p.Load.Executor](e) // Compile accepted only registered executors
	return e, nil
}

// bindScenario takes a request's compiled templates, checks and extraction rules, binding the
// templates' secrets.
func (e *Engine) bindScenario(s *reqSpec, r plan.Request, cr *plan.CompiledRequest) error {
	secrets := e.p.Secrets
	var err error
	if s.urlT, err = bind(cr.URL, secrets); err != nil {
		return err
	}
	// A template of literal text and {{secret.NAME}} values only is static: the value goes into
	// the spec's copy of the request (never the plan's), which is then serialized once.
	if lit, ok := s.urlT.literal(); ok && s.urlT != nil {
		s.r.URL, s.urlT = lit, nil
	}
	if s.bodyT, err = bind(cr.Body, secrets); err != nil {
		return err
	}
	if lit, ok := s.bodyT.literal(); ok && s.bodyT != nil {
		s.r.Body, s.bodyT = lit, nil
	}
	cloned := false
	for _, h := range cr.Headers {
		if h.Secret {
			s.strip = append(s.strip, h.Name)
		}
		t, err := bind(h.Value, secrets)
		if err != nil {
			return err
		}
		if lit, ok := t.literal(); ok && t != nil {
			if !cloned {
				s.r.Headers, cloned = maps.Clone(r.Headers), true
			}
			s.r.Headers[h.Name] = lit
			continue
		}
		if t != nil {
			s.hdrT = append(s.hdrT, hdrTmpl{name: h.Name, t: t})
		}
	}
	for _, k := range cr.Checks {
		s.checks = append(s.checks, check{CompiledCheck: k, index: len(e.checks)})
		e.checks = append(e.checks, checkInfo{request: r.Name, desc: k.Desc})
	}
	for _, x := range cr.Extracts {
		s.extracts = append(s.extracts, extract(x))
	}
	return nil
}

func (e *Engine) spec(r plan.Request, cr *plan.CompiledRequest) reqSpec {
	s := reqSpec{r: r, scheme: cr.Scheme, hostport: cr.HostPort, host: cr.Host, tls: cr.Scheme == "https",
		keepBody: cr.KeepBody, thinkLo: cr.ThinkLo, thinkHi: cr.ThinkHi}
	// the addresses VUs dial, worked out once: VU i takes addrs[i mod n]
	n := 1
	if to, ok := e.p.HTTP.Hosts[strings.Trim(cr.Host, "[]")]; ok {
		n = strings.Count(to, ",") + 1
	}
	for i := 0; i < n; i++ {
		s.addrs = append(s.addrs, e.addrFor(s.scheme, s.hostport, i))
	}
	return s
}

// addrFor maps a URL host (with optional port) to the address VU vuID dials, applying http.hosts.
// A hosts entry may list several addresses ("127.0.0.1:9001,127.0.0.2:9001"): VU i uses the
// (i mod n)-th, spreading VUs over them as a round-robin DNS would.
func (e *Engine) addrFor(scheme, hostport string, vuID int) string {
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
	to, ok := e.p.HTTP.Hosts[net.JoinHostPort(host, port)] // "name:port" first, then "name"
	if !ok {
		to, ok = e.p.HTTP.Hosts[host]
	}
	if ok {
		if strings.Contains(to, ",") {
			list := strings.Split(to, ",")
			to = strings.TrimSpace(list[vuID%len(list)])
		}
		if _, _, err := net.SplitHostPort(to); err == nil {
			return to
		}
		host = to
	}
	return net.JoinHostPort(host, port)
}

// Run executes the plan until its load model ends or ctx is cancelled, then waits a bounded grace
// for requests in flight (those still open after it are counted as interrupted) and returns the
// summary. Target failures are data; the error is a *PanicError when one of the run's goroutines
// panicked: the run then stops at once as if cancelled and the summary (nil if the collector
// itself failed) covers what ran. Run returns within graceful_stop (+ scheduling) of the stop,
// whatever the plan.
func (e *Engine) Run(ctx context.Context) (*metrics.Summary, error) {
	l := e.p.Load
	grace := l.GracefulStop.D()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	e.start = time.Now()
	e.endAt = l.Length()
	e.end = e.start.Add(e.endAt)
	e.hardStop = e.endAt + grace

	col := newCollector(e)
	defer col.target.set.Stop() // the monitors end with the run, whatever happens (target.go)
	colDone := make(chan struct{})
	colStop := make(chan struct{})
	go func() {
		defer close(colDone)
		defer e.recoverIn("collector", -1)
		col.loop(colStop)
	}()

	e.launchGuarded(ctx)
	close(e.ctl.launched)
	allDone := make(chan struct{})
	go func() { e.wg.Wait(); close(allDone) }()

	timer := time.NewTimer(time.Until(e.end))
	defer timer.Stop()
	select {
	case <-allDone:
	case <-timer.C:
	case <-ctx.Done():
	case <-e.abortCh:
	case <-e.failed.ch:
	}
	e.stopAt.CompareAndSwap(0, int64(max(e.now(), 1)))
	e.stop.Store(true)
	if w, ok := e.exec.(stopWaker); ok {
		w.stopped()
	}
	sendEnd := time.Now()
	graceEnd := sendEnd.Add(grace)
	if hardStop := e.start.Add(e.hardStop); graceEnd.After(hardStop) && sendEnd.Before(hardStop) {
		graceEnd = hardStop
	}
	gt := time.NewTimer(time.Until(graceEnd))
	defer gt.Stop()
	select {
	case <-allDone:
	case <-e.failed.ch: // a VU that panicked during the grace: give up on the others at once
		e.vusMu.Lock()
		for _, v := range e.vus {
			v.abandon()
		}
		e.vusMu.Unlock()
	case <-gt.C:
		e.vusMu.Lock()
		for _, v := range e.vus {
			v.abandon()
		}
		e.vusMu.Unlock()
	}
	e.h2.closeShared() // a VU given up on in a stream returns now
	endTime := time.Now()
	if f, ok := e.exec.(finisher); ok {
		f.finish()
	}
	close(colStop)
	<-colDone
	sum := e.finishGuarded(col, endTime, sendEnd)
	if sum == nil {
		return nil, e.failed.error()
	}
	runtime.ReadMemStats(&ms)
	e.final.Mallocs = ms.Mallocs - mallocs
	sum.Client.HeapAllocsPerRequest = heapAllocsPerRequest(e.final.Mallocs, sum.Requests)
	return sum, e.failed.error()
}

// launchGuarded runs launch; a panic there fails the run (the VUs already started are stopped).
func (e *Engine) launchGuarded(ctx context.Context) {
	defer e.recoverIn("executor", -1)
	testPoint("executor", -1)
	e.exec.launch(ctx)
}

// finishGuarded builds the summary; nil when that panicked (the run has then failed).
func (e *Engine) finishGuarded(col *collector, end, sendEnd time.Time) (sum *metrics.Summary) {
	defer e.recoverIn("collector", -1)
	return col.finish(end, sendEnd)
}

// stopping reports, every 256 VUs started, whether the run is being stopped.
func (e *Engine) stopping(ctx context.Context, i int) bool {
	return i&255 == 255 && (ctx.Err() != nil || e.stop.Load() || e.failed.error() != nil)
}

// spawn creates VU number len(vus) and starts its loop. Spawning from a running VU is safe (the
// wait group's count is above zero then).
func (e *Engine) spawn(loop func(*vu)) {
	e.vusMu.Lock()
	e.live.Add(1)
	e.startVU(loop)
}

// startVU creates VU number len(vus) and starts its loop; e.vusMu is held on entry and released,
// and the caller has counted the VU in e.live.
func (e *Engine) startVU(loop func(*vu)) {
	v := newVU(e, len(e.vus))
	e.vus = append(e.vus, v)
	vs := e.vus
	e.listed.Store(&vs)
	e.wg.Add(1)
	e.vusMu.Unlock()
	go func() {
		defer e.wg.Done()
		defer e.live.Add(-1) // before wg.Done: spawnLive relies on live > 0 ⇒ wait group > 0
		defer v.finish()
		defer e.recoverIn("VU", v.id)
		testPoint("vu", v.id)
		loop(v)
	}()
}

// abort ends the run early because a threshold with abort_on_fail failed.
func (e *Engine) abort(reason string) {
	e.abortOnce.Do(func() {
		e.aborted = reason
		close(e.abortCh)
	})
}

// Recorder exposes the run's counters (for tests and benchmarks).
func (e *Engine) Recorder() *metrics.Recorder { return e.rec }
