// Package testutil holds the real loopback servers and fixtures shared by Volley's tests: a
// counting HTTP target with controllable behaviour, and a free-port helper. Test code only.
package testutil

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Target is a loopback HTTP server that counts every request it receives and every connection
// it accepts, so tests can compare Volley's figures with what the target saw.
type Target struct {
	*httptest.Server
	requests atomic.Int64
	conns    atomic.Int64
	open     atomic.Int64
}

// NewTarget starts a target on 127.0.0.1 serving h; it is closed when the test ends.
func NewTarget(t testing.TB, h http.HandlerFunc) *Target {
	t.Helper()
	tg := &Target{}
	tg.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.requests.Add(1)
		h(w, r)
	}))
	tg.Server.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			tg.conns.Add(1)
			tg.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			tg.open.Add(-1)
		}
	}
	tg.Start()
	t.Cleanup(tg.Close)
	return tg
}

// Requests is the number of requests the target received.
func (t *Target) Requests() int64 { return t.requests.Load() }

// Conns is the number of connections the target accepted.
func (t *Target) Conns() int64 { return t.conns.Load() }

// OpenConns is the number of connections open at the target now (accepted, not yet closed).
func (t *Target) OpenConns() int64 { return t.open.Load() }

// ClosedPort returns a loopback address on which nothing listens.
func ClosedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
