package bus

import (
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Refusals logs refused agents (a wrong join token, an id already connected, another protocol)
// so that whoever runs the controller sees why an agent does not show up. Anyone who can reach
// the listener can be refused, so it logs at most refusalBurst lines per refusalWindow and then
// one line counting those it left out: a flood of bad connections cannot flood the log. A nil
// *Refusals, or one with a nil logger, logs nothing.
type Refusals struct {
	log *slog.Logger
	now func() time.Time

	mu     sync.Mutex
	window time.Time // start of the current window
	n      int       // refusals in it
	left   int       // refusals not logged since the last line
}

const (
	refusalBurst  = 5
	refusalWindow = 10 * time.Second
)

// NewRefusals logs refusals on log (nil: nowhere).
func NewRefusals(log *slog.Logger) *Refusals { return &Refusals{log: log, now: time.Now} }

// Refused logs one refusal: msg with the key/value args (never a secret), as a warning.
func (r *Refusals) Refused(msg string, args ...any) {
	if r == nil || r.log == nil {
		return
	}
	r.mu.Lock()
	now := r.now()
	if now.Sub(r.window) >= refusalWindow {
		r.window, r.n = now, 0
	}
	r.n++
	if r.n > refusalBurst {
		r.left++
		r.mu.Unlock()
		return
	}
	left := r.left
	r.left = 0
	r.mu.Unlock()
	if left > 0 {
		args = append(args, "not_logged_before", left)
	}
	r.log.Warn(msg, args...)
}

// ClipID is a peer-given name (an agent id, a label key) as a log or error value: at most 64
// bytes of it, the rest marked "…", so that a huge one cannot make a huge line.
func ClipID(s string) string { return clipID(s) }

// clipID is ClipID.
func clipID(s string) string {
	if len(s) > 64 {
		return strings.ToValidUTF8(s[:64], "") + "…"
	}
	return s
}
