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
