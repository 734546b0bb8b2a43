//go:build linux

package engine

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawIO reads and writes a TCP connection's non-blocking socket with raw system calls, waiting in
// Go's network poller (syscall.RawConn) when the socket is not ready.
//
// net.Conn's Read and Write make their system calls through syscall.Syscall, which tells the
// scheduler a goroutine is entering a possibly blocking call (entersyscall). When every P was idle
// a moment before — a VU waiting for the target, all others waiting too — that entry also wakes
// the runtime's sysmon thread from its deep sleep, and a freshly woken sysmon polls every 20 µs
// for the next millisecond. At low concurrency the P goes idle thousands of times a second, so the
// load generator pays for a thread switch every few requests, on the very core it runs on
// (measured at C=10 on one core: 5 800 sysmon sleeps and 12 000 context switches a second, ~15 %
// of the client's CPU per request; docs/benchmarks.md). A read or write on a non-blocking socket
// never blocks, so it needs none of that: RawSyscall skips entersyscall, and waiting for the
// socket goes through the poller exactly as net.Conn's own Read does — deadlines (the VU's
// timeout, deadline.go) and Close interrupt it the same way.
//
// The function handed to the RawConn is built once per connection; a request allocates nothing.
type rawIO struct {
	rc      syscall.RawConn
	conn    net.Conn
	fn      func(fd uintptr) bool // r.call
	peekFn  func(fd uintptr)      // r.peek
	peeked  bool                  // peek's answer
	writing bool                  // fn writes (else it reads)
	buf     []byte                // the caller's buffer during one Read or Write
	n       int
	errno   syscall.Errno
}

// init sets r up for c's socket; for anything but a *net.TCPConn, r reads and writes through c.
func (r *rawIO) init(c net.Conn) {
	r.conn = c
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	r.rc = rc
	r.fn = r.call
	r.peekFn = r.peek
}

// peerClosed reports whether the peer has closed or reset the connection, or sent bytes nobody
// asked for, while it was idle: one non-blocking recv(MSG_PEEK) of a byte, which consumes nothing
// (keepalive.go).
func (r *rawIO) peerClosed() bool {
	if r.rc == nil {
		return false
	}
	r.peeked = false
	if r.rc.Control(r.peekFn) != nil {
		return true // the connection is closed
	}
	return r.peeked
}

func (r *rawIO) peek(fd uintptr) {
	var b [1]byte
	for {
		_, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1, unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			r.peeked = false
		default:
			r.peeked = true // a byte, the end of the stream (0 bytes) or an error: not idle and well
		}
		return
	}
}

func (r *rawIO) ok() bool { return r.rc != nil }

func (r *rawIO) call(fd uintptr) bool {
	if r.writing {
		return r.writeAll(fd)
	}
	return r.readOnce(fd)
}

// readOnce is one read(2); false means the socket has nothing yet (wait in the poller).
func (r *rawIO) readOnce(fd uintptr) bool {
	for {
		n, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(r.buf))), uintptr(len(r.buf)))
		switch e {
		case 0:
			r.n = int(n)
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			r.errno = e
			return true
		}
	}
}

// writeAll writes all of r.buf, as net.Conn's Write does; false means the socket's send buffer is
// full (wait in the poller, then go on).
func (r *rawIO) writeAll(fd uintptr) bool {
	for len(r.buf) > 0 {
		n, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(r.buf))), uintptr(len(r.buf)))
		switch e {
		case 0:
			r.n += int(n)
			r.buf = r.buf[n:]
		case unix.EINTR:
		case unix.EAGAIN:
			return false
		default:
			r.errno = e
			return true
		}
	}
	return true
}

// read is net.Conn.Read over the raw socket: io.EOF at the end of the stream, errors as *net.OpError.
func (r *rawIO) read(b []byte) (int, error) {
	if r.rc == nil {
		return r.conn.Read(b)
	}
	if len(b) == 0 {
		return 0, nil
	}
	r.buf, r.n, r.errno, r.writing = b, 0, 0, false
	err := r.rc.Read(r.fn)
	r.buf = nil
	switch {
	case err != nil:
		return 0, err // already a *net.OpError (a deadline, a closed connection)
	case r.errno != 0:
		return 0, r.opError("read", r.errno)
	case r.n == 0:
		return 0, io.EOF
	}
	return r.n, nil
}

// write is net.Conn.Write over the raw socket.
func (r *rawIO) write(b []byte) (int, error) {
	if r.rc == nil {
		return r.conn.Write(b)
	}
	r.buf, r.n, r.errno, r.writing = b, 0, 0, true
	err := r.rc.Write(r.fn)
	r.buf = nil
	switch {
	case err != nil:
		return r.n, err
	case r.errno != 0:
		return r.n, r.opError("write", r.errno)
	}
	return r.n, nil
}

func (r *rawIO) opError(op string, e syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Source: r.conn.LocalAddr(), Addr: r.conn.RemoteAddr(), Err: os.NewSyscallError(op, e)}
}
