package engine

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"

	"github.com/valyala/fasthttp"
)

// readBufferSize is each connection's read buffer. fasthttp parses a response header inside it,
// so it is also the largest response header a VU accepts (fasthttp's default, 4 KiB). It is the
// size bufio.Reader.Reset gives a zero Reader, which is how httpConn makes it (one allocation,
// not two; TestReadBufferSize).
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
	br   bufio.Reader  // its buffer is made on the first connect
	bw   *bufio.Writer // nil until a request that is not pre-serialized (reqSpec.wire)
}

// do sends req and reads the answer into resp. With stream, a body is left in resp.BodyStream()
// for the caller, who must call finishStream after reading it.
func (h *httpConn) do(req *outgoing, resp *fasthttp.Response, stream bool) error {
	if h.conn == nil {
		if err := h.connect(); err != nil {
			return err
		}
	}
	resp.Reset()
	resp.SkipBody = req.isHead()
	resp.StreamBody = stream
	resp.Header.DisableNormalizing()
	var err error
	if req.wire != nil {
		_, err = h.conn.Write(req.wire)
	} else {
		if h.bw == nil {
			h.bw = bufio.NewWriterSize(h.conn, h.vu.e.writeBuf)
		}
		if err = req.req.Write(h.bw); err == nil {
			err = h.bw.Flush()
		}
	}
	if err == nil {
		err = resp.ReadLimitBody(&h.br, 0)
	}
	if err != nil {
		if err == io.EOF {
			// fasthttp reports any error on a response's first byte as io.EOF; the connection
			// knows whether it was one (a reset before the answer) or the server closing.
			err = fasthttp.ErrConnectionClosed
			if h.cc != nil && h.cc.readErr != nil {
				err = h.cc.readErr
			}
		}
		h.close()
		return err
	}
	if stream && resp.BodyStream() != nil {
		return nil // finishStream decides about the connection
	}
	if req.closes() || resp.ConnectionClose() {
		h.close()
	}
	return nil
}

// finishStream ends a streamed exchange: ok says the body was read to its end.
func (h *httpConn) finishStream(req *outgoing, resp *fasthttp.Response, ok bool) {
	_ = resp.CloseBodyStream()
	if !ok || req.closes() || resp.ConnectionClose() {
		h.close()
	}
}

func (h *httpConn) connect() error {
	c, err := h.vu.dial(h.addr)
	if err != nil {
		return err
	}
	h.cc, _ = c.(*countingConn)
	if h.tls != nil {
		c = tls.Client(c, h.tls) // the handshake runs on the first write, within the request's timeout
	}
	h.conn = c
	h.br.Reset(c)
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
}
