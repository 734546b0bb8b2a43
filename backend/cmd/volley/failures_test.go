package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

func TestSummaryListsTopFailures(t *testing.T) {
	s := &metrics.Summary{Requests: 100, Errors: 80, StatusCodes: map[string]int64{"500": 80}, ErrorKinds: map[string]int64{"status_5xx": 80}}
	for i := range 7 {
		s.Failures = append(s.Failures, metrics.FailureGroup{Request: "get", Kind: "status_5xx", Status: 500 + i,
			Message: fmt.Sprintf("HTTP 50%d \x1b[31mred", i), Count: int64(20 - i)})
	}
	s.Failures[6].Message = metrics.OtherFailures
	var out bytes.Buffer
	printSummary(&out, &plan.Plan{Name: "p"}, s)
	text := out.String()
	top := ""
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "top failures") {
			top = strings.Join(strings.Fields(line), " ")
		}
	}
	if top != "top failures 20 (25.0%) get status_5xx HTTP 500 ?[31mred" ||
		!strings.Contains(text, "HTTP 504") || strings.Contains(text, "HTTP 505") ||
		!strings.Contains(text, "… 2 more groups") || strings.Contains(text, "\x1b") {
		t.Errorf("summary:\n%s", text)
	}
}

// Threshold values print in their metric's unit (report.ThresholdValue), not raw floats.
func TestSummaryThresholdValuesInUnits(t *testing.T) {
	rate, p95 := 0.20114255086900537, 12.3456789
	s := &metrics.Summary{Requests: 10, Errors: 2, Thresholds: []metrics.ThresholdResult{
		{Expr: "error_rate<1%", Value: &rate}, {Expr: "p(95)<200ms", Value: &p95, OK: true}, {Expr: "p(99)<1s"}}}
	var out bytes.Buffer
	printSummary(&out, &plan.Plan{Name: "p"}, s)
	text := out.String()
	for _, want := range []string{"(value 20.1 %)", "(value 12.346 ms)", "(no data)"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
}
