package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// failingFile is an import file whose first second had 10 failures in one group with a sample.
func failingFile(t *testing.T) *metrics.RunFile {
	f := importFile(t, "p", 3, 5, 0.2, 1)
	g := metrics.FailureGroup{Request: "home", Kind: "status_5xx", Status: 503, Message: "HTTP 503 Service Unavailable", Count: 10,
		Sample: &metrics.FailureSample{Status: 503, Headers: [][2]string{{"Retry-After", "5"}}, Body: "busy"}}
	f.Samples[0].Successes, f.Samples[0].Errors = 40, 10
	f.Samples[0].Failures = []metrics.FailureGroup{g}
	f.Successes, f.Errors = f.Successes-10, 10
	f.Failures = []metrics.FailureGroup{g}
	return f
}

// An imported run keeps its failure groups; groups beyond the engine's bounds are refused, by field.
func TestImportRunFailures(t *testing.T) {
	a := newAuthApp(t, true, false)
	res := a.must(cred{}, 201, "POST", "/api/runs/import", encodeFile(t, failingFile(t)))
	id := int(res["run"].(map[string]any)["id"].(float64))
	run := a.must(cred{}, 200, "GET", fmt.Sprintf("/api/runs/%d", id), "")
	if got := fmt.Sprint(run["summary"].(map[string]any)["failures"]); !strings.Contains(got, "HTTP 503 Service Unavailable") || !strings.Contains(got, "body:busy") {
		t.Errorf("stored failures: %s", got)
	}
	many := make([]metrics.FailureGroup, metrics.MaxFailureGroups+2)
	for i := range many {
		many[i] = metrics.FailureGroup{Kind: "other", Message: fmt.Sprint("m", i), Count: 1}
	}
	for name, c := range map[string]struct {
		edit  func(*metrics.RunFile)
		field string
	}{
		"groups":       {func(f *metrics.RunFile) { f.Failures = many }, "failures"},
		"second":       {func(f *metrics.RunFile) { f.Samples[0].Failures = many }, "samples[0].failures"},
		"sample body":  {func(f *metrics.RunFile) { f.Failures[0].Sample.Body = strings.Repeat("b", 4000) }, "failures[0].sample.body"},
		"headers":      {func(f *metrics.RunFile) { f.Failures[0].Sample.Headers = make([][2]string, 65) }, "failures[0].sample.headers"},
		"header value": {func(f *metrics.RunFile) { f.Failures[0].Sample.Headers[0][1] = strings.Repeat("v", 300) }, "failures[0].sample.headers[0]"},
		"message":      {func(f *metrics.RunFile) { f.Failures[0].Message = strings.Repeat("m", 300) }, "failures[0].message"},
		"count":        {func(f *metrics.RunFile) { f.Failures[0].Count = 11 }, "failures"},
		"kind":         {func(f *metrics.RunFile) { f.Failures[0].Kind = "<script>" }, "failures[0].kind"},
	} {
		f := failingFile(t)
		c.edit(f)
		if st, fields, msg := importStatus(a, "", encodeFile(t, f)); st != 400 || fields[c.field] == nil {
			t.Errorf("%s: %d %v %q, want 400 naming %s", name, st, fields, msg, c.field)
		}
	}
}
