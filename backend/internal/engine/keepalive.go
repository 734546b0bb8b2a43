package engine

import (
	"github.com/valyala/fasthttp"
)

// Stale keep-alive connections (RFC 9112 §9.3, §9.6; net/http's Transport).
//
// A server may close an idle keep-alive connection at any time (an idle timeout, a cap on
// requests per connection) without saying so. A request written on such a connection is lost, and
// once it is written nobody can tell whether the target read it: net/http would then send an
// idempotent request again (persistConn.shouldRetryRequest), but a target that did read it would
// process it twice and count one request more than Volley. So a VU never sends a request it has
// written twice; it avoids writing on a dead connection instead:
//
//   - before a request on a reused connection, the VU looks whether the server has closed it
//     (or reset it, or sent something unasked — a 408, a TLS close_notify) while it was idle
//     (stale: a non-blocking peek at the socket, net/http's errServerClosedIdle); if so it drops
//     the connection and sends the request on a fresh one, once;
//   - a write that failed before its first byte left the VU (the RST had already come) is sent
//     again on a fresh connection, once: nothing of it can have reached the target (net/http's
//     nothingWrittenError);
//   - anything else — the connection ending after the request was written and before an answer,
//     an answer cut off — is an error (read, reset), counted once, never retried, whatever the
//     method.
//
// Connection: close from the server, or an HTTP/1.0 answer without keep-alive, closes the
// connection after the exchange (httpConn.once). The one window left is a server closing in the
// moment between the VU's check and its write (its FIN still in flight): that request fails as
// read or reset, and the target never counted it.

// do is once, sent again on a fresh connection when a reused one failed before a byte of the
// request was written (above).
func (h *httpConn) do(req *outgoing, resp *fasthttp.Response) (int64, error) {
	reused := h.conn != nil
	n, err := h.once(req, resp)
	if err != nil && reused && h.unsent && h.vu.deadline.Load() != expired {
		return h.once(req, resp)
	}
	return n, err
}

// stale reports whether the server has closed, reset or written to the idle connection since its
// last answer (bytes left unread after that answer count too).
func (h *httpConn) stale() bool {
	return h.br.Buffered() > 0 || h.cc != nil && h.cc.raw.peerClosed()
}

// written is how many bytes the connection has written.
func (h *httpConn) written() int64 {
	if h.cc == nil {
		return 0
	}
	return h.cc.written
}
