package testutil

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// probeStep is how long the scheduling probe sleeps between wakeups.
const probeStep = time.Millisecond

// SchedProbe measures how late this process's goroutines wake up while a test runs: one goroutine
// sleeps probeStep again and again and records by how much each wakeup overshoots. On a quiet
// machine a wakeup is ~0.1 ms late; beside other busy processes, tens or hundreds of ms. A test
// whose timing a busy machine stretches widens its margins by what the probe measured (a late
// wakeup delays a load generator's send and a target's answer alike), not by a guessed constant.
type SchedProbe struct {
	stop  chan struct{}
	done  chan struct{}
	lates []time.Duration // written by the probe until done is closed
}

// SchedDelay is what a SchedProbe measured: the number of wakeups and their lateness.
type SchedDelay struct {
	Wakeups       int
	P50, P99, Max time.Duration
	lates         []time.Duration // sorted
}

// StartSchedProbe starts measuring; Stop ends it (the test's cleanup stops it too).
func StartSchedProbe(t testing.TB) *SchedProbe {
	p := &SchedProbe{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			t0 := time.Now()
			time.Sleep(probeStep)
			p.lates = append(p.lates, max(0, time.Since(t0)-probeStep))
		}
	}()
	t.Cleanup(func() { p.Stop() })
	return p
}

// Stop ends the measurement (once; later calls return the same figures).
func (p *SchedProbe) Stop() SchedDelay {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	l := slices.Clone(p.lates)
	slices.Sort(l)
	d := SchedDelay{Wakeups: len(l), lates: l}
	if len(l) > 0 {
		d.P50, d.P99, d.Max = l[len(l)/2], l[len(l)*99/100], l[len(l)-1]
	}
	return d
}

// Later counts the wakeups later than by d.
func (d SchedDelay) Later(d0 time.Duration) int {
	i, _ := slices.BinarySearch(d.lates, d0+1)
	return len(d.lates) - i
}

// Slack is how much later than on a quiet machine a span of wall time may end when n wakeups in a
// row lie on it (a stop crosses the context's timer, each VU, the collector, the summary): n times
// the latest wakeup measured, since each of them may have been that late. Zero on a machine whose
// wakeups were never late, so the bound it widens is the quiet machine's promise.
func (d SchedDelay) Slack(n int) time.Duration { return time.Duration(n) * d.Max }

// StopChain is the number of wakeups a run's end or stop is given in Slack: the grace or context
// timer, the VUs seeing the stop, the collector's last tick, the summary, the caller.
const StopChain = 10

// String gives the figures for a test log.
func (d SchedDelay) String() string {
	return fmt.Sprintf("scheduling delay over %d wakeups: p50 %v, p99 %v, max %v", d.Wakeups, d.P50, d.P99, d.Max)
}
