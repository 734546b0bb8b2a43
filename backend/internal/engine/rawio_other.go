//go:build !linux

package engine

import "net"

// rawIO is Linux-only (rawio_linux.go); elsewhere connections use net.Conn's Read and Write.
type rawIO struct{}

func (r *rawIO) init(net.Conn)             {}
func (r *rawIO) ok() bool                  { return false }
func (r *rawIO) read([]byte) (int, error)  { panic("unreachable") }
func (r *rawIO) write([]byte) (int, error) { panic("unreachable") }
