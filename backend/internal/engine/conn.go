package engine

import (
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// countingConn counts the bytes a VU's connection reads and writes into the VU's shard, and the
// connection itself in the recorder's open-connection gauge. One is allocated per connection,
// never per request.
type countingConn struct {
	net.Conn
	shard  *metrics.Shard
	rec    *metrics.Recorder
	closed atomic.Bool
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.shard.BytesIn(n)
	}
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.shard.BytesOut(n)
	}
	return n, err
}

func (c *countingConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.rec.ConnClosed()
	}
	return c.Conn.Close()
}

// dialError marks an error as happening while connecting, so that it is classified as a connect
// failure (connect_refused, connect_timeout) and not as a failure of an established exchange.
type dialError struct{ err error }

func (e *dialError) Error() string { return "dial: " + e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// dialer returns a fasthttp DialTimeout function bound to one VU's shard. connectTimeout caps the
// TCP connect; the request's own remaining timeout caps it too.
func dialer(shard *metrics.Shard, rec *metrics.Recorder, connectTimeout time.Duration) func(addr string, timeout time.Duration) (net.Conn, error) {
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		if connectTimeout > 0 && (timeout <= 0 || connectTimeout < timeout) {
			timeout = connectTimeout
		}
		d := net.Dialer{Timeout: timeout}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return nil, &dialError{err}
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		rec.ConnOpened()
		return &countingConn{Conn: c, shard: shard, rec: rec}, nil
	}
}

func isDialError(err error) bool {
	var d *dialError
	return errors.As(err, &d)
}
