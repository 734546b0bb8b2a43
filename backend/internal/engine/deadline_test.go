package engine

import (
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// A request cut off by the VU's timeout timer is one timeout; the connection it poisoned with a
// past deadline is dropped, so the requests after it on the same VU succeed on a new connection.
func TestTimedOutRequestDoesNotPoisonTheNext(t *testing.T) {
	var n, hung, answered atomic.Int64
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%3 == 0 {
			hung.Add(1)
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
			return
		}
		answered.Add(1)
	})
	begin := time.Now()
	sum, d := runProbed(t, mustPlan(t, closedPlan(tg.URL, 2, "2s", "200ms", "")))
	if took, limit := time.Since(begin), 4*time.Second+d.probe.Slack(testutil.StopChain); took > limit {
		t.Errorf("run took %v, want ≤ %v", took, limit)
	}
	timeouts := sum.ErrorKinds["timeout"]
	if len(sum.ErrorKinds) != 1 || sum.Errors != timeouts || sum.Successes+timeouts != sum.Requests {
		t.Errorf("kinds %v: want requests %d = successes %d + timeouts", sum.ErrorKinds, sum.Requests, sum.Successes)
	}
	// A prompt answer crosses 3 wakeups (the send, the target's handler, the read). While 3 of the
	// latest measured stay within the 200 ms timeout, the timeouts are exactly the hung requests
	// and every answer is a success. Later wakeups can stretch a prompt answer past the timeout
	// (and a request can time out before it reaches the target): then each hung request is still
	// a timeout and each success an answer.
	calm := d.probe.Slack(3) < 200*time.Millisecond
	if !calm {
		t.Logf("a wakeup was %v late: answers may time out too; the exact split is not checked", d.probe.Max)
	}
	if calm && (timeouts != hung.Load() || sum.Successes != answered.Load() || sum.Requests != tg.Requests()) ||
		timeouts < hung.Load() || sum.Successes > answered.Load() || sum.Requests < tg.Requests() {
		t.Errorf("timeouts %d successes %d requests %d; target hung %d, answered %d of %d", timeouts, sum.Successes, sum.Requests,
			hung.Load(), answered.Load(), tg.Requests())
	}
	// every timeout closes its connection; the VU's next request dials a new one
	if conns := tg.Conns(); conns < hung.Load() || conns > timeouts+2 {
		t.Errorf("target accepted %d connections for %d timeouts (%d hung) and 2 VUs", conns, timeouts, hung.Load())
	}
	// a success is a prompt answer: well within the timeout on a quiet machine, at most the
	// timeout (by a late timer) on a busy one
	if calm {
		between(t, "max ms (successes)", sum.Latency.Max, 0, 150)
	} else {
		between(t, "max ms (successes)", sum.Latency.Max, 0, 200+d.worst)
	}
}

// Answers land on both sides of the deadline, many times a second: every request ends exactly once,
// as a success within the timeout (plus timer lateness) or as a timeout, and nothing hangs. Run with
// -race, it also exercises the VU/timer handshake of deadline.go.
func TestTimeoutTimerUnderChurn(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(rand.Int64N(int64(8 * time.Millisecond))))
	})
	begin := time.Now()
	sum, d := runProbed(t, mustPlan(t, closedPlan(tg.URL, 8, "2s", "4ms", "")))
	if took := time.Since(begin); took > 4*time.Second+time.Duration(d.worst*float64(time.Millisecond)) {
		t.Errorf("run took %v", took)
	}
	// a reconnect that cannot finish within what is left of its 4 ms is a connect timeout
	timeouts := sum.ErrorKinds["timeout"] + sum.ErrorKinds["connect_timeout"]
	if sum.Successes+timeouts != sum.Requests || sum.Errors != timeouts {
		t.Errorf("requests %d = successes %d + timeouts %d? kinds %v", sum.Requests, sum.Successes, timeouts, sum.ErrorKinds)
	}
	// The shares below hold while wakeups are late by less than the 4 ms timeout (p99); on a
	// machine so busy that they are not, most requests time out before they leave, and only the
	// accounting above is checked.
	calm := d.probe.P99 < 4*time.Millisecond
	if !calm {
		t.Logf("1%% of wakeups were over %v late: the shares are not checked", d.probe.P99)
	}
	if calm && (timeouts < sum.Requests/10 || sum.Successes < sum.Requests/10) {
		t.Errorf("want both outcomes in numbers: successes %d timeouts %d", sum.Successes, timeouts)
	}
	// a request the timer expired before its first byte left is counted but never reached the target
	if got := tg.Requests(); got > sum.Requests || calm && got < sum.Requests*9/10 {
		t.Errorf("target saw %d of %d requests", got, sum.Requests)
	}
	between(t, "max ms (successes)", sum.Latency.Max, 0, 4+50+d.worst) // the timeout, by a late timer
}

// The timer is set for the request's deadline as it stands now: a VU held up after its request
// began (deadline already near or past) is expired at the deadline, not a full timeout later; a
// deadline ahead is expired at that instant, not before. Fake time (synctest): exact.
func TestArmUsesTheClockNotTheRequestStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &Engine{start: time.Now().Add(-time.Second)} // the run is 1 s old
		v := &vu{e: e}
		v.timer = time.AfterFunc(time.Hour, v.onTimer)
		v.timer.Stop()
		began := 500 * time.Millisecond // the request began at 0.5 s, its VU then stalled
		v.arm(began + 400*time.Millisecond)
		synctest.Wait()
		if v.deadline.Load() != expired {
			t.Fatal("a deadline 100 ms in the past was not expired at once")
		}
		if !v.disarm() {
			t.Fatal("disarm does not report the expiry")
		}
		v.arm(time.Second + 200*time.Millisecond) // 200 ms ahead
		time.Sleep(200*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		if v.deadline.Load() == expired {
			t.Fatal("expired 1 ns before its deadline")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if v.deadline.Load() != expired {
			t.Fatal("not expired at its deadline")
		}
	})
}
