package testutil

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// TCPServer is a loopback TCP listener that runs a handler on a goroutine per connection, counts
// the connections it accepted, and at the end of the test closes the listener and every open
// connection and waits for the handlers (which return when their connection's reads fail).
type TCPServer struct {
	Addr  string
	conns atomic.Int64
	wg    sync.WaitGroup
	mu    sync.Mutex
	open  map[net.Conn]struct{}
}

// ServeTCP starts a TCPServer on 127.0.0.1 whose handler serves each accepted connection; the
// connection is closed when the handler returns. It is closed when the test ends.
func ServeTCP(t testing.TB, handle func(c net.Conn)) *TCPServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &TCPServer{Addr: ln.Addr().String(), open: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			s.mu.Lock()
			s.open[c] = struct{}{}
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer func() {
					s.mu.Lock()
					delete(s.open, c)
					s.mu.Unlock()
					_ = c.Close()
				}()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		s.mu.Lock()
		for c := range s.open {
			_ = c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

// Conns is the number of connections the server accepted.
func (s *TCPServer) Conns() int64 { return s.conns.Load() }

// RawServer is a loopback TCP server that parses HTTP/1.1 requests and answers each with bytes the
// test chooses, for behaviours net/http will not produce (a HEAD announcing a chunked body, a
// connection reset after reading the request).
type RawServer struct {
	*TCPServer
	requests atomic.Int64
}

// RawAnswer is what a RawServer writes for one request; Reset closes the connection with an RST
// instead of answering.
type RawAnswer struct {
	Bytes []byte
	Reset bool
	Close bool
}

// NewRawServer starts a raw server on 127.0.0.1; it is closed when the test ends.
func NewRawServer(t testing.TB, answer func(r *http.Request) RawAnswer) *RawServer {
	t.Helper()
	s := &RawServer{}
	s.TCPServer = ServeTCP(t, func(c net.Conn) { s.serve(c, answer) })
	return s
}

func (s *RawServer) serve(c net.Conn, answer func(r *http.Request) RawAnswer) {
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		s.requests.Add(1)
		a := answer(req)
		if a.Reset {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			return
		}
		if _, err := c.Write(a.Bytes); err != nil || a.Close {
			return
		}
	}
}

// Requests is the number of requests the server read.
func (s *RawServer) Requests() int64 { return s.requests.Load() }

// EndlessBodyTarget starts a loopback TCP server that answers every request with a 200 GB
// Content-Length and then sends zeros as fast as the connection takes them (the answer that made
// `volley run` die of "out of memory" while it allocated bodies at their declared length), and
// returns its address. It and its connections are closed when the test ends.
func EndlessBodyTarget(t testing.TB) string {
	t.Helper()
	zeros := make([]byte, 64<<10)
	return ServeTCP(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 200000000000\r\n\r\n"); err != nil {
			return
		}
		for {
			if _, err := c.Write(zeros); err != nil {
				return
			}
		}
	}).Addr
}
