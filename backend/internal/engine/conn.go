package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/volley-load/volley/backend/internal/netpolicy"
)

// countingConn counts the bytes a VU's connection reads and writes into the VU's shard, and the
// connection itself in the recorder's open-connection gauge; it also tells the VU's timeout timer
// which connection to interrupt (deadline.go). One is allocated per connection, never per request.
type countingConn struct {
	net.Conn
	vu      *vu
	closed  atomic.Bool
	raw     rawIO // the connection's reads and writes: raw syscalls on Linux TCP (rawio_linux.go)
	readErr error // the read error that ended the connection, if any (httpConn.do)
	written int64 // bytes written (keepalive.go: was anything of a request sent?)
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.raw.read(b)
	if n > 0 {
		c.vu.shard.BytesIn(n)
	}
	if err != nil && err != io.EOF {
		c.readErr = err
	}
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	if v := c.vu; v.conn.Load() != c {
		// First write on this connection since the VU last used another: publish it, then look
		// at the deadline (in this order; onTimer does the reverse) so that a timer firing now
		// either sees this connection or is seen here.
		v.conn.Store(c)
		if v.deadline.Load() == expired {
			return 0, os.ErrDeadlineExceeded
		}
	}
	n, err := c.raw.write(b)
	if n > 0 {
		c.vu.shard.BytesOut(n)
		c.written += int64(n)
	}
	return n, err
}

func (c *countingConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.vu.e.rec.ConnClosed()
	}
	return c.Conn.Close()
}

// firstDials is how many VUs may make their first connect at the same time.
const firstDials = 256

// dialError marks an error as happening while connecting, so that it is classified as a connect
// failure (connect_refused, connect_timeout) and not as a failure of an established exchange.
type dialError struct{ err error }

func (e *dialError) Error() string { return "dial: " + e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// dial connects one of the VU's connections. The TCP connect is capped by the plan's
// connect_timeout (default: its timeout) and by what is left of the request's deadline. The
// target policy judges the host before it is resolved and every address the dialer is about to
// connect to (dialAside); a refusal is a dialError around a *netpolicy.Denied (blocked_target).
func (v *vu) dial(addr string) (net.Conn, error) {
	timeout := v.e.connectTimeout
	if d := v.deadline.Load(); d > noDeadline {
		if left := time.Duration(d) - v.e.now(); left < timeout {
			timeout = max(left, time.Millisecond)
		}
	}
	if !v.dialled {
		// A VU's first connect waits for one of a bounded number of slots: a run starting
		// thousands of VUs at once neither floods the target with SYNs nor holds thousands
		// of dialling goroutines (and their stacks) at the same moment.
		v.dialled = true
		v.e.dialSlots <- struct{}{}
		defer func() { <-v.e.dialSlots }()
	}
	c, err := dialAside(addr, timeout, v.e.policy)
	if err != nil {
		return nil, &dialError{err}
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	v.e.rec.ConnOpened()
	cc := &countingConn{Conn: c, vu: v}
	cc.raw.init(c)
	return cc, nil
}

// dialAside connects on a short-lived goroutine of its own. net.Dial's call chain is deep: run on
// the VU's goroutine it would grow that stack from the 8 KiB the request path needs to 16 KiB for
// the rest of the run (stacks only shrink at a GC, and only by half), 8 KiB more per VU. A dial
// costs far more than the goroutine, and happens once per connection.
//
// pol's guard runs on that goroutine too: it refuses a denied host name or literal before any
// lookup, and its Control hook refuses a denied address after resolution and before connect(2)
// — for each address the dialer tries (happy eyeballs, several A/AAAA records), so a name that
// resolves, or is rebound, to a denied address cannot be reached.
func dialAside(addr string, timeout time.Duration, pol *netpolicy.Policy) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result) // unbuffered (one allocation, not two): the caller always receives
	go func() {
		ctrl, err := pol.DialGuard(addr)
		if err != nil {
			done <- result{nil, err}
			return
		}
		d := net.Dialer{Timeout: timeout, Control: ctrl}
		c, err := d.Dial("tcp", addr)
		done <- result{c, err}
	}()
	r := <-done
	return r.c, r.err
}

func isDialError(err error) bool {
	var d *dialError
	return errors.As(err, &d)
}

// dialTimed is vu.dial with the connect time added to the VU's request (timing.go); since is when
// the dial ended, where a TLS handshake's time begins.
func (v *vu) dialTimed(addr string) (c net.Conn, since time.Duration, err error) {
	t0 := v.e.now()
	c, err = v.dial(addr)
	since = v.e.now()
	v.tm.connect += since - t0
	if err == nil {
		v.tm.fresh = true
	}
	return c, since, err
}

// handshake makes the TLS handshake of a new connection, adding its time (from since) to the VU's
// request; on failure the connection is closed.
func (v *vu) handshake(ctx context.Context, c net.Conn, cfg *tls.Config, since time.Duration) (*tls.Conn, error) {
	tc := tls.Client(c, cfg)
	err := tc.HandshakeContext(ctx)
	v.tm.tls += v.e.now() - since
	v.tm.handshook = true
	if err != nil {
		_ = tc.Close()
		return nil, err
	}
	return tc, nil
}
