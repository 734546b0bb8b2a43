package engine

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode/utf8"

	"github.com/valyala/fasthttp"
	"golang.org/x/net/http2"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// Failure groups (metrics.FailureGroup; docs/api.md, "Failures").
//
// Every failed request is counted in the group of its request name, error kind, HTTP status and
// message. The groups live in a fixed open-addressing table of failSlots slots keyed by a 64-bit
// FNV-1a hash of those four (a VU never compares strings): a failure of an existing group is a
// probe of a few atomic loads and one atomic add, with no lock and no allocation — a dead target
// fails tens of thousands of times a second. Only a new group takes the table's mutex (at most
// metrics.MaxFailureGroups times a run, plus the failures that find the table full: those are
// counted in the "(other)" group without it once the table is full).
//
// The message is built into a per-VU buffer without allocating for the errors a dead or failing
// target gives (net.OpError, os.SyscallError, syscall.Errno chains, fasthttp's fixed errors):
// appendErrText. Two different messages whose hashes collide (chance 2⁻⁶⁴ per pair) would share a
// group.
//
// Each group keeps one sample response: the first VU whose failure had a response header, and
// that wins the slot's sampled flag by CAS, copies it (bounded: metrics.FailureSample).

// failSlots is the table's size: a power of two over twice MaxFailureGroups, so that a probe for a
// missing key stops at an empty slot within a few steps.
const failSlots = 256

// failSlot is one group. key is 0 while the slot is free; info is written (under the table's
// mutex) before key is published, and never changes after.
type failSlot struct {
	key     atomic.Uint64
	count   atomic.Int64
	info    *failInfo
	sampled atomic.Bool // a VU has taken (or is taking) the sample
	sample  atomic.Pointer[metrics.FailureSample]
	_       [24]byte // one slot per cache line: VUs failing in different groups do not share one
}

type failInfo struct {
	request, kind, message string
	status                 int
}

// The message of every malformed_response failure.
var malformedMsg = "response is not HTTP/1.x the engine can parse"

// failTable holds a run's failure groups.
type failTable struct {
	names      []string // request names by reqSpec.name
	slots      [failSlots]failSlot
	other      failSlot // the "(other)" group
	full       atomic.Bool
	mu         sync.Mutex // claims a free slot
	n          int        // slots claimed (under mu)
	timeoutMsg string     // the message of every timeout
	loopMsg    string     // the message of every redirect loop
	headerMsg  string     // the message of every header_too_large
}

func newFailTable(names []string, p *plan.Plan) *failTable {
	t := &failTable{names: names,
		timeoutMsg: fmt.Sprintf("no complete response within http.timeout (%s)", p.HTTP.Timeout.D()),
		loopMsg:    fmt.Sprintf("more than http.max_redirects (%d) redirects", p.HTTP.MaxRedirects),
		headerMsg:  headerTooLargeMessage(p.HTTP.MaxHeaderOrDefault())}
	t.other.info = &failInfo{message: metrics.OtherFailures}
	return t
}

// vuFailures is a VU's scratch for failures: the message buffer and the start of the body of the
// last response with a status ≥ 400 that nobody else reads (readFailedBody).
type vuFailures struct {
	msg      []byte
	body     []byte // made on the first such body: MaxSampleBody bytes
	bodyCut  bool   // the body had more bytes than body holds
	captured bool   // body holds the current request's body
	status   int    // the current request's status, once its header has been read; else 0
	check    int    // the first failed check of the request (judgeChecks)
	hopErr   error  // the error that ended a followed redirect chain (vu.follow)
	lastKey  uint64 // the group of the VU's last failure, and its slot
	lastSlot *failSlot
}

// failed counts a failed request of r in its group; err is the transport error, if any.
func (v *vu) failed(r *vuReq, kind metrics.ErrorKind, status int, err error) {
	t := v.e.fails
	f := &v.fails
	if status == 0 {
		status = f.status // a header arrived before the exchange failed
	}
	if err == nil {
		err = f.hopErr
	}
	msg := f.msg[:0]
	switch {
	case kind == metrics.Status4xx || kind == metrics.Status5xx:
		// the message follows from the status
	case kind == metrics.CheckFailed:
		msg = append(msg, v.e.checks[f.check].desc...)
	case kind == metrics.Timeout || kind == metrics.RedirectLoop || kind == metrics.MalformedResponse ||
		kind == metrics.HeaderTooLarge || err == nil:
		// one message per kind (fasthttp's parse errors quote the bytes received: one group
		// per different bad response otherwise)
	default:
		msg = appendErrText(msg, err)
	}
	msg = cutText(msg, metrics.MaxFailureMessage)
	f.msg = msg
	h := uint64(14695981039346656037)
	for _, c := range msg {
		h = (h ^ uint64(c)) * 1099511628211
	}
	for _, x := range [...]uint64{uint64(r.spec.name), uint64(kind), uint64(status)} {
		h = (h ^ x) * 1099511628211
	}
	h |= 1 // 0 marks a free slot
	s := f.lastSlot
	if f.lastKey != h || s == nil {
		s = t.find(h)
		switch {
		case s != nil:
		case t.full.Load():
			s = &t.other
		default:
			s = t.claim(h, v.failInfo(r, kind, status, msg))
		}
		f.lastKey, f.lastSlot = h, s
	}
	s.count.Add(1)
	if status > 0 && !s.sampled.Load() && s.sampled.CompareAndSwap(false, true) {
		s.sample.Store(v.failureSample(r, kind, status))
	}
}

// find returns the slot of key h, or nil.
func (t *failTable) find(h uint64) *failSlot {
	for i := h; ; i++ {
		s := &t.slots[i%failSlots]
		switch s.key.Load() {
		case h:
			return s
		case 0:
			return nil
		}
	}
}

// claim returns the slot of key h, making it the group info describes; the "(other)" slot once
// MaxFailureGroups groups exist. info is called only for a new group.
func (t *failTable) claim(h uint64, info func() *failInfo) *failSlot {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := h; ; i++ {
		s := &t.slots[i%failSlots]
		switch s.key.Load() {
		case h:
			return s // claimed by another VU meanwhile
		case 0:
			if t.n >= metrics.MaxFailureGroups {
				t.full.Store(true)
				return &t.other
			}
			s.info = info()
			s.key.Store(h)
			t.n++
			return s
		}
	}
}

// failInfo returns a function describing a new group (its strings are made only when called).
func (v *vu) failInfo(r *vuReq, kind metrics.ErrorKind, status int, msg []byte) func() *failInfo {
	return func() *failInfo {
		t := v.e.fails
		g := &failInfo{request: t.names[r.spec.name], kind: kind.String(), status: status}
		switch {
		case kind == metrics.Status4xx || kind == metrics.Status5xx:
			g.message = fmt.Sprintf("HTTP %d %s", status, fasthttp.StatusMessage(status))
		case kind == metrics.Timeout:
			g.message = t.timeoutMsg
		case kind == metrics.RedirectLoop:
			g.message = t.loopMsg
		case kind == metrics.MalformedResponse:
			g.message = malformedMsg
		case kind == metrics.HeaderTooLarge:
			g.message = t.headerMsg
		case len(msg) == 0:
			g.message = kind.String()
		default:
			g.message, _ = metrics.ValidText(msg, metrics.MaxFailureMessage)
		}
		g.request, _ = metrics.ValidText([]byte(g.request), metrics.MaxFailureMessage)
		return g
	}
}

// failureSample copies the VU's response (its header, and the start of its body when one was
// read) within the FailureSample bounds.
func (v *vu) failureSample(r *vuReq, kind metrics.ErrorKind, status int) *metrics.FailureSample {
	f := &v.fails
	smp := &metrics.FailureSample{Status: status, Headers: [][2]string{}}
	hdr := &v.resp.Header
	hdr.SetNoDefaultContentType(true) // list what was received, not fasthttp's default
	for k, val := range hdr.All() {
		if len(smp.Headers) == metrics.MaxSampleHeaders {
			break
		}
		name, _ := metrics.ValidText(k, metrics.MaxSampleHeader)
		value, _ := metrics.ValidText(val, metrics.MaxSampleHeader)
		smp.Headers = append(smp.Headers, [2]string{name, value})
	}
	var body []byte
	cut := false
	switch {
	case f.captured:
		body, cut = f.body, f.bodyCut
	case kind == metrics.BodyTooLarge:
		cut = true // refused unread
	case r.spec.keepBody:
		body = v.resp.Body()
	default:
		// a body nobody reads, of a response whose status looked fine: not kept
	}
	var more bool
	smp.Body, more = metrics.ValidText(body, metrics.MaxSampleBody)
	smp.BodyTruncated = cut || more
	return smp
}

// readFailedBody reads and drops the body of a response with a status ≥ 400 that no check or
// extraction reads, as readBody would, keeping its first MaxSampleBody bytes for the sample of
// the failure it will be (vu.failed). It reads what the response sends, never the length it
// declares: a body announced as huge costs MaxSampleBody bytes, once per VU.
func (h *httpConn) readFailedBody(resp *fasthttp.Response, cl int) (int64, error) {
	f := &h.vu.fails
	if f.body == nil {
		f.body = make([]byte, metrics.MaxSampleBody)
	}
	var r io.Reader = &h.br
	if cl == -1 {
		resp.SkipBody, resp.StreamBody = false, true
		_ = resp.ReadBody(&h.br, 0) // only sets up the stream
		s := resp.BodyStream()
		if s == nil {
			return 0, nil
		}
		defer func() { _ = resp.CloseBodyStream() }()
		r = s
	}
	want := metrics.MaxSampleBody
	if cl >= 0 && cl < want {
		want = cl
	}
	k, err := io.ReadFull(r, f.body[:want])
	f.body, f.captured, f.bodyCut = f.body[:k], true, false
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		if cl >= 0 && k < cl {
			return int64(k), io.ErrUnexpectedEOF
		}
		return int64(k), nil // a chunked or close-delimited body ended
	case err != nil:
		return int64(k), err
	case cl >= 0 && k == cl:
		return int64(k), nil
	}
	rest := int64(-1)
	if cl >= 0 {
		rest = int64(cl - k)
	}
	var n int64
	if rest >= 0 && rest <= readBufferSize {
		// as readBody: a body that fits the read buffer needs no scratch buffer
		var m int
		m, err = h.br.Discard(int(rest))
		if n = int64(m); err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
	} else {
		n, err = h.discard(r, rest)
	}
	f.bodyCut = n > 0
	return int64(k) + n, err
}

// appendErrText appends err's text to dst as the error's own Error would, but without the volatile
// parts that would make every failure a group of its own (the local address of a connection:
// "read tcp 127.0.0.1->127.0.0.1:8080: …" rather than its ephemeral port), and without allocating
// for the usual chains of a failed connection (dialError, net.OpError, os.SyscallError,
// syscall.Errno). Other errors are formatted by their Error, then the same rule applies.
func appendErrText(dst []byte, err error) []byte {
	for {
		switch e := err.(type) {
		case *dialError:
			err = e.err
			continue
		case *malformedError:
			dst = append(dst, "malformed response: "...)
			err = e.err
			continue
		case *net.OpError:
			dst = append(dst, e.Op...)
			if e.Net != "" {
				dst = append(dst, ' ')
				dst = append(dst, e.Net...)
			}
			if e.Source != nil {
				dst = append(dst, ' ')
				dst = appendAddr(dst, e.Source, false)
			}
			if e.Addr != nil {
				if e.Source != nil {
					dst = append(dst, "->"...)
				} else {
					dst = append(dst, ' ')
				}
				dst = appendAddr(dst, e.Addr, true)
			}
			dst = append(dst, ": "...)
			err = e.Err
			continue
		case *os.SyscallError:
			dst = append(dst, e.Syscall...)
			dst = append(dst, ": "...)
			err = e.Err
			continue
		case syscall.Errno:
			return append(dst, e.Error()...)
		case nil:
			return dst
		}
		if d, ok := appendH2ErrText(dst, err); ok {
			return d
		}
		return appendWithoutLocalPorts(dst, err.Error())
	}
}

// appendH2ErrText appends an HTTP/2 stream reset or GOAWAY without the stream ids x/net's messages
// carry ("stream error: stream ID 7; INTERNAL_ERROR"), which would make each reset a failure group
// of its own: "http2 stream reset: INTERNAL_ERROR", "http2 GOAWAY: PROTOCOL_ERROR". False for any
// other error.
func appendH2ErrText(dst []byte, err error) ([]byte, bool) {
	var se http2.StreamError
	var ga http2.GoAwayError
	switch {
	case errors.As(err, &se):
		dst = append(append(dst, "http2 stream reset: "...), se.Code.String()...)
		if se.Cause != nil {
			dst = appendWithoutLocalPorts(append(dst, " ("...), se.Cause.Error())
			dst = append(dst, ')')
		}
		return dst, true
	case errors.As(err, &ga):
		dst = append(append(dst, "http2 GOAWAY: "...), ga.ErrCode.String()...)
		if ga.DebugData != "" {
			dst = appendWithoutLocalPorts(append(dst, " ("...), ga.DebugData)
			dst = append(dst, ')')
		}
		return dst, true
	}
	return dst, false
}

// appendAddr appends a TCP address (with its port, or without it: a local address's port is
// ephemeral) without allocating; other addresses by their String.
func appendAddr(dst []byte, a net.Addr, port bool) []byte {
	if t, ok := a.(*net.TCPAddr); ok {
		ap := t.AddrPort()
		ip := ap.Addr().Unmap() // as TCPAddr.String writes an IPv4 address: 127.0.0.1, not [::ffff:127.0.0.1]
		if port {
			return netip.AddrPortFrom(ip, ap.Port()).AppendTo(dst)
		}
		if ip.Is6() {
			dst = append(dst, '[')
			dst = ip.AppendTo(dst)
			return append(dst, ']')
		}
		return ip.AppendTo(dst)
	}
	str := a.String()
	if port {
		return append(dst, str...)
	}
	return append(dst, str[:len(str)-len(portOf(str))]...)
}

// portOf returns the ":port" ending of a host:port address ("" when there is none).
func portOf(addr string) string {
	i := len(addr)
	for i > 0 && addr[i-1] >= '0' && addr[i-1] <= '9' {
		i--
	}
	if i > 0 && i < len(addr) && addr[i-1] == ':' {
		return addr[i-1:]
	}
	return ""
}

// appendWithoutLocalPorts appends s, dropping the ":port" of every "host:port->" (a connection's
// local address, as net.OpError writes it).
func appendWithoutLocalPorts(dst []byte, s string) []byte {
	for {
		i := indexArrow(s)
		if i < 0 {
			return append(dst, s...)
		}
		head := s[:i]
		dst = append(dst, head[:len(head)-len(portOf(head))]...)
		dst = append(dst, "->"...)
		s = s[i+2:]
	}
}

func indexArrow(s string) int {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '-' && s[i+1] == '>' {
			return i
		}
	}
	return -1
}

// cutText cuts b to at most limit bytes, at a UTF-8 boundary when b is valid there.
func cutText(b []byte, limit int) []byte {
	if len(b) <= limit {
		return b
	}
	i := limit
	for i > limit-utf8.UTFMax && i > 0 && !utf8.RuneStart(b[i]) {
		i--
	}
	return b[:i]
}

// snapshot is the failure table's state at one moment, read by the collector: per slot (the
// "(other)" slot last) its count and sample.
type failSnapshot struct {
	count  [failSlots + 1]int64
	sample [failSlots + 1]*metrics.FailureSample
}

func (t *failTable) slot(i int) *failSlot {
	if i == failSlots {
		return &t.other
	}
	return &t.slots[i]
}

// read fills s with the table's counts and samples now. A slot whose key is not yet published
// reads as empty.
func (t *failTable) read(s *failSnapshot) {
	for i := range s.count {
		sl := t.slot(i)
		if i < failSlots && sl.key.Load() == 0 {
			s.count[i], s.sample[i] = 0, nil
			continue
		}
		s.count[i] = sl.count.Load()
		s.sample[i] = sl.sample.Load()
	}
}

// groups returns the non-empty groups of s with their samples, most frequent first.
func (t *failTable) groups(s *failSnapshot) []metrics.FailureGroup {
	out := []metrics.FailureGroup{}
	for i, n := range s.count {
		if n == 0 {
			continue
		}
		info := t.slot(i).info
		out = append(out, metrics.FailureGroup{Request: info.request, Kind: info.kind, Status: info.status,
			Message: info.message, Count: n, Sample: s.sample[i]})
	}
	metrics.SortFailures(out)
	return out
}

// liveFailures is the collector's state for Sample.Failures: the table now and as last sent.
type liveFailures struct {
	now, sent failSnapshot
	shown     [failSlots + 1]bool // the slot's sample has been sent
}

// next returns the groups for this second's sample: those whose count changed, or whose sample
// arrived, since the last second (each sample sent once), most frequent first; nil when none did.
// now must have been read.
func (l *liveFailures) next(t *failTable) []metrics.FailureGroup {
	var out []metrics.FailureGroup
	for i, n := range l.now.count {
		newSample := l.now.sample[i] != nil && !l.shown[i]
		if n == l.sent.count[i] && !newSample {
			continue
		}
		info := t.slot(i).info
		g := metrics.FailureGroup{Request: info.request, Kind: info.kind, Status: info.status, Message: info.message, Count: n}
		if newSample {
			g.Sample, l.shown[i] = l.now.sample[i], true
		}
		out = append(out, g)
	}
	l.sent = l.now
	metrics.SortFailures(out)
	return out
}
