package engine

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/gorilla/websocket"
	"github.com/tidwall/gjson"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// WebSocket steps (plan/ws.go; docs/api.md, "WebSocket steps").
//
// A session runs on the VU's goroutine, phase after phase, each under the VU's request deadline
// (deadline.go: arm, disarm, one timer per VU): the handshake within http.timeout, each message
// within its timeout, the hold until it ends, the close within wsCloseWait. The connection is the
// VU's own countingConn, dialled through vu.dial — the target policy judges every connect, bytes
// count into bytes_in/bytes_out, open_conns counts it — with gorilla/websocket's client speaking
// the protocol over it (its Dialer's NetDialContext and NetDialTLSContext are vu.dial).
//
// The step is one request, counted when the session ends: status 101 (or the status of a refused
// upgrade), latency from the intended start to the accepted upgrade, and the session's first
// failure as its error kind: ws_handshake, a connect kind, tls or timeout for the handshake;
// ws_closed when the server closes or drops the connection before the steps are done; timeout
// when a message's expectation times out without any message; check_failed when messages came
// but none passed; body_too_large for a message over ws.max_message. Messages, round trips and
// connect latencies go to the shard's WSShard as they happen (metrics/ws.go).
//
// Per message exchange the VU renders the text into a reused buffer and reads the answer into
// another; gorilla allocates its message writer and reader (BenchmarkWSExchange).

// wsCloseWait bounds the wait for the server's close frame after the VU's own.
const wsCloseWait = time.Second

// wsSpec is a WebSocket step's session as the engine runs it (reqSpec.ws).
type wsSpec struct {
	c      *plan.CompiledWS
	sends  []tmpl   // per message; nil: the text is static (texts)
	texts  [][]byte // per message: the static text
	checks [][]check
	// timeouts per message: its own, else http.timeout
	timeouts []time.Duration
}

// bindWS binds a WebSocket step's message templates and registers its checks (their counts
// appear in the summary's checks with the request's name).
func (e *Engine) bindWS(r plan.Request, cw *plan.CompiledWS) (*wsSpec, error) {
	w := &wsSpec{c: cw}
	for i, m := range cw.Messages {
		t, err := bind(m.Send, e.p.Secrets)
		if err != nil {
			return nil, err
		}
		text := []byte(m.Text)
		if lit, ok := t.literal(); ok && t != nil {
			text, t = []byte(lit), nil
		}
		w.sends, w.texts = append(w.sends, t), append(w.texts, text)
		var cs []check
		for _, k := range m.Expect {
			k.Desc = wsCheckDesc(i, k.Desc)
			cs = append(cs, check{CompiledCheck: k, index: len(e.checks)})
			e.checks = append(e.checks, checkInfo{request: r.Name, desc: k.Desc})
		}
		w.checks = append(w.checks, cs)
		to := m.Timeout
		if to <= 0 {
			to = e.p.HTTP.Timeout.D()
		}
		w.timeouts = append(w.timeouts, to)
	}
	return w, nil
}

// vuWS is a VU's WebSocket state, made on its first session and reused by the next ones.
type vuWS struct {
	dialer  websocket.Dialer
	header  http.Header // the handshake's headers: the plan's, rendered per session when templated
	cc      *countingConn
	rbuf    []byte // the last message received
	sbuf    []byte // the message being sent
	spec    *reqSpec
	shard   *metrics.WSShard
	checked []wsCheck // outcomes of the session's checks, counted after the request (countWSChecks)
	resp    *http.Response
}

type wsCheck struct {
	index int
	pass  bool
}

// wsState returns the VU's WebSocket state set up for step r.
func (v *vu) wsState(r *vuReq) *vuWS {
	w := v.ws
	if w == nil {
		w = &vuWS{shard: v.e.rec.WS(v.id)}
		w.dialer = websocket.Dialer{ReadBufferSize: 4096, WriteBufferSize: 4096,
			NetDialContext:    func(context.Context, string, string) (net.Conn, error) { return w.dial(v, false) },
			NetDialTLSContext: func(context.Context, string, string) (net.Conn, error) { return w.dial(v, true) }}
		v.ws = w
	}
	s := r.spec
	if w.spec != s {
		w.spec = s
		w.dialer.Subprotocols = s.ws.c.Subprotocols
		w.header = http.Header{"User-Agent": {"volley"}}
		for k, val := range s.r.Headers {
			w.header[http.CanonicalHeaderKey(k)] = []string{val}
		}
	}
	return w
}

// dial connects the session through the VU's dialler (target policy, connect timeout, counting)
// to the address http.hosts maps the URL's host to; for wss it makes the TLS handshake too.
func (w *vuWS) dial(v *vu, isTLS bool) (net.Conn, error) {
	s := w.spec
	c, err := v.dial(s.addrs[v.id%len(s.addrs)])
	if err != nil {
		return nil, err
	}
	w.cc, _ = c.(*countingConn)
	if !isTLS {
		return c, nil
	}
	tc := tls.Client(c, &tls.Config{ServerName: s.host, InsecureSkipVerify: v.e.p.HTTP.InsecureSkipVerify, //nolint:gosec // the user's explicit choice
		NextProtos: []string{"http/1.1"}})
	if err := tc.Handshake(); err != nil {
		_ = c.Close()
		return nil, err
	}
	return tc, nil
}

// errSubprotocol: the server chose a subprotocol the plan did not offer.
var errSubprotocol = errors.New("websocket: the server chose a subprotocol that was not offered")

// wsPhase arms the deadline of one phase of a session: d, capped at the hard stop (cut). Unlike
// an HTTP request's (arm), whose deadline is always now + http.timeout, a phase may end sooner
// than the deadline the VU's timer is set for (a short message timeout or hold after a longer
// one), so the timer is reset to it: one timer update per phase.
func (v *vu) wsPhase(d time.Duration, cut *bool) {
	if d > v.e.hardStop {
		d, *cut = v.e.hardStop, true
	}
	v.deadline.Store(int64(d))
	v.armed.Store(true)
	v.timer.Reset(d - v.e.now())
}

// doWS runs one session of a WebSocket step and records it as one request (see the top of this
// file). due and sent are as for vu.do.
func (v *vu) doWS(r *vuReq, due, sent time.Duration) {
	e := v.e
	if !v.state.CompareAndSwap(idle, inFlight) {
		return
	}
	w := v.wsState(r)
	ws := r.spec.ws
	cut := false
	v.wsPhase(max(due, sent)+v.timeout, &cut)
	url := r.spec.r.URL
	if t := r.spec.urlT; t != nil {
		r.buf = t.render(r.buf[:0], v)
		url = string(r.buf)
	}
	for _, h := range r.spec.hdrT {
		r.buf = h.t.render(r.buf[:0], v)
		w.header[http.CanonicalHeaderKey(h.name)] = []string{string(r.buf)}
	}
	cHost, cPath, cSecure, cOK := wsCookieURL(url)
	if cOK {
		v.wsSendCookies(w, r, cHost, cPath, cSecure) // ws_cookies.go
	}
	w.cc, w.resp = nil, nil
	conn, resp, err := w.dialer.DialContext(context.Background(), url, w.header)
	if cOK {
		v.wsKeepCookies(resp, cHost, cPath)
	}
	hsDone := e.now()
	status := 0
	if resp != nil {
		status = resp.StatusCode
		w.resp = resp
	}
	if err == nil {
		if p := resp.Header.Get("Sec-WebSocket-Protocol"); p != "" && !slices.Contains(ws.c.Subprotocols, p) {
			err = errSubprotocol
		}
	}
	kind := wsHandshakeKind(err)
	if v.disarm() {
		switch kind {
		case metrics.ConnectTimeout, metrics.ConnectRefused, metrics.TooManyOpenFiles, metrics.BlockedTarget:
		default:
			kind = metrics.Timeout
		}
	}
	if kind == metrics.KindNone {
		w.shard.Connected((hsDone - sent).Microseconds())
		conn.SetReadLimit(int64(ws.c.MaxMessage))
		kind, err = v.wsSession(w, conn, ws, &cut)
	}
	if conn != nil {
		_ = conn.NetConn().Close()
	} else if w.cc != nil {
		_ = w.cc.Close()
	}
	v.conn.Store(nil)
	// The timer may still be set for a phase's later deadline (a hold the server cut short): stop
	// it, so that the VU's next HTTP request, which only arms a timer that is not armed (arm),
	// gets its own deadline. If it is firing now, onTimer disarms it itself (no deadline in flight).
	if v.timer.Stop() {
		v.armed.Store(false)
	}
	done := e.now()
	if !v.state.CompareAndSwap(inFlight, idle) {
		w.checked = w.checked[:0]
		return // the engine gave up on this session and counted it as interrupted
	}
	if cut && (kind == metrics.Timeout || kind == metrics.ConnectTimeout) && done >= e.hardStop {
		v.shard.Interrupted()
		w.checked = w.checked[:0]
		return
	}
	if kind == metrics.ConnectRefused || kind == metrics.BlockedTarget {
		v.connFails = min(v.connFails+1, 8)
	} else {
		v.connFails = 0
	}
	v.outOfFiles = kind == metrics.TooManyOpenFiles
	o := metrics.Outcome{Kind: kind, Status: status}
	if status > 0 {
		o.LatencyUs, o.ServiceUs = (hsDone - due).Microseconds(), (hsDone - sent).Microseconds()
	}
	v.recordOutcome(o)
	if r.name != nil {
		r.name.Record(o)
	}
	w.shard.Session(kind != metrics.KindNone)
	counts := v.checkCounts
	for _, c := range w.checked {
		if c.pass {
			counts[c.index].pass.Add(1)
		} else {
			counts[c.index].fail.Add(1)
		}
	}
	w.checked = w.checked[:0]
	if kind != metrics.KindNone {
		v.fails.status, v.fails.captured = 0, false
		if status > 0 {
			v.wsResponse(w.resp)
		}
		v.failed(r, kind, status, err)
	}
}

// wsHandshakeKind classifies a failed handshake: a connect failure, TLS or a timeout keeps its
// kind; anything else (no 101, a bad Sec-WebSocket-Accept, an unoffered subprotocol, a server
// closing or answering garbage) is ws_handshake.
func wsHandshakeKind(err error) metrics.ErrorKind {
	if err == nil {
		return metrics.KindNone
	}
	k := classify(err)
	switch k {
	case metrics.ConnectRefused, metrics.ConnectTimeout, metrics.BlockedTarget, metrics.TooManyOpenFiles,
		metrics.TLS, metrics.Timeout, metrics.Reset:
		return k
	}
	if isDialError(err) {
		return k
	}
	return metrics.WSHandshake
}

// wsSession runs the messages, the hold and the close of an open session and returns its
// outcome.
func (v *vu) wsSession(w *vuWS, conn *websocket.Conn, ws *wsSpec, cut *bool) (metrics.ErrorKind, error) {
	e := v.e
	for i := range ws.timeouts {
		if v.state.Load() == abandoned {
			return metrics.KindNone, nil // counted as interrupted
		}
		v.wsPhase(e.now()+ws.timeouts[i], cut)
		kind, err := v.wsMessage(w, conn, ws, i)
		if v.disarm() && kind != metrics.CheckFailed {
			kind = metrics.Timeout
		}
		if kind != metrics.KindNone {
			return kind, err
		}
	}
	if hold := ws.c.Hold; hold > 0 && v.state.Load() != abandoned {
		end := min(e.now()+hold, e.endAt)
		if end > e.now() {
			v.wsPhase(end, cut)
			kind, err := v.wsDrain(w, conn)
			if !v.disarm() && kind != metrics.KindNone {
				return kind, err // the server ended the session before the hold did
			}
			// the hold's end interrupted the read: clear the past deadline for the close
			if w.cc != nil {
				_ = w.cc.Conn.SetDeadline(time.Time{})
			}
		}
	}
	if ws.c.Close && v.state.Load() != abandoned {
		v.wsPhase(e.now()+min(wsCloseWait, v.timeout), cut)
		msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
		if conn.WriteControl(websocket.CloseMessage, msg, time.Time{}) == nil {
			// wait for the server's close (it then closes the TCP connection): anything it sends
			// meanwhile is read and dropped uncounted
			nc := conn.NetConn()
			for {
				if _, err := nc.Read(w.buf()); err != nil {
					break
				}
			}
		}
		v.disarm()
	}
	return metrics.KindNone, nil
}

func (w *vuWS) buf() []byte {
	if cap(w.rbuf) < 4096 {
		w.rbuf = make([]byte, 4096)
	}
	return w.rbuf[:cap(w.rbuf)]
}

// wsMessage sends message i of the step (if it has text) and awaits its expectation (if any).
func (v *vu) wsMessage(w *vuWS, conn *websocket.Conn, ws *wsSpec, i int) (metrics.ErrorKind, error) {
	text := ws.texts[i]
	if t := ws.sends[i]; t != nil {
		w.sbuf = t.render(w.sbuf[:0], v)
		text = w.sbuf
	}
	t0 := v.e.now()
	if len(text) > 0 {
		if err := conn.WriteMessage(websocket.TextMessage, text); err != nil {
			return wsReadKind(err), err
		}
		w.shard.Sent()
	}
	checks := ws.checks[i]
	if len(checks) == 0 {
		return metrics.KindNone, nil
	}
	lastFail := -1 // the index of the check the last message failed, if one came
	for {
		if err := w.read(conn); err != nil {
			if lastFail >= 0 && isTimeout(err) {
				// messages came, none passed: the failed check of the last one is the reason
				v.fails.check = lastFail
				w.checked = append(w.checked, wsCheck{lastFail, false})
				return metrics.CheckFailed, nil
			}
			return wsReadKind(err), err
		}
		w.shard.Received()
		rtt := v.e.now() - t0
		lastFail = -1
		for j := range checks {
			if !wsPass(&checks[j].CompiledCheck, w.rbuf, rtt) {
				lastFail = checks[j].index
				break
			}
		}
		if lastFail < 0 {
			if len(text) > 0 {
				w.shard.RoundTrip(rtt.Microseconds())
			}
			for j := range checks {
				w.checked = append(w.checked, wsCheck{checks[j].index, true})
			}
			return metrics.KindNone, nil
		}
	}
}

// read reads the next data message into w.rbuf (gorilla answers pings and reads control frames
// on the way).
func (w *vuWS) read(conn *websocket.Conn) error {
	_, rd, err := conn.NextReader()
	if err != nil {
		return err
	}
	b := w.rbuf[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := rd.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			w.rbuf = b
			return nil
		}
		if err != nil {
			w.rbuf = b
			return err
		}
	}
}

// wsDrain reads and counts messages until the connection fails or its deadline interrupts it.
func (v *vu) wsDrain(w *vuWS, conn *websocket.Conn) (metrics.ErrorKind, error) {
	for {
		if err := w.read(conn); err != nil {
			return wsReadKind(err), err
		}
		w.shard.Received()
	}
}

// wsReadKind classifies a failure of an open session: a timeout, a message over ws.max_message
// (body_too_large), or the server closing or dropping the connection (ws_closed).
func wsReadKind(err error) metrics.ErrorKind {
	switch {
	case errors.Is(err, websocket.ErrReadLimit):
		return metrics.BodyTooLarge
	case isTimeout(err):
		return metrics.Timeout
	}
	return metrics.WSClosed
}

// wsPass judges a received message against one expectation check: body (contains,
// not_contains), json (as a response body's json check) or latency (the round trip).
func wsPass(c *plan.CompiledCheck, msg []byte, rtt time.Duration) bool {
	switch c.Type {
	case "body":
		return bytes.Contains(msg, c.Str) == (c.Op == plan.OpContains)
	case "json":
		r := gjson.GetBytes(msg, c.Path)
		switch c.Op {
		case plan.OpExists:
			return r.Exists()
		case plan.OpContains:
			return strings.Contains(r.String(), string(c.Str))
		case plan.OpLt, plan.OpGt:
			return r.Exists() && cmpNum(r.Float(), c.Op, c.Num)
		}
		return (r.Exists() && jsonEqual(r, c.Value)) == (c.Op == plan.OpEq)
	case "latency":
		if c.Op == plan.OpLe {
			return rtt <= c.Lat
		}
		return rtt < c.Lat
	}
	return false
}

// wsResponse copies a handshake's answer into the VU's response for a failure's sample.
func (v *vu) wsResponse(resp *http.Response) {
	v.resp.Reset()
	if resp == nil {
		return
	}
	v.resp.SetStatusCode(resp.StatusCode)
	for k, vals := range resp.Header {
		for _, val := range vals {
			v.resp.Header.Add(k, val)
		}
	}
}

// wsHists are the collector's reused histograms for the ws block.
type wsHists struct{ connect, rtt *hdr.Histogram }

// wsStats is the ws block of counts over span seconds (nil without WebSocket steps).
func (c *collector) wsStats(w *metrics.WSCounts, span float64) *metrics.WSStats {
	if !w.On {
		return nil
	}
	if c.ws.connect == nil {
		c.ws = wsHists{metrics.NewHist(), metrics.NewHist()}
	}
	return w.Stats(span, c.ws.connect, c.ws.rtt)
}
