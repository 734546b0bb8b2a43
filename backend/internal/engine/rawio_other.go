//go:build !linux

package engine

import "net"

// rawIO is Linux-only (rawio_linux.go); elsewhere a connection reads and writes through net.Conn.
type rawIO struct{ conn net.Conn }

func (r *rawIO) init(c net.Conn)             { r.conn = c }
func (r *rawIO) read(b []byte) (int, error)  { return r.conn.Read(b) }
func (r *rawIO) write(b []byte) (int, error) { return r.conn.Write(b) }

// peerClosed is not known here: a stale connection shows at the request's read (keepalive.go).
func (r *rawIO) peerClosed() bool { return false }
