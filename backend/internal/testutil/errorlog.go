package testutil

import (
	"io"
	"log"
	"strings"
	"sync/atomic"
	"testing"
)

// ExpectedErrors is an http.Server ErrorLog for errors a test causes on purpose (a client that
// rejects the server's certificate makes the server log "http: TLS handshake error" for every
// connection): it counts the lines that contain one of the expected texts instead of printing
// them, so that a failure stays the first thing a reader of the test log sees; any other line goes
// to the test log.
type ExpectedErrors struct {
	t        testing.TB
	expected []string
	n        atomic.Int64
}

// ExpectErrors returns the ErrorLog to give a test server, and the counter behind it.
func ExpectErrors(t testing.TB, expected ...string) (*log.Logger, *ExpectedErrors) {
	e := &ExpectedErrors{t: t, expected: expected}
	return log.New(e, "", 0), e
}

// Write counts or logs one line of the server's error log.
func (e *ExpectedErrors) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	for _, x := range e.expected {
		if strings.Contains(line, x) {
			e.n.Add(1)
			return len(p), nil
		}
	}
	e.t.Log("server: " + line)
	return len(p), nil
}

// LogWriter is an io.Writer whose every write goes to t's log, prefixed: for a log a component
// writes while a test runs (a store's slow statements on a busy machine), so that it is shown
// with that test, when it fails, instead of on the test binary's stderr.
func LogWriter(t testing.TB, prefix string) io.Writer { return logWriter{t, prefix} }

type logWriter struct {
	t      testing.TB
	prefix string
}

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(w.prefix + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Count is the number of expected lines the server logged.
func (e *ExpectedErrors) Count() int64 { return e.n.Load() }
