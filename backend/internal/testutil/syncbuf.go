package testutil

import (
	"strings"
	"sync"
)

// SyncBuffer is a strings.Builder safe for concurrent use: a log written from other goroutines
// (servers, brokers) and read by the test.
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *SyncBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is what was written so far.
func (l *SyncBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
