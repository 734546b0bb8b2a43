package engine

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// benchTarget is an in-process fasthttp server on loopback (fasthttp's server does not allocate
// per request in steady state, so allocations measured here are the engine's).
func benchTarget(b *testing.B) string {
	body := make([]byte, 615)
	return benchServe(b, func(ctx *fasthttp.RequestCtx) { ctx.SetBody(body) })
}

// benchServe serves h on loopback until the benchmark ends and returns its URL.
func benchServe(b *testing.B, h fasthttp.RequestHandler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := &fasthttp.Server{Handler: h}
	go s.Serve(ln)
	b.Cleanup(func() { _ = s.Shutdown() })
	return "http://" + ln.Addr().String() + "/"
}

// benchRun runs b.N requests to url (vus VUs, b.N/vus iterations each) through the whole engine
// and reports heap allocations, bytes and the process's CPU time (the engine's and an in-process
// target's) per request.
func benchRun(b *testing.B, url string, vus int, http ...plan.HTTP) *metrics.Summary {
	p := &plan.Plan{Name: "bench", Requests: []plan.Request{{URL: url}},
		Load: plan.Load{Executor: plan.PerVUIterations, VUs: vus, Iterations: max(b.N/vus, 1)}}
	if len(http) > 0 {
		p.HTTP = http[0]
	}
	p.Defaults()
	return benchRunPlan(b, p)
}

// benchRunPlan is benchRun for a plan of the caller's.
func benchRunPlan(b *testing.B, p *plan.Plan) *metrics.Summary {
	e, err := newEngine(p, Options{})
	if err != nil {
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu := testutil.ProcessCPU()
	b.ResetTimer()
	sum, err := e.Run(context.Background())
	b.StopTimer()
	cpu = testutil.ProcessCPU() - cpu
	runtime.ReadMemStats(&after)
	if err != nil {
		b.Fatalf("run: %v", err)
	}
	n := float64(sum.Requests)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/req")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/req")
	b.ReportMetric(float64(cpu)/1e3/n, "cpu-µs/req")
	return sum
}

// BenchmarkEngineRequest runs b.N requests through the whole engine (VU loop, fasthttp client,
// classification, recording) and reports heap allocations per request and the process's CPU time
// per request (the engine's and the in-process target's).
func BenchmarkEngineRequest(b *testing.B) {
	for _, vus := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("vus=%d", vus), func(b *testing.B) {
			if sum := benchRun(b, benchTarget(b), vus); sum.Errors != 0 {
				b.Fatalf("errors %v", sum.ErrorKinds)
			}
		})
	}
}
