package cluster

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/engine"
	seg "github.com/volley-load/volley/backend/internal/segment"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// An agent's busy second with several request names is never refused as impossible: each name's
// histogram is read together with its count. The collector is held 400 ms before the second
// name's statistics (a busy machine does that); read apart (every count first), that name's
// histogram held the latencies of the requests finished in those 400 ms but not their count, and
// the controller refused the honest agent's second (the run ended degraded).
func TestNameHistogramsMatchTheirCounts(t *testing.T) {
	tg := testutil.NewTarget(t, func(http.ResponseWriter, *http.Request) {})
	c := compile(t, fmt.Sprintf(`{"name":"names","requests":[{"name":"a","url":"%[1]s/a"},{"name":"b","url":"%[1]s/b"}],
		"load":{"executor":"constant-vus","vus":4,"duration":"3s"},"http":{"timeout":"2s"}}`, tg.URL))
	defer engine.SetPanicHookForTest(func(point string, j int) {
		if point == "names" && j == 1 {
			time.Sleep(400 * time.Millisecond)
		}
	})()
	agents, weights := []string{"a", "b"}, []int{1, 1}
	sq, err := seg.New(weights...)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMerger(c, agents, weights)
	seconds, _ := runParts(t, c, sq, agents)
	checked := 0
	for j := range agents {
		for k, p := range seconds[j] {
			if len(p.NameHists) == 0 {
				continue
			}
			checked++
			if err := m.CheckPart(j, p); err != nil {
				t.Errorf("agent %s, second %d (%d requests): %v", agents[j], k+1, p.Sample.Requests, err)
			}
		}
	}
	if checked < 4 {
		t.Errorf("%d seconds with name histograms checked, want every second of both agents", checked)
	}
}
