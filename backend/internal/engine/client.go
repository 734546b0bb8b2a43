package engine

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"runtime"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// readBufferSize is each connection's read buffer to begin with. fasthttp parses a response header
// inside it; a larger header grows it, up to http.max_header (header.go). It is the size
// bufio.Reader.Reset gives a zero Reader, which is how httpConn makes it (one allocation, not two;
// TestReadBufferSize).
const readBufferSize = 4096

// httpConn is one VU's HTTP/1.1 keep-alive connection to one address: fasthttp's request writer
// and response parser over a connection the VU owns outright.
//
// fasthttp.HostClient would do the same with a pool around it — a mutex, two sync.Pools, two
// clock reads per request for idle accounting, and an idle-connection cleaner goroutine per
// client — all of which a VU holding exactly one connection never needs (and the goroutine's stack
// cost every VU kilobytes). What HostClient does per request is kept: the response is reset but
// keeps its buffers; HEAD answers have no body; a Connection: close on either side closes the
// connection after the exchange; an error closes it; a server closing before the first response
// byte is fasthttp.ErrConnectionClosed; nothing is retried.
type httpConn struct {
	key  string      // "addr" or "tls://addr", as looked up by vu.client
	addr string      // host:port dialled
	tls  *tls.Config // nil for plain HTTP
	vu   *vu
	conn net.Conn      // nil between connections
	cc   *countingConn // under conn (conn itself, or under TLS)
	br   bufio.Reader  // its buffer is made on the first connect, grown for a large header (header.go)
	bw   *bufio.Writer // nil until a request that is not pre-serialized (reqSpec.wire)

	wroteAt, first time.Duration // the request's write ended; its answer's first byte came (timing.go)
	// head, set for a test request only (SendOne), keeps the first sendHeadBytes bytes read: the
	// response's head, shown even when it cannot be parsed as a run would (keepHead).
	head *[]byte

	h2 *h2Conn // the HTTP/2 side, for plans with http.version "2" or "h2c" (h2.go); else nil
	// unsent: the last exchange failed before a byte of its request was written; sentBefore is
	// the connection's written count when the request began (keepalive.go).
	unsent     bool
	sentBefore int64
	// abs, pw and pbw build requests in absolute form for a proxy (proxy.go); nil without one.
	abs []byte
	pw  *sliceWriter
	pbw *bufio.Writer
	// grew: the read buffer grew for the header being read (header.go: shedHeader); scanErr: the
	// read error headerFits met, the exchange's.
	grew    bool
	scanErr error
	// spill carries the bytes of a read buffer outgrown by a response header (header.go); nil
	// until the first growth.
	spill *spill
}

// once sends req, reads the answer's header into resp and its body as req asks (readBody), and
// returns the body's size. A body is never allocated at the length the response declares. It
// sets h.unsent when it failed before writing a byte of the request (keepalive.go).
func (h *httpConn) once(req *outgoing, resp *fasthttp.Response) (int64, error) {
	// before anything can fail: a failure without a response of its own has status 0 and no
	// sample, whatever the VU's previous request got (TestConnectFailureHasNoStatus)
	h.vu.fails.status, h.vu.fails.captured = 0, false
	h.unsent = false
	if h.conn != nil && h.stale() {
		h.close() // the server closed it while idle: nothing is sent on it (keepalive.go)
	}
	if h.conn == nil {
		if err := h.connect(); err != nil {
			return 0, err
		}
	}
	resetResponse(resp)
	var err error
	h.sentBefore = h.written()
	if h.vu.e.proxy != "" && h.tls == nil {
		err = h.writeProxied(req) // absolute form (proxy.go)
	} else if req.wire != nil {
		_, err = h.conn.Write(req.wire)
	} else {
		if h.bw == nil {
			h.bw = bufio.NewWriterSize(h.conn, h.vu.e.writeBuf)
		}
		if err = req.req.Write(h.bw); err == nil {
			err = h.bw.Flush()
		}
	}
	h.unsent = err != nil && h.written() == h.sentBefore
	if err == nil {
		h.wrote()
		if h.br.Size() > readBufferSize && !h.headerFits(h.vu.e.maxHeader) {
			err = errHeaderTooLarge // a grown buffer: fasthttp would parse all of it first (header.go)
		} else {
			err = resp.ReadLimitBody(&h.br, 0)
		}
		for ; h.grow(err); err = resp.ReadLimitBody(&h.br, 0) {
			resetResponse(resp) // the header outgrew the read buffer, which grew (header.go)
		}
		if h.scanErr != nil { // the read error headerFits met: fasthttp saw only what followed it
			err, h.scanErr = h.scanErr, nil
		}
		h.shedHeader(resp)
		if err != nil {
			if err == io.EOF {
				// fasthttp reports any error on a response's first byte as io.EOF; the connection
				// knows whether it was one (a reset before the answer) or the server closing.
				err = fasthttp.ErrConnectionClosed
				if h.cc != nil && h.cc.readErr != nil {
					err = h.cc.readErr
				}
			}
			err = h.responseError(err, true)
		} else {
			h.answered()
		}
	}
	if err == nil {
		h.vu.fails.status = resp.StatusCode()
	}
	var n int64
	if err == nil && !req.isHead() && !noBody(resp.StatusCode()) {
		if n, err = h.readBody(req, resp); err != nil {
			err = h.responseError(err, false)
		}
	}
	if err != nil {
		h.close()
		return 0, err
	}
	if req.closes() || resp.ConnectionClose() || resp.StatusCode() < 200 {
		h.close() // a 101 Switching Protocols leaves nothing HTTP on the connection either
	}
	return n, nil
}

// resetResponse readies resp for reading a response's header.
func resetResponse(resp *fasthttp.Response) {
	resp.Reset()
	resp.SkipBody = true // the header only: readBody decides what to do with the body
	resp.Header.DisableNormalizing()
	// headers exactly as they came: no invented Content-Type for checks, Send and samples (Reset
	// clears this flag)
	resp.Header.SetNoDefaultContentType(true)
}

// noBody reports whether a response with this status has no body (RFC 9110 §6.4.1).
func noBody(status int) bool {
	return status < 200 || status == fasthttp.StatusNoContent || status == fasthttp.StatusNotModified
}

// readBody reads the body of the response whose header resp holds and returns its size.
//
// A body a check or extraction needs (req.keepBody) is read into resp, up to the plan's
// http.max_body: a declared length over it fails at once, without reading or allocating anything
// (fasthttp.ErrBodyTooLarge), and a chunked or close-delimited body fails as soon as it passes the
// limit. Any other body is read and discarded through bounded memory, whatever its size: one
// that came with the header is skipped in the read buffer; a longer one is read through the VU's
// scratch buffer, a chunked one through fasthttp's body stream. Bytes are counted as read
// (countingConn), so bytes_in stays exact. The request's deadline cuts any of these reads off
// (deadline.go).
func (h *httpConn) readBody(req *outgoing, resp *fasthttp.Response) (int64, error) {
	cl := resp.Header.ContentLength() // ≥ 0, -1 chunked, -2 until the connection closes
	if req.keepBody {
		limit := h.vu.e.maxBody
		if cl > limit {
			return 0, fasthttp.ErrBodyTooLarge
		}
		resp.SkipBody = false
		if err := resp.ReadBody(&h.br, limit); err != nil {
			return 0, err
		}
		if cl == -1 {
			err := resp.Header.ReadTrailer(&h.br)
			for h.grow(err) {
				err = resp.Header.ReadTrailer(&h.br)
			}
			if err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return 0, err
			}
		}
		return int64(len(resp.Body())), nil
	}
	if resp.StatusCode() >= 400 {
		return h.readFailedBody(resp, cl) // keeps its start for a failure's sample (failures.go)
	}
	switch {
	case cl >= 0 && cl <= readBufferSize:
		n, err := h.br.Discard(cl)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return int64(n), err
	case cl >= 0:
		return h.discard(&h.br, int64(cl))
	case cl == -1:
		resp.SkipBody, resp.StreamBody = false, true
		_ = resp.ReadBody(&h.br, 0) // only sets up the stream
		s := resp.BodyStream()
		if s == nil {
			return 0, nil
		}
		n, err := h.discard(s, -1)
		_ = resp.CloseBodyStream()
		return n, err
	default:
		return h.discard(&h.br, -1)
	}
}

// discard reads and drops n bytes from r (n < 0: up to io.EOF) through the VU's scratch
// buffer. Fewer than n bytes is io.ErrUnexpectedEOF.
func (h *httpConn) discard(r io.Reader, n int64) (int64, error) {
	v := h.vu
	if v.scratch == nil {
		v.scratch = make([]byte, scratchSize)
	}
	var got int64
	unyielded := 0
	for n < 0 || got < n {
		b := v.scratch
		if n >= 0 && n-got < int64(len(b)) {
			b = b[:n-got]
		}
		k, err := r.Read(b)
		got += int64(k)
		if err == io.EOF {
			if n < 0 {
				return got, nil
			}
			return got, io.ErrUnexpectedEOF
		}
		if err != nil {
			return got, err
		}
		if unyielded += k; unyielded >= scratchSize {
			// A target that keeps the socket full never makes this loop wait, and raw reads never
			// enter the scheduler, so without a yield the VU would hold its P for a whole
			// preemption slice (10 ms) at a time: a thousand such VUs would take seconds to go
			// round once, and a VU whose request timed out or was stopped would wait that long to
			// notice.
			unyielded = 0
			runtime.Gosched()
		}
	}
	return got, nil
}

// scratchSize is the buffer through which a VU reads and drops bodies longer than its read
// buffer: made on the first such body, once per VU.
const scratchSize = 32 << 10

// responseError tells apart a connection's failure (timeout, reset, closed: the error is kept and
// classified as such) from an answer that is not HTTP the engine can parse, which becomes a
// *malformedError (error kind malformed_response): a bad status line or header, bad framing, a bad
// chunk — and, in the header, bytes that do not even begin like an HTTP/1.x response (HTTP/0.9 or
// garbage), whatever ended the read.
func (h *httpConn) responseError(err error, header bool) error {
	if classify(err) != metrics.Other && (!header || looksLikeHTTP(&h.br)) {
		return err
	}
	return &malformedError{err}
}

// looksLikeHTTP reports whether the unread bytes of a response that failed to parse begin like an
// HTTP/1.x status line (after the empty lines fasthttp skips), or are not there.
func looksLikeHTTP(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	for len(b) > 0 && (b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	const proto = "HTTP/"
	if len(b) > len(proto) {
		b = b[:len(proto)]
	}
	return string(b) == proto[:len(b)]
}

// connect dials the connection and, for TLS, makes the handshake, adding both times to the VU's
// request (timing.go). The handshake runs here rather than on the first write so that it has a
// time of its own; it stays within the request's deadline, which the VU's timer enforces on the
// connection's reads and writes (deadline.go) as it did when the first write ran it.
func (h *httpConn) connect() error {
	v := h.vu
	var c net.Conn
	var t1 time.Duration
	var err error
	if v.e.proxy != "" {
		t0 := v.e.now()
		c, err = h.proxyDial() // proxy.go
		t1 = v.e.now()
		v.tm.connect += t1 - t0
		if err == nil {
			v.tm.fresh = true
		}
	} else {
		c, t1, err = v.dialTimed(h.addr)
	}
	if err != nil {
		return err
	}
	h.cc, _ = c.(*countingConn)
	if h.tls != nil {
		tc, err := v.handshake(context.Background(), c, h.tls, t1)
		if err != nil {
			return err
		}
		c = tc
	}
	h.conn = c
	// reads go through h.Read, which notes the first byte of each answer; a buffer grown for a
	// large header is kept (header.go)
	if h.spill != nil {
		h.spill.b = nil
	}
	if h.br.Size() == 0 && h.vu.e.maxHeader < readBufferSize {
		h.br = *bufio.NewReaderSize(h, h.vu.e.maxHeader)
	} else {
		h.br.Reset(h)
	}
	if h.bw != nil { // made on the first request that is not pre-serialized
		h.bw.Reset(c)
	}
	return nil
}

// close drops the connection (the next request dials a new one).
func (h *httpConn) close() {
	if h.conn != nil {
		_ = h.conn.Close()
		h.conn = nil
	}
	if h.h2 != nil {
		h.h2.close()
	}
}
