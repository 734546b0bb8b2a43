package plan_test

import (
	"encoding/json"
	"testing"

	// The executors are registered by package engine (engine/executor_*.go): importing it here
	// makes them known to this package's tests, which run in the same test binary. engine imports
	// plan, not the reverse, so this external test package is what breaks the cycle.
	_ "github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/plan"
)

// The registry describes the seven built-in executors in the UI's order, with the fields each
// takes in the form's order, which of them are required, and the defaults Parse fills.
func TestExecutorInfos(t *testing.T) {
	got, err := json.Marshal(plan.ExecutorInfos())
	if err != nil {
		t.Fatal(err)
	}
	f := func(name, kind string, req bool, def, help string) string {
		r := "false"
		if req {
			r = "true"
		}
		return `{"Name":"` + name + `","Kind":"` + kind + `","Required":` + r + `,"Default":` + def + `,"HelpKey":"` + help + `"}`
	}
	vus := f("vus", "int", true, "null", "editor.vus")
	duration := f("duration", "duration", true, "null", "editor.duration")
	stages := f("stages", "stages", true, "null", "editor.stages")
	maxDuration := f("max_duration", "duration", false, `"10m"`, "editor.maxDuration")
	timeUnit := f("time_unit", "duration", false, `"1s"`, "editor.timeUnit")
	pool := f("pre_allocated_vus", "int", true, "null", "editor.preAllocated") + "," + f("max_vus", "int", false, "null", "editor.maxVus")
	ex := func(name, model string, fields ...string) string {
		s := `{"Name":"` + name + `","Model":"` + model + `","Fields":[`
		for i, x := range fields {
			if i > 0 {
				s += ","
			}
			s += x
		}
		return s + `],"HelpKey":"editor.executorHelp.` + name + `"}`
	}
	want := "[" + ex("constant-vus", "closed", vus, duration) + "," +
		ex("ramping-vus", "closed", f("start_vus", "int", false, "null", "editor.startVus"), stages) + "," +
		ex("per-vu-iterations", "closed", vus, f("iterations", "int", true, "null", "editor.iterationsPerVu"), maxDuration) + "," +
		ex("shared-iterations", "closed", vus, f("iterations", "int", true, "null", "editor.iterationsShared"), maxDuration) + "," +
		ex("constant-arrival-rate", "open", f("rate", "int", true, "null", "editor.rate"), timeUnit, duration, pool) + "," +
		ex("ramping-arrival-rate", "open", f("start_rate", "int", false, "null", "editor.startRate"), timeUnit, stages, pool) + "," +
		ex("concurrency-sweep", "closed", f("levels", "levels", false, "[10,50,100,500,1000]", "editor.levels"),
			f("step_duration", "duration", false, `"10s"`, "editor.stepDuration")) + "]"
	if string(got) != want {
		t.Errorf("ExecutorInfos:\n got %s\nwant %s", got, want)
	}
	// The result is a copy: changing it changes nothing registered.
	infos := plan.ExecutorInfos()
	infos[0].Fields[0].Name = "changed"
	if plan.ExecutorInfos()[0].Fields[0].Name != "vus" {
		t.Error("ExecutorInfos shares its fields with the registry")
	}
}
