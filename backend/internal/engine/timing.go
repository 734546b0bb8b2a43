package engine

import (
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// Request phases (metrics.Timing: k6's http_req_connecting, tls_handshaking, waiting and
// receiving), measured where the VU owns its connection, with clock reads only where a phase
// begins or ends:
//
//   - connect: around vu.dial, in httpConn.connect (only when a connection is made);
//   - TLS: around the explicit handshake that follows the dial (httpConn.connect);
//   - wait: from the end of the request's write (httpConn.wrote, one clock read) to the first
//     byte the response parser reads (httpConn.Read, one clock read);
//   - receive: from that first byte to the request's end, the clock read vu.do makes anyway for
//     its latency.
//
// A request on a kept-alive connection thus costs two clock reads more than before, and two
// atomic adds (metrics.PhaseHists.Record); no lock, allocation or channel operation. With
// redirects, each phase sums the hops' (vu.follow adds a hop's receive when the next begins).

// reqTiming is the phases of the VU's request in flight, reset by vu.do before each request.
// All times are durations since the run started (Engine.now).
type reqTiming struct {
	connect, tls, wait, receive time.Duration // summed over the request's exchanges
	first                       time.Duration // the first response byte of the latest exchange
	fresh, handshook            bool          // a connection was made; a TLS handshake was made
}

// hopDone adds an exchange's receive (its first byte → now) when a redirect hop follows it.
func (t *reqTiming) hopDone(now time.Duration) {
	if t.first > 0 {
		t.receive += now - t.first
		t.first = 0
	}
}

// record adds the finished request's phases to h; done is its end (the last byte).
func (t *reqTiming) record(h *metrics.PhaseHists, done time.Duration) {
	recv := t.receive
	if t.first > 0 {
		recv += done - t.first
	}
	h.Record(t.fresh, t.handshook, t.connect.Microseconds(), t.tls.Microseconds(), t.wait.Microseconds(), recv.Microseconds())
}

// wrote notes that the request's last byte is written: its wait begins, and the next byte read
// ends it (Read).
func (h *httpConn) wrote() {
	h.wroteAt = h.vu.e.now()
	h.first = 0
}

// Read is what the connection's read buffer (h.br) reads from: the connection itself (plain, or
// the TLS layer's plaintext), noting when the first byte after the request's write arrives.
func (h *httpConn) Read(b []byte) (int, error) {
	n, err := h.conn.Read(b)
	if n > 0 && h.first == 0 {
		h.first = h.vu.e.now()
	}
	if h.head != nil {
		if k := min(n, sendHeadBytes-len(*h.head)); k > 0 {
			*h.head = append(*h.head, b[:k]...)
		}
	}
	return n, err
}

// answered adds the exchange's wait to the VU's request, once the response's header is read. An
// answer already buffered when the request was written has no wait.
func (h *httpConn) answered() {
	if h.first == 0 {
		h.first = h.wroteAt
	}
	t := &h.vu.tm
	t.wait += h.first - h.wroteAt
	t.first = h.first
}
