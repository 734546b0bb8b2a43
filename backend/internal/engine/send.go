package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// Bounds of a test request (SendOne).
const (
	// SendMaxTimeout caps a test request's deadline, whatever the plan's http.timeout.
	SendMaxTimeout = 60 * time.Second
	// SendMaxHeaders and SendMaxHeaderBytes bound the response headers SendOne returns (count,
	// and the sum of name and value lengths); the rest are left out and HeadersTruncated is set.
	SendMaxHeaders     = 100
	SendMaxHeaderBytes = 16 << 10
	// SendBodyPreview is how much of the response body SendOne returns.
	SendBodyPreview = 4 << 10
)

// SendResult is the outcome of one test request (SendOne).
type SendResult struct {
	// Kind is the outcome as a run would count it: metrics.KindNone on success, a transport error
	// kind (connect_refused, blocked_target, timeout…), or status_4xx/status_5xx/check_failed for an
	// answer the plan's checks (or the default 4xx/5xx rule) reject. Err is the transport error's
	// message ("" when there is none).
	Kind metrics.ErrorKind
	Err  string
	// Status is the final response's status (0 when there was no answer); Redirected is set when
	// redirects were followed to reach it (http.follow_redirects).
	Status     int
	Redirected bool
	// Headers are the final response's header fields in the order received, names as sent,
	// bounded by SendMaxHeaders and SendMaxHeaderBytes (HeadersTruncated then set).
	Headers          [][2]string
	HeadersTruncated bool
	// Body is the first SendBodyPreview bytes of the final response's body (chunked encoding
	// removed, content encoding kept), BodyBytes its whole size as read.
	Body      []byte
	BodyBytes int64
	// Timing is the split of the request's time; see SendTiming.
	Timing SendTiming
	// Checks are the request's checks (plan order) judged on the response; empty without answer.
	Checks []CheckResult
}

// SendTiming splits a test request's time, like k6's http_req_* timings. Connect, TLS, Wait and
// Receive are of the first exchange (to the request's own URL); Total runs from the start to the
// end of the last redirect followed, so with redirects Total exceeds their sum. A phase that did
// not happen (TLS on plain HTTP, Wait and Receive after a failed connect) is 0.
type SendTiming struct {
	Connect time.Duration // TCP connect (after the target policy's check and name resolution)
	TLS     time.Duration // TLS handshake
	Wait    time.Duration // request written → first response byte (time to first byte)
	Receive time.Duration // first response byte → body read
	Total   time.Duration
}

// CheckResult is one check judged on a test request's response.
type CheckResult struct {
	Desc string
	Pass bool
}

// SendOne sends request i (0-based) of a compiled plan once, as VU 0 of a run sends it in its
// first iteration ({{vu}} = 1, {{iteration}} = 0, the first data row, empty extracted variables):
// same VU code path, so the target policy (opts.Policy) at connect, http.hosts, TLS options,
// timeouts, secret values (c.Plan.Secrets), redirects and http.max_body apply as in a run. Its
// deadline is the plan's http.timeout, at most SendMaxTimeout; cancelling ctx cuts it off as a
// timeout. The body is always read into memory (as when a check reads it), so one over
// http.max_body is body_too_large even if a run without body checks would only count its bytes.
// Nothing is recorded anywhere. Errors: an index out of range, or the plan's secrets missing
// (New); what happens to the request itself is in the result.
func SendOne(ctx context.Context, c *plan.Compiled, i int, opts Options) (*SendResult, error) {
	if i < 0 || i >= len(c.Plan.Requests) {
		return nil, fmt.Errorf("request %d: the plan has %d requests", i, len(c.Plan.Requests))
	}
	if c.Plan.Requests[i].IsWebSocket() {
		return nil, fmt.Errorf("request %d is a WebSocket step: SendOne sends HTTP requests", i)
	}
	opts.Shards = 1
	e, err := New(c, opts)
	if err != nil {
		return nil, err
	}
	timeout := min(e.p.HTTP.Timeout.D(), SendMaxTimeout)
	if timeout <= 0 {
		timeout = SendMaxTimeout
	}
	e.start = time.Now()
	e.endAt, e.hardStop = timeout, timeout
	v := newVU(e, 0)
	defer v.finish()
	if len(e.rows) > 0 {
		v.row = e.rows[0]
	}
	stop := context.AfterFunc(ctx, v.interrupt)
	defer stop()

	r := &v.reqs[i]
	r.spec.keepBody = true // this engine's own copy: the body is read (every hop's) to be shown
	res := &SendResult{}
	v.state.Store(inFlight)
	v.prepare(r)
	v.arm(timeout)
	var head []byte // the response's first bytes, for keepHead
	r.client.head = &head
	t0 := time.Now()
	body, err := v.exchange(r.client, r.outgoing())
	// The phases of the first exchange, as a run measures them (timing.go).
	tm := &v.tm
	res.Timing.Connect, res.Timing.TLS = tm.connect, tm.tls
	if tm.first > 0 {
		res.Timing.Wait = tm.wait
		res.Timing.Receive = e.now() - tm.first
	}
	kind := classify(err)
	if err == nil && e.p.HTTP.FollowRedirects && isRedirect(v.resp.StatusCode()) {
		res.Redirected = true
		body, kind = v.follow(r)
	}
	if v.disarm() {
		switch kind {
		case metrics.ConnectTimeout, metrics.ConnectRefused, metrics.TooManyOpenFiles, metrics.BlockedTarget:
		default:
			kind = metrics.Timeout
		}
	}
	res.Timing.Total = time.Since(t0)
	res.Kind = kind
	if err != nil {
		res.Err = err.Error()
	} else if kind != metrics.KindNone {
		res.Err = kind.String()
	}
	if kind != metrics.KindNone && !(kind == metrics.RedirectLoop || kind == metrics.BodyTooLarge) {
		if !res.Redirected {
			res.keepHead(head, kind, e.maxHeader)
		}
		return res, nil
	}
	res.Status = v.resp.StatusCode()
	if res.Status == 0 {
		return res, nil
	}
	res.BodyBytes = body
	b := v.resp.Body()
	res.Body = append([]byte(nil), b[:min(len(b), SendBodyPreview)]...)
	size := 0
	for k, val := range v.resp.Header.All() {
		size += len(k) + len(val)
		if len(res.Headers) >= SendMaxHeaders || size > SendMaxHeaderBytes {
			res.HeadersTruncated = true
			break
		}
		res.Headers = append(res.Headers, [2]string{string(k), string(val)})
	}
	if kind == metrics.KindNone {
		latency := res.Timing.Total
		for j := range r.spec.checks {
			k := &r.spec.checks[j]
			res.Checks = append(res.Checks, CheckResult{Desc: e.checks[k.index].desc, Pass: k.pass(v, res.Status, latency)})
		}
		res.Kind = v.judgeChecks(r, res.Status, latency)
		if res.Kind != metrics.KindNone {
			res.Err = res.Kind.String()
		}
	}
	return res, nil
}

// sendHeadBytes is how much of a test response's first bytes httpConn.head keeps: its status line
// and as many header fields as SendResult shows.
const sendHeadBytes = SendMaxHeaderBytes

// keepHead fills the status and headers of a test request that failed after its answer began
// (a header larger than a run accepts, a body cut off by the timeout or the connection) from the
// response's first bytes as received: the status line and the complete header fields among
// them, bounded as usual, HeadersTruncated set when the head went on beyond them. Err names the
// failure. Nothing changes when no status line arrived.
func (res *SendResult) keepHead(head []byte, kind metrics.ErrorKind, maxHeader int) {
	lines := strings.Split(string(head), "\r\n")
	f := strings.Fields(lines[0])
	if len(lines) < 2 || len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/") {
		return
	}
	status, err := strconv.Atoi(f[1])
	if err != nil || status < 100 || status > 999 {
		return
	}
	res.Status = status
	complete, size := false, 0
	for _, l := range lines[1 : len(lines)-1] { // the last piece is not a whole line
		if l == "" {
			complete = true
			break
		}
		name, val, ok := strings.Cut(l, ":")
		size += len(name) + len(val)
		if !ok || len(res.Headers) >= SendMaxHeaders || size > SendMaxHeaderBytes {
			break
		}
		res.Headers = append(res.Headers, [2]string{name, strings.TrimSpace(val)})
	}
	res.HeadersTruncated = !complete
	switch {
	case kind == metrics.HeaderTooLarge:
		res.Err = fmt.Sprintf("the response header is larger than %d bytes, the most a run reads (http.max_header; a run counts it as %s): the status and the first %d header fields are shown", maxHeader, kind, len(res.Headers))
	case complete:
		res.Err = fmt.Sprintf("%s while reading the body, after the status and headers: %s", kind, res.Err)
	default:
		res.Err = fmt.Sprintf("%s while reading the header: %s", kind, res.Err)
	}
}
