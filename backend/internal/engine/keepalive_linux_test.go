//go:build linux

package engine

import (
	"net"
	"syscall"
)

// cork holds what c writes next until it is closed (TCP_CORK), so that an answer and the FIN
// after it leave in one segment.
func cork(c net.Conn) {
	if rc, err := c.(*net.TCPConn).SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, 1) })
	}
}
