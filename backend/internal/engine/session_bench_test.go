package engine

import (
	"testing"

	"github.com/volley-load/volley/backend/internal/plan"
)

// BenchmarkEngineRequestSessionUnused is BenchmarkEngineRequest (10 VUs) with the cookie jar on
// and compression asked for, against a target that sets no cookie and compresses nothing: the
// allocations per request must stay BenchmarkEngineRequest's (0 in steady state). "off" is the
// baseline without a jar.
func BenchmarkEngineRequestSessionUnused(b *testing.B) {
	for _, c := range []struct {
		name, cookies string
		compression   []string
	}{
		{"cookies=off", plan.CookiesOff, nil},
		{"cookies=vu", plan.CookiesVU, nil},
		{"cookies=vu+compression", plan.CookiesVU, plan.Compressions},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := &plan.Plan{Name: "bench", Requests: []plan.Request{{URL: benchTarget(b)}},
				Load: plan.Load{Executor: plan.PerVUIterations, VUs: 10, Iterations: max(b.N/10, 1)},
				HTTP: plan.HTTP{Cookies: c.cookies, Compression: c.compression}}
			p.Defaults()
			if sum := benchRunPlan(b, p); sum.Errors != 0 {
				b.Fatalf("errors %v", sum.ErrorKinds)
			}
		})
	}
}
