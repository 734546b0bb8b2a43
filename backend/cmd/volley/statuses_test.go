package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// TestRunFileOfManyStatusesIsAccepted: a target answering every status of 400–599 in turn gives
// seconds of far more than 64 status codes; `volley compare` (and the import's Check) accept the
// file `volley run --out` wrote.
func TestRunFileOfManyStatusesIsAccepted(t *testing.T) {
	var next atomic.Int64
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400 + int(next.Add(1)%200))
	})
	dir := t.TempDir()
	planPath, out := filepath.Join(dir, "plan.json"), filepath.Join(dir, "run.json")
	spec := fmt.Sprintf(`{"name":"codes","requests":[{"url":%q}],"load":{"vus":4,"duration":"2s"}}`, tg.URL)
	if err := os.WriteFile(planPath, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = runPlan(io.Discard, io.Discard, planPath, out, true) // every request fails: an error exit
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var f metrics.RunFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	most := 0
	for _, s := range f.Samples {
		most = max(most, len(s.StatusCodes))
	}
	if most <= metrics.MaxSecondCodes {
		t.Fatalf("at most %d codes a second (%d requests): the run proves nothing", most, f.Requests)
	}
	if err := f.Check(); err != nil {
		t.Errorf("Check: %v (%d codes in a second)", err, most)
	}
	if code, _, stderr := runCompare(t, out, out); code == 2 {
		t.Errorf("compare refused the file: %s", stderr)
	}
}
