package engine

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/volley-load/volley/backend/internal/plan"
)

// benchTarget is an in-process fasthttp server on loopback (fasthttp's server does not allocate
// per request in steady state, so allocations measured here are the engine's).
func benchTarget(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 615)
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBody(body) }}
	go s.Serve(ln)
	b.Cleanup(func() { _ = s.Shutdown() })
	return "http://" + ln.Addr().String() + "/"
}

// BenchmarkEngineRequest runs b.N requests through the whole engine (VU loop, fasthttp client,
// classification, recording) and reports heap allocations per request and the process's CPU time
// per request (the engine's and the in-process target's).
func BenchmarkEngineRequest(b *testing.B) {
	for _, vus := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("vus=%d", vus), func(b *testing.B) {
			url := benchTarget(b)
			iters := max(b.N/vus, 1)
			p := &plan.Plan{Name: "bench", Requests: []plan.Request{{URL: url}},
				Load: plan.Load{Executor: plan.PerVUIterations, VUs: vus, Iterations: iters}}
			p.Defaults()
			e, err := newEngine(p, Options{})
			if err != nil {
				b.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpu := processCPU()
			b.ResetTimer()
			sum, err := e.Run(context.Background())
			b.StopTimer()
			cpu = processCPU() - cpu
			runtime.ReadMemStats(&after)
			if err != nil || sum.Errors != 0 {
				b.Fatalf("run: %v, errors %v", err, sum.ErrorKinds)
			}
			n := float64(sum.Requests)
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/req")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/req")
			b.ReportMetric(float64(cpu)/1e3/n, "cpu-µs/req")
		})
	}
}
