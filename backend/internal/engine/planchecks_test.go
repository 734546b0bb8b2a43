package engine

import (
	"slices"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// PlanChecks is the check list an engine of the plan reports (its Final's, without counts), in
// its order: HTTP checks of several requests and a WebSocket step's expectations among them.
func TestPlanChecksAreTheEngines(t *testing.T) {
	c, err := plan.ParseCompiled([]byte(`{"name":"c","requests":[
		{"name":"home","url":"http://127.0.0.1:1/","checks":[{"type":"status","op":"eq","value":200},{"type":"latency","op":"lt","value":"500ms"}]},
		{"name":"live","url":"ws://127.0.0.1:1/live",
		 "ws":{"messages":[{"send":"a","expect":[{"type":"body","op":"contains","value":"a"}]},{"send":"b"},
		   {"send":"c","expect":[{"type":"body","op":"contains","value":"c"},{"type":"latency","op":"lt","value":"1s"}]}]}},
		{"name":"home","url":"http://127.0.0.1:1/again","checks":[{"type":"body","op":"contains","value":"ok"}]}],
		"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var engines []metrics.CheckResult
	for _, k := range e.checks {
		engines = append(engines, metrics.CheckResult{Request: k.request, Check: k.desc})
	}
	if got := PlanChecks(c); len(got) != 6 || !slices.Equal(got, engines) {
		t.Fatalf("PlanChecks %v\nthe engine's %v", got, engines)
	}
	if names, _ := RequestNames(c.Plan); !slices.Equal(names, []string{"home", "live"}) {
		t.Fatalf("names %v", names)
	}
}
