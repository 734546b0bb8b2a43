package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/net/http2"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// HTTP/2 (http.version "2" and "h2c").
//
// fasthttp has no HTTP/2 client, so an HTTP/2 exchange goes through golang.org/x/net/http2's
// ClientConn, over a connection the engine dials itself (vu.dial, or dialShared for shared
// connections: dialAside, so the target policy judges every connect) and counts (countingConn,
// sharedConn: bytes_in and bytes_out are the bytes on the wire, TLS records and HTTP/2 frames
// included). The answer is copied into the VU's *fasthttp.Response — status, header fields, and the
// body as the HTTP/1.1 path treats it (read into the response up to http.max_body when a check or
// extraction needs it, its start kept for a failure's sample when the status is 4xx/5xx, otherwise
// read and dropped through the VU's scratch buffer) — so checks, extraction, failure samples,
// thresholds and metrics work on it unchanged. Decoding (decode.go) and the cookie jar
// (cookies.go) operate on that same response object; h2Conn.do marks where the jar hooks in.
//
// Connection model:
//   - h2_connections 0 (default): each VU has its own HTTP/2 connection per address, like its
//     HTTP/1.1 keep-alive connection; one request in flight on it at a time. The VU's timeout
//     timer cuts it off as on HTTP/1.1 (deadline.go: the connection is interrupted and dropped).
//   - h2_connections N: N connections per address shared by all VUs (VU i uses connection i mod
//     N), each carrying up to the server's SETTINGS_MAX_CONCURRENT_STREAMS streams at once (a
//     request beyond that waits inside x/net for a free stream, its latency included). A request's
//     timeout resets its own stream (a context deadline), never the shared connection.
//
// Per request the HTTP/2 path allocates (an http.Request's headers and strings, x/net's stream
// state, the response header map; docs/benchmarks.md has the figures); the HTTP/1.1 path is
// untouched: a plan without http.version "2"/"h2c" has no h2Engine and no h2Conn.
//
// Error kinds: RST_STREAM, GOAWAY, an HTTP/2 protocol or flow-control error, or an ALPN that did not
// settle on h2 (without http.h2_fallback) are h2_error; timeouts, refused and reset connections are
// the usual kinds (classifyH2).

// h2Engine is a run's HTTP/2 setup; nil for HTTP/1.1 plans.
type h2Engine struct {
	tr       *http2.Transport
	version  string // plan.HTTP2 or plan.H2C
	fallback bool   // http.h2_fallback
	shared   int    // http.h2_connections

	mu    sync.Mutex
	pools map[string]*h2Pool // shared connections by httpConn.key (shared > 0)
}

func newH2(p *plan.Plan) *h2Engine {
	if !p.HTTP.H2() {
		return nil
	}
	return &h2Engine{
		tr: &http2.Transport{
			// bodies stay as sent (bytes_in is wire bytes; decode.go decodes when a check reads)
			DisableCompression: true,
			AllowHTTP:          true,
			// http.max_header bounds a response's header list as it bounds an HTTP/1.1 header
			// (RFC 9113 §6.5.2 SETTINGS_MAX_HEADER_LIST_SIZE, as x/net counts it: names, values
			// and 32 bytes per field; trailers too)
			MaxHeaderListSize: uint32(p.HTTP.MaxHeaderOrDefault()),
		},
		version: p.HTTP.Version, fallback: p.HTTP.H2Fallback, shared: p.HTTP.H2Connections,
		pools: map[string]*h2Pool{},
	}
}

// attach gives a VU's new connection its HTTP/2 side (vu.client). Every connection of an HTTP/2
// plan has one, so that each exchange says which protocol carried it (vu.viaH2).
func (e *h2Engine) attach(h *httpConn) {
	c := &h2Conn{h: h, e: e}
	h.h2 = c
	switch {
	case h.tls != nil:
		c.on = true
		// both, so that a server without h2 still completes the handshake and the refusal (or
		// the fallback) names what it chose
		h.tls.NextProtos = []string{"h2", "http/1.1"}
	case e.version == plan.H2C:
		c.on = true
	}
	if c.on && e.shared > 0 {
		e.mu.Lock()
		p := e.pools[h.key]
		if p == nil {
			p = &h2Pool{slots: make([]h2Slot, e.shared)}
			e.pools[h.key] = p
		}
		e.mu.Unlock()
		c.slot = &p.slots[h.vu.id%e.shared]
		c.pool = p
	}
}

// h2Pool is the shared connections to one address (h2_connections > 0).
type h2Pool struct {
	slots []h2Slot
	h1    atomic.Bool // ALPN settled on HTTP/1.1 and the plan allows it: VUs use their own connections
}

// h2Slot is one shared connection, dialled by the first VU that needs it (and again once it can
// take no more requests: closed, or after a GOAWAY).
type h2Slot struct {
	mu sync.Mutex
	cc *http2.ClientConn
}

// h2Conn is the HTTP/2 side of one of a VU's connections (httpConn.h2).
type h2Conn struct {
	h    *httpConn
	e    *h2Engine
	on   bool              // this address speaks HTTP/2 (https, or http with h2c); else HTTP/1.1 always
	cc   *http2.ClientConn // the VU's own connection (h2_connections 0); nil between connections
	slot *h2Slot           // the shared connection (h2_connections > 0)
	pool *h2Pool

	// the request as x/net takes it, reused; strings are made again only when they change
	hreq   http.Request
	url    url.URL
	body   bytes.Reader
	method []byte
	target []byte
}

// h2Refused is an ALPN that did not settle on h2 when the plan asked for HTTP/2 (error kind
// h2_error).
type h2Refused struct{ proto string }

func (e *h2Refused) Error() string {
	p := e.proto
	if p == "" {
		p = "none"
	}
	return "http2: the server did not agree to h2 in ALPN (it chose " + p + "); set http.h2_fallback to allow HTTP/1.1"
}

// do performs one exchange on this connection, as httpConn.do does for HTTP/1.1, and notes the
// protocol that carried it in v.viaH2.
func (c *h2Conn) do(req *outgoing, resp *fasthttp.Response) (int64, error) {
	h := c.h
	v := h.vu
	v.viaH2 = false
	if !c.on || h.conn != nil {
		return h.do(req, resp) // HTTP/1.1: plain http with "2", or ALPN fell back on this connection
	}
	v.fails.status, v.fails.captured = 0, false
	// Cookie jar hook (cookies.go): the jar applies to req.req here, before it is sent, and reads
	// Set-Cookie from resp after the exchange, as on the HTTP/1.1 path.
	if c.slot != nil && !c.pool.h1.Load() {
		return c.doShared(req, resp)
	}
	// the VU's own connection (also when a shared pool's ALPN fell back to HTTP/1.1)
	if c.cc != nil && !c.cc.CanTakeNewRequest() {
		c.close() // closed by the server, or a GOAWAY: the next request dials again
	}
	if c.cc == nil {
		if err := c.connect(); err != nil {
			return 0, err
		}
		if h.conn != nil { // ALPN fell back to HTTP/1.1 on this connection
			return h.do(req, resp)
		}
	}
	n, err := c.roundTrip(c.cc, context.Background(), req, resp)
	if err != nil && !isStreamError(err) || req.closes() {
		c.close() // a broken connection, or http.keep_alive false: one connection per request
	}
	return n, err
}

// doShared sends the request on the VU's shared connection, dialling it if needed.
func (c *h2Conn) doShared(req *outgoing, resp *fasthttp.Response) (int64, error) {
	v := c.h.vu
	d := v.deadline.Load()
	if d <= noDeadline {
		d = int64(v.e.hardStop)
	}
	ctx, cancel := context.WithDeadline(context.Background(), v.e.start.Add(time.Duration(d)))
	defer cancel()
	cc, err := c.sharedConn(ctx)
	if err != nil {
		return 0, err
	}
	if cc == nil { // ALPN fell back: this VU's own HTTP/1.1 connection
		return c.do(req, resp)
	}
	return c.roundTrip(cc, ctx, req, resp)
}

// sharedConn returns the slot's connection, dialling it when there is none that can take a
// request. nil without error: ALPN settled on HTTP/1.1 and the plan allows it (h2Pool.h1).
func (c *h2Conn) sharedConn(ctx context.Context) (*http2.ClientConn, error) {
	s := c.slot
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cc != nil && s.cc.CanTakeNewRequest() {
		return s.cc, nil
	}
	if s.cc != nil {
		_ = s.cc.Close()
		s.cc = nil
	}
	h := c.h
	v := h.vu
	t0 := v.e.now()
	nc, err := dialAside(h.addr, v.e.connectTimeout, v.e.policy)
	t1 := v.e.now()
	v.tm.connect += t1 - t0
	if err != nil {
		return nil, &dialError{err}
	}
	v.tm.fresh = true
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	v.e.rec.ConnOpened()
	var conn net.Conn = &sharedConn{Conn: nc, shard: v.shard, rec: v.e.rec}
	if h.tls != nil {
		tc, err := v.handshake(ctx, conn, h.tls, t1)
		if err != nil {
			return nil, err
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			_ = tc.Close()
			if !c.e.fallback {
				return nil, &h2Refused{p}
			}
			c.pool.h1.Store(true)
			return nil, nil
		}
		conn = tc
	}
	cc, err := c.e.tr.NewClientConn(conn) //nolint:staticcheck // the x/net API that takes our own connection
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	s.cc = cc
	return cc, nil
}

// connect dials the VU's own HTTP/2 connection (h2_connections 0), adding the connect and TLS
// times to the request (timing.go). When ALPN settles on HTTP/1.1 and the plan allows it, the
// connection becomes the httpConn's own (h.conn) and carries HTTP/1.1 until it closes.
func (c *h2Conn) connect() error {
	h := c.h
	v := h.vu
	nc, t1, err := v.dialTimed(h.addr)
	if err != nil {
		return err
	}
	if cc, ok := nc.(*countingConn); ok {
		// x/net reads on a goroutine of its own while the VU writes: plain net.Conn I/O, which
		// allows that (rawIO keeps one call's state)
		cc.raw = rawIO{conn: cc.Conn}
	}
	conn := nc
	if h.tls != nil {
		tc, err := v.handshake(context.Background(), nc, h.tls, t1)
		if err != nil {
			return err
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			if !c.e.fallback {
				_ = tc.Close()
				return &h2Refused{p}
			}
			h.cc, _ = nc.(*countingConn)
			h.conn = tc
			h.br.Reset(h)
			if h.bw != nil {
				h.bw.Reset(tc)
			}
			return nil
		}
		conn = tc
	}
	cc, err := c.e.tr.NewClientConn(conn) //nolint:staticcheck // the x/net API that takes our own connection
	if err != nil {
		_ = conn.Close()
		return err
	}
	c.cc = cc
	return nil
}

// close drops the VU's own HTTP/2 connection (httpConn.close). A shared one stays.
func (c *h2Conn) close() {
	if c.cc != nil {
		_ = c.cc.Close()
		c.cc = nil
	}
}

// roundTrip sends the request as a stream on cc and copies the answer into resp.
func (c *h2Conn) roundTrip(cc *http2.ClientConn, ctx context.Context, req *outgoing, resp *fasthttp.Response) (int64, error) {
	h := c.h
	v := h.vu
	hr := c.request(req.req)
	if ctx != context.Background() {
		hr = hr.WithContext(ctx)
	}
	resp.Reset()
	resp.Header.DisableNormalizing()
	resp.Header.SetNoDefaultContentType(true)
	h.wrote() // wait runs from here: the HEADERS frame is written inside RoundTrip
	res, err := cc.RoundTrip(hr)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	h.first = v.e.now() // the response's HEADERS arrived
	h.answered()
	status := res.StatusCode
	v.fails.status = status
	resp.SetStatusCode(status)
	for k, vals := range res.Header {
		for _, val := range vals {
			resp.Header.Add(k, val)
		}
	}
	var n int64
	if !req.isHead() && !noBody(status) {
		n, err = c.readBody(req, resp, res)
	}
	if err == nil {
		v.viaH2 = true
	}
	return n, err
}

// request fills the connection's reused http.Request from the VU's fasthttp request. Header
// fields that are connection-specific in HTTP/1.1 (RFC 9113 §8.2.2) are left out; Host becomes
// :authority.
func (c *h2Conn) request(r *fasthttp.Request) *http.Request {
	hr := &c.hreq
	if hr.Header == nil {
		hr.Header = http.Header{}
		hr.URL = &c.url
		hr.Proto, hr.ProtoMajor = "HTTP/2.0", 2
		c.url.Scheme = "http"
		if c.h.tls != nil {
			c.url.Scheme = "https"
		}
	}
	if m := r.Header.Method(); !bytes.Equal(m, c.method) {
		c.method = append(c.method[:0], m...)
		hr.Method = string(m)
	}
	if t := r.URI().RequestURI(); !bytes.Equal(t, c.target) {
		c.target = append(c.target[:0], t...)
		c.url.Opaque = string(t) // sent as :path exactly as fasthttp would write it
	}
	host := r.Header.Host() // the plan's Host header, else the URL's host (as fasthttp writes it)
	if len(host) == 0 {
		host = r.URI().Host()
	}
	if hr.Host != string(host) {
		hr.Host = string(host)
		c.url.Host = hr.Host
	}
	clear(hr.Header)
	for k, val := range r.Header.All() {
		if h2Hop(k) {
			continue
		}
		name := string(k)
		hr.Header[name] = append(hr.Header[name], string(val))
	}
	body := r.Body()
	hr.ContentLength = int64(len(body))
	hr.Body = nil
	if len(body) > 0 {
		c.body.Reset(body)
		hr.Body = io.NopCloser(&c.body)
	}
	return hr
}

// h2Hop reports whether a request header field is one HTTP/2 does not carry (RFC 9113 §8.2.2),
// or one x/net sets itself (Host as :authority, Content-Length from the body).
func h2Hop(k []byte) bool {
	switch len(k) {
	case 2:
		return equalFold(string(k), "TE")
	case 4:
		return equalFold(string(k), "Host")
	case 7:
		return equalFold(string(k), "Upgrade")
	case 10:
		return equalFold(string(k), "Connection") || equalFold(string(k), "Keep-Alive")
	case 14:
		return equalFold(string(k), "Content-Length")
	case 16:
		return equalFold(string(k), "Proxy-Connection")
	case 17:
		return equalFold(string(k), "Transfer-Encoding")
	}
	return false
}

// readBody reads an HTTP/2 response body as httpConn.readBody does an HTTP/1.1 one: into resp up
// to http.max_body when a check or extraction needs it (a declared length over it fails at once),
// its start into the failure sample for a 4xx/5xx, else read and dropped through the VU's scratch
// buffer. It returns the body's size (DATA payload, as the HTTP/1.1 path counts the body without
// its chunk framing).
func (c *h2Conn) readBody(req *outgoing, resp *fasthttp.Response, res *http.Response) (int64, error) {
	h := c.h
	v := h.vu
	if req.keepBody {
		limit := int64(v.e.maxBody)
		if res.ContentLength > limit {
			return 0, fasthttp.ErrBodyTooLarge
		}
		if v.scratch == nil {
			v.scratch = make([]byte, scratchSize)
		}
		var got int64
		for {
			k, err := res.Body.Read(v.scratch)
			if k > 0 {
				if got += int64(k); got > limit {
					return 0, fasthttp.ErrBodyTooLarge
				}
				resp.AppendBody(v.scratch[:k])
			}
			if err == io.EOF {
				return got, nil
			}
			if err != nil {
				return got, err
			}
		}
	}
	if res.StatusCode >= 400 {
		f := &v.fails
		if f.body == nil {
			f.body = make([]byte, metrics.MaxSampleBody)
		}
		k, err := io.ReadFull(res.Body, f.body[:metrics.MaxSampleBody])
		f.body, f.captured, f.bodyCut = f.body[:k], true, false
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return int64(k), nil
		}
		if err != nil {
			return int64(k), err
		}
		n, err := h.discard(res.Body, -1)
		f.bodyCut = n > 0
		return int64(k) + n, err
	}
	return h.discard(res.Body, -1)
}

// isStreamError reports an error that ended one stream and leaves its connection usable.
func isStreamError(err error) bool {
	var se http2.StreamError
	return errors.As(err, &se)
}

// classifyH2 names the HTTP/2 errors (classify): h2_error for a stream reset, a GOAWAY, a protocol
// or flow-control error, a connection x/net closed for one, or a refused ALPN; header_too_large
// for a header list, or one field, over http.max_header. KindNone for any other error.
func classifyH2(err error) metrics.ErrorKind {
	var refused *h2Refused
	var se http2.StreamError
	var ce http2.ConnectionError
	var ga http2.GoAwayError
	msg := err.Error()
	switch {
	case strings.Contains(msg, "header list larger than"):
		return metrics.HeaderTooLarge // x/net's stream error for a list over MaxHeaderListSize
	case errors.As(err, &ce) && http2.ErrCode(ce) == http2.ErrCodeCompression:
		// x/net's decoder refuses a single header field longer than the header-list bound
		// (Transport.MaxHeaderListSize, http.max_header) with this connection error: a field
		// over http.max_header, as on HTTP/1.1 (a corrupt HPACK block, which servers' encoders do
		// not produce, counts here too; the failure's message names COMPRESSION_ERROR)
		return metrics.HeaderTooLarge
	case errors.As(err, &refused), errors.As(err, &se), errors.As(err, &ce), errors.As(err, &ga):
		return metrics.H2Error
	}
	switch {
	case strings.HasPrefix(msg, "http2:"), strings.Contains(msg, "stream error"),
		strings.Contains(msg, "connection error"):
		return metrics.H2Error
	}
	return metrics.KindNone
}

// sharedConn is a shared HTTP/2 connection's socket (h2_connections > 0): it counts bytes into the
// shard of the VU that dialled it (bytes are run totals, so which shard does not matter) and the
// connection in the open-connection gauge. Unlike countingConn it belongs to no VU: a VU's
// timeout never interrupts it (the stream's context does).
type sharedConn struct {
	net.Conn
	shard  *metrics.Shard
	rec    *metrics.Recorder
	closed atomic.Bool
}

func (c *sharedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.shard.BytesIn(n)
	}
	return n, err
}

func (c *sharedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.shard.BytesOut(n)
	}
	return n, err
}

func (c *sharedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.rec.ConnClosed()
	}
	return c.Conn.Close()
}

// closeShared closes a run's shared HTTP/2 connections (Run's end).
func (e *h2Engine) closeShared() {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range e.pools {
		for i := range p.slots {
			s := &p.slots[i]
			s.mu.Lock()
			if s.cc != nil {
				_ = s.cc.Close()
				s.cc = nil
			}
			s.mu.Unlock()
		}
	}
}
