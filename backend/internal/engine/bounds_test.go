package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// runFor starts p, cancels it after `after` and returns Run's results and how long Run took to
// return once cancelled.
func runFor(t *testing.T, p *plan.Plan, after time.Duration) (*metrics.Summary, error, time.Duration) {
	t.Helper()
	e, err := newEngine(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		sum *metrics.Summary
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		sum, err := e.Run(ctx)
		done <- result{sum, err, time.Now()}
	}()
	var stopped time.Time
	select {
	case r := <-done: // ended (or failed) by itself
		cancel()
		return r.sum, r.err, 0
	case <-time.After(after):
		stopped = time.Now()
		cancel()
	}
	select {
	case r := <-done:
		return r.sum, r.err, r.at.Sub(stopped)
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of the stop")
	}
	return nil, nil, 0
}

func panicAt(t *testing.T, point string, id int) {
	var once atomic.Bool
	restore := SetPanicHookForTest(func(p string, i int) {
		if p == point && i == id && once.CompareAndSwap(false, true) {
			panic("injected at " + point)
		}
	})
	t.Cleanup(restore)
}

// A panic in any of the run's goroutines ends that run, at once, with a *PanicError naming where;
// the process (this test) goes on.
func TestAPanicFailsTheRunNotTheProcess(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	for _, c := range []struct {
		name, point string
		id          int
		plan, where string
	}{
		{"closed VU", "vu", 3, closedPlan(tg.URL, 10, "1m", "1s", ""), "VU 3"},
		{"open VU", "vu", 1, openPlan(tg.URL, 200, "1m", 50, "1s", ""), "VU 1"},
		{"collector", "collector", 1, closedPlan(tg.URL, 2, "1m", "1s", ""), "collector"},
		{"executor", "executor", -1, closedPlan(tg.URL, 2, "1m", "1s", ""), "executor"},
	} {
		t.Run(c.name, func(t *testing.T) {
			panicAt(t, c.point, c.id)
			start := time.Now()
			sum, err, _ := runFor(t, mustPlan(t, c.plan), 30*time.Second)
			var pe *PanicError
			if !errors.As(err, &pe) || pe.Where != c.where || !strings.Contains(pe.Error(), "injected") {
				t.Fatalf("err = %v, want a panic in %s", err, c.where)
			}
			if len(pe.Stack) == 0 {
				t.Error("no stack")
			}
			if sum == nil {
				t.Error("no summary of what ran")
			}
			// stopped at once: within the plan's graceful stop (5s) and a second, not its minute
			if d := time.Since(start); d > 8*time.Second {
				t.Errorf("the failed run took %s to end", d)
			}
		})
	}
}

// Stop is honoured within graceful_stop + 1 s whatever the plan: the highest rate, many VUs, a
// target that never answers with the longest timeout, the longest think times.
func TestStopWithinGracefulStopWhateverThePlan(t *testing.T) {
	if testing.Short() {
		t.Skip("starts thousands of VUs")
	}
	hang := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	quick := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	const grace = time.Second
	g := `,"graceful_stop":"1s"`
	for _, c := range []struct{ name, plan string }{
		{"max rate, hanging target", fmt.Sprintf(`{"name":"r","requests":[{"url":%q}],"http":{"timeout":"1h"},
			"load":{"executor":"constant-arrival-rate","rate":%d,"duration":"24h","pre_allocated_vus":100,"max_vus":1000%s}}`, hang.URL, plan.MaxRatePerSecond, g)},
		{"ramping rate to the max", fmt.Sprintf(`{"name":"r","requests":[{"url":%q}],"http":{"timeout":"1h"},
			"load":{"executor":"ramping-arrival-rate","start_rate":%d,"time_unit":"1ms","stages":[{"duration":"24h","target":1000}],"pre_allocated_vus":10,"max_vus":100%s}}`, quick.URL, 1000, g)},
		{"many VUs, long think time", fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],"think_time":"1h",
			"load":{"executor":"constant-vus","vus":3000,"duration":"24h"%s}}`, quick.URL, g)},
		{"long timeout, hanging target", fmt.Sprintf(`{"name":"h","requests":[{"url":%q}],"http":{"timeout":"1h","connect_timeout":"1h"},
			"load":{"executor":"ramping-vus","stages":[{"duration":"1s","target":1500},{"duration":"23h","target":1500}]%s}}`, hang.URL, g)},
		{"iterations with think time", fmt.Sprintf(`{"name":"i","requests":[{"url":%q,"think_time":"59m-1h"}],
			"load":{"executor":"per-vu-iterations","vus":1000,"iterations":%d,"max_duration":"24h"%s}}`, quick.URL, plan.MaxIterations, g)},
	} {
		t.Run(c.name, func(t *testing.T) {
			probe := testutil.StartSchedProbe(t)
			_, err, took := runFor(t, mustPlan(t, c.plan), 1500*time.Millisecond)
			delay := probe.Stop()
			if err != nil {
				t.Fatal(err)
			}
			// The promise is graceful_stop + 1 s on a machine that runs the engine when it asks.
			// The stop is a chain of wakeups — the grace timer, thousands of VUs seeing the
			// abandon, the collector's last tick, the summary — each of which a busy machine
			// delays: allow 10 of the worst delays the probe measured during this run (≈0 on a
			// quiet machine, so the bound stays the promise there).
			limit := grace + time.Second + delay.Slack(testutil.StopChain)
			t.Logf("returned %s after the stop (limit %s; %s)", took.Round(time.Millisecond), limit.Round(time.Millisecond), delay)
			if took > limit {
				t.Errorf("Run returned %s after the stop; want ≤ graceful_stop (%s) + 1s + 10 × the worst scheduling delay (%s)", took, grace, delay.Max)
			}
		})
	}
}

// {{random_int}} at the widest bounds draws without overflow (b − a + 1 wraps in int64).
func TestRandomIntAtTheInt64Bounds(t *testing.T) {
	v := &vu{e: &Engine{start: time.Now()}}
	for _, c := range []struct{ a, b int64 }{{math.MinInt64, math.MaxInt64}, {math.MinInt64, 0}, {-1, math.MaxInt64},
		{-plan.MaxRandomInt, plan.MaxRandomInt}, {5, 5}, {-3, 3}} {
		tm := tmpl{{Kind: plan.PartRandInt, A: c.a, B: c.b}}
		var buf []byte
		for range 1000 {
			buf = tm.render(buf[:0], v)
			n, err := strconv.ParseInt(string(buf), 10, 64)
			if err != nil || n < c.a || n > c.b {
				t.Fatalf("[%d, %d]: drew %q", c.a, c.b, buf)
			}
		}
	}
}

func TestPlanAndMetricsAgreeOnTheNameCap(t *testing.T) {
	if plan.MaxNames != metrics.MaxNames {
		t.Fatalf("plan.MaxNames %d, metrics.MaxNames %d", plan.MaxNames, metrics.MaxNames)
	}
}

// However many request names a plan has, at most metrics.MaxNames get statistics; the rest share
// "(other)".
func TestPerNameCapHolds(t *testing.T) {
	for _, n := range []int{99, 100, 101, 150, plan.MaxRequests} {
		var reqs []string
		for i := range n {
			reqs = append(reqs, fmt.Sprintf(`{"name":"r%d","url":"http://127.0.0.1:9/%d"}`, i, i))
		}
		p := mustPlan(t, `{"name":"names","requests":[`+strings.Join(reqs, ",")+`],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`)
		e, err := newEngine(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := len(e.names.Names)
		if got > metrics.MaxNames || (n <= metrics.MaxNames && got != n) {
			t.Errorf("%d names: %d blocks", n, got)
		}
		if n > metrics.MaxNames && e.names.Names[got-1] != metrics.OtherName {
			t.Errorf("%d names: last is %q", n, e.names.Names[got-1])
		}
	}
}

// At a rate where millions of iterations round to the same nanosecond, the wakeup search is
// bounded (it once walked them all, and a stop waited for it).
func TestNextWakeupIsBoundedAtAbsurdRates(t *testing.T) {
	e := &arrival{e: &Engine{endAt: time.Hour},
		sched: newSchedule(float64(math.MaxInt64), []plan.Stage{{Duration: plan.Duration(time.Hour), Target: math.MaxInt64}}, time.Second)}
	start := time.Now()
	for i := range 1000 {
		now := time.Duration(i) * time.Millisecond
		if w, ok := e.nextWakeup(now); !ok || w <= now {
			t.Fatalf("nextWakeup(%s) = %s, %v", now, w, ok)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("1000 wakeups took %s", d)
	}
}
