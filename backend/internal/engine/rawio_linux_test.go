//go:build linux

package engine

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// tcpPair returns both ends of a loopback TCP connection, the client end wrapped in rawIO.
func tcpPair(t *testing.T) (*rawIO, net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	var r rawIO
	r.init(c)
	if !r.ok() {
		t.Fatal("rawIO not set up for a *net.TCPConn")
	}
	return &r, c, s
}

// A write larger than the socket buffers fills them (EAGAIN), waits in the poller, and goes on
// until every byte is written, in order; reads return what arrived and io.EOF at the end.
func TestRawIOLargeWriteAndReadToEOF(t *testing.T) {
	r, c, s := tcpPair(t)
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<19) // 8 MiB
	got := make(chan []byte, 1)
	go func() {
		time.Sleep(50 * time.Millisecond) // let the writer hit a full send buffer first
		b, _ := io.ReadAll(s)
		got <- b
	}()
	n, err := r.write(want)
	if err != nil || n != len(want) {
		t.Fatalf("write: %d, %v; want %d, nil", n, err, len(want))
	}
	c.(*net.TCPConn).CloseWrite()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("peer read %d bytes, not the %d written", len(b), len(want))
	}

	go func() { s.Write([]byte("hello")); s.Close() }()
	var buf bytes.Buffer
	p := make([]byte, 3)
	for {
		n, err := r.read(p)
		buf.Write(p[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
	if buf.String() != "hello" {
		t.Fatalf("read %q", buf.String())
	}
}

// A deadline set from another goroutine (what the VU's timeout timer does) ends a read waiting
// in the poller with os.ErrDeadlineExceeded, a timeout.
func TestRawIODeadlineInterruptsARead(t *testing.T) {
	r, c, _ := tcpPair(t)
	time.AfterFunc(50*time.Millisecond, func() { c.SetDeadline(longAgo) })
	start := time.Now()
	_, err := r.read(make([]byte, 16))
	if !errors.Is(err, os.ErrDeadlineExceeded) || !isTimeout(err) {
		t.Fatalf("read: %v, want a deadline error", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("read returned after %v", el)
	}
}

// Closing the connection ends a waiting read with net.ErrClosed.
func TestRawIOCloseInterruptsARead(t *testing.T) {
	r, c, _ := tcpPair(t)
	time.AfterFunc(50*time.Millisecond, func() { c.Close() })
	if _, err := r.read(make([]byte, 16)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read: %v, want net.ErrClosed", err)
	}
}

// A peer that resets the connection gives errors classified as resets, for reads and writes.
func TestRawIOResetIsClassified(t *testing.T) {
	r, _, s := tcpPair(t)
	s.(*net.TCPConn).SetLinger(0)
	s.Close()
	time.Sleep(20 * time.Millisecond)
	_, err := r.read(make([]byte, 16))
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "read" || classify(err) != metrics.Reset {
		t.Fatalf("read after reset: %v (class %v), want a read *net.OpError classified reset", err, classify(err))
	}
	_, err = r.write([]byte("x"))
	if err == nil || classify(err) != metrics.Reset {
		t.Fatalf("write after reset: %v (class %v), want a reset", err, classify(err))
	}
}

// Reads and writes allocate nothing.
func TestRawIOAllocatesNothing(t *testing.T) {
	r, _, s := tcpPair(t)
	msg := []byte("ping")
	buf := make([]byte, 16)
	go io.Copy(s, s) // echo
	rd := readerFunc(r.read)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := r.write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(rd, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per write+read, want 0", allocs)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
