//go:build linux

package engine

import (
	"os"
	"time"
	"unsafe"

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
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer guard()
		var t timerfd
		t.read = t.readOnce
		for {
			n := now()
			w, ok := next(n)
			if !ok {
				return
			}
			if !t.arm(uintptr(fd), max(w-n, time.Microsecond)) {
				return
			}
			if rc.Read(t.read) != nil || t.errno != 0 {
				return // closed by stop
			}
		}
	}()
	return func() {
		_ = f.Close()
		<-done
	}
}

// timerfd arms and reads the wakeup timer with raw system calls, as rawIO does for sockets
// (rawio_linux.go): timerfd_settime and a read of a ready timerfd never block, and
// syscall.Syscall's entersyscall would wake the runtime's sysmon thread from its deep sleep at
// every wakeup — when the process was idle, as it is between arrivals at modest rates — and a
// freshly woken sysmon polls every 20 µs for the next millisecond, a thread switch each time on the
// generator's own core. Reading waits in the network poller (syscall.RawConn) like a socket.
type timerfd struct {
	read  func(fd uintptr) bool // t.readOnce, built once
	buf   [8]byte               // the expiration count
	errno unix.Errno
}

// arm sets the one-shot timer to expire after d; false if the kernel refused.
func (t *timerfd) arm(fd uintptr, d time.Duration) bool {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	_, _, e := unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	return e == 0
}

// readOnce is one read(2) of the expiration count; false means the timer has not expired yet
// (wait in the poller).
func (t *timerfd) readOnce(fd uintptr) bool {
	for {
		_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&t.buf[0])), uintptr(len(t.buf)))
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			t.errno = e
			return true
		}
	}
}
