package engine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

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
	if h.spill == nil {
		h.spill = &spill{h: h}
	}
	h.growBuffer(size, limit)
	h.grew = true
	return h.headerFits(limit)
}

// growBuffer replaces the full read buffer of size bytes by one of twice the size (at most
// limit) that reads the old buffer's bytes first (spill). Those bytes stay valid: the old buffer
// is never used again.
func (h *httpConn) growBuffer(size, limit int) {
	held, _ := h.br.Peek(h.br.Buffered())
	h.spill.b = held
	h.br = *bufio.NewReaderSize(h.spill, min(2*size, limit))
}

// headerFits reads on, growing the buffer up to limit, until the header's end is in it, and
// reports whether it is (the caller then parses it once, whole). fasthttp parses every field it
// has before it finds that a header does not fit, into the response's field list, so without
// this a header of thousands of tiny fields were parsed again at every doubling and, when over
// the limit, at its full 64 KiB for nothing — about 1 MiB of fields per VU per answer. It runs
// when the buffer grows, and before each header read on a connection whose buffer has grown
// (httpConn.do); a VU with the first 4 KiB buffer lets fasthttp parse at most that. The end is the
// final answer's (headerEnd: empty lines before a status line and interim 1xx answers are
// skipped, as fasthttp skips them). A read error ends the scan with true: EOF is left for
// fasthttp's parse to meet and name; any other is kept in h.scanErr (bufio hands a read error
// back once, and a socket read again after a reset says EOF), the exchange's error.
func (h *httpConn) headerFits(limit int) bool {
	for {
		n := h.br.Buffered()
		buf, _ := h.br.Peek(n)
		if headerEnd(buf) {
			return true
		}
		if n == h.br.Size() {
			if n >= limit {
				return false // header_too_large, its fields never parsed
			}
			h.growBuffer(n, limit)
			continue
		}
		if _, err := h.br.Peek(n + 1); err != nil {
			if err != io.EOF {
				h.scanErr = err
			}
			return true
		}
	}
}

// headerEnd reports whether buf holds the whole header of a final answer: after any empty lines,
// and past any interim 1xx answer but 101 (as fasthttp reads them), a header ends with an empty
// line.
func headerEnd(buf []byte) bool {
	for {
		buf = bytes.TrimLeft(buf, "\r\n")
		e := -1 // just past the first empty line
		if i := bytes.Index(buf, headEnd); i >= 0 {
			e = i + len(headEnd)
		}
		if i := bytes.Index(buf, headEndLF); i >= 0 && (e < 0 || i+len(headEndLF) < e) {
			e = i + len(headEndLF)
		}
		if e < 0 {
			return false
		}
		interim := len(buf) >= 12 && bytes.HasPrefix(buf, httpPrefix) && buf[9] == '1' && !bytes.Equal(buf[9:12], status101)
		if !interim {
			return true
		}
		buf = buf[e:]
	}
}

var httpPrefix, status101 = []byte("HTTP/"), []byte("101")

// errHeaderTooLarge is a header that does not fit http.max_header, found by headerFits before
// fasthttp parsed it (classified as fasthttp's own: header_too_large).
var errHeaderTooLarge = errors.New("response header larger than http.max_header")

// headEnd and headEndLF end a header (an empty line, CRLF or bare LF as fasthttp takes them).
var headEnd, headEndLF = []byte("\n\r\n"), []byte("\n\n")

// maxKeptFields is the most header fields a grown header may have for the VU to keep its response
// (shedHeader).
const maxKeptFields = 256

// shedHeader marks the VU to take a new response when the header just read outgrew the first
// read buffer and has more than maxKeptFields fields (counted only then: the common case costs
// one flag test).
func (h *httpConn) shedHeader(resp *fasthttp.Response) {
	if h.grew {
		h.grew = false
		if resp.Header.Len() > maxKeptFields {
			h.vu.shedResp = true
		}
	}
}

// headerTooLargeMessage is the failure message of every header_too_large of a run.
func headerTooLargeMessage(limit int) string {
	return fmt.Sprintf("response header larger than http.max_header (%d bytes)", limit)
}
