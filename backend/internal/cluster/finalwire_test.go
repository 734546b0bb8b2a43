package cluster

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
)

// A final's check results travel once, names by index (finalWire), and are read back exactly:
// State's and Summary's. A final without rows (an older agent's, a hand-made one) is read as it
// is; rows naming no name, or beside a state's own results, are refused.
func TestFinalWireChecks(t *testing.T) {
	long := strings.Repeat("r", 1000)
	var checks []metrics.CheckResult
	for i := range 2000 {
		checks = append(checks, metrics.CheckResult{Request: long + string(rune('a'+i/50%26)), Check: "status eq 200", Passes: int64(i), Fails: 1})
	}
	in := FinalPart{Hist: "h", State: &engine.Final{Requests: 7, Checks: checks},
		Summary: &metrics.Summary{Requests: 7, Checks: append([]metrics.CheckResult(nil), checks...)}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 200<<10 { // 2000 × 1 KB names, twice, as they were: 4 MB
		t.Errorf("final of 2000 checks is %d bytes", len(b))
	}
	var out FinalPart
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.State.Checks, checks) || !reflect.DeepEqual(out.Summary.Checks, checks) || out.Hist != "h" || out.State.Requests != 7 {
		t.Errorf("read back: %d state checks, %d summary checks, %+v", len(out.State.Checks), len(out.Summary.Checks), out.State.Requests)
	}
	if len(in.State.Checks) != 2000 || in.State.Checks[0].Request != checks[0].Request {
		t.Error("marshalling changed the part")
	}

	old := `{"hist":"","state":{"requests":1,"checks":[{"request":"a","check":"c","passes":1,"fails":0}]},"summary":null}`
	if err := json.Unmarshal([]byte(old), &out); err != nil || len(out.State.Checks) != 1 || out.State.Checks[0].Request != "a" {
		t.Errorf("an older final: %+v %v", out.State, err)
	}
	for _, bad := range []string{
		`{"state":{},"check_rows":[[0,2,1,0]],"check_names":["a","b"]}`,
		`{"state":{},"check_rows":[[-1,0,1,0]],"check_names":["a"]}`,
		`{"check_rows":[[0,0,1,0]],"check_names":["a"]}`,
		`{"state":{"checks":[{"request":"a"}]},"check_rows":[[0,0,1,0]],"check_names":["a"]}`,
	} {
		if err := json.Unmarshal([]byte(bad), &out); err == nil {
			t.Errorf("%s: read", bad)
		}
	}
}
