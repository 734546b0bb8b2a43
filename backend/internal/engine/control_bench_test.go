package engine

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
)

// BenchmarkTimedLoops runs the loops live control reaches — constant-vus (profileLoop) and
// constant-arrival-rate (arrival.loop) — for one second against the in-process target and reports
// the heap allocations per request (the whole process's, start-up included: compare runs, not
// absolute values). b.N is ignored: the load models are timed.
func BenchmarkTimedLoops(b *testing.B) {
	for _, c := range []struct {
		name string
		load plan.Load
	}{
		{"constant-vus=10", plan.Load{Executor: plan.ConstantVUs, VUs: 10, Duration: plan.Duration(time.Second)}},
		{"constant-arrival-rate=5000", plan.Load{Executor: plan.ConstantArrivalRate, Rate: 5000, Duration: plan.Duration(time.Second),
			PreAllocatedVUs: 20, MaxVUs: 100}},
	} {
		b.Run(c.name, func(b *testing.B) {
			url := benchTarget(b)
			p := &plan.Plan{Name: "bench", Requests: []plan.Request{{URL: url}}, Load: c.load}
			p.Defaults()
			e, err := newEngine(p, Options{})
			if err != nil {
				b.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			sum, err := e.Run(context.Background())
			b.StopTimer()
			runtime.ReadMemStats(&after)
			if err != nil || sum.Requests == 0 {
				b.Fatalf("run: %v, %d requests", err, sum.Requests)
			}
			n := float64(sum.Requests)
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/req")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/req")
			b.ReportMetric(n/sum.DurationS, "req/s")
		})
	}
}
