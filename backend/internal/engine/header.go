package engine

import (
	"bufio"
	"errors"
	"fmt"

	"github.com/valyala/fasthttp"
)

// Response headers larger than the read buffer (http.max_header).
//
// fasthttp parses a response header (and a chunked body's trailer) inside the connection's
// bufio.Reader, so the header's size is bounded by the buffer's. Every connection starts with the
// 4 KiB buffer (readBufferSize, or http.max_header when that is smaller); only when fasthttp reports
// that a header does not fit (*fasthttp.ErrSmallBuffer, having consumed nothing) does the
// connection grow its buffer — doubling, up to http.max_header — and parse again. The bytes the
// old buffer held are carried over (spill), so nothing read is lost or read twice. A header that
// does not fit http.max_header bytes is error kind header_too_large.
//
// A grown buffer stays with the connection (and its successors: connect keeps the buffer), so a
// site whose every answer carries a large header costs one growth per VU, not an allocation per
// request; memory per VU stays bounded by http.max_header. VUs that never see a large header keep
// 4 KiB.

// spill is what a grown read buffer reads from: the bytes the smaller buffer held, then the
// connection.
type spill struct {
	b []byte
	h *httpConn
}

func (s *spill) Read(p []byte) (int, error) {
	if len(s.b) > 0 {
		n := copy(p, s.b)
		s.b = s.b[n:]
		return n, nil
	}
	return s.h.Read(p)
}

// grow reports whether err is a header that outgrew the read buffer and the buffer could grow
// (then the caller parses again); otherwise the caller keeps err (header_too_large).
func (h *httpConn) grow(err error) bool {
	return err != nil && h.growFor(err)
}

// growFor is grow for an error (apart, so that a request without error allocates nothing: the
// errors.As target escapes).
func (h *httpConn) growFor(err error) bool {
	var small *fasthttp.ErrSmallBuffer
	if !errors.As(err, &small) {
		return false
	}
	limit := h.vu.e.maxHeader
	size := h.br.Size()
	if size >= limit || (h.spill != nil && len(h.spill.b) > 0) {
		return false
	}
	// The full buffer's bytes stay valid: the old buffer is never used again.
	held, _ := h.br.Peek(h.br.Buffered())
	if h.spill == nil {
		h.spill = &spill{h: h}
	}
	h.spill.b = held
	h.br = *bufio.NewReaderSize(h.spill, min(2*size, limit))
	return true
}

// headerTooLargeMessage is the failure message of every header_too_large of a run.
func headerTooLargeMessage(limit int) string {
	return fmt.Sprintf("response header larger than http.max_header (%d bytes)", limit)
}
