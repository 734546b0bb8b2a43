package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// summarizeAgain runs js and returns the engine's summary and Summarize of its final state after
// a JSON round trip (as an agent's state travels).
func summarizeAgain(t *testing.T, js string) (own, again *metrics.Summary) {
	t.Helper()
	c, err := plan.Compile(mustPlan(t, js))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	own, err = e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(e.Final())
	if err != nil {
		t.Fatal(err)
	}
	var f Final
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	again, err = Summarize(c, &f)
	if err != nil {
		t.Fatal(err)
	}
	return own, again
}

// The summary is a function of the final state: the run's own summary and Summarize of its state
// (through JSON) are the same, figure for figure — two request names, checks, failures,
// thresholds on the run and on a name.
func TestSummarizeFinalIsTheRunSummary(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	own, again := summarizeAgain(t, fmt.Sprintf(`{"name":"final","requests":[
		{"name":"ok","url":"%s/ok","checks":[{"type":"status","op":"eq","value":200}]},
		{"name":"bad","url":"%s/bad","checks":[{"type":"status","op":"eq","value":200}]}],
		"load":{"executor":"per-vu-iterations","vus":3,"iterations":40},"http":{"timeout":"2s"},
		"thresholds":[{"expr":"p(95)<2000ms"},{"expr":"error_rate<0.9","request":"bad"}]}`, tg.URL, tg.URL))
	if own.Requests != 120 || own.Errors == 0 || len(own.Failures) == 0 || len(own.ByName) != 2 || len(own.Thresholds) != 2 {
		t.Fatalf("the run did not exercise what it should: %+v", own)
	}
	if !reflect.DeepEqual(own, again) {
		a, _ := json.Marshal(own)
		b, _ := json.Marshal(again)
		t.Errorf("Summarize(Final) differs from the run's summary:\n%s\n%s", a, b)
	}
}

// The same for a concurrency sweep: its capacity table comes from the levels and seconds.
func TestSummarizeFinalIsTheSweepSummary(t *testing.T) {
	tg := testutil.NewTarget(t, func(http.ResponseWriter, *http.Request) {})
	own, again := summarizeAgain(t, fmt.Sprintf(`{"name":"sweep","requests":[{"url":%q}],
		"load":{"executor":"concurrency-sweep","levels":[1,2],"step_duration":"1s"},"http":{"timeout":"2s"}}`, tg.URL))
	if len(own.Sweep) != 2 {
		t.Fatalf("sweep rows: %+v", own.Sweep)
	}
	if !reflect.DeepEqual(own, again) {
		a, _ := json.Marshal(own)
		b, _ := json.Marshal(again)
		t.Errorf("Summarize(Final) differs from the sweep's summary:\n%s\n%s", a, b)
	}
}

// Merge adds failure groups by identity and folds those beyond MaxFailureGroups into "(other)".
func TestMergeFailuresCapsGroups(t *testing.T) {
	var in []metrics.FailureGroup
	for i := range metrics.MaxFailureGroups + 5 {
		g := metrics.FailureGroup{Request: "r", Kind: "status_5xx", Status: 500, Message: fmt.Sprint("m", i), Count: int64(1000 - i)}
		in = append(in, g, g) // two agents
	}
	in = append(in, metrics.FailureGroup{Message: metrics.OtherFailures, Count: 7})
	out := MergeFailures(in)
	if len(out) != metrics.MaxFailureGroups+1 {
		t.Fatalf("%d groups, want %d", len(out), metrics.MaxFailureGroups+1)
	}
	var total, want int64
	for _, g := range in {
		want += g.Count
	}
	for _, g := range out {
		total += g.Count
	}
	if total != want || out[1].Count != 2000 || out[1].Message != "m0" {
		t.Errorf("counts add to %d (want %d); the most frequent group of its own %+v, want m0 × 2000", total, want, out[1])
	}
	other := out[len(out)-1]
	for _, g := range out {
		if g.Message == metrics.OtherFailures {
			other = g
		}
	}
	// the 5 least frequent (2×(1000−100…104)) and the 7 already in "(other)"
	if w := int64(7 + 2*(900+899+898+897+896)); other.Count != w {
		t.Errorf("(other) counts %d, want %d", other.Count, w)
	}
}
