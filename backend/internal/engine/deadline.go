package engine

import (
	"time"
)

// Request timeouts without a timer operation per request.
//
// fasthttp's own timeouts (DoDeadline) set a read and a write deadline on the connection for
// every request: two runtime timer updates and three clock reads each time, ~5 % of a request's
// CPU at high concurrency. Volley instead gives each VU one lazily re-armed timer:
//
//   - before a request the VU stores the request's deadline (monotonic ns since the run started)
//     in v.deadline and arms the timer only if it is not armed already;
//   - when the timer fires it looks at the deadline in flight: none → it disarms; a later one
//     (the VU has moved on to another request) → it re-arms for that one; passed → it marks the
//     request expired and sets a past deadline on the connection the VU is using, which makes the
//     blocked read or write return at once.
//
// A VU that keeps answering within its timeout therefore costs one timer update per timeout
// period, not per request, and a stuck request is cut off on time, as precisely as Go's timers.
// The VU's own store/swap of v.deadline decides, race-free, whether a request expired; a request
// that expired is a timeout whatever the read returned, and the VU drops its connections so that
// none carrying the past deadline is reused.

const (
	noDeadline = 0
	expired    = -1
)

// longAgo is a deadline in the past: setting it interrupts a blocked read or write.
var longAgo = time.Unix(1, 0)

// arm records the deadline (monotonic, since the run started) of the request the VU is about to
// send and makes sure the VU's timer will look at it. The timer is set from a fresh clock read, not
// from the time the request began: a VU held up between the two (a busy generator) must not push
// its deadline back.
func (v *vu) arm(deadline time.Duration) {
	v.deadline.Store(int64(deadline))
	if !v.armed.Load() && v.armed.CompareAndSwap(false, true) {
		v.timer.Reset(deadline - v.e.now())
	}
}

// disarm ends the request in flight and reports whether the timer expired it.
func (v *vu) disarm() bool {
	return v.deadline.Swap(noDeadline) == expired
}

// onTimer is the VU timer's function (it runs on its own goroutine).
func (v *vu) onTimer() {
	for {
		d := v.deadline.Load()
		if d > noDeadline {
			now := int64(v.e.now())
			if now < d {
				v.timer.Reset(time.Duration(d - now))
				return
			}
			if !v.deadline.CompareAndSwap(d, expired) {
				continue // the request ended or another began: look again
			}
			// Interrupt the connection in use. If the request already ended, the VU has dropped
			// every connection it had, so c (loaded while the request was in flight) is closed;
			// if the request has not written yet, its first write sees the expiry itself
			// (countingConn.Write).
			if c := v.conn.Load(); c != nil && v.deadline.Load() == expired {
				_ = c.Conn.SetDeadline(longAgo)
			}
		}
		// Nothing (more) to watch: disarm, then look once more for a request that began in
		// between and saw the timer still armed.
		v.armed.Store(false)
		if v.deadline.Load() <= noDeadline || !v.armed.CompareAndSwap(false, true) {
			return
		}
	}
}

// now is the time since the run started, from the monotonic clock (one clock read, against two
// for time.Now).
func (e *Engine) now() time.Duration { return time.Since(e.start) }
