//go:build !linux

package engine

import "net"

func cork(net.Conn) {}
