package engine

import (
	"crypto/tls"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// VU request states; the VU and the engine's abandon step race on them with CAS so that a request
// in flight at the hard stop is counted exactly once: as its outcome, or as interrupted.
const (
	idle int32 = iota
	inFlight
	abandoned
)

type vuReq struct {
	req    *fasthttp.Request
	client *fasthttp.HostClient
	checks []plan.Check
}

// vu is one virtual user: a goroutine looping over iterations with its own client and buffers.
type vu struct {
	e        *Engine
	id       int
	shard    *metrics.Shard
	reqs     []vuReq
	resp     *fasthttp.Response
	rng      *rand.Rand
	timeout  time.Duration
	state    atomic.Int32
	maxIters int
}

func newVU(e *Engine, id int) *vu {
	v := &vu{
		e: e, id: id, shard: e.rec.Shard(id), resp: &fasthttp.Response{},
		rng:     rand.New(rand.NewPCG(uint64(id), uint64(e.start.UnixNano()))),
		timeout: e.p.HTTP.Timeout.D(),
	}
	if e.p.Load.Executor == plan.PerVUIterations {
		v.maxIters = e.p.Load.Iterations
	}
	clients := map[string]*fasthttp.HostClient{}
	for _, s := range e.reqs {
		key := s.addr
		if s.tls {
			key = "tls:" + key
		}
		c, ok := clients[key]
		if !ok {
			c = newHostClient(e, s, v.shard)
			clients[key] = c
		}
		req := &fasthttp.Request{}
		req.SetRequestURI(s.r.URL)
		req.Header.SetMethod(s.r.Method)
		for k, val := range s.r.Headers {
			if equalFold(k, "Host") {
				req.UseHostHeader = true
				req.Header.SetHost(val)
				continue
			}
			req.Header.Set(k, val)
		}
		if s.r.Body != "" {
			req.SetBodyString(s.r.Body)
		}
		if !e.p.HTTP.KeepAliveOn() {
			req.SetConnectionClose()
		}
		v.reqs = append(v.reqs, vuReq{req: req, client: c, checks: s.checks})
	}
	return v
}

func newHostClient(e *Engine, s reqSpec, shard *metrics.Shard) *fasthttp.HostClient {
	ct := e.opts.ConnectTimeout
	if ct <= 0 {
		ct = e.p.HTTP.Timeout.D()
	}
	c := &fasthttp.HostClient{
		Addr:                          s.addr,
		IsTLS:                         s.tls,
		MaxConns:                      1,
		MaxIdemponentCallAttempts:     1,
		RetryIfErr:                    func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
		DialTimeout:                   dialer(shard, e.rec, ct),
		NoDefaultUserAgentHeader:      false,
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
		MaxIdleConnDuration:           time.Hour,
		Name:                          "volley",
	}
	if s.tls {
		c.TLSConfig = &tls.Config{InsecureSkipVerify: e.p.HTTP.InsecureSkipVerify} //nolint:gosec // the user's explicit choice
	}
	return c
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}

func (v *vu) run() {
	v.e.rec.VUStarted()
	defer v.e.rec.VUStopped()
	for it := 0; v.maxIters == 0 || it < v.maxIters; it++ {
		if v.e.stop.Load() {
			return
		}
		now := time.Now()
		if !now.Before(v.e.end) {
			return
		}
		v.do(v.pick(), now)
		if v.state.Load() == abandoned {
			return
		}
	}
}

// pick chooses the next request by weight (cumulative weights, one random draw).
func (v *vu) pick() *vuReq {
	if len(v.reqs) == 1 {
		return &v.reqs[0]
	}
	w := v.e.weights
	x := v.rng.IntN(w[len(w)-1])
	for i, c := range w {
		if x < c {
			return &v.reqs[i]
		}
	}
	return &v.reqs[len(v.reqs)-1]
}

// do sends one request that was due at `due` and records its outcome.
func (v *vu) do(r *vuReq, due time.Time) {
	deadline := due.Add(v.timeout)
	cut := false
	if deadline.After(v.e.hardStop) {
		deadline, cut = v.e.hardStop, true
	}
	if !v.state.CompareAndSwap(idle, inFlight) {
		return // abandoned before it could start
	}
	sent := time.Now()
	err := r.client.DoDeadline(r.req, v.resp, deadline)
	done := time.Now()
	if !v.state.CompareAndSwap(inFlight, idle) {
		return // the engine gave up on this request and counted it as interrupted
	}
	kind := classify(err)
	if cut && (kind == metrics.Timeout || kind == metrics.ConnectTimeout) && !done.Before(v.e.hardStop) {
		v.shard.Interrupted()
		return
	}
	o := metrics.Outcome{Kind: kind}
	if err == nil {
		status := v.resp.StatusCode()
		o.Status = status
		o.LatencyUs = done.Sub(due).Microseconds()
		o.ServiceUs = done.Sub(sent).Microseconds()
		o.BodyBytes = int64(len(v.resp.Body()))
		o.Kind = judge(status, r.checks)
	}
	v.shard.Record(o)
}

// abandon is called by the engine after the grace period: a request still in flight is counted
// as interrupted, once.
func (v *vu) abandon() {
	if v.state.CompareAndSwap(inFlight, abandoned) {
		v.shard.Interrupted()
		return
	}
	v.state.Store(abandoned)
}

// judge decides success from the status and the checks. Without a status check, 4xx and 5xx are
// failures (as k6's default expected statuses 200–399); a status check replaces that rule.
func judge(status int, checks []plan.Check) metrics.ErrorKind {
	statusChecked := false
	for _, c := range checks {
		if c.Type == "status" {
			statusChecked = true
			if !compare(float64(status), c.Op, c.Value) {
				return metrics.CheckFailed
			}
		}
	}
	if !statusChecked {
		switch {
		case status >= 500:
			return metrics.Status5xx
		case status >= 400:
			return metrics.Status4xx
		}
	}
	return metrics.KindNone
}

func compare(a float64, op string, b float64) bool {
	switch op {
	case "eq":
		return a == b
	case "ne":
		return a != b
	case "lt":
		return a < b
	case "le":
		return a <= b
	case "gt":
		return a > b
	case "ge":
		return a >= b
	}
	return false
}
