//go:build linux

package engine

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// startWakeups makes Go's timers fire on time while an open-model run waits for scheduled
// iterations, and returns the function that ends it. next(now) gives the next moment a wakeup is
// wanted (false: none any more); now is the run's clock.
//
// A VU sleeps until its iteration is due with time.Sleep. When the runtime has nothing else to do
// it waits for timers in epoll_pwait, whose timeout is in whole milliseconds (rounded up), so such a
// sleep ends up to 1 ms late — schedule lag that is the generator's, not the target's. A one-shot
// timerfd registered with Go's network poller (os.NewFile on a non-blocking fd) and armed for the
// next due time wakes epoll precisely; each wakeup runs the runtime's expired timers, so the VU
// sleeping until that moment starts on time. Without a timerfd (an old kernel, a sandbox) the run
// goes on with the runtime's own precision. guard is deferred at the top of its goroutine (the
// engine's panic recovery).
func startWakeups(next func(now time.Duration) (time.Duration, bool), now func() time.Duration, guard func()) (stop func()) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return func() {}
	}
	f := os.NewFile(uintptr(fd), "volley-wakeups") // non-blocking: reads park in the poller
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer guard()
		var expirations [8]byte
		for {
			t := now()
			w, ok := next(t)
			if !ok {
				return
			}
			spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(w-t, time.Microsecond)))}
			if unix.TimerfdSettime(fd, 0, &spec, nil) != nil {
				return
			}
			if _, err := f.Read(expirations[:]); err != nil {
				return // closed by stop
			}
		}
	}()
	return func() {
		_ = f.Close()
		<-done
	}
}
