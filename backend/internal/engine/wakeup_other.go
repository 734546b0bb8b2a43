//go:build !linux

package engine

import "time"

// startWakeups is Linux-only (wakeup_linux.go); elsewhere timers keep the runtime's precision.
func startWakeups(func(time.Duration) (time.Duration, bool), func() time.Duration, func()) (stop func()) {
	return func() {}
}
