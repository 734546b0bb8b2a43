package engine

import (
	"fmt"
	"testing"
)

// BenchmarkEngineRequestOpen is BenchmarkEngineRequest for an open model: b.N iterations of
// constant-arrival-rate due within one second, so each request also pays the claim of its
// iteration and its count by due second, and the collector closes the second (arrival.go).
// allocs/req includes the run's start-up spread over b.N.
func BenchmarkEngineRequestOpen(b *testing.B) {
	p := mustPlan(b, fmt.Sprintf(`{"name":"bench","requests":[{"url":%q}],"load":{"executor":"constant-arrival-rate",
		"rate":%d,"duration":"1s","pre_allocated_vus":20,"max_vus":100}}`, benchTarget(b), max(b.N, 1)))
	if sum := benchRunPlan(b, p); sum.Errors != 0 {
		b.Fatalf("errors %v", sum.ErrorKinds)
	}
}
