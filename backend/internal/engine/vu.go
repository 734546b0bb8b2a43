package engine

import (
	"bufio"
	"bytes"
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
	spec   *reqSpec
	req    *fasthttp.Request // the VU's own request, rendered every iteration; nil for a wire request (reqSpec.wire)
	client *httpConn
	name   *metrics.NameBlock // nil when the plan has one request name
	buf    []byte             // render buffer for templated parts
	auth   []byte             // render buffer for a templated reqSpec.proxyAuthT

	phases *metrics.PhaseHists // where the request's phases go: its name's, or the shard's (one name)
}

// vu is one virtual user: a goroutine running iterations with its own clients and buffers.
type vu struct {
	// gid is the VU's number in the whole run (its id is its number in this engine): the same as
	// id unless the engine runs a segment (Options.Segment) of a run split among agents.
	gid     int
	e       *Engine
	id      int
	shard   *metrics.Shard
	reqs    []vuReq
	clients []*httpConn // one per address the VU has talked to (client.go)
	// proxyAuth is the Proxy-Authorization of the request being sent, for the CONNECT of a
	// tunnel it opens (proxy.go); nil when it has none.
	proxyAuth []byte

	// The first request spec and connection live in the VU itself (most plans have one of each):
	// fewer allocations per VU at start.
	reqs0    [1]vuReq
	clients0 [1]*httpConn
	conn0    httpConn
	resp     *fasthttp.Response
	redirect *fasthttp.Request // scratch request for followed redirects
	origin   []byte            // the origin of the request whose redirects are followed (follow)
	rng      *rand.Rand        // made on first use (random think times, weights, {{randInt}}, {{uuid}})
	timeout  time.Duration
	state    atomic.Int32
	claim    atomic.Int64  // open models: the claimed iteration's number + 1 until settled, claiming, settling or 0 (arrival.go)
	wake     *time.Timer   // open models: the wait for the claimed iteration (arrival.sleep); made on first use
	woken    chan struct{} // open models: a change or the stop ends that wait (arrival.register, wakeAll)
	scratch  []byte        // bodies nobody reads are dropped through it (httpConn.discard); made on first use

	// request timeouts (deadline.go)
	deadline atomic.Int64 // of the request in flight: ns since the run started, noDeadline or expired
	armed    atomic.Bool  // the timer is pending or running
	timer    *time.Timer
	conn     atomic.Pointer[countingConn] // the connection the VU last wrote to
	dialled  bool                         // the VU has made its first connect (conn.go)

	outOfFiles bool  // the last request failed for want of file descriptors (executors.go: pause)
	connFails  uint8 // connections failed at once in a row, at most 8 (executors.go: pause)

	iter        int64    // iterations started by this VU ({{iteration}})
	row         [][]byte // the data row of the current iteration
	vars        [][]byte // extracted variables, by slot
	checkCounts []checkCount
	passed      []bool // the outcomes of the current request's checks, until counted (countChecks)

	tm    reqTiming  // phases of the request in flight (timing.go)
	fails vuFailures // failure groups' scratch (failures.go)

	viaH2     bool         // the latest exchange came over HTTP/2 (h2Conn.do)
	jar       *cookieJar   // nil until a response sets a cookie (cookies.go)
	dec       *bodyDecoder // nil until a compressed body is read (decode.go)
	bodyState uint8        // the current response's body: unread, plain, decoded (decode.go)
	ws        *vuWS        // WebSocket sessions' state, made on the first (ws.go)
	urlBuf    []byte       // a rendered URL percent-encoded as browsers send it (url.go), made on first use
	// shedResp: the response's header held so many fields (header.go: shedHeader) that the VU
	// takes a new response before its next exchange, rather than keep their memory.
	shedResp bool
}

func newVU(e *Engine, id int) *vu {
	v := &vu{
		e: e, id: id, gid: int(e.opts.Segment.Global(int64(id))), shard: e.rec.Shard(id), resp: &fasthttp.Response{},
		timeout:     e.p.HTTP.Timeout.D(),
		vars:        make([][]byte, e.extractSlots),
		checkCounts: e.checkCounts[id%len(e.checkCounts)],
	}
	v.reqs, v.clients = v.reqs0[:0], v.clients0[:0]
	v.timer = time.AfterFunc(time.Hour, v.onTimer)
	v.timer.Stop()
	for i := range e.reqs {
		s := &e.reqs[i]
		c := v.client(s.tls, s.addrs[v.gid%len(s.addrs)], s.host)
		vr := vuReq{spec: s, client: c}
		if s.wire == nil || e.h2 != nil { // HTTP/2 sends from a request object (h2Conn.request)
			vr.req = s.request(e.p.HTTP.KeepAliveOn())
		}
		vr.phases = v.shard.Phases()
		if e.names != nil {
			vr.name = e.names.Block(id, s.name)
			vr.phases = vr.name.Phases()
		}
		v.reqs = append(v.reqs, vr)
	}
	return v
}

// rand returns the VU's random source, seeded by VU number (in the whole run) and run start.
func (v *vu) rand() *rand.Rand {
	if v.rng == nil {
		v.rng = rand.New(rand.NewPCG(uint64(v.gid), uint64(v.e.start.UnixNano())))
	}
	return v.rng
}

// request builds the fasthttp request of a spec (templated parts are rendered per iteration).
func (s *reqSpec) request(keepAlive bool) *fasthttp.Request {
	req := &fasthttp.Request{}
	s.fill(req, keepAlive)
	return req
}

// fill sets req up as the spec's request, templated parts as written in the plan.
func (s *reqSpec) fill(req *fasthttp.Request, keepAlive bool) {
	req.Reset()
	req.SetRequestURI(s.r.URL)
	req.Header.SetMethod(s.r.Method)
	req.UseHostHeader = true // the URL's host, or the plan's Host header, whatever address we dial
	req.URI().DisablePathNormalizing = true
	req.Header.SetUserAgent("volley") // unless the plan's headers set one
	for k, val := range s.r.Headers {
		if equalFold(k, "Host") {
			req.Header.SetHost(val)
			continue
		}
		req.Header.Set(k, val)
	}
	if s.r.Body != "" {
		req.SetBodyString(s.r.Body)
	}
	if s.acceptEncoding != "" { // http.compression (decode.go)
		req.Header.Set("Accept-Encoding", s.acceptEncoding)
	}
	if !keepAlive {
		req.SetConnectionClose()
	}
}

// serialize sets s.wire: the request's bytes exactly as fasthttp writes them, when nothing in the
// request is templated. Every VU then writes these same bytes (one shared, read-only slice) instead
// of serializing its own copy of an identical request each time, as wrk does with its one request
// buffer: less CPU per request, and no request object or write buffer per VU.
func (s *reqSpec) serialize(keepAlive bool) {
	if s.urlT != nil || s.bodyT != nil || len(s.hdrT) > 0 {
		return
	}
	req := s.request(keepAlive)
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	if req.Write(w) != nil || w.Flush() != nil {
		return // left to the VUs, whose request fails the same way, counted
	}
	s.wire = b.Bytes()
	s.head = req.Header.IsHead()
	s.connClose = req.ConnectionClose()
}

// outgoing is a request as a VU sends it: a spec's pre-serialized bytes, or a fasthttp request
// written through the connection's buffer.
type outgoing struct {
	req             *fasthttp.Request // nil when wire is set
	wire            []byte
	head, connClose bool // of wire
	keepBody        bool // a check or extraction reads the body: read it into the response (readBody)
}

func (o *outgoing) isHead() bool {
	if o.req != nil {
		return o.req.Header.IsHead()
	}
	return o.head
}

func (o *outgoing) closes() bool {
	if o.req != nil {
		return o.req.ConnectionClose()
	}
	return o.connClose
}

func (r *vuReq) outgoing() outgoing {
	if r.req == nil {
		s := r.spec
		return outgoing{wire: s.wire, head: s.head, connClose: s.connClose, keepBody: s.keepBody}
	}
	return outgoing{req: r.req, keepBody: r.spec.keepBody}
}

// writeBufferSize sizes the write buffer of every VU connection to the plan's largest request, as
// a power of two between 512 B and 4 KiB (fasthttp's default, which would otherwise cost each VU
// 4 KiB). Templated parts get 1 KiB of room; a request that still outgrows the buffer is written
// in more than one syscall, never truncated.
func writeBufferSize(specs []reqSpec, keepAlive bool) int {
	largest := 0
	for i := range specs {
		s := &specs[i]
		req := s.request(keepAlive)
		n := len(req.Header.Header()) + len(req.Body()) + len(s.r.URL) + 128 // Host, User-Agent, Content-Length
		if s.urlT != nil || s.bodyT != nil || len(s.hdrT) > 0 {
			n += 1024
		}
		largest = max(largest, n)
	}
	size := 512
	for size < largest && size < 4096 {
		size *= 2
	}
	return size
}

// client returns the VU's connection to an address, creating it on first use (at start for the
// plan's requests, later only for redirect targets). It connects on its first request.
func (v *vu) client(isTLS bool, addr, sni string) *httpConn {
	key := addr
	if isTLS {
		key = "tls://" + addr
	}
	for _, c := range v.clients {
		if c.key == key {
			return c
		}
	}
	c := &v.conn0
	if len(v.clients) > 0 {
		c = &httpConn{}
	}
	c.key, c.addr, c.vu = key, addr, v
	if isTLS {
		c.tls = &tls.Config{ServerName: sni, InsecureSkipVerify: v.e.p.HTTP.InsecureSkipVerify} //nolint:gosec // the user's explicit choice
	}
	if v.e.h2 != nil {
		v.e.h2.attach(c)
	}
	v.clients = append(v.clients, c)
	return c
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if a[i]|0x20 != b[i]|0x20 {
			return false
		}
	}
	return true
}

// iteration runs one iteration: one request picked by weight, or every request in order (flow
// "sequence"), each followed by its think time. due is when the iteration should have started
// (the first request's latency is measured from it), sent when it actually starts; both are
// times since the run started (Engine.now).
func (v *vu) iteration(due, sent time.Duration) {
	e := v.e
	if n := len(e.rows); n > 0 {
		i := v.gid
		if e.p.Data.Mode == plan.DataPerIteration {
			i = int(e.opts.Segment.Global(e.rowNext.Add(1) - 1))
		}
		v.row = e.rows[i%n]
	}
	if e.jarPerIteration && v.jar != nil {
		v.jar.clear() // http.cookies "iteration" (cookies.go)
	}
	if e.p.Flow == plan.FlowSequence {
		for i := range v.reqs {
			if i > 0 {
				if e.stop.Load() || v.state.Load() == abandoned {
					break
				}
				due = e.now()
				sent = due
			}
			r := &v.reqs[i]
			v.do(r, due, sent)
			v.think(r)
		}
	} else {
		r := v.pick()
		v.do(r, due, sent)
		v.think(r)
	}
	v.iter++
}

// think pauses for the request's think time (a random draw within its range), waking early
// when the run stops.
func (v *vu) think(r *vuReq) {
	lo, hi := r.spec.thinkLo, r.spec.thinkHi
	if hi <= 0 {
		return
	}
	d := lo
	if hi > lo {
		d += time.Duration(v.rand().Int64N(int64(hi - lo + 1)))
	}
	for d > 0 && !v.e.stop.Load() {
		step := min(d, parkStep)
		time.Sleep(step)
		d -= step
	}
}

// prepare renders the request's templated parts for this iteration into its reused buffer.
func (v *vu) prepare(r *vuReq) {
	s := r.spec
	if s.urlT != nil {
		r.buf = s.urlT.render(r.buf[:0], v)
		r.req.SetRequestURIBytes(v.browserURLBytes(r.buf))
		// Parse it now: fasthttp writes a request line from the parsed URI (origin form, /path)
		// only when the URI has been parsed since it was set; otherwise it sends the raw,
		// absolute URL.
		r.req.URI().DisablePathNormalizing = true
	}
	for _, h := range s.hdrT {
		r.buf = h.t.render(r.buf[:0], v)
		r.req.Header.SetBytesV(h.name, r.buf)
	}
	if s.bodyT != nil {
		r.buf = s.bodyT.render(r.buf[:0], v)
		r.req.SetBody(r.buf)
	}
	v.proxyAuth = s.proxyAuth
	if s.proxyAuthT != nil {
		r.auth = s.proxyAuthT.render(r.auth[:0], v)
		v.proxyAuth = r.auth
	}
}

// pick chooses the next request by weight (cumulative weights, one random draw).
func (v *vu) pick() *vuReq {
	if len(v.reqs) == 1 {
		return &v.reqs[0]
	}
	w := v.e.weights
	x := v.rand().IntN(w[len(w)-1])
	for i, c := range w {
		if x < c {
			return &v.reqs[i]
		}
	}
	return &v.reqs[len(v.reqs)-1]
}

// do sends one logical request (following redirects when asked) and records its outcome. due and
// sent are times since the run started.
func (v *vu) do(r *vuReq, due, sent time.Duration) {
	if r.spec.ws != nil {
		v.doWS(r, due, sent)
		return
	}
	e := v.e
	deadline := max(due, sent) + v.timeout
	cut := false
	if deadline > e.hardStop {
		deadline, cut = e.hardStop, true
	}
	if !v.state.CompareAndSwap(idle, inFlight) {
		return // abandoned before it could start
	}
	v.prepare(r)
	v.sendCookies(r)
	v.arm(deadline)
	v.tm = reqTiming{}
	body, err := v.exchange(r.client, r.outgoing())
	kind := classify(err)
	if err == nil {
		v.keepCookies(r)
	}
	if err == nil && e.p.HTTP.FollowRedirects && isRedirect(v.resp.StatusCode()) {
		body, kind = v.follow(r)
	}
	if v.disarm() {
		// The timer cut this request off (or its answer came only at the deadline): a timeout,
		// unless the connection could not even be made in time. Drop the connections, one of
		// which carries the past deadline.
		switch kind {
		case metrics.ConnectTimeout, metrics.ConnectRefused, metrics.TooManyOpenFiles, metrics.BlockedTarget:
		default:
			kind = metrics.Timeout
		}
		v.closeConns()
	}
	done := e.now()
	if !v.state.CompareAndSwap(inFlight, idle) {
		return // the engine gave up on this request and counted it as interrupted
	}
	if cut && (kind == metrics.Timeout || kind == metrics.ConnectTimeout) && done >= e.hardStop {
		v.shard.Interrupted()
		return
	}
	v.outOfFiles = kind == metrics.TooManyOpenFiles
	if kind == metrics.ConnectRefused || kind == metrics.BlockedTarget {
		v.connFails = min(v.connFails+1, 8) // 2^7 ms > connFailPauseMax
	} else {
		v.connFails = 0
	}
	o := metrics.Outcome{Kind: kind}
	if kind == metrics.KindNone || kind == metrics.RedirectLoop && v.resp.StatusCode() > 0 {
		status := v.resp.StatusCode()
		latency := done - due
		o.Status = status
		o.LatencyUs = latency.Microseconds()
		o.ServiceUs = (done - sent).Microseconds()
		o.BodyBytes = body
		v.tm.record(r.phases, done)
		if kind == metrics.KindNone && r.spec.keepBody {
			o.Kind, err, o.BodyBytesDecoded = v.decodeBody() // decode.go
		}
		if kind == metrics.KindNone && o.Kind == metrics.KindNone {
			o.Kind = v.judgeChecks(r, status, latency)
			for i := range r.spec.extracts {
				r.spec.extracts[i].apply(v)
			}
		}
	}
	v.recordOutcome(o)
	if v.viaH2 && o.Status > 0 {
		v.shard.H2Response()
	}
	if r.name != nil {
		r.name.Record(o)
	}
	v.countChecks(r) // after the request (judgeChecks)
	if o.Kind != metrics.KindNone {
		v.failed(r, o.Kind, o.Status, err)
	}
}

// exchange performs one HTTP exchange and returns the response body size. A body is kept (in the
// reused response buffer, up to http.max_body) only when a check or extraction reads it; any
// other is read and dropped through bounded memory (httpConn.readBody).
func (v *vu) exchange(c *httpConn, req outgoing) (int64, error) {
	v.bodyState = bodyUnread
	if v.shedResp { // the last header's fields would stay allocated in the reused response (header.go)
		v.resp, v.shedResp = &fasthttp.Response{}, false
	}
	if c.h2 != nil {
		return c.h2.do(&req, v.resp)
	}
	return c.do(&req, v.resp)
}

func isRedirect(status int) bool {
	return status == 301 || status == 302 || status == 303 || status == 307 || status == 308
}

// follow follows the redirect in v.resp until a non-redirect answer, within the same deadline (the
// one armed by do); a chain is one logical request. More than max_redirects hops is a redirect_loop error.
//
// Like net/http and curl, a hop keeps the original request's headers, except that:
//   - a 301, 302 or 303 turns any method but HEAD into GET and drops the body with the headers that
//     describe it (Content-Type, Content-Encoding, Content-Language, Content-Location), for the
//     rest of the chain; a 307 or 308 keeps the method and the body;
//   - the first hop to another origin than the original request's (scheme, host or port differ)
//     drops its credentials: crossOriginHeaders, the request's secret_headers and every header
//     rendered from a {{secret.NAME}} (reqSpec.strip). They stay dropped for the rest of the
//     chain, even on a hop back to the first origin.
func (v *vu) follow(orig *vuReq) (int64, metrics.ErrorKind) {
	if v.redirect == nil {
		v.redirect = &fasthttp.Request{}
	}
	req := v.redirect
	if orig.req != nil {
		orig.req.CopyTo(req)
	} else {
		orig.spec.fill(req, v.e.p.HTTP.KeepAliveOn())
	}
	u := req.URI()
	v.origin = appendOrigin(v.origin[:0], u.Scheme(), u.Host())
	stripped := false
	var body int64
	v.fails.hopErr = nil
	for hop := 1; ; hop++ {
		status := v.resp.StatusCode()
		if !isRedirect(status) {
			return body, metrics.KindNone
		}
		if hop > v.e.p.HTTP.MaxRedirects {
			return body, metrics.RedirectLoop
		}
		loc := v.resp.Header.Peek("Location")
		if len(loc) == 0 {
			return body, metrics.KindNone // a 3xx without Location is an answer
		}
		u.UpdateBytes(loc)
		u.DisablePathNormalizing = true
		if status == 301 || status == 302 || status == 303 {
			if !req.Header.IsHead() {
				req.Header.SetMethod("GET")
			}
			req.ResetBody()
			// and the Content-Length fasthttp set when it wrote the original request: without
			// it a GET would announce a body it does not send, and the server would wait for it
			req.Header.Del("Content-Length")
			for _, h := range bodyHeaders {
				req.Header.Del(h)
			}
		}
		if !stripped && !sameOrigin(v.origin, u.Scheme(), u.Host()) {
			stripped = true
			for _, h := range crossOriginHeaders {
				req.Header.Del(h)
			}
			for _, h := range orig.spec.strip {
				req.Header.Del(h)
			}
		}
		isTLS := bytes.Equal(u.Scheme(), []byte("https"))
		scheme := "http"
		if isTLS {
			scheme = "https"
		}
		host := string(u.Host())
		req.Header.SetHostBytes(u.Host())
		c := v.client(isTLS, v.e.addrFor(scheme, host, v.id), hostname(host))
		v.tm.hopDone(v.e.now())
		if v.jar != nil {
			var planCookie []byte
			if !stripped {
				planCookie = orig.spec.planCookie
			}
			v.setCookieHeader(req, planCookie) // cookies.go
		}
		n, err := v.exchange(c, outgoing{req: req, keepBody: orig.spec.keepBody})
		body = n
		if err != nil {
			v.fails.hopErr = err
			return 0, classify(err)
		}
		v.keepCookiesFrom(u.Host(), u.PathOriginal())
	}
}

// crossOriginHeaders are the headers a redirect to another origin never carries, whatever the
// plan says: net/http's list of credentials (client.go, makeHeadersCopier).
var crossOriginHeaders = []string{"Authorization", "Www-Authenticate", "Cookie", "Cookie2", "Proxy-Authorization", "Proxy-Authenticate"}

// bodyHeaders describe a request body; a redirect that drops the body drops them too (as
// net/http, after the Fetch standard).
var bodyHeaders = []string{"Content-Type", "Content-Encoding", "Content-Language", "Content-Location"}

// appendOrigin appends the origin of a URL with this scheme and host[:port] to dst, in the form
// sameOrigin compares: "scheme://host", lower case, without the scheme's default port.
func appendOrigin(dst, scheme, host []byte) []byte {
	for _, c := range scheme {
		dst = append(dst, c|0x20)
	}
	dst = append(dst, "://"...)
	for _, c := range originHost(scheme, host) {
		if 'A' <= c && c <= 'Z' {
			c |= 0x20
		}
		dst = append(dst, c)
	}
	return dst
}

// sameOrigin reports whether a URL with this scheme and host[:port] has the origin appendOrigin
// made: same scheme, host and port (a missing port being the scheme's default).
func sameOrigin(origin, scheme, host []byte) bool {
	host = originHost(scheme, host)
	n := len(scheme)
	return len(origin) == n+3+len(host) && bytes.EqualFold(origin[:n], scheme) &&
		string(origin[n:n+3]) == "://" && bytes.EqualFold(origin[n+3:], host)
}

// originHost is host[:port] without the scheme's default port (80, or 443 for https).
func originHost(scheme, host []byte) []byte {
	i := bytes.LastIndexByte(host, ':')
	if i < 0 || i < bytes.LastIndexByte(host, ']') {
		return host
	}
	port, def := host[i+1:], "80"
	if bytes.EqualFold(scheme, []byte("https")) {
		def = "443"
	}
	if len(port) == 0 || string(port) == def {
		return host[:i]
	}
	return host
}

func hostname(hostport string) string {
	if i := bytes.LastIndexByte([]byte(hostport), ':'); i > 0 && hostport[0] != '[' {
		return hostport[:i]
	}
	return hostport
}

// finish stops the VU's timer and closes its connections when its loop ends, so a finished run
// holds no sockets.
func (v *vu) finish() {
	v.timer.Stop()
	v.dec.close()
	v.closeConns()
}

// closeConns closes the VU's connections.
func (v *vu) closeConns() {
	v.conn.Store(nil)
	for _, c := range v.clients {
		c.close()
	}
}

// abandon is called by the engine after the grace period: a request still in flight is counted
// as interrupted, once.
//
// The request's connection is interrupted (as its timeout would), so the VU's goroutine ends and
// closes its sockets now, not when a long timeout would have expired: a stopped run holds no
// sockets or goroutines, even against a target that never answers.
func (v *vu) abandon() {
	if v.state.CompareAndSwap(inFlight, abandoned) {
		v.shard.Interrupted()
		v.interrupt()
		return
	}
	v.state.Store(abandoned)
}

// interrupt cuts off the request in flight now, as its timeout would (deadline.go): a VU stuck
// reading an endless body or header returns at once instead of at its deadline, so an abandoned
// run holds no socket and no reader for long.
func (v *vu) interrupt() {
	for {
		d := v.deadline.Load()
		if d <= noDeadline {
			return
		}
		if v.deadline.CompareAndSwap(d, expired) {
			if c := v.conn.Load(); c != nil {
				_ = c.Conn.SetDeadline(longAgo)
			}
			return
		}
	}
}
